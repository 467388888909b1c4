package vecindex

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// searchBlock is how many documents one DotBatch call scores: enough to
// amortise the call, small enough that the dot products stay in L1.
const searchBlock = 1024

// Search returns the exact top k documents of parts for the quantized query
// q (Dim() values, or Stride(Dim()) with zero padding) and its scale, best
// first: by Score descending, then Key ascending, then (Part, Doc) ascending
// for equal keys. Every document is scored, so the answer is the same for
// any partitioning of the same documents that keeps their order (apart from
// the Part and Doc fields, which locate each hit): the engine's parts keep
// ingest order.
//
// Over enough documents Search runs the two-stage scan (sketch.go): it
// bounds every document from a half-size sketch of its row and scores
// exactly only those whose bound reaches the k-th score, with the same
// answer, scores and order.
//
// Documents with scale 0 (zero vectors) carry no semantic signal and are
// never returned; nor is anything for a query whose scale is not positive
// and finite, k <= 0, or no parts. All parts must have the query's dim; a
// mismatch is a caller bug and panics. Search allocates only the returned
// slice: the padded query, dot products, heap and bounds come from pools.
func Search(parts []Part, q []int8, qscale float32, k int) []Hit {
	st := startSearch(parts, q, qscale, k)
	if st == nil {
		return nil
	}
	defer searchPool.Put(st)
	h := &st.heap
	if b := newBounds(parts, k); b != nil {
		// The two-stage scan (sketch.go) in one goroutine: bound every
		// document, seed the heap, then rescore what can still make it.
		for pi, p := range parts {
			h.boundDocs(pi, p, st, b, qscale, 0, p.NumDocs())
		}
		h.seed(parts, st, b, qscale)
		floor := h.floor()
		for pi, p := range parts {
			h.rescoreDocs(pi, p, st, b, qscale, 0, p.NumDocs(), floor)
		}
		b.release()
	} else {
		for pi, p := range parts {
			h.scanDocs(pi, p, st, qscale, 0, p.NumDocs())
		}
	}
	out := make([]Hit, 0, len(h.entries))
	out = h.appendHits(out)
	slices.SortFunc(out, func(a, b Hit) int { return compareHits(&a, &b) })
	return out
}

// checkDims panics unless q and every part have dim.
// startSearch checks a search's arguments and returns a pooled state with
// the query set and the heap ready for k hits, or nil when nothing can be
// found (see Search); the caller puts the state back.
func startSearch(parts []Part, q []int8, qscale float32, k int) *searchState {
	if k <= 0 || len(parts) == 0 || !(qscale > 0) || math.IsInf(float64(qscale), 1) {
		return nil
	}
	dim := parts[0].Dim()
	checkDims(parts, q, dim)
	st := searchPool.Get().(*searchState)
	st.setQuery(q, dim)
	h := &st.heap
	h.reset(k)
	for _, p := range parts {
		h.keys = append(h.keys, p.Keys())
	}
	return st
}

func checkDims(parts []Part, q []int8, dim int) {
	if len(q) != dim && len(q) != Stride(dim) {
		panic(fmt.Sprintf("BUG: vecindex.Search: query of %d values for dim %d", len(q), dim))
	}
	for pi, p := range parts {
		if p.Dim() != dim {
			panic(fmt.Sprintf("BUG: vecindex.Search: part %d has dim %d, query %d", pi, p.Dim(), dim))
		}
	}
}

// setQuery copies the query, padded with zeros to the stride.
func (st *searchState) setQuery(q []int8, dim int) {
	stride := Stride(dim)
	st.q = slices.Grow(st.q[:0], stride)[:stride]
	copy(st.q, q[:dim])
	clear(st.q[dim:])
	n := 2 * sketchRowBytes(dim)
	st.qSketch = slices.Grow(st.qSketch[:0], n)[:n]
	copy(st.qSketch, q[:dim])
	clear(st.qSketch[dim:])
	st.qNorm, st.qSum = queryNorm(st.q)
}

