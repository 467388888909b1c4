package mcpd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/loci-memory/loci/service"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Limits of one frame (an HTTP request's body, a line over stdio).
const (
	// MaxBatch is the most JSON-RPC messages one batch may hold. Batches
	// are part of protocol versions 2025-03-26 and earlier only (2025-06-18
	// removed them, and the SDK refuses them from clients that negotiated a
	// later version); they stay accepted for those older clients, but no
	// client needs thousands of messages in one frame: 32 covers a client
	// that batches its start-up calls, and bounds what one frame can make
	// the server do.
	MaxBatch = 32
	// DefaultMaxResponseBytes bounds the answers to one HTTP request (all
	// the answers of a batch together) and to one message over stdio
	// (Options.MaxResponseBytes changes it). A message that would pass it
	// is answered with a JSON-RPC error (CodeResponseTooLarge) instead of
	// its result; once it is reached, the batch's remaining calls are
	// refused without being run. The largest single answer (a recall of
	// 128,000 tokens) is a few MB.
	DefaultMaxResponseBytes = 16 << 20
)

// JSON-RPC error codes of Loci's own, in the range JSON-RPC leaves to
// implementations (-32000 to -32099).
const (
	// CodeRateLimited: the tenant's rate limit refused the message (a tool
	// call gets a tool error instead, which the model reads). The error's
	// data is {"retry_after_s": N}.
	CodeRateLimited = -32029
	// CodeResponseTooLarge: the answer would pass the response limit.
	CodeResponseTooLarge = -32030
)

// exchange is what the messages of one HTTP request share: the caller's
// rate limit as the last admission left it, for the X-RateLimit-* headers,
// and the Retry-After of the messages it refused. Messages may be handled
// concurrently.
type exchange struct {
	mu         sync.Mutex
	quota      service.Quota
	admitted   bool
	retryAfter int // seconds, the longest of the messages refused by the rate limit; 0: none
}

// exchangeKey keys a request's *exchange in its context.
type exchangeKey struct{}

func exchangeOf(ctx context.Context) *exchange {
	ex, _ := ctx.Value(exchangeKey{}).(*exchange)
	return ex
}

// admit records one admission's quota; the lowest remaining wins, as
// admissions of concurrent messages may finish in any order.
func (ex *exchange) admit(q service.Quota, err error) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if q.Limit > 0 && (!ex.admitted || q.Remaining < ex.quota.Remaining) {
		ex.quota = q
	}
	ex.admitted = true
	var rl *service.RateLimitedError
	if errors.As(err, &rl) && rl.RetryAfterSeconds() > ex.retryAfter {
		ex.retryAfter = rl.RetryAfterSeconds()
	}
}

// state returns the quota to report (ok false when no message was admitted
// yet) and the Retry-After seconds (0: none was refused).
func (ex *exchange) state() (q service.Quota, ok bool, retryAfter int) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.quota, ex.admitted, ex.retryAfter
}

// usage collects what one message's handler adds to the tenant's usage
// (artifacts ingested, packs served); the admission middleware meters it
// with the request once the handler returns.
type usage struct {
	mu    sync.Mutex
	delta service.UsageDelta
}

type usageKey struct{}

// addUsage adds u to the usage of the message being handled in ctx.
func addUsage(ctx context.Context, u service.UsageDelta) {
	if m, ok := ctx.Value(usageKey{}).(*usage); ok {
		m.mu.Lock()
		m.delta.Artifacts += u.Artifacts
		m.delta.RawBytes += u.RawBytes
		m.delta.Packs += u.Packs
		m.delta.Tokens += u.Tokens
		m.mu.Unlock()
	}
}

// notification reports whether method is a notification (it has no
// answer); MCP names every notification notifications/...
func notification(method string) bool { return strings.HasPrefix(method, "notifications/") }

// endpoint is the usage counter's name of a message: "MCP <tool>" for a
// call of one of Loci's tools, "MCP notifications" for any notification,
// else "MCP <method>" (the SDK refuses unknown methods before they get
// here, so a caller cannot invent counter names).
func (s *Server) endpoint(method string, req mcp.Request) string {
	if notification(method) {
		return "MCP notifications" // as HTTPHandler counts them, before the SDK checks their method
	}
	if ct, ok := req.(*mcp.CallToolRequest); ok && ct.Params != nil && s.tools[ct.Params.Name] {
		return "MCP " + ct.Params.Name
	}
	return "MCP " + method
}

// admission is the middleware every incoming message goes through, on
// every transport: it admits the message under the caller's plan (each
// message of a batch is one request against the rate limit, whatever its
// method), runs it, bounds its answer by the response limit, and meters it
// like an API request (every admitted message counts, with what its
// handler added: a refused tool call counts as a REST request answered
// 400 does). Over HTTP, notifications were admitted by HTTPHandler before
// the SDK answered 202, so they are not admitted again here.
func (s *Server) admission(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ex := exchangeOf(ctx)
		if notification(method) && ex != nil {
			return next(ctx, method, req)
		}
		p, err := s.caller(ctx)
		if err != nil {
			return s.refuse(method, err)
		}
		name := s.endpoint(method, req)
		q, err := s.svc.Admit(p, service.AdmitRequest{Endpoint: name, Forwarded: routingOf(ctx).Forwarded})
		if ex != nil {
			ex.admit(q, err)
		}
		if err != nil {
			return s.refuse(method, err)
		}
		u := &usage{}
		res, err := next(context.WithValue(ctx, usageKey{}, u), method, req)
		if r, ok := res.(*mcp.CallToolResult); ok && r != nil {
			if ct, ok := req.(*mcp.CallToolRequest); ok && ct.Params != nil {
				rewordBound(ct.Params.Name, r)
			}
		}
		if res != nil {
			if b, merr := json.Marshal(res); merr == nil && len(b) > s.maxResponse {
				res, err = nil, s.tooLarge(len(b))
			}
		}
		if routingOf(ctx).NotServed == nil { // else the node it is forwarded to meters it
			u.mu.Lock()
			s.svc.Meter(p, name, u.delta)
			u.mu.Unlock()
		}
		return res, err
	}
}

// tooLarge is the error that replaces an answer of n bytes past the
// response limit (alone, or with the answers before it in its batch).
func (s *Server) tooLarge(n int) *jsonrpc.Error {
	return &jsonrpc.Error{Code: CodeResponseTooLarge, Message: fmt.Sprintf(
		"the answer of %d bytes would take the answers to this request past the limit of %d bytes, so it was left out "+
			"(anything the message changed is done); ask for less (max_tokens, limit) or send it in a request of its own",
		n, s.maxResponse)}
}

// refuse answers a message that is not run: a tool call with a tool error
// (which the model reads), a rate-limited request with CodeRateLimited,
// anything else with the error as it is.
func (s *Server) refuse(method string, err error) (mcp.Result, error) {
	var rl *service.RateLimitedError
	if errors.As(err, &rl) && method != "tools/call" {
		data, _ := json.Marshal(map[string]int{"retry_after_s": rl.RetryAfterSeconds()})
		return nil, &jsonrpc.Error{Code: CodeRateLimited, Message: err.Error(), Data: data}
	}
	err = s.toolError(err)
	if method == "tools/call" {
		res := &mcp.CallToolResult{}
		res.SetError(err)
		return res, nil
	}
	return nil, err
}
