package service

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// AttachmentType is the artifact type whose binary content is carried by a
// blob_pointer (the contract's artifact types).
const AttachmentType = "attachment"

// withBlobPointer places an attachment's top-level blob_pointer where an
// attachment's pointer is stored: raw_payload.blob_pointer, which is kept
// with the payload, returned by GET /v1/artifacts/{id}, hashed in
// content_hash and never fetched or indexed. The contract says an
// attachment's binary content "is carried via a blob_pointer" without
// saying where, so readers send it either way. The payload's bytes are kept
// as sent, with the key added at the end of its object. ptr is a non-empty
// string (a URI such as s3://bucket/key) or an object; raw_payload, when
// given, must be an object, and may already hold the same pointer.
func withBlobPointer(artifactType string, payload, ptr json.RawMessage) (json.RawMessage, error) {
	ptr = bytes.TrimSpace(ptr)
	if len(ptr) == 0 || string(ptr) == "null" {
		return payload, nil
	}
	if artifactType != AttachmentType {
		return nil, fmt.Errorf("blob_pointer: only an attachment (artifact_type %q) carries one, not %q; put other references in raw_payload", AttachmentType, artifactType)
	}
	switch ptr[0] {
	case '"':
		var s string
		if err := json.Unmarshal(ptr, &s); err != nil || strings.TrimSpace(s) == "" {
			return nil, fmt.Errorf("blob_pointer: must be a non-empty string (a URI such as s3://bucket/key) or an object")
		}
	case '{':
	default:
		return nil, fmt.Errorf("blob_pointer: expected a string (a URI such as s3://bucket/key) or an object, got JSON %s", jsonKind(ptr))
	}
	p := bytes.TrimSpace(payload)
	if len(p) == 0 {
		return json.RawMessage(`{"blob_pointer":` + string(ptr) + `}`), nil
	}
	var fields map[string]json.RawMessage
	if p[0] != '{' || json.Unmarshal(p, &fields) != nil {
		return nil, fmt.Errorf("blob_pointer: raw_payload must be a JSON object to hold it (raw_payload.blob_pointer), got JSON %s", jsonKind(p))
	}
	if have, ok := fields["blob_pointer"]; ok {
		if !sameJSON(have, ptr) {
			return nil, fmt.Errorf("blob_pointer: differs from raw_payload.blob_pointer; give it once")
		}
		return payload, nil
	}
	out := append([]byte{}, p[:len(p)-1]...) // without the closing brace
	if len(fields) > 0 {
		out = append(bytes.TrimRight(out, " \t\r\n"), ',')
	}
	out = append(append(append(out, `"blob_pointer":`...), ptr...), '}')
	return out, nil
}

// sameJSON reports whether two JSON values are the same once compacted.
func sameJSON(a, b []byte) bool {
	var ca, cb bytes.Buffer
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}
