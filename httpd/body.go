package httpd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/loci-memory/loci/service"
	"github.com/valyala/fasthttp"
)

// Request bodies (body.go). fasthttp used to read a request's whole body
// before the handler ran, allocating its declared Content-Length at once:
// connections that declared large bodies (under the limit) and sent them
// slowly held that much memory each before the key was checked. The server
// now streams bodies (fasthttp's StreamRequestBody): fasthttp reads the
// headers and at most one byte of the body (Server.HeaderReceived); the rest is read by
// readBody only once the request is routed, authenticated and admitted,
// and within a budget of body bytes held across the server
// (Config.MaxBodyBytesInFlight). A request answered without its body being
// read has its connection closed after the answer, the rest of the body
// discarded as it arrives (lingerOnClose), never held.

// smallBody is the largest body read outside the budget: at most that much
// per connection (MaxConns of them), so that a budget taken by large slow
// bodies does not stop small requests.
const smallBody = 8 << 10

// DefaultMaxBodyBytesInFlight is the default budget of request body bytes
// the server holds at once.
const DefaultMaxBodyBytesInFlight = 256 << 20

// budgetStep is how much more of the budget a chunked body (no declared
// length) takes each time it has read what it took.
const budgetStep = 64 << 10

// Refusals of a body, answered by bodyFail.
var (
	errBodyBudget = errors.New("the server is receiving too many request bodies at once (LOCI_MAX_BODY_BYTES_IN_FLIGHT): nothing was read or stored; retry shortly")
	errBodyLarge  = errors.New("request body too large")
)

// bodyBudget bounds the bytes of request bodies being read or held at once.
// Taking never waits: a request over the budget is refused (503), so a
// flood of slow bodies cannot hold the server's memory.
type bodyBudget struct {
	mu    sync.Mutex
	used  int64
	limit int64
}

func (b *bodyBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit {
		return false
	}
	b.used += n
	return true
}

// inUse is the bytes taken now.
func (b *bodyBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

func (b *bodyBudget) give(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// bodyPending reports whether the request has a body not read yet (all of
// it but a byte may still be on the wire).
func bodyPending(ctx *fasthttp.RequestCtx) bool {
	n := ctx.Request.Header.ContentLength()
	return ctx.RequestBodyStream() != nil && (n == -1 || n > 0)
}

// readBody reads a streamed body into the request, taking its size from
// the budget (given back by handle when the request ends, from sv.budget).
func (s *Server) readBody(ctx *fasthttp.RequestCtx, sv *served) error {
	if !bodyPending(ctx) {
		return nil
	}
	max := int64(s.cfg.MaxRequestBytes)
	n := int64(ctx.Request.Header.ContentLength())
	r := ctx.RequestBodyStream()
	if n >= 0 {
		if n > max {
			return errBodyLarge
		}
		if n > smallBody {
			if !s.bodies.take(n) {
				return errBodyBudget
			}
			sv.budget = n
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(r, buf); err != nil {
			return fmt.Errorf("reading the request body: %w", err)
		}
		ctx.Request.SetBodyRaw(buf)
		return nil
	}
	// Chunked: no declared length; take the budget as the body arrives.
	var b bytes.Buffer
	for {
		if int64(b.Len()) > max {
			return errBodyLarge
		}
		if !s.bodies.take(budgetStep) {
			return errBodyBudget
		}
		sv.budget += budgetStep
		m, err := io.CopyN(&b, r, budgetStep)
		if errors.Is(err, io.EOF) || err == nil && m < budgetStep {
			break
		}
		if err != nil {
			return fmt.Errorf("reading the request body: %w", err)
		}
	}
	if int64(b.Len()) > max {
		return errBodyLarge
	}
	ctx.Request.SetBodyRaw(b.Bytes())
	return nil
}

// bodyFail answers a request whose body could not be read; the connection
// is closed after the answer (the body was not read to its end).
func (s *Server) bodyFail(ctx *fasthttp.RequestCtx, err error) {
	switch {
	case errors.Is(err, errBodyBudget):
		ctx.Response.Header.Set("Retry-After", "1")
		writeError(ctx, fasthttp.StatusServiceUnavailable, err.Error())
	case errors.Is(err, errBodyLarge):
		s.tooLarge(ctx)
	default:
		writeError(ctx, fasthttp.StatusBadRequest, err.Error())
	}
}

// declaredTooLarge answers 413 to a request whose Content-Length exceeds
// the limit, before anything of its body is read; it reports whether it did.
func (s *Server) declaredTooLarge(ctx *fasthttp.RequestCtx) bool {
	if int64(ctx.Request.Header.ContentLength()) <= int64(s.cfg.MaxRequestBytes) {
		return false
	}
	s.tooLarge(ctx)
	return true
}

// tooLarge answers a body over MaxRequestBytes with 413.
func (s *Server) tooLarge(ctx *fasthttp.RequestCtx) {
	writeError(ctx, fasthttp.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds the limit of %d bytes (MAX_REQUEST_SIZE_BYTES)", s.cfg.MaxRequestBytes))
}

// closeUnread closes the connection after the answer when the request's
// body was not read to its end, discarding what the client still sends
// (lingerOnClose), so that the client reads the answer and the next request
// on the connection is not parsed from the rest of this body.
func closeUnread(ctx *fasthttp.RequestCtx) {
	if !bodyPending(ctx) {
		return
	}
	ctx.SetConnectionClose()
	lingerOnClose(ctx.Conn())
}

// mcpBody reads the body of a POST /mcp, which mcpd authenticates itself,
// once its key is valid; it reports whether to go on. A request with an
// invalid key is handed to mcpd without its body, which mcpd answers 401
// from the headers alone.
func (s *Server) mcpBody(ctx *fasthttp.RequestCtx, sv *served) bool {
	if bodyPending(ctx) && !s.svc.KeyValid(requestKey(&ctx.Request.Header)) {
		closeUnread(ctx)
		ctx.Request.SetBodyRaw([]byte{})
		return true
	}
	if err := s.readBody(ctx, sv); err != nil {
		s.bodyFail(ctx, err)
		return false
	}
	return true
}

// requestKey is the API key of a request, the one place httpd reads it
// (service.PresentedKey: X-API-Key, else Authorization: Bearer), so that
// every route accepts either header (docs/api.md § Authentication).
func requestKey(h *fasthttp.RequestHeader) string {
	return service.PresentedKey(string(h.Peek("X-API-Key")), string(h.Peek("Authorization")))
}
