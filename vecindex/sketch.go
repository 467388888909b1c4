package vecindex

import (
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// The two-stage scan. Reading every int8 row costs the scan its memory
// bandwidth (38 MB per query at 100k documents of 384 dimensions), so a part
// also keeps a sketch of its rows at half the size: each row as 4-bit codes
// y with a scale s, x ≈ s·y, and an upper bound E on the norm of the
// residual e = x - s·y. For the query q,
//
//	q·x = s·(q·y) + q·e,  |q·e| <= ||q||·E  (Cauchy-Schwarz),
//
// so s·(q·y) + ||q||·E bounds the exact int8 dot product from above. A
// search of enough documents (newBounds) then runs in three steps:
//
//  1. bound every document from its sketch (boundDocs), reading half the
//     bytes;
//  2. seed: score exactly the few documents with the highest bounds, about
//     2k, so that the heap's k-th score is close to the final one at once;
//  3. score exactly every other document whose bound reaches the heap's
//     k-th score (rescoreDocs): about 1% of MiniLM passages for k = 100.
//
// A document whose bound is below the k-th score of documents already scored
// ranks after k of them, so it cannot be in the top k; every other document
// is scored with the int8 kernel and the heap only ever holds exact scores,
// so the answer is the plain scan's, bit for bit and in the same order.
// Which documents are scored exactly depends on how the chunks fall to the
// goroutines; the answer does not. The bound is computed in float64 with a
// relative margin (sketchSlack) far larger than every rounding on the way,
// so rounding can only make it looser.
//
// Sketches are derived from the rows, never stored: a segment's are built
// lazily, granule by granule, by the first scan that reads them (segments are
// immutable), the head's as documents are added or set.

// sketchElems is how many elements one 64-byte block of a sketch row holds.
// Byte i of a block holds element i in its low nibble and element 64+i in its
// high nibble, as the code + 8 (0..15), so that the SIMD kernels unpack a
// block with one shift and two masks and multiply the unsigned codes by the
// signed query bytes (u8·s8) directly.
const sketchElems = 128

// sketchRowBytes is the size of a sketch row for vectors of dim values: dim
// rounded up to whole blocks, two codes a byte. Padding codes are 8 (zero).
func sketchRowBytes(dim int) int {
	return (dim + sketchElems - 1) / sketchElems * (sketchElems / 2)
}

// sketchGranule is how many documents of a segment a scan sketches at once:
// a scan chunk's worth, aligned to the part's start.
const sketchGranule = scanChunkDocs

// sketchSlack is the relative margin on a document's upper bound. The
// bound's inputs are float32 (about 6e-8 relative error) and float64 (about
// 1e-16 per operation), so 1e-6 covers them all with room to spare; it
// loosens the bound by a millionth, which prunes no less in practice.
const sketchSlack = 1e-6

// sketch is the sketch of a run of documents: packed codes, rowBytes per
// document, and per document two float32, ab[2i] = s·dscale (the code scale
// times the document's scale) and ab[2i+1] >= E·dscale (the residual bound,
// rounded up). A document with dscale 0 has both 0.
type sketch struct {
	rowBytes int
	packed   []byte
	ab       []float32
}

// sketcher is the optional interface of a Part that keeps a sketch: the
// sketch, valid for documents [start, end) at least (indexes are the part's
// document numbers). MemVectors and SegVectors implement it.
type sketcher interface {
	sketchFor(start, end int) *sketch
}

// sketchRow writes the sketch of the int8 row x (dim values used, the rest
// ignored) with document scale dscale into dst (sketchRowBytes(dim) bytes)
// and returns the two per-document values.
//
// The codes round x to steps of max|x|/sketchSteps, clipping the few largest
// values; the scale is then refitted by least squares to those codes. Any
// codes and scale give a valid bound, as E is computed from the ones stored;
// these make the residual small (its norm is about a tenth of the row's for
// sentence embeddings).
func sketchRow(x []int8, dim int, dscale float32, dst []byte) (a, b float32) {
	x = x[:dim]
	if dscale == 0 {
		for i := range dst {
			dst[i] = 0x88
		}
		return 0, 0
	}
	// Padding codes are 8 (zero); packCodes overwrites the rest.
	for i := dim / sketchElems * (sketchElems / 2); i < len(dst); i++ {
		dst[i] = 0x88
	}
	// Quantize maps the largest |value| to 127, so try its codes first: one
	// pass for rows that Quantize made, two for others.
	xx, xy, yy, maxAbs := packCodes(x, dst, 127)
	if maxAbs == 0 {
		return 0, 0
	}
	if maxAbs != 127 {
		xx, xy, yy, _ = packCodes(x, dst, maxAbs)
	}
	// yy > 0: the largest |value| has a code of magnitude >= 4.
	s4 := float32(float64(xy) / float64(yy))
	// ||x - s4·y||² = xx - 2·s4·xy + s4²·yy. The three terms are within a
	// few ulps of exact (xx, xy, yy are exact integers), so adding 1e-12 of
	// their magnitudes bounds the rounding of the cancellation from above.
	s := float64(s4)
	t1, t2, t3 := float64(xx), 2*s*float64(xy), s*s*float64(yy)
	e2 := max(t1-t2+t3, 0) + 1e-12*(t1+math.Abs(t2)+t3)
	e := math.Sqrt(e2) * (1 + 1e-9)
	return float32(s * float64(dscale)), roundUp32(e * float64(dscale) * (1 + 1e-9))
}

// packCodes writes the codes of x for steps of maxAbs/sketchSteps into the
// sketch row dst (leaving its padding alone) and returns the sums the
// least-squares scale and the residual need, and x's actual max |value|.
// int32 sums cannot overflow: len(x) <= MaxDim, each term <= 2^14.
func packCodes(x []int8, dst []byte, maxAbs int32) (xx, xy, yy, actualMax int32) {
	codes := &sketchCodes()[maxAbs]
	var lo8, hi8 int32
	const half = sketchElems / 2
	for blk := 0; blk*sketchElems < len(x); blk++ {
		lo := x[blk*sketchElems : min(blk*sketchElems+half, len(x))]
		out := dst[blk*half : blk*half+len(lo)]
		for i, v := range lo {
			w := int32(v)
			c := codes[uint8(v)]
			y := int32(c) - 8
			lo8, hi8 = min(lo8, w), max(hi8, w)
			xx += w * w
			xy += w * y
			yy += y * y
			out[i] = 0x80 | c
		}
		if blk*sketchElems+half >= len(x) {
			break
		}
		hi := x[blk*sketchElems+half : min(blk*sketchElems+sketchElems, len(x))]
		out = out[:len(hi)]
		for i, v := range hi {
			w := int32(v)
			c := codes[uint8(v)]
			y := int32(c) - 8
			lo8, hi8 = min(lo8, w), max(hi8, w)
			xx += w * w
			xy += w * y
			yy += y * y
			out[i] = out[i]&0x0f | c<<4
		}
	}
	return xx, xy, yy, max(hi8, -lo8)
}

// sketchSteps is how many code steps span max|x|: 9 clips the few values
// beyond code 7.5 and rounds the rest finer, which leaves a smaller residual
// on sentence embeddings than 7.5 (no clipping) or any other choice between
// 7 and 13 (measured on MiniLM vectors).
const sketchSteps = 9.0

// sketchCodes returns, for every max|x| from 1 to 128, the code + 8 of
// every int8 value v (indexed by uint8(v)): round(v·sketchSteps/max|x|)
// clamped to -8..7.
var sketchCodes = sync.OnceValue(func() *[129][256]byte {
	var t [129][256]byte
	for m := 1; m <= 128; m++ {
		for u := range 256 {
			v := float64(int8(u))
			y := min(max(math.Round(v*sketchSteps/float64(m)), -8), 7)
			t[m][u] = byte(int(y) + 8)
		}
	}
	return &t
})

// getCode returns code y of element i of a sketch row.
func getCode(row []byte, i int) int {
	blk, j := i/sketchElems, i%sketchElems
	b := row[blk*(sketchElems/2)+j%(sketchElems/2)]
	if j < sketchElems/2 {
		return int(b&0x0f) - 8
	}
	return int(b>>4) - 8
}

// roundUp32 returns the smallest float32 >= x (x >= 0, finite).
func roundUp32(x float64) float32 {
	f := float32(x)
	if float64(f) < x {
		f = math.Nextafter32(f, float32(math.Inf(1)))
	}
	return f
}

// build sketches documents [start, end) of rows (stride bytes each)
// with their scales into sk, which must be sized for them.
func (sk *sketch) build(rows []int8, scales []float32, dim, stride, start, end int) {
	for doc := start; doc < end; doc++ {
		a, b := sketchRow(rows[doc*stride:], dim, scales[doc], sk.packed[doc*sk.rowBytes:(doc+1)*sk.rowBytes])
		sk.ab[2*doc], sk.ab[2*doc+1] = a, b
	}
}

// lazySketch is an immutable part's sketch, built granule by granule on
// first use. It is shared by the part's copies (SegVectors.WithKeys), which
// have the same rows and scales.
type lazySketch struct {
	once     sync.Once // allocates sk
	sk       sketch
	granules []sync.Once
	bytes    atomic.Int64 // sk's size once allocated, for SketchBytes
}

// sketchFor returns the sketch of an immutable part, building the granules
// of [start, end) that no earlier call built.
func (l *lazySketch) sketchFor(p Part, start, end int) *sketch {
	n := p.NumDocs()
	l.once.Do(func() {
		rb := sketchRowBytes(p.Dim())
		l.sk = sketch{rowBytes: rb, packed: make([]byte, n*rb), ab: make([]float32, 2*n)}
		l.granules = make([]sync.Once, (n+sketchGranule-1)/sketchGranule)
		l.bytes.Store(int64(len(l.sk.packed)) + 4*int64(len(l.sk.ab)))
	})
	rows, scales := p.Rows(), p.Scales()
	dim, stride := p.Dim(), Stride(p.Dim())
	for g := start / sketchGranule; g*sketchGranule < end; g++ {
		l.granules[g].Do(func() {
			l.sk.build(rows, scales, dim, stride, g*sketchGranule, min((g+1)*sketchGranule, n))
		})
	}
	return &l.sk
}

// lazyListSketch is an immutable part's sketch in the order of its IVF
// lists (row j sketches document lists.docs[j]; a document of scale 0 has
// a NaN residual bound, so that a bound need not read the scales), so that IVF bounds the
// documents of a probed list from one contiguous run of sketch rows
// instead of gathering rows scattered over the part: at a million
// documents the gather, not the arithmetic, is what IVF's time went to.
type lazyListSketch struct {
	once  sync.Once
	sk    sketch
	bytes atomic.Int64
}

// listSketcher is the optional interface of a Part that keeps a sketch in
// list order for centroids c (nil when its lists are not c's).
type listSketcher interface {
	listSketchFor(c *Centroids) (*sketch, *ivfLists)
}

// get returns the sketch of p's documents in the order of lists, building
// it on first use, on every core: it is built whole (a million rows take
// about 1.8 s of CPU), and whoever asks for it waits (a search, the
// maintainer, or the warmer after a restart). Each row's sketch depends on
// its row alone, so the bytes are the same however the rows are shared.
func (l *lazyListSketch) get(p Part, lists *ivfLists) *sketch {
	l.once.Do(func() {
		n, rb := len(lists.docs), sketchRowBytes(p.Dim())
		l.sk = sketch{rowBytes: rb, packed: make([]byte, n*rb), ab: make([]float32, 2*n)}
		rows, scales := p.Rows(), p.Scales()
		dim, stride := p.Dim(), Stride(p.Dim())
		onCores(n, sketchGranule, func(from, to int) {
			for j := from; j < to; j++ {
				d := lists.docs[j]
				a, b := sketchRow(rows[int(d)*stride:], dim, scales[d], l.sk.packed[j*rb:(j+1)*rb])
				if scales[d] == 0 {
					b = float32(math.NaN()) // never returned: its bound is NaN (bound)
				}
				l.sk.ab[2*j], l.sk.ab[2*j+1] = a, b
			}
		})
		l.bytes.Store(int64(len(l.sk.packed)) + 4*int64(len(l.sk.ab)))
	})
	return &l.sk
}

// onCores calls f on runs [from, to) of at most run indexes that together
// cover [0, n), from GOMAXPROCS goroutines (the caller's included) taking
// the next run as they come free.
func onCores(n, run int, f func(from, to int)) {
	var next atomic.Int64
	work := func() {
		for {
			from := int(next.Add(int64(run))) - run
			if from >= n {
				return
			}
			f(from, min(from+run, n))
		}
	}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), (n+run-1)/run) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
}

