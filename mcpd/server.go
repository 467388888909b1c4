// Package mcpd serves Loci over the Model Context Protocol: tools an agent's
// model calls to remember, recall, give feedback, explain a pack, list and
// forget, and resources for workspaces and receipts. It is a transport like
// httpd: every tool decodes its arguments, calls the service layer with the
// caller's principal, and encodes the result; nothing here decides what is
// stored or packed.
//
// Two transports: stdio (`loci mcp`, one process per client, acting for the
// tenant of the key it was started with) and streamable HTTP at /mcp on the
// API listener (stateless, JSON responses), where every request carries its
// API key like any other API call and is held to the same plans and rate
// limits.
package mcpd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"syscall"

	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/service"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a Server.
type Options struct {
	// Version is the server version reported to clients.
	Version string
	// Principal, when set, is whom every call acts for (stdio: the tenant of
	// the key `loci mcp` was started with). Unset, HTTPHandler authenticates
	// each request once, from X-API-Key or Authorization: Bearer, and its
	// calls act for that caller.
	Principal *service.Principal
	// Logger receives the SDK's messages (default: discarded).
	Logger *slog.Logger
}

// Server is Loci's MCP server over one service.
type Server struct {
	svc   *service.Service
	fixed *service.Principal
	mcp   *mcp.Server
	log   *slog.Logger
}

// instructions tell the client's model how the tools fit together.
const instructions = `Loci is this agent's long-term memory. Call remember to store what happens (user turns, ` +
	`decisions, tool results, documents) in a workspace; call recall before answering, with the question, to get ` +
	`the most relevant stored evidence as a context pack whose lines are cited as [cite:N]; quote those citations. ` +
	`When recall abstains, say the memory holds no evidence rather than guessing. Use feedback to pin spans that ` +
	`must always be included, or to mark one wrong, outdated or private; explain shows why a pack included or ` +
	`excluded each span; list browses workspaces and artifacts; forget erases one artifact for good.`

// New returns an MCP server over svc with every tool and resource.
func New(svc *service.Service, opts Options) *Server {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	s := &Server{svc: svc, fixed: opts.Principal, log: logger}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "loci", Title: "Loci memory", Version: version},
		&mcp.ServerOptions{Instructions: instructions, Logger: logger})
	s.addTools()
	s.addResources()
	return s
}

// MCP returns the SDK server (for in-process transports, tests).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// ServeStdio serves one client over stdin and stdout until it disconnects
// or ctx ends.
func (s *Server) ServeStdio(ctx context.Context) error {
	return s.mcp.Run(ctx, &mcp.StdioTransport{})
}

// HTTPHandler serves streamable HTTP: stateless (no session to lose when a
// node restarts), answering each request with JSON. A request without a
// valid key is refused with 401 before any MCP processing, as the API does.
func (s *Server) HTTPHandler() http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.fixed == nil {
			p, err := s.svc.Authenticate(service.Credentials{APIKey: apiKey(r.Header)})
			if err != nil {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("WWW-Authenticate", `Bearer realm="loci"`)
				w.WriteHeader(http.StatusUnauthorized)
				detail := err.Error()
				if errors.Is(err, service.ErrNoKey) {
					detail = "missing API key: send X-API-Key or Authorization: Bearer"
				}
				b, _ := json.Marshal(map[string]string{"detail": detail})
				w.Write(append(b, '\n'))
				return
			}
			// The SDK hands the request's context to the tool handlers:
			// they act for p without authenticating again.
			r = r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
		}
		jw := &jsonErrors{ResponseWriter: w}
		h.ServeHTTP(jw, r)
		jw.finish()
	})
}

// jsonErrors turns the SDK's plain-text error answers (a malformed JSON-RPC
// message, a wrong content type) into the API's {"detail": ...} bodies,
// keeping their status. Responses are whole JSON documents here (no event
// streams), so an error body is small and buffered.
type jsonErrors struct {
	http.ResponseWriter
	status int // an error status held back, 0 while passing through
	body   bytes.Buffer
}

