package text

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// Extract returns the searchable text of a raw_payload JSON value for an
// artifact type. The layouts per type and the flattening of other values are
// described in the package documentation. Extract fails only when payload is
// not exactly one valid JSON value (surrounding white space allowed).
func Extract(artifactType string, payload []byte) (string, error) {
	v, err := decodeJSON(payload)
	if err != nil {
		return "", fmt.Errorf("text: %s payload: %w", artifactType, err)
	}
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case map[string]any:
		var ok bool
		if s, ok = structured(artifactType, v); !ok {
			s = flatten(v, "\n")
		}
	default:
		s = flatten(v, "\n")
	}
	// encoding/json already replaces invalid UTF-8 in strings; this guards the
	// invariant regardless of how the text was assembled.
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s, nil
}

// errTrailing reports data after the JSON value.
var errTrailing = errors.New("invalid JSON: data after the top-level value")

// decodeJSON decodes exactly one JSON value, keeping numbers as json.Number so
// that they can be written as they appear.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if err == io.EOF {
			return nil, errors.New("invalid JSON: empty")
		}
		return nil, err
	}
	for _, c := range data[dec.InputOffset():] {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return nil, errTrailing
		}
	}
	return v, nil
}

// field is one labelled header line of a structured layout.
type field struct {
	label, value string
}

// structured renders m with the layout of artifactType. It reports false when
// the type has no layout or m holds none of the fields the layout needs, in
// which case the caller flattens m.
func structured(artifactType string, m map[string]any) (string, bool) {
	switch artifactType {
	case "chat_turn":
		content := body(lookup(m, "content", "text", "message", "parts"), false)
		if content == "" {
			return "", false
		}
		if role := inline(lookup(m, "role", "author", "speaker")); role != "" {
			return role + ": " + content, true
		}
		return content, true
	case "document":
		return compose([]field{
			{"Title", inline(lookup(m, "title", "name", "subject"))},
		}, body(lookup(m, "content", "text", "body"), false))
	case "note":
		return compose(nil, body(lookup(m, "content", "text", "body", "note"), false))
	case "email":
		return compose([]field{
			{"Subject", inline(lookup(m, "subject", "title"))},
			{"From", people(lookup(m, "from", "sender"))},
			{"To", people(lookup(m, "to", "recipients"))},
			{"Date", inline(lookup(m, "date", "sent_at", "sentAt", "received_at"))},
		}, body(lookup(m, "body", "text", "content"), false))
	case "calendar_event":
		return compose([]field{
			{"Title", inline(lookup(m, "title", "summary", "subject", "name"))},
			{"Start", when(lookup(m, "start", "start_time", "startTime", "starts_at"))},
			{"End", when(lookup(m, "end", "end_time", "endTime", "ends_at"))},
			{"Location", inline(lookup(m, "location", "place"))},
			{"Attendees", people(lookup(m, "attendees", "participants", "invitees"))},
		}, body(lookup(m, "description", "body", "notes", "details"), false))
	case "meeting_transcript":
		return compose([]field{
			{"Title", inline(lookup(m, "title", "name", "subject", "topic"))},
		}, transcript(lookup(m, "transcript", "segments", "utterances", "turns", "text", "content")))
	case "tool_call":
		args := lookup(m, "arguments", "args", "input", "parameters", "params")
		if args == nil {
			if fn, ok := m["function"].(map[string]any); ok {
				args = lookup(fn, "arguments", "args", "input", "parameters", "params")
			}
		}
		return compose([]field{{"Tool", toolName(m)}}, body(args, true))
	case "tool_result":
		return compose([]field{{"Tool", toolName(m)}},
			body(lookup(m, "result", "output", "content", "response", "error"), true))
	case "attachment":
		// blob_pointer is deliberately not among the keys: it is never fetched.
		return compose([]field{
			{"Filename", inline(lookup(m, "filename", "file_name", "fileName", "name"))},
			{"Media type", inline(lookup(m, "media_type", "mediaType", "mime_type", "mimeType", "content_type", "contentType"))},
			{"Description", inline(lookup(m, "description", "caption", "alt_text", "alt"))},
		}, body(lookup(m, "text", "extracted_text"), false))
	}
	return "", false
}

// compose writes the non-empty header fields as "Label: value" lines, then a
// blank line and the body. It reports false when nothing was written.
func compose(fields []field, body string) (string, bool) {
	var b strings.Builder
	for _, f := range fields {
		if f.value == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(f.label)
		b.WriteString(": ")
		b.WriteString(f.value)
	}
	if body != "" {
		if b.Len() == 0 {
			return body, true
		}
		b.WriteString("\n\n")
		b.WriteString(body)
	}
	return b.String(), b.Len() > 0
}

// lookup returns the value of the first of keys that m holds with a
// non-empty value, or nil.
func lookup(m map[string]any, keys ...string) any {
	for _, k := range keys {
		if v, ok := m[k]; ok && !empty(v) {
			return v
		}
	}
	return nil
}

// empty reports whether v carries no text: null, a blank string, or an empty
// array or object.
func empty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return strings.TrimSpace(v) == ""
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