// minTwoStageDocs is the fewest documents a search must cover, and
// twoStageDocsPerHit the fewest per hit asked for, for the two-stage scan:
// below either the plain scan is as fast (it reads few rows, or most of
// them would be rescored anyway). Variables so that tests can lower them.
var (
	minTwoStageDocs    = 2 * scanChunkDocs
	twoStageDocsPerHit = 16
)

// bounds is a two-stage search's upper bound on every document's score, at
// off[part]+doc: NaN for a document that is already scored or can never be
// returned (scale 0), so that no comparison selects it.
type bounds struct {
	upper  []float64
	off    []int
	sample []float64 // seed's scratch
}

var boundsPool = sync.Pool{New: func() any { return new(bounds) }}

// newBounds returns empty bounds for a two-stage search of parts for k
// hits, or nil when the plain scan should run: two-stage scan disabled, no
// SIMD kernel (the pure-Go sketch product costs as much as the int8 one),
// no or too few documents, or too many hits asked for.
func newBounds(parts []Part, k int) *bounds {
	n := 0
	for _, p := range parts {
		n += p.NumDocs()
	}
	if !useSketch || activeKernel.name == genericKernel.name || n == 0 || n < minTwoStageDocs ||
		int64(n) < int64(k)*int64(twoStageDocsPerHit) {
		return nil
	}
	b := boundsPool.Get().(*bounds)
	b.upper = slices.Grow(b.upper[:0], n)[:n]
	b.off = b.off[:0]
	n = 0
	for _, p := range parts {
		b.off = append(b.off, n)
		n += p.NumDocs()
	}
	return b
}

