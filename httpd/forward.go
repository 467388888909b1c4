package httpd

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/loci-memory/loci/mcpd"
	"github.com/loci-memory/loci/service"
	"github.com/valyala/fasthttp"
)

// Forwarding (cluster mode with partial replication, docs/cluster.md): a
// request for a workspace whose shard this node does not serve gets a
// *service.NotServedError from the service, before anything is written;
// the server then sends the request unchanged (API key included) to the
// node the error names, marked with forwardHeader, and relays its answer
// (status, headers, body). The node that forwards has authenticated and
// rate-limited the request; the node that serves it meters it (and does not
// rate-limit it again). A marked request is never forwarded again: a second
// hop answers 503 with Retry-After (the shard is changing hands).
const (
	// forwardHeader carries the cluster's forwarding secret
	// (Cluster.ForwardSecret): only nodes can mark a request forwarded.
	forwardHeader = "X-Loci-Forwarded"
	// shardsHeader restricts a forwarded GET /v1/workspaces to some shards
	// (comma-separated): a part of a tenant-wide listing another node
	// gathers.
	shardsHeader = "X-Loci-Shards"
	// forwardTimeout bounds one forwarded request.
	forwardTimeout = 30 * time.Second
)

// ctxForwarded is the user value that marks a request this node answered
// by forwarding it: dispatch neither meters it nor overwrites the serving
// node's X-Loci-Data-Version.
const ctxForwarded = "loci.forwarded"

// forwarded reports whether the request carries a forwarding mark, and
// whether it is valid (the cluster's secret). In cluster mode, dispatch
// refuses a mark that is not valid; a single node ignores the headers.
func (s *Server) forwarded(ctx *fasthttp.RequestCtx) (marked, valid bool) {
	cl := s.cfg.Cluster
	if cl == nil {
		return false, false
	}
	v := ctx.Request.Header.Peek(forwardHeader)
	if len(v) == 0 {
		return false, false
	}
	return true, cl.ForwardSecret() != "" && subtle.ConstantTimeCompare(v, []byte(cl.ForwardSecret())) == 1
}

// forward answers the request from the node ns names.
func (s *Server) forward(ctx *fasthttp.RequestCtx, ns *service.NotServedError) {
	if _, valid := s.forwarded(ctx); valid {
		ctx.Response.Header.Set("Retry-After", "1")
		writeError(ctx, fasthttp.StatusServiceUnavailable, fmt.Sprintf("shard %d is changing hands between the cluster's nodes (forwarded to a node that does not serve it); retry shortly", ns.Shard))
		return
	}
	if ns.NodeID == "" {
		ctx.Response.Header.Set("Retry-After", "1")
		writeError(ctx, fasthttp.StatusServiceUnavailable, ns.Error())
		return
	}
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	// The nodes serving the shard, in order: a node that cannot be reached
	// (dead, its lease not expired yet) never received the request, so the
	// next one may be asked. Any other failure may come after the request
	// was served, and is not sent elsewhere.
	targets := append([]service.NodeAddr{{NodeID: ns.NodeID, Addr: ns.Addr}}, ns.Alternates...)
	for i, to := range targets {
		s.outgoing(ctx, req, to.Addr)
		err := s.client.DoTimeout(req, resp, forwardTimeout)
		if err == nil {
			break
		}
		s.log.Warn("httpd: forwarding failed", "node", to.NodeID, "addr", to.Addr, "request_id", requestID(ctx), "err", err)
		if i+1 < len(targets) && unreachable(err) {
			continue
		}
		ctx.Response.Header.Set("Retry-After", "1")
		writeError(ctx, fasthttp.StatusServiceUnavailable, fmt.Sprintf("shard %d is served by node %s, which did not answer (%v); retry shortly", ns.Shard, to.NodeID, err))
		return
	}
	ctx.SetUserValue(ctxForwarded, true)
	// The caller's rate limit is this node's (the serving node does not
	// count a forwarded request again): its headers stay.
	limit := string(ctx.Response.Header.Peek("X-RateLimit-Limit"))
	remaining := string(ctx.Response.Header.Peek("X-RateLimit-Remaining"))
	ctx.Response.Reset()
	if limit != "" {
		ctx.Response.Header.Set("X-RateLimit-Limit", limit)
		ctx.Response.Header.Set("X-RateLimit-Remaining", remaining)
	}
	ctx.SetStatusCode(resp.StatusCode())
	for k, v := range resp.Header.All() {
		switch strings.ToLower(string(k)) {
		case "connection", "content-length", "transfer-encoding", "date", "server", "keep-alive":
			continue
		}
		ctx.Response.Header.SetBytesKV(k, v)
	}
	ctx.Response.Header.Set("X-Request-ID", requestID(ctx))
	ctx.SetBody(resp.Body())
}

