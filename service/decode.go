package service

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/engine"
)

// DecodeJSON decodes the JSON value raw, found at path in a request
// (artifacts[3], policy; "" for a whole body), into v, refusing unknown
// fields: a misspelt one (max_token) would otherwise silently fall back to
// its default. Errors name fields by their full path (artifacts[3].metdata).
// Transports decode their bodies with it; the service decodes the nested
// values its requests carry as JSON (items of a batch, permissions,
// metadata) with it, so every error names the field the same way.
func DecodeJSON(raw []byte, path string, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err, path, v)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("malformed JSON: trailing data after the top-level value")
	}
	if at, ok := duplicateKey(raw); ok {
		switch {
		case path == "":
		case strings.HasPrefix(at, "["):
			at = path + at
		default:
			at = path + "." + at
		}
		return fmt.Errorf("%s: duplicate key: a key may appear only once in a JSON object", at)
	}
	return nil
}

// duplicateKey returns the path (raw_payload.content, artifacts[2].role)
// of the first key that appears twice in one object of raw, a valid JSON
// value. Decoders disagree on such a body (encoding/json keeps the last
// value, others the first), so a proxy or validator in front of Loci could
// read another request than Loci does: DecodeJSON refuses it
// (docs/api.md § Request bodies). Keys are compared as decoded, escapes
// resolved. One pass over the bytes; no allocation but for objects with
// escaped or more than a few dozen keys.
func duplicateKey(raw []byte) (string, bool) {
	d := dupScan{b: raw}
	d.value()
	return d.dup, d.found
}

// dupScan is duplicateKey's scanner over a valid JSON value.
type dupScan struct {
	b     []byte
	i     int
	stack []dupSeg // the path to the value being scanned
	keys  [][]byte // the keys of the objects open on the stack, outermost first
	dup   string
	found bool
}

// dupSeg is one step of a path: an object's key or an array's index.
type dupSeg struct {
	key   []byte
	index int // -1 for a key
}

func (d *dupScan) space() {
	for d.i < len(d.b) && (d.b[d.i] == ' ' || d.b[d.i] == '\t' || d.b[d.i] == '\n' || d.b[d.i] == '\r') {
		d.i++
	}
}

func (d *dupScan) value() {
	d.space()
	if d.i >= len(d.b) || d.found {
		return
	}
	switch d.b[d.i] {
	case '{':
		d.object()
	case '[':
		d.array()
	case '"':
		d.str()
	default: // a number, true, false or null
		for d.i < len(d.b) && !strings.ContainsRune(",}] \t\n\r", rune(d.b[d.i])) {
			d.i++
		}
	}
}

// str skips a string and returns its content as written.
func (d *dupScan) str() []byte {
	d.i++ // the opening quote
	start := d.i
	for {
		j := bytes.IndexByte(d.b[d.i:], '"')
		if j < 0 {
			d.i = len(d.b)
			return d.b[start:]
		}
		d.i += j
		n := 0 // backslashes before the quote: odd escapes it
		for k := d.i - 1; k >= start && d.b[k] == '\\'; k-- {
			n++
		}
		d.i++
		if n%2 == 0 {
			return d.b[start : d.i-1]
		}
	}
}

func (d *dupScan) object() {
	d.i++               // {
	base := len(d.keys) // d.keys[base:] are this object's keys so far, few: compared one by one
	defer func() { d.keys = d.keys[:base] }()
	var many map[string]struct{} // past maxListed keys
	const maxListed = 32
	for !d.found {
		d.space()
		if d.i >= len(d.b) {
			return
		}
		switch d.b[d.i] {
		case '}':
			d.i++
			return
		case ',':
			d.i++
			continue
		}
		k := d.str()
		if bytes.IndexByte(k, '\\') >= 0 {
			var s string
			if json.Unmarshal(d.b[d.i-len(k)-2:d.i], &s) == nil {
				k = []byte(s)
			}
		}
		dup := false
		if many != nil {
			_, dup = many[string(k)]
			many[string(k)] = struct{}{}
		} else {
			for _, o := range d.keys[base:] {
				if bytes.Equal(o, k) {
					dup = true
					break
				}
			}
			if d.keys = append(d.keys, k); len(d.keys)-base > maxListed {
				many = make(map[string]struct{}, 2*maxListed)
				for _, o := range d.keys[base:] {
					many[string(o)] = struct{}{}
				}
			}
		}
		d.stack = append(d.stack, dupSeg{key: k, index: -1})
		if dup {
			d.found, d.dup = true, d.path()
			return
		}
		d.space()
		d.i++ // :
		d.value()
		d.stack = d.stack[:len(d.stack)-1]
	}
}

