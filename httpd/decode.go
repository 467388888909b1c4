package httpd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/service"
	"github.com/valyala/fasthttp"
)

// decodeBody decodes a JSON request body into v with service.DecodeJSON:
// unknown fields are refused, naming the field, as part of the one decoding
// pass. Free-form values (raw_payload) are json.RawMessage and not checked.
func decodeBody(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errors.New("request body is empty; expected a JSON object")
	}
	// encoding/json replaces invalid UTF-8 in strings it decodes but keeps
	// it in a json.RawMessage (raw_payload), which would be stored and then
	// echoed as invalid JSON: refuse it, naming the field.
	if !utf8.Valid(body) {
		return invalidUTF8(body)
	}
	return service.DecodeJSON(body, "", v)
}

// invalidUTF8 describes the first invalid UTF-8 sequence of body: its byte
// offset and the JSON field whose key or value holds it.
func invalidUTF8(body []byte) error {
	bad := 0
	for bad < len(body) {
		r, size := utf8.DecodeRune(body[bad:])
		if r == utf8.RuneError && size <= 1 {
			break
		}
		bad += size
	}
	if field := fieldAt(body, int64(bad)); field != "" {
		return fmt.Errorf("%s: is not valid UTF-8 (byte %d of the request body)", field, bad)
	}
	return fmt.Errorf("request body: is not valid UTF-8 at byte %d", bad)
}

// fieldAt returns the path (a.b[2].c) of the JSON key or value that holds
// byte offset off of body, or "" when it is outside any field.
func fieldAt(body []byte, off int64) string {
	type frame struct {
		array   bool
		index   int
		key     string
		wantKey bool
	}
	var stack []frame
	path := func() string {
		var b strings.Builder
		for _, f := range stack {
			if f.array {
				fmt.Fprintf(&b, "[%d]", f.index)
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(f.key)
		}
		return b.String()
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.Token()
		if err != nil {
			return path()
		}
		end := dec.InputOffset()
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			if n := len(stack); n > 0 && !stack[n-1].array {
				stack[n-1].wantKey = true
			}
			continue
		}
		var top *frame
		if n := len(stack); n > 0 {
			top = &stack[n-1]
		}
		switch {
		case top != nil && !top.array && top.wantKey: // a key
			top.key, _ = tok.(string)
			top.wantKey = false
			if end > off {
				return path()
			}
			continue
		case top != nil && top.array:
			top.index++
		}
		if end > off {
			return path()
		}
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, frame{array: d == '[', index: -1, wantKey: d == '{'})
		} else if top != nil && !top.array {
			top.wantKey = true
		}
	}
}

// diskFullRetrySeconds is the Retry-After of a 507: freeing space is an
// operator's job, so clients should not hammer the server meanwhile.
const diskFullRetrySeconds = 30

// backpressureRetrySeconds is the Retry-After of an ingest refused while the
// server catches up with flushing and embedding.
const backpressureRetrySeconds = 5

// fail writes the HTTP form of an engine or control error.
func (s *Server) fail(ctx *fasthttp.RequestCtx, err error) {
	var inv *engine.InvalidError
	var cinv *control.InvalidError
	var conflict *engine.IdempotencyConflictError
	var ns *service.NotServedError
	switch {
	case errors.As(err, &ns):
		s.forward(ctx, ns)
	case errors.As(err, &conflict):
		writeError(ctx, fasthttp.StatusConflict, conflict.Error())
	case errors.As(err, &inv):
		writeError(ctx, fasthttp.StatusBadRequest, inv.Error())
	case errors.As(err, &cinv):
		writeError(ctx, fasthttp.StatusBadRequest, cinv.Error())
	case errors.Is(err, engine.ErrNotFound), errors.Is(err, control.ErrNotFound):
		writeError(ctx, fasthttp.StatusNotFound, "not found")
	case errors.Is(err, control.ErrWorkspaceQuota):
		writeError(ctx, fasthttp.StatusForbidden, err.Error())
	case errors.Is(err, control.ErrJobBacklog):
		// Nothing was queued: the same request may be sent again.
		ctx.Response.Header.Set("Retry-After", "1")
		writeError(ctx, fasthttp.StatusTooManyRequests, "too many unfinished indexing jobs for this tenant: nothing was queued; retry when some are done")
	case errors.Is(err, engine.ErrBackpressure):
		// Nothing was stored: the same request may be sent again.
		ctx.Response.Header.Set("Retry-After", strconv.Itoa(backpressureRetrySeconds))
		writeError(ctx, fasthttp.StatusServiceUnavailable, err.Error())
	case errors.Is(err, engine.ErrClosed):
		writeError(ctx, fasthttp.StatusServiceUnavailable, "the service is shutting down")
	case errors.Is(err, engine.ErrUnavailable):
		ctx.Response.Header.Set("Retry-After", "1")
		writeError(ctx, fasthttp.StatusServiceUnavailable, engine.ErrUnavailable.Error())
	case errors.Is(err, context.Canceled):
		// The client has gone (nobody reads this) or the server is stopping.
		ctx.Response.Header.Set("Retry-After", "1")
		writeError(ctx, fasthttp.StatusServiceUnavailable, "request cancelled: the client closed its connection or the service is shutting down")
	case errors.Is(err, context.DeadlineExceeded):
		ctx.Response.Header.Set("Retry-After", "1")
		writeError(ctx, fasthttp.StatusServiceUnavailable, "the service is overloaded: the request did not finish in time; retry shortly")
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		// The engine stores nothing of a write that fails this way, so the
		// client may retry the same request once space is freed.
		s.log.Error("httpd: write refused: disk full", "path", string(ctx.Path()), "request_id", requestID(ctx), "err", err)
		ctx.Response.Header.Set("Retry-After", strconv.Itoa(diskFullRetrySeconds))
		writeError(ctx, fasthttp.StatusInsufficientStorage, "no space left on device: write refused, nothing stored; retry when space is freed")
	default:
		s.log.Error("httpd: request failed", "path", string(ctx.Path()), "request_id", requestID(ctx), "err", err)
		writeError(ctx, fasthttp.StatusInternalServerError, "internal error")
	}
}

func badRequest(ctx *fasthttp.RequestCtx, err error) {
	writeError(ctx, fasthttp.StatusBadRequest, err.Error())
}
