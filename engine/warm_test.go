package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/loci-memory/loci/wal"
)

// TestWarmSketches: after a restart the background builds the sketches of
// the segments found at open, as the flush that wrote them did, so the first
// search of a large workspace does not; without background work nothing is
// built until a search asks. Close stops it between parts.
func TestWarmSketches(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, Options{Sync: wal.SyncOff, DisableBackground: true})
	// Enough spans in one part for the two-stage scan (vecindex
	// minTwoStageDocs, 16,384), so the part has a sketch to build.
	const n = 17_000
	batch := make([]IngestInput, 0, 500)
	for i := range n {
		batch = append(batch, IngestInput{Workspace: "w", ActorID: "a", Type: "note",
			Payload: fmt.Appendf(nil, `{"content":"note %d about the deploy budget and the cluster %d"}`, i, i%97)})
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := db.IngestBatch("t", batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if db.Stats().SketchBytes == 0 {
		t.Fatal("the flush built no sketch: the part is too small for this test")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openTest(t, dir, Options{Sync: wal.SyncOff, DisableBackground: true})
	if b := db.Stats().SketchBytes; b != 0 {
		t.Fatalf("%d sketch bytes after an open without background work", b)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openTest(t, dir, Options{Sync: wal.SyncOff})
	deadline := time.Now().Add(30 * time.Second)
	for db.Stats().SketchBytes == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no sketch built in the background within 30 s of the open")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Closed at once: the warmer stops, and Close waits for it.
	db = openTest(t, dir, Options{Sync: wal.SyncOff})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}
