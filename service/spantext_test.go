package service

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/loci-memory/loci/text"
)

// TestArtifactSpanText: each span of an artifact read back carries its
// text, the artifact's extracted text between its offsets, from the
// in-memory head and from a segment after a flush and a restart.
func TestArtifactSpanText(t *testing.T) {
	h := newData(t, Config{})
	content := strings.Repeat("The deploy moved to Friday because the release notes were late. ", 40)
	res, err := h.svc.IngestBatch(t.Context(), open, IngestBatchRequest{WorkspaceID: "ws", ActorID: "a", Artifacts: []json.RawMessage{note(content)}})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Ingested[0].ArtifactID.String()
	payload, _ := json.Marshal(map[string]any{"content": content})
	extracted, err := text.Extract("note", "a", payload)
	if err != nil {
		t.Fatal(err)
	}
	runes := []rune(extracted)
	for _, when := range []string{"head", "segment"} {
		if when == "segment" {
			if err := h.db.Flush(); err != nil {
				t.Fatal(err)
			}
			h.restart()
		}
		a, err := h.svc.Artifact(open, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Spans) < 2 {
			t.Fatalf("%s: %d spans, want several", when, len(a.Spans))
		}
		for i, sp := range a.Spans {
			if want := string(runes[sp.StartOffset:sp.EndOffset]); sp.Text != want {
				t.Errorf("%s: span %d text %q, want %q", when, i, sp.Text, want)
			}
		}
	}
}
