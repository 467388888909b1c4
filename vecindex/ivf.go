package vecindex

import (
	"crypto/sha256"
	"embed"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	bits64 "math/bits"
	"slices"
	"strings"
	"sync"
)

// Inverted-file (IVF) search. The determinism rule (docs/architecture.md,
// § Vector index) is that a request's semantic hits depend on the data and
// the query only, never on how the documents fall into parts. So:
//
//   - the centroids are a function of the embedder alone (a file per model,
//     trained once on a reference corpus and shipped in the binary), never
//     of a workspace's content or of when something was trained;
//   - a document's list is a pure function of its int8 row (Assign), and
//     the probed lists a pure function of the query (probe);
//   - the candidate set is every document of every part whose list is
//     probed, scored exactly; ordering is Search's total order.
//
// A part that stores no lists for these centroids (a section written
// before IVF, or for other centroids) is scanned in full, each document
// counting only if its own list, computed from its row, is probed: slower,
// but the same candidates.

// Centroids are an embedder's coarse quantizer: Lists() unit vectors stored
// as int8 rows. The file is a vector section (docs/format/vecindex.md §
// Centroid file) whose documents are the centroids, in list order.
type Centroids struct {
	sec   *SegVectors
	id    [8]byte
	lists int
}

// ParseCentroids reads a centroid file. It returns an error wrapping
// ErrCorrupt for a file that is not a valid vector section, holds no
// centroid or more than MaxLists, or has a zero centroid.
func ParseCentroids(b []byte) (*Centroids, error) {
	s, err := OpenSegVectors(b)
	if err != nil {
		return nil, err
	}
	if n := s.NumDocs(); n < 1 || n > MaxLists {
		return nil, fmt.Errorf("%w: %d centroids, want 1..%d", ErrCorrupt, n, MaxLists)
	}
	for i, x := range s.Scales() {
		if x == 0 {
			return nil, fmt.Errorf("%w: centroid %d is zero", ErrCorrupt, i)
		}
	}
	sum := sha256.Sum256(b)
	c := &Centroids{sec: s, lists: s.NumDocs()}
	copy(c.id[:], sum[:8])
	return c, nil
}

// MaxLists is the largest number of centroids (lists) a file may hold.
const MaxLists = 1 << 16

// EncodeCentroids writes unit-length centroids of model as a centroid
// file: each quantized (Quantize), keyed by its list number (big endian in
// the key's first 4 bytes).
func EncodeCentroids(model string, cents [][]float32) ([]byte, error) {
	if len(cents) == 0 || len(cents) > MaxLists {
		return nil, fmt.Errorf("vecindex.EncodeCentroids: %d centroids, want 1..%d", len(cents), MaxLists)
	}
	dim := len(cents[0])
	keys := make([][16]byte, len(cents))
	rows := make([][]int8, len(cents))
	scales := make([]float32, len(cents))
	for i, c := range cents {
		if len(c) != dim {
			return nil, fmt.Errorf("vecindex.EncodeCentroids: centroid %d has %d values, want %d", i, len(c), dim)
		}
		binary.BigEndian.PutUint32(keys[i][:], uint32(i))
		rows[i] = make([]int8, dim)
		if scales[i] = Quantize(c, rows[i]); scales[i] == 0 {
			return nil, fmt.Errorf("vecindex.EncodeCentroids: centroid %d is zero", i)
		}
	}
	return encodeSection(model, dim, keys, scales, nil, func(i int) []int8 { return rows[i] }), nil
}

// NewCentroids is ParseCentroids(EncodeCentroids(model, cents)): centroids
// made in memory, as the file of them would give.
func NewCentroids(model string, cents [][]float32) (*Centroids, error) {
	b, err := EncodeCentroids(model, cents)
	if err != nil {
		return nil, err
	}
	return ParseCentroids(b)
}

// Model is the vector space the centroids belong to.
func (c *Centroids) Model() string { return c.sec.Model() }

// Dim is the centroids' dimension.
func (c *Centroids) Dim() int { return c.sec.Dim() }

// Lists is the number of centroids, hence of lists.
func (c *Centroids) Lists() int { return c.lists }

// ID is the first 8 bytes of the SHA-256 of the centroid file: sections
// record it beside their lists, which are used only under the same ID.
func (c *Centroids) ID() [8]byte { return c.id }

