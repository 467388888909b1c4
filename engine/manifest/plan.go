package manifest

import (
	"slices"
	"sync"
	"time"
)

// Compaction planning: which contiguous run of segments to rewrite next. The
// planner, PlanRun, is a pure function of the segments' ids, sizes and
// erased flags, the segments left alone after a failure, and the bounds, so
// that it can be tested by table; the engine's DB.planCompaction
// (engine/maintain.go) gathers its inputs.

// PlanSegment is what the planner knows of a live segment.
type PlanSegment struct {
	ID     uint64
	Size   int64 // file size in bytes
	Erased bool  // holds erased data or expired receipts: must be rewritten
}

// PlanBounds bound the runs the planner chooses.
type PlanBounds struct {
	// MinRun: a run of small segments is merged once it has this many.
	MinRun int
	// MaxSegment: segments at least this large are not merged with others;
	// one is rewritten alone when it holds erased data.
	MaxSegment int64
	// MaxRunBytes: a merged run's segments total at most this many bytes (0:
	// no bound); a run of one segment may exceed it. DB.planCompaction sets
	// it to CompactionMaxBytes: a merge's output, about the sum of its
	// inputs, is then no larger than the segments compaction stops merging,
	// and the memory and time of one merge (mergeData holds the run's
	// output in memory, and flushes wait for maintMu meanwhile) are bounded
	// by it rather than by how many small segments piled up during a burst
	// of writes.
	MaxRunBytes int64
}

// PlanRun returns the first run segs[lo:hi] worth rewriting, or -1, -1: a
// large segment holding erased data alone, or a run of contiguous small
// segments within MaxRunBytes that has at least MinRun segments or holds
// erased data. Segments in failed are part of a run whose compaction failed
// recently: no run includes them, and runs before and after them are
// planned as if they were large. Only neighbours merge, which keeps
// segments in Seq order.
func PlanRun(segs []PlanSegment, failed map[uint64]bool, b PlanBounds) (lo, hi int) {
	mergeable := func(i int) bool { return !failed[segs[i].ID] && segs[i].Size < b.MaxSegment }
	for i := 0; i < len(segs); {
		if !mergeable(i) {
			if !failed[segs[i].ID] && segs[i].Erased {
				return i, i + 1
			}
			i++
			continue
		}
		j, size, erased := i, int64(0), false
		for j < len(segs) && mergeable(j) && (j == i || b.MaxRunBytes <= 0 || size+segs[j].Size <= b.MaxRunBytes) {
			size += segs[j].Size
			erased = erased || segs[j].Erased
			j++
		}
		if j-i >= b.MinRun || erased {
			return i, j
		}
		if j < len(segs) && mergeable(j) {
			i++ // the byte bound stopped the run: one starting later may hold more segments
		} else {
			i = j // every run starting before j is a part of this one
		}
	}
	return -1, -1
}

// compactionRetry is how long the segments of a run whose compaction failed
// are left alone. Each further failure of a run holding them doubles it, up
// to compactionRetryMax. Before, a failed run was retried at every
// maintenance tick (a second) and blocked every run after it; ten seconds
// keeps a passing fault (a disk full for a moment) cheap, and the cap keeps
// erased data from waiting more than minutes once the cause is gone.
// A variable, so tests can shorten it.
var compactionRetry = 10 * time.Second

const compactionRetryMax = 10 * time.Minute

// failedRun is a run whose compaction failed, by segment ids.
type failedRun struct {
	ids   []uint64 // ascending Seq order, as in DB.segments
	fails int      // consecutive failures of this run or a part of it
	until time.Time
}

// FailedRuns remembers the failed runs of one DB. Its own mutex guards
// it: the engine's compactionDue plans without maintMu.
type FailedRuns struct {
	mu   sync.Mutex
	runs []failedRun
}

// ForgetAll forgets every failed run.
func (f *FailedRuns) ForgetAll() {
	f.mu.Lock()
	f.runs = nil
	f.mu.Unlock()
}

// Blocked returns the ids of the segments of failed runs still waiting at
// now, and forgets runs of which a segment is no longer live: the segment
// set changed under them (a later compaction or erasure rewrote one), so
// planning starts afresh there.
func (f *FailedRuns) Blocked(live []PlanSegment, now time.Time) map[uint64]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.runs) == 0 {
		return nil
	}
	ids := make(map[uint64]bool, len(live))
	for _, s := range live {
		ids[s.ID] = true
	}
	var out map[uint64]bool
	f.runs = slices.DeleteFunc(f.runs, func(r failedRun) bool {
		for _, id := range r.ids {
			if !ids[id] {
				return true
			}
		}
		if now.Before(r.until) {
			if out == nil {
				out = map[uint64]bool{}
			}
			for _, id := range r.ids {
				out[id] = true
			}
		}
		return false
	})
	return out
}

// Failed records that compacting the run of ids failed at now and returns
// how long its segments are left alone. A run holding an earlier failed run
// (the same segments and newer ones, say) continues that run's backoff.
func (f *FailedRuns) Failed(ids []uint64, now time.Time) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	in := make(map[uint64]bool, len(ids))
	for _, id := range ids {
		in[id] = true
	}
	fails := 1
	f.runs = slices.DeleteFunc(f.runs, func(r failedRun) bool {
		for _, id := range r.ids {
			if !in[id] {
				return false
			}
		}
		fails = max(fails, r.fails+1)
		return true // subsumed by the new run
	})
	wait := compactionRetry
	for i := 1; i < fails && wait < compactionRetryMax; i++ {
		wait *= 2
	}
	wait = min(wait, compactionRetryMax)
	f.runs = append(f.runs, failedRun{ids: slices.Clone(ids), fails: fails, until: now.Add(wait)})
	return wait
}