func (w *jsonErrors) WriteHeader(code int) {
	if code >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.status = code
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *jsonErrors) Write(b []byte) (int, error) {
	if w.status != 0 {
		return w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

func (w *jsonErrors) finish() {
	if w.status == 0 {
		return
	}
	detail, _ := json.Marshal(map[string]string{"detail": strings.TrimSpace(w.body.String())})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Del("Content-Length")
	w.ResponseWriter.WriteHeader(w.status)
	w.ResponseWriter.Write(append(detail, '\n'))
}

// apiKey returns the key of an HTTP request: X-API-Key, else a bearer token.
func apiKey(h http.Header) string {
	if k := h.Get("X-API-Key"); k != "" {
		return k
	}
	if a := h.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return ""
}

// principalKey keys the caller HTTPHandler authenticated in a request's
// context.
type principalKey struct{}

// principal resolves whom a call acts for and admits it under the caller's
// plan and rate limit, counted as endpoint.
func (s *Server) principal(ctx context.Context, endpoint string) (service.Principal, error) {
	var p service.Principal
	if s.fixed != nil {
		p = *s.fixed
	} else if cp, ok := ctx.Value(principalKey{}).(service.Principal); ok {
		p = cp // authenticated by HTTPHandler
	} else {
		return p, errors.New("unauthorized: an API key is required")
	}
	if p.Anonymous() {
		return p, errors.New("unauthorized: an API key is required")
	}
	if _, err := s.svc.Admit(p, service.AdmitRequest{Endpoint: endpoint, Forwarded: routingOf(ctx).Forwarded}); err != nil {
		return p, s.toolError(err)
	}
	return p, nil
}

// Routing is how the HTTP transport routes an MCP request in a cluster
// whose nodes serve some shards each. It travels in the request's context
// under RoutingKey{}; without it (stdio, a single node) every call is
// served here.
type Routing struct {
	// Forwarded: another node of the cluster forwarded the request, after
	// admitting it under the caller's rate limit (it is not counted again).
	Forwarded bool
	// NotServed is set by the first call that needs a shard this node does
	// not serve: the transport then forwards the whole request (stateless,
	// so it is served there as a whole) to the node it names.
	NotServed *service.NotServedError
	// Gather completes a tenant-wide workspace listing with the shards
	// served elsewhere (WorkspacesResult.Elsewhere).
	Gather func(*service.WorkspacesResult) error
}

// RoutingKey keys a request's *Routing in its context.
type RoutingKey struct{}

func routingOf(ctx context.Context) *Routing {
	if r, ok := ctx.Value(RoutingKey{}).(*Routing); ok && r != nil {
		return r
	}
	return &Routing{}
}

// callError is toolError for a call made in ctx: a shard served elsewhere
// is noted for the transport (Routing.NotServed), which forwards the request.
func (s *Server) callError(ctx context.Context, err error) error {
	var ns *service.NotServedError
	if errors.As(err, &ns) {
		if r, ok := ctx.Value(RoutingKey{}).(*Routing); ok && r != nil && r.NotServed == nil {
			r.NotServed = ns
		}
	}
	return s.toolError(err)
}

// listWorkspaces is the caller's tenant-wide workspace listing, gathered
// across the cluster's nodes when this one serves only some shards.
func (s *Server) listWorkspaces(ctx context.Context, p service.Principal) (service.WorkspacesResult, error) {
	res, err := s.svc.ListWorkspaces(p)
	if err != nil || len(res.Elsewhere) == 0 {
		return res, err
	}
	if g := routingOf(ctx).Gather; g != nil {
		return res, g(&res)
	}
	return res, res.Elsewhere[0]
}

// toolError words an error for the model: bad input, not found, conflicts,
// limits and the service's own refusals keep their message, which names the
// field or says what to do; anything else (a storage failure) is logged and
// reported as an internal error, as the HTTP API does.
func (s *Server) toolError(err error) error {
	var rl *service.RateLimitedError
	var plan *service.PlanError
	var refusal *service.Error
	var inv *engine.InvalidError
	var cinv *control.InvalidError
	var conflict *engine.IdempotencyConflictError
	switch {
	case errors.Is(err, service.ErrNoKey):
		return errors.New("unauthorized: an API key is required")
	case errors.As(err, &rl):
		return fmt.Errorf("rate limited: %s", rl.Error())
	case errors.As(err, &plan), errors.As(err, &refusal), errors.As(err, &inv), errors.As(err, &cinv), errors.As(err, &conflict),
		errors.Is(err, control.ErrWorkspaceQuota), errors.Is(err, control.ErrJobBacklog):
		return err
	case errors.Is(err, engine.ErrNotFound), errors.Is(err, control.ErrNotFound):
		return errors.New("not found")
	case errors.Is(err, engine.ErrClosed):
		return errors.New("the service is shutting down; retry shortly")
	case errors.Is(err, engine.ErrUnavailable):
		return engine.ErrUnavailable
	case errors.As(err, new(*service.NotServedError)):
		return errors.New("the workspace's shard is being handed over between the cluster's nodes; retry shortly")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return errors.New("the request was cancelled or timed out; retry shortly")
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return errors.New("no space left on device: nothing was stored; retry when space is freed")
	}
	s.log.Error("mcpd: tool call failed", "err", err)
	return errors.New("internal error")
}
