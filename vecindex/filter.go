package vecindex

import (
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
)

// SearchAllowed is Search over only the documents of parts[i] in
// allow[i] (a nil entry, or a missing one when allow is shorter than
// parts, allows every document of its part): a metadata filter's
// restriction. It scores every allowed document exactly, so its answer is
// Search's over the same documents, with the same scores, order and ties,
// whatever the filter's selectivity. It runs in one goroutine: a filter
// selective enough to matter leaves few documents, and one that is not
// costs at most one plain scan.
func SearchAllowed(parts []Part, allow []*roaring.Bitmap, q []int8, qscale float32, k int) []Hit {
	st := startSearch(parts, q, qscale, k)
	if st == nil {
		return nil
	}
	defer searchPool.Put(st)
	h := &st.heap
	for pi, p := range parts {
		var a *roaring.Bitmap
		if pi < len(allow) {
			a = allow[pi]
		}
		if a == nil {
			h.scanDocs(pi, p, st, qscale, 0, p.NumDocs())
			continue
		}
		n := uint32(p.NumDocs())
		idx := st.survivors[:0]
		it := a.Iterator()
		for it.HasNext() {
			d := it.Next()
			if d >= n {
				break
			}
			if idx = append(idx, int32(d)); len(idx) == searchBlock {
				h.scoreListed(pi, p, st, qscale, idx)
				idx = idx[:0]
			}
		}
		h.scoreListed(pi, p, st, qscale, idx)
		st.survivors = idx[:0]
	}
	out := make([]Hit, 0, len(h.entries))
	out = h.appendHits(out)
	slices.SortFunc(out, func(a, b Hit) int { return compareHits(&a, &b) })
	return out
}

// scoreListed scores the documents idx (at most searchBlock, distinct, in
// any order: ascending reads the rows fastest) of part pi exactly and
// offers them to the heap.
func (h *topK) scoreListed(pi int, p Part, st *searchState, qscale float32, idx []int32) {
	if len(idx) == 0 {
		return
	}
	stride := len(st.q)
	end := int(slices.Max(idx)) + 1
	rows, scales := p.Rows()[:end*stride], p.Scales()
	dots := st.dots[:len(idx)]
	dotGather(st.q, rows, stride, idx, dots)
	exactScored.Add(int64(len(idx)))
	for j, x := range dots {
		d := int(idx[j])
		if scales[d] == 0 {
			continue
		}
		h.offer(entry{score: Score(x, qscale, scales[d]), ref: uint64(pi)<<32 | uint64(d)})
	}
}