// unreachable reports whether a forwarding error happened before the
// request could reach the node (no connection).
func unreachable(err error) bool {
	var op *net.OpError
	return errors.Is(err, fasthttp.ErrDialTimeout) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.As(err, &op) && op.Op == "dial"
}

// maxStaleRetries bounds the attempts of one forwarded request over
// kept-alive connections the other side has closed (each is dropped): one
// more than the connections a host may have, so that every idle connection
// to a node that died can be tried and dropped, and the next attempt dials
// it. At 8 (and fasthttp's default of 5 attempts), a node holding more idle
// connections to the dead one answered 503 instead of asking the shard's
// next node (CI of 1244bbf, cluster/e2e TestClusterKillRounds).
const maxStaleRetries = forwardConnsPerHost + 1

// forwardConnsPerHost caps the connections to one node (fasthttp's default).
const forwardConnsPerHost = fasthttp.DefaultMaxConnsPerHost

// newForwardClient returns the client that forwards requests to the nodes
// serving their shards.
func newForwardClient() *fasthttp.Client {
	return &fasthttp.Client{Name: "loci-forward", NoDefaultUserAgentHeader: true, DisablePathNormalizing: true,
		ReadTimeout: forwardTimeout, WriteTimeout: forwardTimeout, MaxIdleConnDuration: 30 * time.Second,
		MaxConnsPerHost: forwardConnsPerHost, MaxIdemponentCallAttempts: maxStaleRetries, RetryIfErr: retryStaleConn}
}

// retryStaleConn sends a forwarded request again, on another connection,
// when a kept-alive one turns out closed by the other side (a node that
// stopped or died since): a new connection to a dead node is
// refused, and forward then tries the next node serving the shard. A node
// that died while serving the request may have stored a write it never
// acknowledged; the retry is then the client's own retry, which writes with
// idempotency keys make harmless.
func retryStaleConn(_ *fasthttp.Request, attempts int, err error) (resetTimeout, retry bool) {
	closed := errors.Is(err, io.EOF) || errors.Is(err, fasthttp.ErrConnectionClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
	return false, attempts < maxStaleRetries && closed
}

// outgoing prepares req, a copy of the request being served, for the node
// at addr: path and query as sent, headers as sent, the forwarding mark.
func (s *Server) outgoing(ctx *fasthttp.RequestCtx, req *fasthttp.Request, addr string) {
	ctx.Request.CopyTo(req)
	req.URI().DisablePathNormalizing = true
	req.SetRequestURI("http://" + addr + string(ctx.Request.RequestURI()))
	req.UseHostHeader = false
	req.Header.SetHost(addr)
	req.Header.Del("Connection")
	req.Header.Del("Origin") // checked here (guardBrowser); the Host is the node's
	req.Header.Set("X-Request-ID", requestID(ctx))
	req.Header.Set(forwardHeader, s.cfg.Cluster.ForwardSecret())
}

// requestShards is the shard list of a forwarded listing (shardsHeader),
// nil when the request has none.
func requestShards(ctx *fasthttp.RequestCtx) ([]int, error) {
	v := string(ctx.Request.Header.Peek(shardsHeader))
	if v == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		k, err := strconv.Atoi(f)
		if err != nil || k < 0 {
			return nil, fmt.Errorf("%s: %q is not a list of shard numbers", shardsHeader, v)
		}
		out = append(out, k)
	}
	return out, nil
}

