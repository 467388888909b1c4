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
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/loci-memory/loci/service"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
	// MaxResponseBytes bounds the answers to one request (default
	// DefaultMaxResponseBytes).
	MaxResponseBytes int
}

// Server is Loci's MCP server over one service.
type Server struct {
	svc   *service.Service
	fixed *service.Principal
	mcp   *mcp.Server
	log   *slog.Logger
	tools map[string]bool // the names of Loci's tools (usage counter names)
	// maxResponse is Options.MaxResponseBytes.
	maxResponse int
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
	s := &Server{svc: svc, fixed: opts.Principal, log: logger, maxResponse: opts.MaxResponseBytes}
	if s.maxResponse <= 0 {
		s.maxResponse = DefaultMaxResponseBytes
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "loci", Title: "Loci memory", Version: version},
		&mcp.ServerOptions{Instructions: instructions, Logger: logger})
	s.addTools()
	s.addResources()
	s.mcp.AddReceivingMiddleware(s.admission)
	return s
}

// MCP returns the SDK server (for in-process transports, tests).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// ServeStdio serves one client over in and out (stdin and stdout), one
// message or batch a line, until in ends or ctx does. A line that is not a
// JSON-RPC message is answered with a JSON-RPC error, and serving goes on.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	return s.mcp.Run(ctx, &lineTransport{in: in, out: out})
}

// HTTPHandler serves streamable HTTP: stateless (no session to lose when a
// node restarts), answering each request with JSON. A request without a
// valid key is refused with 401 before any MCP processing, as the API does;
// a body checkFrame refuses gets 400 with a JSON-RPC error (and counts as
// one request against the rate limit, as a malformed API request does).
// Every message of the body is one request against the caller's rate
// limit; the answer carries X-RateLimit-Limit and X-RateLimit-Remaining as
// the last admission left them, and Retry-After when one was refused.
func (s *Server) HTTPHandler() http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p service.Principal
		if s.fixed != nil {
			p = *s.fixed
		} else {
			var err error
			if p, err = s.svc.Authenticate(service.Credentials{APIKey: apiKey(r.Header)}); err != nil {
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
		}
		// The SDK hands the request's context to the handlers: they act
		// for p without authenticating again, and share ex.
		ex := &exchange{}
		ctx := context.WithValue(context.WithValue(r.Context(), principalKey{}, p), exchangeKey{}, ex)
		r = r.WithContext(ctx)
		// An answer refusing the request before any of its messages was
		// admitted (malformed, or refused by the SDK) counts as one request.
		jw := &jsonErrors{ResponseWriter: w, ex: ex, whole: func() { s.admitWhole(ctx, p, ex) }}
		// The body is in memory already (fasthttp read it whole, within
		// MAX_REQUEST_SIZE_BYTES); it is checked before the SDK decodes it.
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(jw, "reading the request body: "+err.Error(), http.StatusBadRequest)
			jw.finish()
			return
		}
		msgs, ferr := checkFrame(body, "request body")
		if ferr == nil && isBatch(body) {
			if v := r.Header.Get("Mcp-Protocol-Version"); v >= batchesRemoved {
				ferr = &frameError{err: jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(
					"invalid request: protocol %s has no JSON-RPC batches (removed in %s); send one message per request", v, batchesRemoved)}}
			} else {
				s.serveBatch(jw, r, h, msgs, body)
				return
			}
		}
		if ferr == nil {
			ferr = s.admitNotifications(ctx, p, msgs)
		}
		if ferr != nil {
			status := http.StatusBadRequest
			if ferr.err.Code == CodeRateLimited {
				status = http.StatusTooManyRequests
			}
			jw.Header().Set("Content-Type", "application/json")
			jw.WriteHeader(status)
			jw.Write(ferr.response(true))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(jw, r)
		jw.finish()
	})
}

