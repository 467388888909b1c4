package engine

import (
	"errors"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/loci-memory/loci/vfs"
)

func TestPlanRun(t *testing.T) {
	// segs builds segments 1, 2, ... of the given sizes; a negative size
	// marks a segment holding erased data.
	segs := func(sizes ...int64) []planSegment {
		out := make([]planSegment, len(sizes))
		for i, s := range sizes {
			out[i] = planSegment{ID: uint64(i + 1), Size: max(s, -s), Erased: s < 0}
		}
		return out
	}
	ids := func(ids ...uint64) map[uint64]bool {
		m := map[uint64]bool{}
		for _, id := range ids {
			m[id] = true
		}
		return m
	}
	b := compactionBounds{MinRun: 3, MaxSegment: 100, MaxRunBytes: 100}
	cases := []struct {
		name   string
		segs   []planSegment
		failed map[uint64]bool
		b      compactionBounds
		lo, hi int
	}{
		{"none", nil, nil, b, -1, -1},
		{"too few", segs(10, 10), nil, b, -1, -1},
		{"minimum run", segs(10, 10, 10), nil, b, 0, 3},
		{"whole small run", segs(10, 10, 10, 10, 10), nil, b, 0, 5},
		{"large segments split runs", segs(10, 10, 200, 10, 10, 10), nil, b, 3, 6},
		{"large segment not merged", segs(200, 200, 200), nil, b, -1, -1},
		{"large erased segment alone", segs(200, -200, 10), nil, b, 1, 2},
		{"short run with erased data", segs(200, 10, -10, 200), nil, b, 1, 3},
		{"byte bound keeps every run short", segs(40, 40, 40, 40, 40), nil, b, -1, -1},
		{"byte bound ends the run", segs(30, 30, 30, 30, 30), nil, b, 0, 3},
		{"byte bound: later start fits more", segs(90, 30, 30, 30), nil, b, 1, 4},
		{"byte bound: nothing fits", segs(60, 60, 60, 60), nil, b, -1, -1},
		{"no byte bound", segs(60, 60, 60, 60), nil, compactionBounds{MinRun: 3, MaxSegment: 100}, 0, 4},
		{"erased segment over the byte bound alone", segs(200, -90, 50), nil, compactionBounds{MinRun: 3, MaxSegment: 100, MaxRunBytes: 80}, 1, 2},
		{"failed run skipped, later run planned", segs(10, 10, 10, 10, 10, 10), ids(1, 2, 3), b, 3, 6},
		{"failed run splits runs", segs(10, 10, 10, 10, 10, 10, 10), ids(4), b, 0, 3},
		{"failed run leaves a short tail", segs(10, 10, 10, 10, 10), ids(1, 2, 3), b, -1, -1},
		{"failed erased segment skipped", segs(-200, 10, 10, 10), ids(1), b, 1, 4},
		{"failed segments never planned", segs(-10, -10), ids(1, 2), b, -1, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi := planRun(tc.segs, tc.failed, tc.b)
			if lo != tc.lo || hi != tc.hi {
				t.Errorf("planRun = [%d:%d], want [%d:%d]", lo, hi, tc.lo, tc.hi)
			}
		})
	}
}

func TestCompactionFailuresBackoff(t *testing.T) {
	var f compactionFailures
	now := time.Unix(1000, 0)
	live := func(ids ...uint64) []planSegment {
		var out []planSegment
		for _, id := range ids {
			out = append(out, planSegment{ID: id})
		}
		return out
	}
	if got := f.blocked(live(1, 2, 3), now); got != nil {
		t.Fatalf("blocked before any failure = %v", got)
	}
	if wait := f.failed([]uint64{1, 2}, now); wait != compactionRetry {
		t.Fatalf("first failure waits %v, want %v", wait, compactionRetry)
	}
	if got := f.blocked(live(1, 2, 3), now.Add(compactionRetry-1)); !got[1] || !got[2] || got[3] {
		t.Fatalf("blocked during the backoff = %v, want 1 and 2", got)
	}
	if got := f.blocked(live(1, 2, 3), now.Add(compactionRetry)); got != nil {
		t.Fatalf("blocked after the backoff = %v", got)
	}
	// The run retried with a newer segment fails again: twice the wait.
	now = now.Add(compactionRetry)
	if wait := f.failed([]uint64{1, 2, 3}, now); wait != 2*compactionRetry {
		t.Fatalf("second failure waits %v, want %v", wait, 2*compactionRetry)
	}
	if len(f.runs) != 1 {
		t.Fatalf("runs = %+v, want the larger run only", f.runs)
	}
	for range 20 {
		now = now.Add(compactionRetryMax)
		f.failed([]uint64{1, 2, 3}, now)
	}
	if wait := f.runs[0].until.Sub(now); wait != compactionRetryMax {
		t.Fatalf("wait after many failures = %v, want the cap %v", wait, compactionRetryMax)
	}
	// A segment of the run is gone: the segment set changed, the run is forgotten.
	if got := f.blocked(live(1, 3, 4), now); got != nil || len(f.runs) != 0 {
		t.Fatalf("after segment 2 went: blocked %v, runs %+v", got, f.runs)
	}
}

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
