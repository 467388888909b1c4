package engine

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loci-memory/loci/wal"
)

// TestObserve checks the accessors the metrics read: compactions are
// counted, WAL stats move, and the fsync observer sees the ingests' records.
func TestObserve(t *testing.T) {
	db, err := testOpen(t.TempDir(), Options{Logger: quietLogger(), NoEmbedder: true, DisableBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var observed atomic.Int64
	db.ObserveWALSyncs(wal.SyncObserver(func(_ time.Duration, records int) { observed.Add(int64(records)) }))
	for i := 0; i < 3; i++ {
		if _, err := db.Ingest("t", IngestInput{Workspace: "w", ActorID: "a", Type: "note",
			Payload: []byte(fmt.Sprintf("%q", fmt.Sprint("note ", i)))}); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if got := db.MaintenanceCounts(); got != (MaintenanceCounts{}) {
		t.Fatalf("before Compact: %+v", got)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if got := db.MaintenanceCounts(); got.Compactions != 1 || got.CompactionFailures != 0 {
		t.Errorf("after Compact: %+v, want 1 compaction", got)
	}
	if st := db.Stats(); st.Segments != 1 {
		t.Errorf("segments after Compact = %d", st.Segments)
	}
	if ws, seen := db.WALStats(), observed.Load(); ws.Records < 3 || seen < 3 || uint64(seen) > ws.Records {
		t.Errorf("WAL records %d, seen by fsyncs %d: want 3 <= seen <= written", ws.Records, seen)
	}
}