// release returns b to its pool.
func (b *bounds) release() { boundsPool.Put(b) }

// BuildSketch builds the part's whole sketch now, when a search of it could
// use one, so that the first search after a flush or compaction does not
// pay for it (about 0.8 µs of CPU per row). The sketch takes half the
// rows' bytes plus 8 bytes per row (SketchBytes).
//
// A part of a workspace that IVF searches (one of at least IVFMinSpans
// spans, its model having centroids and the part lists of them) is only
// searched by IVF, but for a metadata-filtered search: its sketch is built
// in list order instead (SearchIVF), and the one in document order only if
// an exact scan ever asks for it. workspaceSpans says how large the
// workspace is; it is called only for a part that could have a sketch, and
// a wrong answer only costs a sketch built by the first search instead.
func (s *SegVectors) BuildSketch(workspaceSpans func() int) {
	if !useSketch || activeKernel.name == genericKernel.name || s.NumDocs() < minTwoStageDocs {
		return
	}
	if c, minSpans, _ := IVFPolicy(s.model); c != nil && s.lists != nil && s.lists.id == c.id &&
		(s.NumDocs() >= minSpans || workspaceSpans != nil && workspaceSpans() >= minSpans) {
		s.listSketchFor(c)
		return
	}
	// Granule by granule, on every core (a granule's rows depend on
	// nothing else).
	onCores(s.NumDocs(), sketchGranule, func(from, to int) { s.sketchFor(from, to) })
}

