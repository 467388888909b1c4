package httpd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/engine"
	"github.com/valyala/fasthttp"
)

// decodeBody decodes a JSON request body into v. Unknown fields are
// refused, naming the field: a misspelt one (max_token) would otherwise
// silently fall back to its default. The check is part of the one decoding
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
	return decodeAt(body, "", v)
}

// decodeAt decodes the JSON value raw, found at path in the request
// (artifacts[3], policy; "" for the body), into v, refusing unknown fields;
// errors name fields by their full path (artifacts[3].metdata).
func decodeAt(raw []byte, path string, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err, path, v)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("malformed JSON: trailing data after the top-level value")
	}
	return nil
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

// decodeStrict decodes an optional object (policy, permissions) found at
// path: absent or null leaves v as it is. Unknown fields are refused as in
// decodeBody; for access control that matters most, since a misspelt field
// must not silently widen access.
func decodeStrict(raw json.RawMessage, path string, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return decodeAt(raw, path, v)
}

// jsonError turns a decoding error of v, at path, into a message naming the field.
func jsonError(err error, path string, v any) error {
	join := func(f string) string {
		switch {
		case path == "":
			return f
		case f == "":
			return path
		}
		return path + "." + f
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("malformed JSON at byte %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		if typ.Field == "" && path == "" {
			return fmt.Errorf("request body: expected a JSON object, got JSON %s", typ.Value)
		}
		return fmt.Errorf("%s: expected %s, got JSON %s", join(typ.Field), typeName(typ.Type), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return errors.New("malformed JSON: unexpected end of input")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return fmt.Errorf("%s: unknown field; allowed fields here: %s", join(name), knownFields(v))
	}
	if path != "" {
		return fmt.Errorf("%s: %v", path, err)
	}
	return fmt.Errorf("malformed JSON: %v", err)
}

// fieldNames appends the JSON field names of struct type t to names, those
// of embedded structs in place, as encoding/json promotes them.
func fieldNames(t reflect.Type, names []string) []string {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			names = fieldNames(f.Type, names)
			continue
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}

// typeName names a Go type as JSON would.
func typeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}

// knownFieldsCache maps a struct type to the list of its JSON field names.
var knownFieldsCache sync.Map

// knownFields lists the JSON fields v's struct type accepts, for the
// message of an unknown field (only built on that error path).
func knownFields(v any) string {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return "none"
	}
	if s, ok := knownFieldsCache.Load(t); ok {
		return s.(string)
	}
	s := strings.Join(fieldNames(t, nil), ", ")
	if s == "" {
		s = "none"
	}
	knownFieldsCache.Store(t, s)
	return s
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

// diskFullRetrySeconds is the Retry-After of a 507: freeing space is an
// operator's job, so clients should not hammer the server meanwhile.
const diskFullRetrySeconds = 30

// fail writes the HTTP form of an engine or control error.
func (s *Server) fail(ctx *fasthttp.RequestCtx, err error) {
	var inv *engine.InvalidError
	var cinv *control.InvalidError
	var conflict *engine.IdempotencyConflictError
	switch {
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
	case errors.Is(err, engine.ErrClosed):
		writeError(ctx, fasthttp.StatusServiceUnavailable, "the service is shutting down")
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

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func hashString(h [32]byte) string { return fmt.Sprintf("sha256:%x", h) }
