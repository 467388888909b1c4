package engine

import (
	"errors"
	"fmt"
	"slices"
	"syscall"
	"testing"

	"github.com/loci-memory/loci/vfs"
)

// TestFailedCompactionDoesNotBlock fails one compaction on the
// fault-injection file system and checks that it is not retried at once,
// that later flushes and compactions go ahead, and that it runs again once
// its backoff is over.
func TestFailedCompactionDoesNotBlock(t *testing.T) {
	dir := t.TempDir()
	fsys := vfs.NewInject(vfs.Default)
	db := openTest(t, dir, Options{FS: fsys, DisableBackground: true, CompactionMinSegments: 2})
	n := 0
	flush := func() {
		t.Helper()
		if _, err := db.Ingest("t", chat("ws", fmt.Sprintf("note %d about the quarterly plan", n))); err != nil {
			t.Fatal(err)
		}
		n++
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	segIDs := func() []uint64 {
		db.mu.RLock()
		defer db.mu.RUnlock()
		var ids []uint64
		for _, s := range db.segments {
			ids = append(ids, s.entry.ID)
		}
		return ids
	}
	// background compacts as the maintenance goroutine does; an explicit
	// Compact would retry failed runs at once.
	background := func() error {
		db.maintMu.Lock()
		defer db.maintMu.Unlock()
		return db.compactLocked(2)
	}
	for range 3 {
		flush()
	}
	failedIDs := segIDs()

	fsys.FailNth(vfs.OpCreate, 1, syscall.EIO) // the merged segment's file
	if err := db.Compact(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Compact with a failing create = %v, want EIO", err)
	}
	if got := db.MaintenanceCounts(); got.CompactionFailures != 1 || got.Compactions != 0 {
		t.Fatalf("counts after the failure: %+v", got)
	}
	creates := fsys.Count(vfs.OpCreate)
	for range 5 {
		if err := background(); err != nil {
			t.Fatalf("compaction during the backoff: %v", err)
		}
	}
	if got := fsys.Count(vfs.OpCreate); got != creates {
		t.Fatalf("%d creates during the backoff: the failed run was retried", got-creates)
	}
	if got := segIDs(); !slices.Equal(got, failedIDs) {
		t.Fatalf("segments during the backoff = %v, want %v", got, failedIDs)
	}

	// Later flushes and compactions go ahead.
	flush()
	flush()
	if err := background(); err != nil {
		t.Fatalf("compaction of the later run: %v", err)
	}
	got := segIDs()
	if len(got) != len(failedIDs)+1 || !slices.Equal(got[:len(failedIDs)], failedIDs) {
		t.Fatalf("segments after the later compaction = %v, want %v and one merged segment", got, failedIDs)
	}
	if c := db.MaintenanceCounts(); c.Compactions != 1 || c.CompactionFailures != 1 {
		t.Fatalf("counts after the later compaction: %+v", c)
	}

	// An explicit Compact does not wait for the backoff: the run is merged
	// with its neighbour.
	if err := db.Compact(); err != nil {
		t.Fatalf("explicit Compact during the backoff: %v", err)
	}
	if got := segIDs(); len(got) != 1 {
		t.Fatalf("segments after the backoff = %v, want one", got)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(dir)
	if err != nil || len(rep.Faults) != 0 || rep.Artifacts != n {
		t.Fatalf("verify: %+v %v, want %d artifacts", rep, err, n)
	}
}