// SketchBytes is the memory the part's sketches hold (0 until one is
// built).
func (s *SegVectors) SketchBytes() int64 {
	n := s.sketch.bytes.Load()
	if s.listSketch != nil {
		n += s.listSketch.bytes.Load()
	}
	return n
}

// useSketch enables the two-stage scan; tests turn it off to compare.
var useSketch = true

// boundDocs sets the bounds of documents [start, end) of part pi from its
// sketch; a part without one is scored exactly instead (its bounds NaN).
func (h *topK) boundDocs(pi int, p Part, st *searchState, b *bounds, qscale float32, start, end int) {
	up := b.upper[b.off[pi]+start : b.off[pi]+end]
	s, ok := p.(sketcher)
	if !ok {
		h.scanDocs(pi, p, st, qscale, start, end)
		for i := range up {
			up[i] = math.NaN()
		}
		return
	}
	sk := s.sketchFor(start, end)
	rb, scales := sk.rowBytes, p.Scales()
	// est + bnd >= the exact dot product times the document's scale; the
	// slack covers rounding; times qscale it bounds the exact Score.
	qs, qn, off := float64(qscale), st.qNorm, 8*st.qSum
	for blk := start; blk < end; blk += searchBlock {
		stop := min(blk+searchBlock, end)
		dots := st.dots[:stop-blk]
		sketchBatch(st.qSketch, sk.packed[blk*rb:stop*rb], rb, dots)
		ab := sk.ab[2*blk : 2*stop]
		u := up[blk-start : stop-start]
		for i, d := range dots {
			est := float64(ab[2*i]) * float64(d-off)
			bnd := qn * float64(ab[2*i+1])
			u[i] = qs * (est + bnd + (math.Abs(est)+bnd)*sketchSlack)
			if scales[blk+i] == 0 {
				u[i] = math.NaN()
			}
		}
	}
}

