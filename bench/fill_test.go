package bench

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/loci-memory/loci/engine"
)

// TestFillRetriesBackpressure: a batch the engine refuses for back-pressure
// (nothing of it stored) is sent again until it is taken, the same artifacts
// in the same order, so a build is not cut short by a busy embedder; a
// refusal naming the embedder as unavailable ends the build instead.
func TestFillRetriesBackpressure(t *testing.T) {
	n := 0
	next := func(ws string) engine.IngestInput {
		n++
		return engine.IngestInput{Workspace: ws, Type: "note", Payload: []byte(strings.Repeat("x", n%7+1))}
	}
	var calls, refusals int
	var taken [][]engine.IngestInput
	ingest := func(b []engine.IngestInput) ([]engine.IngestResult, error) {
		calls++
		if calls%3 != 0 { // two refusals before each batch is taken
			refusals++
			return nil, &engine.BackpressureError{UnflushedBytes: 1 << 30, Backlog: 5000}
		}
		taken = append(taken, b)
		rs := make([]engine.IngestResult, len(b))
		for i := range rs {
			rs[i].SpanIDs = make([]uuid.UUID, 2)
		}
		return rs, nil
	}
	spans, arts, err := fillWithRetry(ingest, "w", next, 1000, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(taken) != 2 || spans != 1024 || arts != 512 || refusals != 4 {
		t.Fatalf("batches %d, spans %d, artifacts %d, refusals %d; want 2, 1024, 512, 4", len(taken), spans, arts, refusals)
	}
	if n != 512 {
		t.Fatalf("next called %d times for 512 artifacts: a refused batch was rebuilt instead of sent again", n)
	}
	for i, b := range taken {
		if b[0].Workspace != "w" || string(b[0].Payload) != strings.Repeat("x", (i*256+1)%7+1) {
			t.Fatalf("batch %d starts with %q in %q", i, b[0].Payload, b[0].Workspace)
		}
	}

	down := errors.New("connection refused")
	ingest = func(b []engine.IngestInput) ([]engine.IngestResult, error) {
		return nil, &engine.BackpressureError{UnflushedBytes: 1 << 30, Backlog: 5000, Embedder: down}
	}
	if _, _, err := fillWithRetry(ingest, "w", next, 1000, nil, 0); !errors.Is(err, engine.ErrBackpressure) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("with the embedder down: %v", err)
	}
}
