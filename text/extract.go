package text

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Extract returns the searchable text of a raw_payload JSON value for an
// artifact type and the artifact's actor_id (read only as a chat turn's
// speaker, see ChatSpeaker). The layouts per type and the flattening of
// other values are described in the package documentation. Extract fails
// only when payload is not exactly one valid JSON value (surrounding white
// space allowed).
func Extract(artifactType, actorID string, payload []byte) (string, error) {
	v, err := parseJSON(string(payload))
	if err != nil {
		return "", fmt.Errorf("text: %s payload: %w", artifactType, err)
	}
	var s string
	switch v.kind {
	case jsonString:
		s = v.str
		if artifactType == "chat_turn" {
			s = chatLine("", s, actorID)
		}
	case jsonObject:
		var ok bool
		if s, ok = structured(artifactType, actorID, &v); !ok {
			s = flatten(&v, "\n")
		}
	default:
		s = flatten(&v, "\n")
	}
	// The decoder already replaces invalid UTF-8 in strings; this guards the
	// invariant regardless of how the text was assembled.
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s, nil
}

// field is one labelled header line of a structured layout.
type field struct {
	label, value string
}

// structured renders the object m with the layout of artifactType, the
// artifact's actor being actorID. It reports false when the type has no
// layout or m holds none of the fields the layout needs, in which case the
// caller flattens m.
func structured(artifactType, actorID string, m *value) (string, bool) {
	switch artifactType {
	case "chat_turn":
		content := body(lookup(m, "content", "text", "message", "parts"), false)
		if content == "" {
			return "", false
		}
		return chatLine(inline(lookup(m, "role", "author", "speaker")), content, actorID), true
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
		if fn := lookup(m, "function"); args == nil && fn != nil && fn.kind == jsonObject {
			args = lookup(fn, "arguments", "args", "input", "parameters", "params")
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
	n := len(body) + 2
	for _, f := range fields {
		if f.value != "" {
			n += len(f.label) + len(f.value) + 3
		}
	}
	if n == len(body)+2 {
		return body, body != ""
	}
	var b strings.Builder
	b.Grow(n)
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
		b.WriteString("\n\n")
		b.WriteString(body)
	}
	return b.String(), true
}

// lookup returns the value of the first of keys that the object m holds with
// a non-empty value, or nil.
func lookup(m *value, keys ...string) *value {
	for _, k := range keys {
		if v, ok := m.get(k); ok && !empty(v) {
			return v
		}
	}
	return nil
}

// empty reports whether v carries no text: null, a blank string, or an empty
// array or object.
func empty(v *value) bool {
	switch v.kind {
	case jsonNull:
		return true
	case jsonString:
		return strings.TrimSpace(v.str) == ""
	case jsonArray, jsonObject:
		return len(v.elems) == 0
	}
	return false
}

// inline renders a header value on one line where it can: scalars as
// written, arrays joined by ", ", objects flattened with "; " between lines.
// A nil v renders as "".
func inline(v *value) string {
	if v == nil {
		return ""
	}
	switch v.kind {
	case jsonString:
		return strings.TrimSpace(v.str)
	case jsonNumber, jsonBool:
		return v.str
	case jsonArray:
		return join(v.elems, ", ", inline)
	case jsonObject:
		return flatten(v, "; ")
	}
	return ""
}

// people renders a person or a list of persons: "Name <email>" for objects.
func people(v *value) string {
	if v == nil {
		return ""
	}
	switch v.kind {
	case jsonArray:
		return join(v.elems, ", ", people)
	case jsonObject:
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
func when(v *value) string {
	if v != nil && v.kind == jsonObject {
		if t := inline(lookup(v, "dateTime", "date_time", "datetime", "date")); t != "" {
			if tz := inline(lookup(v, "timeZone", "time_zone", "timezone")); tz != "" {
				return t + " (" + tz + ")"
			}
			return t
		}
	}
	return inline(v)
}

// toolName returns the tool name of a tool_call or tool_result payload.
func toolName(m *value) string {
	v := lookup(m, "tool", "tool_name", "toolName", "name")
	if fn := lookup(m, "function"); v == nil && fn != nil && fn.kind == jsonObject {
		v = lookup(fn, "name")
	}
	if v != nil && v.kind == jsonObject {
		if name := lookup(v, "name"); name != nil {
			v = name
		}
	}
	return inline(v)
}

// body renders a long-text field: strings as they are, arrays as one part per
// line, objects flattened. With jsonStrings, a string holding a JSON object
// or array is decoded and flattened.
func body(v *value, jsonStrings bool) string {
	if v == nil {
		return ""
	}
	switch v.kind {
	case jsonString:
		s := strings.TrimSpace(v.str)
		if jsonStrings && s != "" && (s[0] == '{' || s[0] == '[') {
			if x, err := parseJSON(s); err == nil {
				return flatten(&x, "\n")
			}
		}
		return s
	case jsonArray:
		return join(v.elems, "\n", part)
	case jsonObject:
		return flatten(v, "\n")
	}
	return inline(v)
}

// part renders one element of a body array: a string, the "text" of a
// content part, or the flattened element.
func part(v *value) string {
	switch v.kind {
	case jsonString:
		return strings.TrimSpace(v.str)
	case jsonObject:
		if t, ok := v.get("text"); ok && t.kind == jsonString {
			return strings.TrimSpace(t.str)
		}
	}
	return flatten(v, "\n")
}

// transcript renders a meeting transcript: a string, or segments rendered as
// "speaker: text" lines.
func transcript(v *value) string {
	if v == nil || v.kind != jsonArray {
		return body(v, false)
	}
	return join(v.elems, "\n", segment)
}

// segment renders one transcript segment.
func segment(v *value) string {
	if v.kind != jsonObject {
		return part(v)
	}
	text := body(lookup(v, "text", "content", "utterance"), false)
	if text == "" {
		return flatten(v, "; ")
	}
	if speaker := inline(lookup(v, "speaker", "name", "role", "author")); speaker != "" {
		return speaker + ": " + text
	}
	return text
}

// join renders each element of list with render and joins the non-empty
// results with sep.
func join(list []value, sep string, render func(*value) string) string {
	var b strings.Builder
	for i := range list {
		s := render(&list[i])
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

// flatten renders a decoded JSON value as "path: value" lines separated by
// sep, as described in the package documentation.
func flatten(v *value, sep string) string {
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

func (f *flattener) value(v *value) {
	switch v.kind {
	case jsonObject:
		n := len(f.path)
		for _, i := range v.sortedMembers() {
			k := v.keys[i]
			if k == "blob_pointer" {
				continue
			}
			if n > 0 {
				f.path = append(f.path, '.')
			}
			f.path = append(f.path, k...)
			f.value(&v.elems[i])
			f.path = f.path[:n]
		}
	case jsonArray:
		for i := range v.elems {
			f.value(&v.elems[i])
		}
	case jsonString:
		if s := strings.TrimSpace(v.str); s != "" {
			f.line(s)
		}
	case jsonNumber, jsonBool:
		f.line(v.str)
	case jsonNull:
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
