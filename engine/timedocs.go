package engine

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
)

// timeRun is the documents [first, first+n) of one artifact, whose time is
// ts (Unix µs). An artifact's spans are contiguous documents of its part.
type timeRun struct {
	ts       int64
	first, n uint32
}

// timeRuns is a part's artifacts by time, for a pack's since/until window:
// sorted by ts, so the runs of a window are one binary search and a walk.
type timeRuns []timeRun

// window returns the documents of the runs whose time is within [since,
// until] (both inclusive): a new bitmap the caller owns.
func (rs timeRuns) window(since, until int64) *roaring.Bitmap {
	out := roaring.New()
	i := sort.Search(len(rs), func(i int) bool { return rs[i].ts >= since })
	for ; i < len(rs) && rs[i].ts <= until; i++ {
		out.AddRange(uint64(rs[i].first), uint64(rs[i].first)+uint64(rs[i].n))
	}
	return out
}

// sortRuns orders runs by time (then document, so the order is total).
func sortRuns(rs timeRuns) {
	slices.SortFunc(rs, func(a, b timeRun) int { return cmp.Or(cmp.Compare(a.ts, b.ts), cmp.Compare(a.first, b.first)) })
}

// headRuns returns a head workspace's runs; a head is small and changes
// with every ingest, so they are built per pack (one entry per artifact).
func headRuns(w *headWorkspace) timeRuns {
	rs := make(timeRuns, 0, len(w.artifacts))
	for _, ha := range w.artifacts {
		if len(ha.spans) > 0 {
			rs = append(rs, timeRun{ts: ha.a.Timestamp, first: ha.firstDoc, n: uint32(len(ha.spans))})
		}
	}
	sortRuns(rs)
	return rs
}

// timeIndex returns workspace wi's runs, built on the first pack with a
// window from its ARTIFACT_META rows and span table (segments are
// immutable). Callers hold DB.mu (shared at least), so the segment stays
// open.
func (s *liveSegment) timeIndex(wi int) (timeRuns, error) {
	s.metaMu.Lock()
	rs, ok := s.timeIdx[wi]
	s.metaMu.Unlock()
	if ok {
		return rs, nil
	}
	times := map[uuid.UUID]int64{}
	err := segmentMeta(s, wi, func(a *artifact.Artifact) error {
		times[a.ID] = a.Timestamp
		return nil
	})
	if err != nil {
		return nil, err
	}
	rs = timeRuns{}
	err = s.artifactDocs(wi, func(art uuid.UUID, first, n int) error {
		ts, found := times[art]
		if !found {
			return fmt.Errorf("segment %s: workspace %d: span %d of artifact %s without metadata", s.Path(), wi, first, art)
		}
		rs = append(rs, timeRun{ts: ts, first: uint32(first), n: uint32(n)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sortRuns(rs)
	s.metaMu.Lock()
	if s.timeIdx == nil {
		s.timeIdx = map[int]timeRuns{}
	}
	s.timeIdx[wi] = rs
	s.metaMu.Unlock()
	return rs, nil
}

// TimeDocs returns, for each part in LexicalParts' order, the documents
// whose artifact time is within [since, until] (Unix µs, both inclusive).
// Like MetadataDocs, it restricts what the channels search, so that their
// pools are filled with spans of the window (a filter applied after the
// pools would leave a pack short whenever the best spans lie outside it).
func (v *View) TimeDocs(since, until int64) ([]*roaring.Bitmap, error) {
	out := make([]*roaring.Bitmap, len(v.srcs))
	for i, src := range v.srcs {
		if src.hw != nil {
			out[i] = headRuns(src.hw).window(since, until)
			continue
		}
		rs, err := src.seg.timeIndex(src.ws)
		if err != nil {
			return nil, fmt.Errorf("engine: view: %w", err)
		}
		out[i] = src.inView(rs.window(since, until))
	}
	return out, nil
}