// gather completes res, a tenant-wide workspace listing of the shards this
// node serves, with the workspaces of the others (res.Elsewhere), asked of
// the nodes that serve them (one request per node, restricted to its
// shards). The result is sorted as a node serving every shard lists it.
func (s *Server) gather(ctx *fasthttp.RequestCtx, res *service.WorkspacesResult) error {
	byNode := map[string][]int{}
	addr := map[string]string{}
	var nodes []string
	for _, ns := range res.Elsewhere {
		if ns.NodeID == "" {
			return ns
		}
		if _, ok := byNode[ns.NodeID]; !ok {
			nodes = append(nodes, ns.NodeID)
		}
		byNode[ns.NodeID] = append(byNode[ns.NodeID], ns.Shard)
		addr[ns.NodeID] = ns.Addr
	}
	slices.Sort(nodes)
	// The parts are listings restricted to shards their nodes serve, which
	// never gather: a forwarded request may gather without any loop.
	for _, node := range nodes {
		part, err := s.listingPart(ctx, node, addr[node], byNode[node])
		if err != nil {
			return err
		}
		res.Merge(part)
	}
	res.Elsewhere = nil
	return nil
}

// listingPart asks node for the caller's workspaces on shards.
func (s *Server) listingPart(ctx *fasthttp.RequestCtx, node, addr string, shards []int) ([]service.WorkspaceJSON, error) {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(fasthttp.MethodGet)
	req.SetRequestURI("http://" + addr + "/v1/workspaces")
	for _, h := range []string{"X-API-Key", "Authorization", "X-Loci-Min-Data-Version"} {
		if v := ctx.Request.Header.Peek(h); len(v) > 0 {
			req.Header.SetBytesV(h, v)
		}
	}
	ks := make([]string, len(shards))
	for i, k := range shards {
		ks[i] = strconv.Itoa(k)
	}
	req.Header.Set(shardsHeader, strings.Join(ks, ","))
	req.Header.Set("X-Request-ID", requestID(ctx))
	req.Header.Set(forwardHeader, s.cfg.Cluster.ForwardSecret())
	// A part that cannot be had is a 503 (retry): the shard is changing
	// hands, or its node has just died.
	unavailable := &service.NotServedError{Shard: shards[0]}
	if err := s.client.DoTimeout(req, resp, forwardTimeout); err != nil {
		s.log.Warn("httpd: listing part not gathered", "node", node, "addr", addr, "request_id", requestID(ctx), "err", err)
		return nil, unavailable
	}
	if resp.StatusCode() != fasthttp.StatusOK {
		s.log.Warn("httpd: listing part refused", "node", node, "status", resp.StatusCode(), "body", string(resp.Body()), "request_id", requestID(ctx))
		return nil, unavailable
	}
	var part service.WorkspacesResult
	if err := json.Unmarshal(resp.Body(), &part); err != nil {
		return nil, fmt.Errorf("httpd: listing part from node %s: %w", node, err)
	}
	return part.Workspaces, nil
}

// mcpRouted serves POST /mcp with forwarding: a call that needs a shard
// served elsewhere makes the whole request go there (it is stateless, JSON
// answered), and a tenant-wide listing gathers the other shards.
func (s *Server) mcpRouted(ctx *fasthttp.RequestCtx) {
	_, valid := s.forwarded(ctx)
	r := &mcpd.Routing{Forwarded: valid, Gather: func(res *service.WorkspacesResult) error { return s.gather(ctx, res) }}
	ctx.SetUserValue(mcpd.RoutingKey{}, r)
	s.mcpHandler(ctx)
	ctx.RemoveUserValue(mcpd.RoutingKey{})
	if r.NotServed != nil && !valid {
		s.forward(ctx, r.NotServed)
	}
}
