package httpd

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"testing"
)

// TestAttachmentBlobPointer: the contract carries an attachment's binary
// content "via a blob_pointer"; sent at the top level of an artifact (v1
// and v2 items) it was refused as an unknown field. It is stored as
// raw_payload.blob_pointer (the payload's other bytes kept as sent), which
// GET returns and content_hash hashes; what cannot be stored so is a 400
// naming blob_pointer, and nothing is stored.
func TestAttachmentBlobPointer(t *testing.T) {
	h := newHarness(t, Config{})
	const ptr = `"s3://bucket/q3-report.pdf"`
	for _, c := range []struct {
		name, body, stored string
	}{
		{"beside a payload", `{"workspace_id":"ws","actor_id":"a","artifact_type":"attachment","blob_pointer":` + ptr +
			`,"raw_payload":{"filename":"q3-report.pdf", "media_type":"application/pdf"}}`,
			`{"filename":"q3-report.pdf", "media_type":"application/pdf","blob_pointer":` + ptr + `}`},
		{"without a payload", `{"workspace_id":"ws","actor_id":"a","artifact_type":"attachment","blob_pointer":{"uri":"s3://b/k","sha256":"00"}}`,
			`{"blob_pointer":{"uri":"s3://b/k","sha256":"00"}}`},
		{"empty payload object", `{"workspace_id":"ws","actor_id":"a","artifact_type":"attachment","blob_pointer":` + ptr + `,"raw_payload":{ }}`,
			`{ "blob_pointer":` + ptr + `}`},
		{"given twice, the same", `{"workspace_id":"ws","actor_id":"a","artifact_type":"attachment","blob_pointer":` + ptr +
			`,"raw_payload":{"blob_pointer": "s3://bucket/q3-report.pdf"}}`, `{"blob_pointer": "s3://bucket/q3-report.pdf"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := h.do("POST", "/v1/ingest", "", c.body).must(t, 201)
			if want := fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(c.stored))); str(m, "content_hash") != want {
				t.Fatalf("content_hash %s, want the hash of %s", m["content_hash"], c.stored)
			}
			r := h.do("GET", "/v1/artifacts/"+str(m, "artifact_id"), "", nil)
			if !bytes.Contains(r.body, []byte(`"raw_payload":`+c.stored)) {
				t.Fatalf("stored %s, want raw_payload %s", r.body, c.stored)
			}
		})
	}
	batch := `{"workspace_id":"ws2","actor_id":"a","artifacts":[{"artifact_type":"attachment","blob_pointer":` + ptr + `,"raw_payload":{"filename":"a.pdf"}}]}`
	m := h.do("POST", "/v2/ingest", "", batch).must(t, 201)
	id := m["ingested"].([]any)[0].(map[string]any)["artifact_id"].(string)
	if r := h.do("GET", "/v1/artifacts/"+id, "", nil); !bytes.Contains(r.body, []byte(`"raw_payload":{"filename":"a.pdf","blob_pointer":`+ptr+`}`)) {
		t.Fatalf("v2 item stored %s", r.body)
	}

	for _, c := range []struct{ name, path, body, detail string }{
		{"not an attachment", "/v1/ingest", `{"workspace_id":"bad","actor_id":"a","artifact_type":"note","blob_pointer":` + ptr + `}`, `blob_pointer: only an attachment`},
		{"differs from the payload's", "/v1/ingest", `{"workspace_id":"bad","actor_id":"a","artifact_type":"attachment","blob_pointer":` + ptr + `,"raw_payload":{"blob_pointer":"s3://other"}}`, "blob_pointer: differs from raw_payload.blob_pointer"},
		{"payload not an object", "/v1/ingest", `{"workspace_id":"bad","actor_id":"a","artifact_type":"attachment","blob_pointer":` + ptr + `,"raw_payload":"text"}`, "blob_pointer: raw_payload must be a JSON object"},
		{"a number", "/v1/ingest", `{"workspace_id":"bad","actor_id":"a","artifact_type":"attachment","blob_pointer":7}`, "blob_pointer: expected a string"},
		{"empty", "/v1/ingest", `{"workspace_id":"bad","actor_id":"a","artifact_type":"attachment","blob_pointer":" "}`, "blob_pointer: must be a non-empty string"},
		{"v2 item", "/v2/ingest", `{"workspace_id":"bad","actor_id":"a","artifacts":[{"artifact_type":"email","blob_pointer":` + ptr + `}]}`, "artifacts[0].blob_pointer: only an attachment"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h.do("POST", c.path, "", c.body).fails(t, 400, c.detail)
		})
	}
	if m := h.do("GET", "/v1/workspaces/bad/artifacts", "", nil).must(t, 200); len(m["artifacts"].([]any)) != 0 {
		t.Fatalf("a refused artifact was stored: %v", m)
	}
}
