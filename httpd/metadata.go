package httpd

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/engine"
)

// decodeMetadata decodes a metadata object (an artifact's, or a context
// pack's metadata filter): an object whose values are all strings, within
// engine.CheckMetadata's bounds. Absent or null is none. Errors name the
// path, down to the key of a bad value (metadata.team).
func decodeMetadata(raw json.RawMessage, path string) (map[string]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var fields map[string]json.RawMessage
	if err := decodeAt(raw, path, &fields); err != nil {
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