// seedRows is how many documents per hit seed rescores: the ones with the
// highest bounds, so that the heap's k-th score starts close to the final
// one and the rescoring pass that follows scores few documents.
const seedRows = 2

// seed scores exactly the documents with the highest bounds, about
// seedRows*k of them, and marks them scored. It runs once, after every
// bound is set.
func (h *topK) seed(parts []Part, st *searchState, b *bounds, qscale float32) {
	h.seedFrom(b.upper, &b.sample, func(t float64) {
		for pi, p := range parts {
			h.rescoreDocs(pi, p, st, b, qscale, 0, p.NumDocs(), t)
		}
	})
}

// seedFrom finds the documents with the highest of the bounds upper, about
// seedRows*k of them, through a quantile t of a sample of the bounds, and
// has rescore(t) score every unscored document whose bound reaches t; it
// asks for four times as many until the heap holds k.
func (h *topK) seedFrom(upper []float64, sample *[]float64, rescore func(t float64)) {
	n := len(upper)
	step := max(1, n/2048)
	smp := (*sample)[:0]
	for i := 0; i < n; i += step {
		if u := upper[i]; !math.IsNaN(u) {
			smp = append(smp, u)
		}
	}
	*sample = smp
	slices.Sort(smp)
	for want := seedRows * h.k; ; want *= 4 {
		// Documents with bounds >= t are about want; all of them when the
		// sample is too small to tell.
		t := math.Inf(-1)
		if pos := int(int64(want) * int64(len(smp)) / int64(n)); pos < len(smp) {
			t = smp[len(smp)-1-pos]
		}
		rescore(t)
		if len(h.entries) == h.k || math.IsInf(t, -1) {
			return
		}
	}
}

// rescoreDocs scores exactly the documents of [start, end) of part pi whose
// bound reaches floor and the heap's worst score (once the heap is full),
// and marks them scored. Any floor is correct for the answer as long as k
// documents seen by some call score at least it.
func (h *topK) rescoreDocs(pi int, p Part, st *searchState, b *bounds, qscale float32, start, end int, floor float64) {
	up := b.upper[b.off[pi] : b.off[pi]+end]
	stride := len(st.q)
	rows, scales := p.Rows(), p.Scales()
	exact := 0
	for doc := start; doc < end; {
		t := max(floor, h.floor())
		// Survivors of up to searchBlock documents, scored together.
		base := doc
		stop := min(doc+searchBlock, end)
		survivors := st.survivors[:0]
		for ; doc < stop; doc++ {
			if up[doc] >= t {
				survivors = append(survivors, int32(doc-base))
				up[doc] = math.NaN()
			}
		}
		st.survivors = survivors
		if len(survivors) == 0 {
			continue
		}
		exact += len(survivors)
		dots := st.dots[:len(survivors)]
		dotGather(st.q, rows[base*stride:stop*stride], stride, survivors, dots)
		for j, x := range dots {
			d := base + int(survivors[j])
			h.offer(entry{score: Score(x, qscale, scales[d]), ref: uint64(pi)<<32 | uint64(d)})
		}
	}
	exactScored.Add(int64(exact))
}

// queryNorm returns an upper bound on ||q|| and the sum of q's values.
func queryNorm(q []int8) (norm float64, sum int32) {
	var ss int64
	for _, v := range q {
		ss += int64(v) * int64(v)
		sum += int32(v)
	}
	return math.Sqrt(float64(ss)) * (1 + 1e-12), sum
}
