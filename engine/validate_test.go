package engine

import (
	"bytes"
	"strings"
	"testing"

	"github.com/loci-memory/loci/text"
)

// TestValidateParsesPayloadOnce: Validate keeps the payload's extracted
// text and ingesting the validated input uses it instead of parsing the
// payload again; an input whose payload (or type) changed after Validate is
// extracted afresh, so a stale extraction can never be stored.
func TestValidateParsesPayloadOnce(t *testing.T) {
	db := openTest(t, t.TempDir(), Options{DisableBackground: true, NoEmbedder: true})
	defer db.Close()
	payload := []byte(`{"content": "the heron count was 12"}`)
	in := IngestInput{Workspace: "ws", ActorID: "a", Type: "note", Payload: payload}
	if err := db.Validate(&in); err != nil {
		t.Fatal(err)
	}
	want, _ := text.Extract("note", payload)
	if in.extracted == nil || in.extracted.text != want {
		t.Fatalf("Validate kept %+v, want the text %q", in.extracted, want)
	}
	spanText := func(in IngestInput) string {
		t.Helper()
		res, err := db.Ingest("t", in)
		if err != nil {
			t.Fatal(err)
		}
		spans, err := db.ArtifactSpans("t", res.ArtifactID)
		if err != nil || len(spans) != 1 {
			t.Fatalf("spans %v %v", spans, err)
		}
		return spans[0].Text
	}
	// A marker in place of the kept text shows which text ingest indexes.
	in.extracted.text = "zebracorn marker"
	if got := spanText(in); got != "zebracorn marker" {
		t.Fatalf("ingest of a validated input parsed the payload again: span %q", got)
	}
	moved := in
	moved.Payload = bytes.Clone(payload) // same bytes, another slice
	if got := spanText(moved); got != want {
		t.Fatalf("ingest with another payload slice used the kept text: span %q", got)
	}
	retyped := in
	retyped.Type = "document"
	if got := spanText(retyped); strings.Contains(got, "zebracorn") {
		t.Fatalf("ingest with another type used the kept text: span %q", got)
	}
	// A failed validation keeps nothing.
	bad := IngestInput{Workspace: "ws", ActorID: "a", Type: "note", Payload: []byte(`{"content":`)}
	bad.extracted = in.extracted
	if err := db.Validate(&bad); err == nil || bad.extracted != nil {
		t.Fatalf("invalid payload: %v, kept %+v", err, bad.extracted)
	}
}