// serveBatch serves a batch (protocol 2025-03-26 and earlier) as requests
// of one message each, in the batch's order, and answers the array of
// their answers: what the rate limit admits and what fits in
// the response limit is then decided in that order, not by how the SDK would
// schedule the batch's calls concurrently, so the same batch gets the same
// answer. Once the answers reach the response limit, the calls left are
// answered CodeResponseTooLarge without being run.
func (s *Server) serveBatch(w *jsonErrors, r *http.Request, h http.Handler, msgs []jsonrpc.Message, body []byte) {
	ctx := r.Context()
	p, _ := ctx.Value(principalKey{}).(service.Principal)
	var raws []json.RawMessage
	json.Unmarshal(body, &raws) // checked by checkFrame
	var answers [][]byte
	answered := 0
	for i, m := range msgs {
		req, _ := m.(*jsonrpc.Request)
		if req == nil || !req.IsCall() {
			// A notification (or a response to the server, which a
			// stateless server never asks for): no answer.
			if req != nil && s.admitNotifications(ctx, p, msgs[i:i+1]) != nil {
				continue // refused: said by Retry-After and X-RateLimit-Remaining
			}
		} else if answered >= s.maxResponse {
			answers = append(answers, elementError(req.ID, &jsonrpc.Error{Code: CodeResponseTooLarge, Message: fmt.Sprintf(
				"not run: the answers to this batch reach the limit of %d bytes; send this message in a request of its own", s.maxResponse)}))
			continue
		}
		one := r.Clone(ctx)
		one.Body = io.NopCloser(bytes.NewReader(raws[i]))
		one.ContentLength = int64(len(raws[i]))
		rec := &recorder{header: http.Header{}}
		h.ServeHTTP(rec, one)
		if req == nil || !req.IsCall() {
			continue
		}
		answer := bytes.TrimSpace(rec.body.Bytes())
		switch {
		case rec.status != 0 && rec.status != http.StatusOK:
			// The SDK refused the message before running it (an unknown
			// method, missing params): its plain-text reason.
			answer = elementError(req.ID, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: string(answer)})
		case answered+len(answer) > s.maxResponse:
			answer = elementError(req.ID, s.tooLarge(len(answer)))
			answered = s.maxResponse
		}
		answered += len(answer)
		answers = append(answers, answer)
	}
	if len(answers) == 0 {
		w.writeHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.writeHeader(http.StatusOK)
	w.Write(append(append([]byte("["), bytes.Join(answers, []byte(","))...), "]\n"...))
}

// elementError is the JSON-RPC error answer e to the call with id.
func elementError(id jsonrpc.ID, e *jsonrpc.Error) []byte {
	b, _ := json.Marshal(errorResponse{JSONRPC: "2.0", ID: must(json.Marshal(id.Raw())), Error: *e})
	return b
}

func must(b []byte, _ error) json.RawMessage { return b }

// recorder keeps the answer to one message of a batch.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}

// admitNotifications admits the notifications of a request before the SDK
// answers 202 for them (their handlers run after the answer is written):
// each is one request against the rate limit, counted in usage as "MCP
// notifications". Calls are admitted by the admission middleware as they
// are handled. A refused notification refuses the request (429): a
// notification has no answer to carry the refusal.
func (s *Server) admitNotifications(ctx context.Context, p service.Principal, msgs []jsonrpc.Message) *frameError {
	ex := exchangeOf(ctx)
	for _, m := range msgs {
		r, ok := m.(*jsonrpc.Request)
		if !ok || r.IsCall() {
			continue
		}
		q, err := s.svc.Admit(p, service.AdmitRequest{Endpoint: "MCP notifications", Forwarded: routingOf(ctx).Forwarded})
		ex.admit(q, err)
		if err != nil {
			return &frameError{err: jsonrpc.Error{Code: CodeRateLimited, Message: s.toolError(err).Error()}}
		}
		s.svc.Meter(p, "MCP notifications", service.UsageDelta{})
	}
	return nil
}

// admitWhole counts a request refused as a whole, before any of its
// messages was admitted, as one request ("POST /mcp") against the rate
// limit, as a malformed API request is, so that its answer carries the
// caller's quota too.
func (s *Server) admitWhole(ctx context.Context, p service.Principal, ex *exchange) {
	q, err := s.svc.Admit(p, service.AdmitRequest{Endpoint: "POST /mcp", Forwarded: routingOf(ctx).Forwarded})
	ex.admit(q, err)
	if err == nil {
		s.svc.Meter(p, "POST /mcp", service.UsageDelta{})
	}
}