// dots sets dots[l] to row · centroid l (row is Stride(Dim()) values).
func (c *Centroids) dots(row []int8, dots []int32) {
	stride := Stride(c.Dim())
	dotBatch(row[:stride], c.sec.Rows(), stride, dots[:c.lists])
}

// Assign returns the list of a document row (Dim() or Stride(Dim())
// values, padded with zeros): the centroid l maximising
// float64(row·c_l) * float64(scale_l), the lowest l on ties. It is exact
// integer and float64 arithmetic, the same on every machine and kernel. A
// zero row goes to list 0 (it is never a hit anyway).
func (c *Centroids) Assign(row []int8) uint32 {
	if len(row) < Stride(c.Dim()) {
		p := make([]int8, Stride(c.Dim()))
		copy(p, row[:c.Dim()])
		row = p
	}
	buf := dotsPool.Get().(*[]int32)
	defer dotsPool.Put(buf)
	return c.assign(row, buf)
}

// assign is Assign for a padded row, with buf as scratch.
func (c *Centroids) assign(row []int8, buf *[]int32) uint32 {
	*buf = slices.Grow((*buf)[:0], c.lists)[:c.lists]
	dots := *buf
	c.dots(row, dots)
	scales := c.sec.Scales()
	best, bs := 0, math.Inf(-1)
	for l, d := range dots {
		if s := float64(d) * float64(scales[l]); s > bs {
			best, bs = l, s
		}
	}
	return uint32(best)
}

var dotsPool = sync.Pool{New: func() any { b := make([]int32, 0, 1024); return &b }}

// probeInto returns a mask of the nprobe lists nearest the padded query:
// by float64(q·c_l) * float64(scale_l) descending, then l ascending. The
// mask and the scratch it takes are st's.
func (c *Centroids) probeInto(q []int8, nprobe int, st *searchState) []bool {
	dots := slices.Grow(st.probeDots[:0], c.lists)[:c.lists]
	c.dots(q, dots)
	scales := c.sec.Scales()
	order := slices.Grow(st.probeOrder[:0], c.lists)[:c.lists]
	score := slices.Grow(st.probeScore[:0], c.lists)[:c.lists]
	for l, d := range dots {
		order[l], score[l] = l, float64(d)*float64(scales[l])
	}
	slices.SortFunc(order, func(a, b int) int {
		switch {
		case score[a] > score[b]:
			return -1
		case score[a] < score[b]:
			return 1
		}
		return a - b
	})
	mask := slices.Grow(st.mask[:0], c.lists)[:c.lists]
	clear(mask)
	for _, l := range order[:min(max(nprobe, 1), c.lists)] {
		mask[l] = true
	}
	st.probeDots, st.probeOrder, st.probeScore, st.mask = dots, order, score, mask
	return mask
}

// Built-in centroid files, one per model, named after it (centroids/*.lvec;
// docs/format/vecindex.md § Centroid file; bench.TrainIVF made them).
//
//go:embed centroids
var centroidFiles embed.FS

// The IVF policy (docs/architecture.md § IVF): a workspace of at least
// IVFMinSpans visible spans, whose model has centroids, is searched by IVF
// probing IVFProbe lists; smaller ones by the exact scan. The span count is
// the workspace's at the request's view, the same whatever the layout, so
// the choice is too. Measured (docs/benchmarks.md § One million real
// spans): on a workspace of 1M real encoder vectors (every sentence and
// clause of the shared data sets' texts) and the data sets' real
// questions, recall@100 against the exact scan is 0.930 / 0.967 / 0.980 /
// 0.987 at 64 / 128 / 192 / 256 of 1,024 lists probed, for 2.7 / 5.1 /
// 6.6 / 8.2 ms against 26.5 ms exact (p50): 256 is the fewest lists that
// reach 0.98. Per data set (§ IVF recall per data set at a million spans)
// 256 gives 0.973 on HotpotQA's questions and 0.986-0.995 on the others;
// 320 reaches 0.98 on all four for 2-5 ms more of every 1M-span pack. At
// 100k, IVF is 1.2-1.7 ms against 2.5-3 ms exact, not worth its recall loss.
const (
	IVFMinSpans = 1_000_000
	IVFProbe    = 256
)

// ivfState is the process's centroids by model and policy.
type ivfState struct {
	byModel          map[string]*Centroids
	minSpans, nprobe int
}

var (
	ivfOnce sync.Once
	ivfMu   sync.RWMutex
	ivf     ivfState
)

