package engine

import (
	"testing"

	"github.com/loci-memory/loci/text"
)

// TestIngestTakesExtractedText: an input whose caller extracted the
// payload's text (Extracted) is indexed with that text, the payload not
// parsed again; without Extracted the engine extracts the text itself.
func TestIngestTakesExtractedText(t *testing.T) {
	db := openTest(t, t.TempDir(), Options{DisableBackground: true, NoEmbedder: true})
	defer db.Close()
	payload := []byte(`{"content": "the heron count was 12"}`)
	want, _ := text.Extract("note", "", payload)
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
	in := IngestInput{Workspace: "ws", ActorID: "a", Type: "note", Payload: payload}
	if got := spanText(in); got != want {
		t.Fatalf("ingest without extracted text: span %q, want %q", got, want)
	}
	// A marker in place of the extracted text shows which text ingest indexes.
	in.Text, in.Extracted = "zebracorn marker", true
	if got := spanText(in); got != "zebracorn marker" {
		t.Fatalf("ingest of an extracted input parsed the payload again: span %q", got)
	}
}
