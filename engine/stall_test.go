package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFlushFailureDegradesToErrors: when segments cannot be written, ingest
// keeps going into the WAL until the heads reach the stall limit, then fails
// with an error naming the cause (no hang, no unbounded memory); Health says
// why; once the disk is fixed the background retry flushes and ingest works.
func TestFlushFailureDegradesToErrors(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, Options{FlushThreshold: 16 << 10})
	defer db.Close()
	segs := filepath.Join(dir, segmentDir)
	if err := os.RemoveAll(segs); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(segs, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	var ingestErr error
	acked := 0
	for i := 0; i < 5000 && ingestErr == nil; i++ {
		_, ingestErr = db.Ingest("t", chat("ws", fmt.Sprintf("message %d that fills the head quickly with some text", i)))
		if ingestErr == nil {
			acked++
		}
	}
	if ingestErr == nil || !strings.Contains(ingestErr.Error(), "flushing fails") {
		t.Fatalf("after %d ingests: %v", acked, ingestErr)
	}
	if st := db.Stats(); st.HeadBytes+st.FrozenBytes > stallFactor*(16<<10)+(1<<10) {
		t.Fatalf("head grew past the stall limit: %+v", st)
	}
	if db.Health() == nil {
		t.Fatal("health does not report the failing flush")
	}
	// Fix the disk: the retry loop flushes and ingest succeeds again.
	os.Remove(segs)
	os.Mkdir(segs, 0o755)
	deadline := time.Now().Add(20 * time.Second)
	for db.Health() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("never recovered: %v", db.Health())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := db.Ingest("t", chat("ws", "after the fix")); err != nil {
		t.Fatal(err)
	}
	arts, _, err := db.WorkspaceContent("t", "ws")
	if err != nil || len(arts) != acked+1 {
		t.Fatalf("%d artifacts readable, want %d: %v", len(arts), acked+1, err)
	}
}