// appendHits appends the heap's entries as hits (unordered) and empties the
// heap, dropping its references to the parts' keys.
func (h *topK) appendHits(out []Hit) []Hit {
	for _, e := range h.entries {
		pi, doc := e.part(), e.doc()
		out = append(out, Hit{Part: pi, Doc: doc, Score: e.score, Key: h.keys[pi][doc]})
	}
	h.reset(0)
	return out
}

// A Scan is a Search that several goroutines can share: each Work call
// scores chunks of documents until none is left, and Hits merges what
// every call kept. The answer is Search's whatever the number of Work
// calls and however the chunks fall to them: each call keeps the top k of
// the documents it scored under the same total order, and the global top k
// is the top k of their union. A caller that has the query vector starts
// the scan, and goroutines that come free later join it.
//
// A two-stage Scan shares both of its passes: the calls bound chunks, the
// one that bounds the last seeds its heap, and then all rescore chunks. A
// document left out by any call's k-th score ranks after k scored
// documents, so it is not in the global top k either. A call that finds
// every chunk bounded waits for the last one in progress (one chunk's
// bounding, tens of microseconds) before it rescores.
type Scan struct {
	parts  []Part
	q      []int8 // the query as given
	qscale float32
	k      int
	chunks []scanChunk

	next    atomic.Int64 // index of the next chunk to score
	mu      sync.Mutex
	workers []*searchState // one per Work call, returned to the pool by Hits

	// The two-stage scan (sketch.go), when bounds is not nil: Work calls
	// first bound every chunk (next, pending); the call that bounds the
	// last one seeds its heap, sets floor and closes ready; then every
	// call rescores chunks (nextRescore) above its threshold.
	bounds      *bounds
	pending     atomic.Int64 // chunks not yet bounded
	ready       chan struct{}
	floor       float64 // the seeding call's k-th exact score, or -Inf
	nextRescore atomic.Int64
}

// scanChunk is a run of documents of one part.
type scanChunk struct {
	part       int
	start, end int
}

// scanChunkDocs is how many documents a Work call takes at once: at 384
// dimensions 3 MB of rows, a few hundred microseconds of scanning, so that
// a goroutine joining late still finds work and chunks stay few.
const scanChunkDocs = 8 * searchBlock

// NewScan prepares a Search for Work calls; it panics as Search does on a
// query or part of the wrong dim.
func NewScan(parts []Part, q []int8, qscale float32, k int) *Scan {
	return newScan(parts, q, qscale, k, scanChunkDocs)
}

// newScan is NewScan with chunks of chunkDocs documents.
func newScan(parts []Part, q []int8, qscale float32, k, chunkDocs int) *Scan {
	s := &Scan{parts: parts, q: q, qscale: qscale, k: k}
	if k <= 0 || len(parts) == 0 || !(qscale > 0) || math.IsInf(float64(qscale), 1) {
		return s // no chunks: Hits is nil
	}
	checkDims(parts, q, parts[0].Dim())
	for pi, p := range parts {
		for start, n := 0, p.NumDocs(); start < n; start += chunkDocs {
			s.chunks = append(s.chunks, scanChunk{pi, start, min(start+chunkDocs, n)})
		}
	}
	if s.bounds = newBounds(parts, k); s.bounds != nil && len(s.chunks) > 0 {
		s.pending.Store(int64(len(s.chunks)))
		s.ready = make(chan struct{})
	}
	return s
}

