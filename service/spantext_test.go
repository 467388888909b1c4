package service

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/loci-memory/loci/pack"
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

// TestListArtifactsPreview: a listing gives each artifact the start of its
// text, the first pack.PreviewLength code points of its first span; a chat
// turn's starts with its speaker.
func TestListArtifactsPreview(t *testing.T) {
	h := newData(t, Config{})
	long := strings.Repeat("é", pack.PreviewLength+40) + ". And more."
	chat, _ := json.Marshal(map[string]any{"artifact_type": "chat_turn", "raw_payload": map[string]any{"role": "user", "content": "Where is the offsite?"}})
	if _, err := h.svc.IngestBatch(t.Context(), open, IngestBatchRequest{WorkspaceID: "ws", ActorID: "a", Artifacts: []json.RawMessage{note("short note"), note(long), chat}}); err != nil {
		t.Fatal(err)
	}
	page, err := h.svc.ListArtifacts(open, ListArtifactsRequest{WorkspaceID: "ws"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, a := range page.Artifacts {
		full, err := h.svc.Artifact(open, a.ArtifactID.String())
		if err != nil {
			t.Fatal(err)
		}
		if want := []rune(full.Spans[0].Text); len(want) > pack.PreviewLength {
			if a.Preview != string(want[:pack.PreviewLength]) {
				t.Errorf("%s: preview %q is not its first span's first %d code points", a.ArtifactID, a.Preview, pack.PreviewLength)
			}
		} else if a.Preview != string(want) {
			t.Errorf("%s: preview %q, want its first span %q", a.ArtifactID, a.Preview, string(want))
		}
		got[a.ArtifactType] += a.Preview[:min(len(a.Preview), 12)] + "|"
	}
	if !strings.HasPrefix(got["chat_turn"], "user") || !strings.Contains(got["note"], "short note") {
		t.Errorf("previews %q", got)
	}
}
