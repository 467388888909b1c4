package manifest

import (
	"testing"
	"time"
)

func TestPlanRun(t *testing.T) {
	// segs builds segments 1, 2, ... of the given sizes; a negative size
	// marks a segment holding erased data.
	segs := func(sizes ...int64) []PlanSegment {
		out := make([]PlanSegment, len(sizes))
		for i, s := range sizes {
			out[i] = PlanSegment{ID: uint64(i + 1), Size: max(s, -s), Erased: s < 0}
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
	b := PlanBounds{MinRun: 3, MaxSegment: 100, MaxRunBytes: 100}
	cases := []struct {
		name   string
		segs   []PlanSegment
		failed map[uint64]bool
		b      PlanBounds
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
		{"no byte bound", segs(60, 60, 60, 60), nil, PlanBounds{MinRun: 3, MaxSegment: 100}, 0, 4},
		{"erased segment over the byte bound alone", segs(200, -90, 50), nil, PlanBounds{MinRun: 3, MaxSegment: 100, MaxRunBytes: 80}, 1, 2},
		{"failed run skipped, later run planned", segs(10, 10, 10, 10, 10, 10), ids(1, 2, 3), b, 3, 6},
		{"failed run splits runs", segs(10, 10, 10, 10, 10, 10, 10), ids(4), b, 0, 3},
		{"failed run leaves a short tail", segs(10, 10, 10, 10, 10), ids(1, 2, 3), b, -1, -1},
		{"failed erased segment skipped", segs(-200, 10, 10, 10), ids(1), b, 1, 4},
		{"failed segments never planned", segs(-10, -10), ids(1, 2), b, -1, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi := PlanRun(tc.segs, tc.failed, tc.b)
			if lo != tc.lo || hi != tc.hi {
				t.Errorf("PlanRun = [%d:%d], want [%d:%d]", lo, hi, tc.lo, tc.hi)
			}
		})
	}
}

func TestCompactionFailuresBackoff(t *testing.T) {
	var f FailedRuns
	now := time.Unix(1000, 0)
	live := func(ids ...uint64) []PlanSegment {
		var out []PlanSegment
		for _, id := range ids {
			out = append(out, PlanSegment{ID: id})
		}
		return out
	}
	if got := f.Blocked(live(1, 2, 3), now); got != nil {
		t.Fatalf("blocked before any failure = %v", got)
	}
	if wait := f.Failed([]uint64{1, 2}, now); wait != compactionRetry {
		t.Fatalf("first failure waits %v, want %v", wait, compactionRetry)
	}
	if got := f.Blocked(live(1, 2, 3), now.Add(compactionRetry-1)); !got[1] || !got[2] || got[3] {
		t.Fatalf("blocked during the backoff = %v, want 1 and 2", got)
	}
	if got := f.Blocked(live(1, 2, 3), now.Add(compactionRetry)); got != nil {
		t.Fatalf("blocked after the backoff = %v", got)
	}
	// The run retried with a newer segment fails again: twice the wait.
	now = now.Add(compactionRetry)
	if wait := f.Failed([]uint64{1, 2, 3}, now); wait != 2*compactionRetry {
		t.Fatalf("second failure waits %v, want %v", wait, 2*compactionRetry)
	}
	if len(f.runs) != 1 {
		t.Fatalf("runs = %+v, want the larger run only", f.runs)
	}
	for range 20 {
		now = now.Add(compactionRetryMax)
		f.Failed([]uint64{1, 2, 3}, now)
	}
	if wait := f.runs[0].until.Sub(now); wait != compactionRetryMax {
		t.Fatalf("wait after many failures = %v, want the cap %v", wait, compactionRetryMax)
	}
	// A segment of the run is gone: the segment set changed, the run is forgotten.
	if got := f.Blocked(live(1, 3, 4), now); got != nil || len(f.runs) != 0 {
		t.Fatalf("after segment 2 went: blocked %v, runs %+v", got, f.runs)
	}
}