func loadIVF() {
	ivfOnce.Do(func() {
		ivf = ivfState{byModel: map[string]*Centroids{}, minSpans: IVFMinSpans, nprobe: IVFProbe}
		ents, _ := centroidFiles.ReadDir("centroids")
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), ".lvec") {
				continue
			}
			b, err := centroidFiles.ReadFile("centroids/" + e.Name())
			if err != nil {
				panic("BUG: vecindex: built-in centroids: " + err.Error())
			}
			c, err := ParseCentroids(b)
			if err != nil {
				panic("BUG: vecindex: built-in centroids " + e.Name() + ": " + err.Error())
			}
			ivf.byModel[c.Model()] = c
		}
	})
}

// CentroidsFor returns the centroids of model, or nil when it has none (its
// workspaces are always scanned exactly).
func CentroidsFor(model string) *Centroids {
	loadIVF()
	ivfMu.RLock()
	defer ivfMu.RUnlock()
	return ivf.byModel[model]
}

// IVFPolicy returns model's centroids (nil when it has none) and the
// policy in force: the least span count IVF searches, and its probe count.
func IVFPolicy(model string) (c *Centroids, minSpans, nprobe int) {
	loadIVF()
	ivfMu.RLock()
	defer ivfMu.RUnlock()
	return ivf.byModel[model], ivf.minSpans, ivf.nprobe
}

// IVFFor returns the centroids and probe count to search parts with, for
// a workspace of spans visible spans, or nil for the exact scan: IVF when
// spans reaches the policy's size and the parts' model has centroids of
// their dim.
func IVFFor(parts []Part, spans int) (*Centroids, int) {
	if len(parts) == 0 {
		return nil, 0
	}
	loadIVF()
	ivfMu.RLock()
	defer ivfMu.RUnlock()
	c := ivf.byModel[parts[0].Model()]
	if c == nil || c.Dim() != parts[0].Dim() || spans < ivf.minSpans {
		return nil, 0
	}
	return c, ivf.nprobe
}

// UseCentroids makes c its model's centroids and sets the IVF policy,
// process-wide, until restore is called: for tests that need IVF on small
// workspaces of a test embedder. Heads created meanwhile keep lists for c
// and sections built meanwhile store them.
func UseCentroids(c *Centroids, minSpans, nprobe int) (restore func()) {
	loadIVF()
	ivfMu.Lock()
	defer ivfMu.Unlock()
	old := ivf
	ivf.byModel = maps.Clone(old.byModel)
	ivf.byModel[c.Model()] = c
	ivf.minSpans, ivf.nprobe = minSpans, nprobe
	return func() {
		ivfMu.Lock()
		defer ivfMu.Unlock()
		ivf = old
	}
}

// SearchAuto searches parts of a workspace of spans visible spans as the
// policy says: SearchIVF or Search.
func SearchAuto(parts []Part, spans int, q []int8, qscale float32, k int) []Hit {
	if c, nprobe := IVFFor(parts, spans); c != nil {
		hits, _ := SearchIVF(parts, c, q, qscale, k, nprobe)
		return hits
	}
	return Search(parts, q, qscale, k)
}

// ivfLists are a part's documents grouped by list: list l holds
// docs[offsets[l]:offsets[l+1]], ascending.
type ivfLists struct {
	id      [8]byte
	offsets []uint32 // lists+1
	docs    []uint32

	invOnce sync.Once
	inv     []uint32 // each document's list, for listOf
}

// buildLists groups documents 0..len(assign)-1 by their list.
func buildLists(id [8]byte, lists int, assign []uint32) *ivfLists {
	l := &ivfLists{id: id, offsets: make([]uint32, lists+1), docs: make([]uint32, len(assign))}
	for _, a := range assign {
		l.offsets[a+1]++
	}
	for i := 1; i <= lists; i++ {
		l.offsets[i] += l.offsets[i-1]
	}
	next := slices.Clone(l.offsets[:lists])
	for d, a := range assign {
		l.docs[next[a]] = uint32(d)
		next[a]++
	}
	return l
}

// NoList marks a document whose list is not known (BuildSectionLists).
const NoList uint32 = math.MaxUint32

// ListOf returns the IVF list of document doc of p under the centroids of
// p's model, when p keeps it (a head assigns as it adds; a version 2
// section stores lists), else false: for copying documents into a new
// section (BuildSectionLists) without assigning their rows again.
func ListOf(p Part, doc int) (uint32, bool) {
	c := CentroidsFor(p.Model())
	if c == nil || c.Dim() != p.Dim() {
		return 0, false
	}
	return listOf(p, doc, c)
}