// inline renders a header value on one line where it can: scalars as
// written, arrays joined by ", ", objects flattened with "; " between lines.
func inline(v any) string {
	switch v := v.(type) {
	case string:
		return strings.TrimSpace(v)
	case json.Number:
		return string(v)
	case bool:
		if v {
			return "true"
		}
		return "false"
	case []any:
		return join(v, ", ", inline)
	case map[string]any:
		return flatten(v, "; ")
	}
	return ""
}

// people renders a person or a list of persons: "Name <email>" for objects.
func people(v any) string {
	switch v := v.(type) {
	case []any:
		return join(v, ", ", people)
	case map[string]any:
		name := inline(lookup(v, "name", "display_name", "displayName"))
		email := inline(lookup(v, "email", "address", "email_address"))
		switch {
		case name != "" && email != "":
			return name + " <" + email + ">"
		case name != "":
			return name
		case email != "":
			return email
		}
	}
	return inline(v)
}

// when renders a calendar time: a string, or an object in the shape of the
// Google Calendar API ({"dateTime": ..., "timeZone": ...}).
func when(v any) string {
	if m, ok := v.(map[string]any); ok {
		if t := inline(lookup(m, "dateTime", "date_time", "datetime", "date")); t != "" {
			if tz := inline(lookup(m, "timeZone", "time_zone", "timezone")); tz != "" {
				return t + " (" + tz + ")"
			}
			return t
		}
	}
	return inline(v)
}

// toolName returns the tool name of a tool_call or tool_result payload.
func toolName(m map[string]any) string {
	v := lookup(m, "tool", "tool_name", "toolName", "name")
	if v == nil {
		if fn, ok := m["function"].(map[string]any); ok {
			v = lookup(fn, "name")
		}
	}
	if t, ok := v.(map[string]any); ok {
		if name := lookup(t, "name"); name != nil {
			v = name
		}
	}
	return inline(v)
}

// body renders a long-text field: strings as they are, arrays as one part per
// line, objects flattened. With jsonStrings, a string holding a JSON object
// or array is decoded and flattened.
func body(v any, jsonStrings bool) string {
	switch v := v.(type) {
	case string:
		s := strings.TrimSpace(v)
		if jsonStrings && s != "" && (s[0] == '{' || s[0] == '[') {
			if x, err := decodeJSON([]byte(s)); err == nil {
				return flatten(x, "\n")
			}
		}
		return s
	case []any:
		return join(v, "\n", part)
	case map[string]any:
		return flatten(v, "\n")
	}
	return inline(v)
}

// part renders one element of a body array: a string, the "text" of a
// content part, or the flattened element.
func part(v any) string {
	if m, ok := v.(map[string]any); ok {
		if s, ok := m["text"].(string); ok {
			return strings.TrimSpace(s)
		}
	}
	if s, ok := v.(string); ok {
		return strings.TrimSpace(s)
	}
	return flatten(v, "\n")
}

// transcript renders a meeting transcript: a string, or segments rendered as
// "speaker: text" lines.
func transcript(v any) string {
	list, ok := v.([]any)
	if !ok {
		return body(v, false)
	}
	return join(list, "\n", segment)
}

// segment renders one transcript segment.
func segment(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return part(v)
	}
	text := body(lookup(m, "text", "content", "utterance"), false)
	if text == "" {
		return flatten(m, "; ")
	}
	if speaker := inline(lookup(m, "speaker", "name", "role", "author")); speaker != "" {
		return speaker + ": " + text
	}
	return text
}

// join renders each element of list with render and joins the non-empty
// results with sep.
func join(list []any, sep string, render func(any) string) string {
	var b strings.Builder
	for _, e := range list {
		s := render(e)
		if s == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(sep)
		}
		b.WriteString(s)
	}
	return b.String()
}

// flatten renders any decoded JSON value as "path: value" lines separated by
// sep, as described in the package documentation.
func flatten(v any, sep string) string {
	f := flattener{sep: sep}
	f.value(v)
	return f.b.String()
}

// flattener accumulates the lines of a flattened value. path holds the keys
// leading to the current value, joined by '.'.
type flattener struct {
	b    strings.Builder
	sep  string
	path []byte
}

func (f *flattener) value(v any) {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			if k != "blob_pointer" {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		n := len(f.path)
		for _, k := range keys {
			if n > 0 {
				f.path = append(f.path, '.')
			}
			f.path = append(f.path, k...)
			f.value(v[k])
			f.path = f.path[:n]
		}
	case []any:
		for _, e := range v {
			f.value(e)
		}
	case string:
		if s := strings.TrimSpace(v); s != "" {
			f.line(s)
		}
	case json.Number:
		f.line(string(v))
	case bool:
		if v {
			f.line("true")
		} else {
			f.line("false")
		}
	case nil:
		f.line("null")
	}
}

func (f *flattener) line(s string) {
	if f.b.Len() > 0 {
		f.b.WriteString(f.sep)
	}
	if len(f.path) > 0 {
		f.b.Write(f.path)
		f.b.WriteString(": ")
	}
	f.b.WriteString(s)
}