// Work scores chunks of documents until none is left. It may be called from
// any number of goroutines, before Hits.
func (s *Scan) Work() {
	if int(s.next.Load()) >= len(s.chunks) && (s.bounds == nil || int(s.nextRescore.Load()) >= len(s.chunks)) {
		return
	}
	st := joinSearch(s.parts, s.q, s.k, &s.mu, &s.workers)
	h := &st.heap
	if s.bounds == nil {
		for {
			c := int(s.next.Add(1)) - 1
			if c >= len(s.chunks) {
				return
			}
			ch := s.chunks[c]
			h.scanDocs(ch.part, s.parts[ch.part], st, s.qscale, ch.start, ch.end)
		}
	}
	for {
		c := int(s.next.Add(1)) - 1
		if c >= len(s.chunks) {
			break
		}
		ch := s.chunks[c]
		h.boundDocs(ch.part, s.parts[ch.part], st, s.bounds, s.qscale, ch.start, ch.end)
		if s.pending.Add(-1) == 0 {
			h.seed(s.parts, st, s.bounds, s.qscale)
			s.floor = h.floor()
			close(s.ready)
		}
	}
	// Another call may still be bounding its last chunk: a short wait.
	<-s.ready
	for {
		c := int(s.nextRescore.Add(1)) - 1
		if c >= len(s.chunks) {
			return
		}
		ch := s.chunks[c]
		h.rescoreDocs(ch.part, s.parts[ch.part], st, s.bounds, s.qscale, ch.start, ch.end, s.floor)
	}
}

// Hits returns the top k hits, best first (see Search), once every Work
// call has returned.
func (s *Scan) Hits() []Hit {
	if len(s.workers) == 0 {
		return nil
	}
	out := mergeWorkers(s.workers, s.k)
	s.workers = nil
	if s.bounds != nil {
		s.bounds.release()
		s.bounds = nil
	}
	return out
}

// joinSearch returns a pooled state for a Work call of a shared search of
// parts for the top k of query q, and adds it to workers under mu.
func joinSearch(parts []Part, q []int8, k int, mu *sync.Mutex, workers *[]*searchState) *searchState {
	st := searchPool.Get().(*searchState)
	st.setQuery(q, parts[0].Dim())
	h := &st.heap
	h.reset(k)
	for _, p := range parts {
		h.keys = append(h.keys, p.Keys())
	}
	mu.Lock()
	*workers = append(*workers, st)
	mu.Unlock()
	return st
}

// mergeWorkers returns the top k of what the Work calls' states kept, best
// first, and puts the states back in their pool.
func mergeWorkers(workers []*searchState, k int) []Hit {
	n := 0
	for _, st := range workers {
		n += len(st.heap.entries)
	}
	out := make([]Hit, 0, n)
	for _, st := range workers {
		out = st.heap.appendHits(out)
		searchPool.Put(st)
	}
	slices.SortFunc(out, func(a, b Hit) int { return compareHits(&a, &b) })
	if len(out) > k {
		out = out[:k:k]
	}
	return out
}

type searchState struct {
	q    []int8
	dots []int32
	heap topK

	// For the two-stage scan: the query padded to whole sketch blocks, an
	// upper bound on its norm, the sum of its values, and the documents a
	// block rescores.
	qSketch   []int8
	qNorm     float64
	qSum      int32
	survivors []int32

	bits []uint64 // SearchIVF: a part's candidate documents

	// SearchIVF's probe (Centroids.probeInto): the lists' dot products,
	// order and scores, and the mask of the probed lists.
	probeDots  []int32
	probeOrder []int
	probeScore []float64
	mask       []bool

	// SearchIVF's two-stage scan: every part's probed documents, ascending
	// (cands[candOff[i]:candOff[i+1]] are part i's), their upper bounds
	// (NaN once scored), and the sketch rows of a block gathered.
	cands   []int32
	candOff []int
	scan    []bool // the part does not know its lists: scanned, assigning
	upper   []float64
	sample  []float64
	gather  sketch // a block's sketch rows, gathered
}

var searchPool = sync.Pool{New: func() any {
	return &searchState{dots: make([]int32, searchBlock), survivors: make([]int32, 0, searchBlock)}
}}