func listOf(p Part, doc int, c *Centroids) (uint32, bool) {
	ip, ok := p.(ivfPart)
	if !ok {
		return 0, false
	}
	lists, assign := ip.ivfFor(c)
	switch {
	case assign != nil:
		return assign[doc], true
	case lists != nil:
		return lists.listOf(doc), true
	}
	return 0, false
}

// listOf returns the list holding doc, from the inverse of the lists,
// built on first use and kept.
func (l *ivfLists) listOf(doc int) uint32 {
	l.invOnce.Do(func() {
		l.inv = make([]uint32, len(l.docs))
		for li := range len(l.offsets) - 1 {
			for _, d := range l.docs[l.offsets[li]:l.offsets[li+1]] {
				l.inv[d] = uint32(li)
			}
		}
	})
	return l.inv[doc]
}

// ivfPart is a Part that may know its documents' lists for centroids c:
// either grouped (lists) or per document (assign), or neither (nil, nil).
type ivfPart interface {
	ivfFor(c *Centroids) (lists *ivfLists, assign []uint32)
}

// ascending puts docs, distinct documents of a part of n, in ascending
// order in place, through a bitmap of the part (linear, not a sort).
func (st *searchState) ascending(docs []int32, n int) []int32 {
	bits := slices.Grow(st.bits[:0], (n+63)/64)[:(n+63)/64]
	clear(bits)
	for _, d := range docs {
		bits[d>>6] |= 1 << (d & 63)
	}
	i := 0
	for w, word := range bits {
		for word != 0 {
			docs[i] = int32(w<<6 | bits64.TrailingZeros64(word))
			i++
			word &= word - 1
		}
	}
	st.bits = bits
	return docs
}

// gathered returns st's scratch sketch for n rows of rb bytes.
func (st *searchState) gathered(n, rb int) *sketch {
	g := &st.gather
	g.rowBytes = rb
	g.packed = slices.Grow(g.packed[:0], n*rb)[:n*rb]
	g.ab = slices.Grow(g.ab[:0], 2*n)[:2*n]
	return g
}

// bound sets up[i] to the upper bound on the score of the document whose
// sketch is row i of sk, for every row (NaN for a document never returned:
// its residual bound is NaN).
func bound(sk *sketch, st *searchState, qscale float32, up []float64) {
	rb := sk.rowBytes
	qs, qn, qoff := float64(qscale), st.qNorm, 8*st.qSum
	for blk := 0; blk < len(up); blk += searchBlock {
		stop := min(blk+searchBlock, len(up))
		dots := st.dots[:stop-blk]
		sketchBatch(st.qSketch, sk.packed[blk*rb:stop*rb], rb, dots)
		ab, u := sk.ab[2*blk:2*stop], up[blk:stop]
		for i, x := range dots {
			est := float64(ab[2*i]) * float64(x-qoff)
			bnd := qn * float64(ab[2*i+1])
			u[i] = qs * (est + bnd + (math.Abs(est)+bnd)*sketchSlack)
		}
	}
}

// scanAssigning scores every document of p and offers to the heap those
// that could enter it and whose list, computed from the row, is in mask.
// Assigning costs Lists() dot products, so only candidates that beat the
// heap's floor pay it.
func (h *topK) scanAssigning(pi int, p Part, st *searchState, qscale float32, c *Centroids, mask []bool) int {
	stride := len(st.q)
	rows, scales := p.Rows(), p.Scales()
	buf := dotsPool.Get().(*[]int32)
	defer dotsPool.Put(buf)
	n := p.NumDocs()
	for start := 0; start < n; start += searchBlock {
		stop := min(start+searchBlock, n)
		dots := st.dots[:stop-start]
		dotBatch(st.q, rows[start*stride:stop*stride], stride, dots)
		for i, d := range dots {
			doc := start + i
			ds := scales[doc]
			if ds == 0 {
				continue
			}
			e := entry{score: Score(d, qscale, ds), ref: uint64(pi)<<32 | uint64(doc)}
			if len(h.entries) == h.k && (e.score < h.entries[0].score || !h.worse(h.entries[0], e)) {
				continue
			}
			if !mask[c.assign(rows[doc*stride:(doc+1)*stride], buf)] {
				continue
			}
			h.offer(e)
		}
	}
	return n
}
