package httpd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/loci-memory/loci/service"
	"github.com/valyala/fasthttp"
)

// decodeBody decodes a JSON request body into v with service.DecodeJSON:
// unknown fields are refused, naming the field, as part of the one decoding
// pass. Free-form values (raw_payload) are json.RawMessage and not checked.
func decodeBody(body []byte, v any) error {
	if err := checkBody(body); err != nil {
		return err
	}
	return service.DecodeJSON(body, "", v)
}

// checkBody refuses a body that is empty or not UTF-8, before decoding.
func checkBody(body []byte) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errors.New("request body is empty; expected a JSON object")
	}
	// encoding/json replaces invalid UTF-8 in strings it decodes but keeps
	// it in a json.RawMessage (raw_payload), which would be stored and then
	// echoed as invalid JSON: refuse it, naming the field.
	if !utf8.Valid(body) {
		return invalidUTF8(body)
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
		steps := make([]service.PathStep, len(stack))
		for i, f := range stack {
			steps[i] = service.PathStep{Key: f.key, Index: -1}
			if f.array {
				steps[i].Index = f.index
			}
		}
		return service.FieldPath(steps)
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

func badRequest(ctx *fasthttp.RequestCtx, err error) {
	writeError(ctx, fasthttp.StatusBadRequest, err.Error())
}