// scanDocs scores documents [start, end) of p and offers them to the heap.
func (h *topK) scanDocs(pi int, p Part, st *searchState, qscale float32, start, end int) {
	stride := len(st.q)
	rows, scales := p.Rows(), p.Scales()
	rows, scales = rows[:end*stride], scales[:end]
	exactScored.Add(int64(end - start))
	for ; start < end; start += searchBlock {
		stop := min(start+searchBlock, end)
		dots := st.dots[:stop-start]
		dotBatch(st.q, rows[start*stride:stop*stride], stride, dots)
		for i, d := range dots {
			doc := start + i
			ds := scales[doc]
			if ds == 0 {
				continue
			}
			e := entry{score: Score(d, qscale, ds), ref: uint64(pi)<<32 | uint64(doc)}
			if len(h.entries) < h.k {
				h.push(e)
				continue
			}
			// Most documents lose to the current k-th hit on score alone
			// (offer, written out: it does not inline).
			if e.score < h.entries[0].score || !h.worse(h.entries[0], e) {
				continue
			}
			h.entries[0] = e
			h.down(0)
		}
	}
}

// offer adds e to the heap if the heap is not full or e ranks before its
// worst entry.
func (h *topK) offer(e entry) {
	if len(h.entries) < h.k {
		h.push(e)
		return
	}
	// Most documents lose to the current k-th hit on score alone.
	if e.score < h.entries[0].score || !h.worse(h.entries[0], e) {
		return
	}
	h.entries[0] = e
	h.down(0)
}

// floor is the heap's worst score when it is full (no document scoring
// less can enter it), else -Inf.
func (h *topK) floor() float64 {
	if len(h.entries) < h.k {
		return math.Inf(-1)
	}
	return h.entries[0].score
}

// exactScored counts the documents scored with the int8 kernel, for the
// benchmarks' share of documents rescored.
var exactScored atomic.Int64

// compareHits orders hits best first: Score descending, Key ascending, then
// Part and Doc ascending. It returns < 0 when a ranks before b.
func compareHits(a, b *Hit) int {
	if a.Score != b.Score {
		if a.Score > b.Score {
			return -1
		}
		return 1
	}
	if c := bytes.Compare(a.Key[:], b.Key[:]); c != 0 {
		return c
	}
	if a.Part != b.Part {
		return a.Part - b.Part
	}
	switch {
	case a.Doc < b.Doc:
		return -1
	case a.Doc > b.Doc:
		return 1
	}
	return 0
}

// entry is a heap element: a score and the hit's location, part << 32 | doc.
// Keys are looked up only to break score ties and for the final hits, which
// keeps the heap small and its comparisons cheap.
type entry struct {
	score float64
	ref   uint64
}

func (e entry) part() int   { return int(e.ref >> 32) }
func (e entry) doc() uint32 { return uint32(e.ref) }

// topK is a binary heap of at most k entries whose root is the worst one, so
// a better candidate replaces the root in O(log k).
type topK struct {
	entries []entry
	k       int
	keys    [][][16]byte // keys[part], for ties
}

func (h *topK) reset(k int) {
	h.entries = h.entries[:0]
	clear(h.keys)
	h.keys = h.keys[:0]
	h.k = k
}

// worse reports whether a ranks after b: lower score, or equal score and a
// greater key, or equal keys and a greater (part, doc).
func (h *topK) worse(a, b entry) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return h.worseTie(a, b)
}

// worseTie is worse for equal scores, out of line so that worse inlines.
func (h *topK) worseTie(a, b entry) bool {
	ka, kb := &h.keys[a.part()][a.doc()], &h.keys[b.part()][b.doc()]
	if c := bytes.Compare(ka[:], kb[:]); c != 0 {
		return c > 0
	}
	return a.ref > b.ref
}

func (h *topK) push(x entry) {
	h.entries = append(h.entries, x)
	i := len(h.entries) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.worse(h.entries[i], h.entries[p]) {
			break
		}
		h.entries[i], h.entries[p] = h.entries[p], h.entries[i]
		i = p
	}
}

func (h *topK) down(i int) {
	e := h.entries
	n := len(e)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		w := l
		if r := l + 1; r < n && h.worse(e[r], e[l]) {
			w = r
		}
		if !h.worse(e[w], e[i]) {
			return
		}
		e[i], e[w] = e[w], e[i]
		i = w
	}
}