func (d *dupScan) array() {
	d.i++ // [
	for n := 0; !d.found; n++ {
		d.space()
		if d.i >= len(d.b) {
			return
		}
		switch d.b[d.i] {
		case ']':
			d.i++
			return
		case ',':
			d.i++
		}
		d.space()
		if d.i < len(d.b) && d.b[d.i] == ']' {
			d.i++
			return
		}
		d.stack = append(d.stack, dupSeg{index: n})
		d.value()
		d.stack = d.stack[:len(d.stack)-1]
	}
}

// path names the value the stack leads to.
func (d *dupScan) path() string {
	steps := make([]PathStep, len(d.stack))
	for i, s := range d.stack {
		steps[i] = PathStep{Key: string(s.key), Index: s.index}
	}
	return FieldPath(steps)
}

// PathStep is one step of the path to a value in a JSON document: an
// array's element (Index >= 0) or an object's member (Key).
type PathStep struct {
	Key   string
	Index int
}

// FieldPath names a value by the steps leading to it, as every error of
// the API names a field: artifacts[3].metadata.team.
func FieldPath(steps []PathStep) string {
	var sb strings.Builder
	for _, s := range steps {
		if s.Index >= 0 {
			fmt.Fprintf(&sb, "[%d]", s.Index)
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('.')
		}
		sb.WriteString(s.Key)
	}
	return sb.String()
}

// DecodeOptionalJSON decodes an optional object (policy, permissions)
// found at path: absent or null leaves v as it is. Unknown fields are
// refused as in DecodeJSON; for access control that matters most, since a
// misspelt field must not silently widen access.
func DecodeOptionalJSON(raw json.RawMessage, path string, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return DecodeJSON(raw, path, v)
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
	msg := strings.TrimPrefix(err.Error(), "json: ") // encoding/json's prefix is not for the caller
	if path != "" {
		return fmt.Errorf("%s: %s", path, msg)
	}
	return fmt.Errorf("malformed JSON: %s", msg)
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

// ParseTime reads an ISO 8601 date-time; one without a zone is UTC.
func ParseTime(field, v string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%s: %q is not an ISO 8601 date-time (e.g. 2024-05-01T12:00:00Z)", field, v)
}

// FormatTime is a time as every response shows it: RFC 3339 in UTC.
func FormatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// DecodeMetadata decodes a metadata object (an artifact's, or a context
// pack's metadata filter): an object whose values are all strings, within
// engine.CheckMetadata's bounds. Absent or null is none. Errors name the
// path, down to the key of a bad value (metadata.team).
func DecodeMetadata(raw json.RawMessage, path string) (map[string]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var fields map[string]json.RawMessage
	if err := DecodeJSON(raw, path, &fields); err != nil {
		return nil, err
	}
	if fields == nil {
		return nil, fmt.Errorf("%s: expected an object of string values, got JSON %s", path, jsonKind(raw))
	}
	m := make(map[string]string, len(fields))
	for _, k := range artifact.MetadataKeys(rawKeys(fields)) {
		v := bytes.TrimSpace(fields[k])
		var s string
		if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
			return nil, fmt.Errorf("%s.%s: expected a string, got JSON %s", path, k, jsonKind(v))
		}
		m[k] = s
	}
	if err := engine.CheckMetadata(path, m); err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

func rawKeys(m map[string]json.RawMessage) map[string]string {
	keys := make(map[string]string, len(m))
	for k := range m {
		keys[k] = ""
	}
	return keys
}

// jsonKind names the kind of a JSON value as encoding/json's errors do.
func jsonKind(v []byte) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}
