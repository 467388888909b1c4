package mcpd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A frame is what a transport reads at once: an HTTP request's body, a line
// over stdio. checkFrame is the check every frame passes before the SDK
// reads it, so that what the SDK would refuse by ending a stdio session, or
// rewrite (invalid UTF-8 becomes U+FFFD), or take too much of (a batch of
// thousands of messages) is answered with a JSON-RPC error instead, and
// nothing of the frame is run.

// frameError is a refused frame: the JSON-RPC error to answer, and the id
// of the message when the frame is one message whose id could be read.
type frameError struct {
	id  json.RawMessage // nil: null
	err jsonrpc.Error
}

// checkFrame checks frame b (named what in messages: "request body",
// "line"): UTF-8 JSON holding one JSON-RPC message object, or a batch (an
// array) of 1 to MaxBatch message objects. It returns the messages,
// decoded by the SDK's own decoder (what it accepts), or the error.
func checkFrame(b []byte, what string) ([]jsonrpc.Message, *frameError) {
	if !utf8.Valid(b) {
		return nil, &frameError{err: jsonrpc.Error{Code: jsonrpc.CodeParseError,
			Message: fmt.Sprintf("parse error: the %s is not valid UTF-8 at byte %d (JSON text must be UTF-8); nothing was run", what, invalidAt(b))}}
	}
	if !json.Valid(b) {
		var syn *json.SyntaxError
		msg := "not JSON"
		if err := json.Unmarshal(b, new(struct{})); err != nil {
			msg = err.Error()
			if errors.As(err, &syn) {
				msg = fmt.Sprintf("%v (byte %d)", syn, syn.Offset)
			}
		}
		return nil, &frameError{err: jsonrpc.Error{Code: jsonrpc.CodeParseError,
			Message: fmt.Sprintf("parse error: the %s is not JSON: %s; nothing was run", what, msg)}}
	}
	t := bytes.TrimLeft(b, " \t\r\n")
	switch {
	case len(t) > 0 && t[0] == '{':
		m, err := jsonrpc.DecodeMessage(t)
		if err != nil {
			return nil, &frameError{id: idOf(t), err: jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
				Message: fmt.Sprintf("invalid request: %v; nothing was run", err)}}
		}
		return []jsonrpc.Message{m}, nil
	case len(t) > 0 && t[0] == '[':
		n := countElements(t)
		switch {
		case n == 0:
			return nil, &frameError{err: jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
				Message: "invalid request: an empty batch ([]); send a JSON-RPC message object"}}
		case n > MaxBatch:
			return nil, &frameError{err: jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(
				"invalid request: a batch of %d messages exceeds the limit of %d per batch; nothing was run (send fewer per batch, or one per request: protocol 2025-06-18 and later have no batches)",
				n, MaxBatch)}}
		}
		var raws []json.RawMessage
		if err := json.Unmarshal(t, &raws); err != nil { // valid JSON: cannot fail
			return nil, &frameError{err: jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: err.Error()}}
		}
		msgs := make([]jsonrpc.Message, len(raws))
		for i, raw := range raws {
			m, err := jsonrpc.DecodeMessage(raw)
			if err != nil {
				return nil, &frameError{err: jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
					Message: fmt.Sprintf("invalid request: batch element %d: %v; nothing was run", i, err)}}
			}
			msgs[i] = m
		}
		return msgs, nil
	}
	return nil, &frameError{err: jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
		Message: "invalid request: a JSON-RPC message is a JSON object (or, up to protocol 2025-03-26, an array of them)"}}
}

// isBatch reports whether frame b (checked by checkFrame) is a batch.
func isBatch(b []byte) bool { return bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("[")) }

// invalidAt is the byte offset of the first invalid UTF-8 sequence of b.
func invalidAt(b []byte) int {
	at := 0
	for at < len(b) {
		r, size := utf8.DecodeRune(b[at:])
		if r == utf8.RuneError && size <= 1 {
			return at
		}
		at += size
	}
	return at
}

// countElements counts the elements of the JSON array b (valid JSON) by
// scanning it, without decoding them: a batch of millions of elements
// costs no memory to refuse.
func countElements(b []byte) int {
	depth, n := 0, 0
	inString, escaped, empty := false, false, true
	for _, c := range b {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '"':
			inString = true
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case ',':
			if depth == 1 {
				n++
			}
		}
		if depth >= 1 && !(depth == 1 && c == '[') {
			empty = false
		}
	}
	if empty {
		return 0
	}
	return n + 1
}

// idOf is the id of the message object b when it is a string or a number,
// else nil.
func idOf(b []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(b, &m) != nil || len(m.ID) == 0 || (m.ID[0] != '"' && m.ID[0] != '-' && (m.ID[0] < '0' || m.ID[0] > '9')) {
		return nil
	}
	return m.ID
}

// errorResponse is a JSON-RPC error response to a refused frame. Over
// HTTP it also carries the API's detail, the same text, so that a caller
// reading API errors finds it where every other error puts it.
type errorResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   jsonrpc.Error   `json:"error"`
	Detail  string          `json:"detail,omitempty"`
}

// response encodes the answer to e, with detail when withDetail.
func (e *frameError) response(withDetail bool) []byte {
	r := errorResponse{JSONRPC: "2.0", ID: e.id, Error: e.err}
	if r.ID == nil {
		r.ID = json.RawMessage("null")
	}
	if withDetail {
		r.Detail = e.err.Message
	}
	b, _ := json.Marshal(r)
	return append(b, '\n')
}