// jsonErrors turns the SDK's plain-text error answers (a malformed JSON-RPC
// message, a wrong content type) into the API's {"detail": ...} bodies,
// keeping their status. Responses are whole JSON documents here (no event
// streams), so an error body is small and buffered.
//
// It also writes the exchange's rate-limit headers with the status line.
type jsonErrors struct {
	http.ResponseWriter
	ex      *exchange
	whole   func() // admits the request as a whole, when an error answers it before any message was admitted
	status  int    // an error status held back, 0 while passing through
	body    bytes.Buffer
	started bool // the status line was written
}

func (w *jsonErrors) WriteHeader(code int) {
	if code >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.status = code
		return
	}
	w.writeHeader(code)
}

// writeHeader writes the status line with the rate-limit headers.
func (w *jsonErrors) writeHeader(code int) {
	if w.started {
		return
	}
	w.started = true
	if _, ok, _ := w.ex.state(); !ok && code >= 400 && w.whole != nil {
		w.whole()
	}
	if q, ok, retry := w.ex.state(); ok {
		if q.Limit > 0 {
			w.Header().Set("X-RateLimit-Limit", strconv.Itoa(q.Limit))
			w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(q.Remaining))
		}
		if retry > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(retry))
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *jsonErrors) Write(b []byte) (int, error) {
	if w.status != 0 {
		return w.body.Write(b)
	}
	w.writeHeader(http.StatusOK)
	return w.ResponseWriter.Write(b)
}

func (w *jsonErrors) finish() {
	if w.status == 0 {
		return
	}
	detail, _ := json.Marshal(map[string]string{"detail": strings.TrimSpace(w.body.String())})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Del("Content-Length")
	w.writeHeader(w.status)
	w.ResponseWriter.Write(append(detail, '\n'))
}

// apiKey returns the key of an HTTP request (service.PresentedKey).
func apiKey(h http.Header) string {
	return service.PresentedKey(h.Get("X-API-Key"), h.Get("Authorization"))
}

// errUnauthorized refuses a message without a caller.
var errUnauthorized = errors.New("unauthorized: an API key is required")

// principalKey keys the caller HTTPHandler authenticated in a request's
// context.
type principalKey struct{}

// caller resolves whom a message acts for (the admission middleware
// admitted it under the caller's plan and rate limit).
func (s *Server) caller(ctx context.Context) (service.Principal, error) {
	var p service.Principal
	if s.fixed != nil {
		p = *s.fixed
	} else if cp, ok := ctx.Value(principalKey{}).(service.Principal); ok {
		p = cp // authenticated by HTTPHandler
	} else {
		return p, errUnauthorized
	}
	if p.Anonymous() {
		return p, errUnauthorized
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

// toolError words an error for the model, by its kind (service.Classify):
// the one place where the MCP transport words errors. Bad input, refusals,
// conflicts and limits keep their message, which names the field or says
// what to do; anything else (a storage failure) is logged and reported as
// an internal error, as the HTTP API does.
func (s *Server) toolError(err error) error {
	if errors.Is(err, errUnauthorized) {
		return errUnauthorized
	}
	f := service.Classify(err)
	switch f.Kind {
	case service.KindNoKey:
		return errUnauthorized
	case service.KindRateLimited:
		return fmt.Errorf("rate limited: %s", f.Detail)
	case service.KindInvalid, service.KindUnauthorized, service.KindForbidden, service.KindPlan, service.KindConflict,
		service.KindJobBacklog, service.KindBackpressure, service.KindNotFound, service.KindUnavailable:
		// The detail a caller may see, without the wrapping a call path
		// added ("ingest: ..."), as the HTTP API answers it.
		return errors.New(f.Detail)
	case service.KindShuttingDown:
		return errors.New("the service is shutting down; retry shortly")
	case service.KindNotServed:
		return errors.New("the workspace's shard is being handed over between the cluster's nodes; retry shortly")
	case service.KindCanceled, service.KindTimeout:
		return errors.New("the request was cancelled or timed out; retry shortly")
	case service.KindDiskFull:
		return errors.New("no space left on device: nothing was stored; retry when space is freed")
	}
	s.log.Error("mcpd: tool call failed", "err", err)
	return errors.New("internal error")
}
