package retrieval

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/internal/enginetest"
)

// datedChat is a chat turn of ws at time at.
func datedChat(ws, content string, at time.Time) engine.IngestInput {
	in := enginetest.Chat(ws, content)
	in.Timestamp = at
	return in
}

// TestWindowCandidates: without a semantic channel, a turn that shares no
// word with the query is no candidate, unless the query names its day:
// then the temporal channel offers it, in every layout (head, segments),
// and a metadata filter still holds.
func TestWindowCandidates(t *testing.T) {
	db := enginetest.Open(t, t.TempDir(), engine.Options{DisableBackground: true, NoEmbedder: true})
	day := func(d int) time.Time { return time.Date(2026, 10, d, 10, 0, 0, 0, time.UTC) }
	decision := enginetest.MustIngest(t, db, "t", datedChat("ws", "Maya: ship the beta to the pilot customers first.", day(13))).ArtifactID
	for d := 14; d <= 20; d++ {
		enginetest.MustIngest(t, db, "t", datedChat("ws", fmt.Sprintf("Sam: we decide things on day %d.", d), day(d)))
	}
	cited := func(query string) bool {
		t.Helper()
		res, err := New(db).ContextPack(context.Background(), "t", PackRequest{Workspace: "ws", Query: query, MaxTokens: 512})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range res.Result.Citations {
			if c.ArtifactID == decision {
				return true
			}
		}
		return false
	}
	for _, layout := range []string{"head", "segments"} {
		if layout == "segments" {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if cited("What did we decide?") {
			t.Fatalf("%s: the turn of October 13 is cited without a date: the test proves nothing", layout)
		}
		if !cited("What did we decide on October 13?") {
			t.Errorf("%s: the turn of October 13 is not cited for a query naming its day", layout)
		}
	}
}

// BenchmarkWindowCandidates: the cost of finding a window's spans in a
// workspace of windowScanSpans spans (in segments), against the same pack
// without a date.
func BenchmarkWindowCandidates(b *testing.B) {
	db := enginetest.Open(b, b.TempDir(), engine.Options{DisableBackground: true, NoEmbedder: true})
	start := time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)
	var batch []engine.IngestInput
	for i := range windowScanSpans {
		batch = append(batch, datedChat("ws", fmt.Sprintf("turn %d: we talked about topic %d and decided %d.", i, i%97, i%13),
			start.Add(time.Duration(i)*30*time.Minute)))
		if len(batch) == 1000 {
			if _, err := db.IngestBatch("t", batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	p := New(db)
	for _, q := range []string{"What did we decide?", "What did we decide on January 20, 2025?"} {
		b.Run(q, func(b *testing.B) {
			for b.Loop() {
				res, err := p.ContextPack(context.Background(), "t", PackRequest{Workspace: "ws", Query: q, MaxTokens: 2048})
				if err != nil || res.ReceiptID == uuid.Nil {
					b.Fatal(err)
				}
			}
		})
	}
}
