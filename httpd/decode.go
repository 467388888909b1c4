package httpd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/engine"
	"github.com/valyala/fasthttp"
)

// decodeBody decodes a JSON request body into v. Unknown top-level fields
// are ignored (forward compatibility); the error names the offending field.
func decodeBody(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errors.New("request body is empty; expected a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return jsonError(err, "")
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("malformed JSON: trailing data after the top-level value")
	}
	return nil
}

// decodeStrict decodes an access-control object (policy, permissions):
// unknown fields are refused, since a misspelt field must not silently
// widen access. field prefixes the names in errors.
func decodeStrict(raw json.RawMessage, field string, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err, field)
	}
	return nil
}

// jsonError turns a decoding error into a message naming the field.
func jsonError(err error, prefix string) error {
	join := func(f string) string {
		switch {
		case prefix == "":
			return f
		case f == "":
			return prefix
		}
		return prefix + "." + f
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("malformed JSON at byte %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		return fmt.Errorf("%s: expected %s, got JSON %s", join(typ.Field), typ.Type.String(), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return errors.New("malformed JSON: unexpected end of input")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return fmt.Errorf("%s: unknown field %q", join(""), name)
	}
	if prefix != "" {
		return fmt.Errorf("%s: %v", prefix, err)
	}
	return fmt.Errorf("malformed JSON: %v", err)
}

// parseTime reads an ISO 8601 date-time; one without a zone is UTC.
func parseTime(field, v string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%s: %q is not an ISO 8601 date-time (e.g. 2024-05-01T12:00:00Z)", field, v)
}

// fail writes the HTTP form of an engine or control error.
func (s *Server) fail(ctx *fasthttp.RequestCtx, err error) {
	var inv *engine.InvalidError
	var cinv *control.InvalidError
	switch {
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
	case errors.Is(err, engine.ErrClosed):
		writeError(ctx, fasthttp.StatusServiceUnavailable, "the service is shutting down")
	default:
		s.log.Error("httpd: request failed", "path", string(ctx.Path()), "request_id", requestID(ctx), "err", err)
		writeError(ctx, fasthttp.StatusInternalServerError, "internal error")
	}
}

func badRequest(ctx *fasthttp.RequestCtx, err error) {
	writeError(ctx, fasthttp.StatusBadRequest, err.Error())
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func hashString(h [32]byte) string { return fmt.Sprintf("sha256:%x", h) }
