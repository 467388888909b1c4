package vecindex

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// plainSearch is Search without the two-stage scan: every document scored
// with the int8 kernel, the reference the two-stage scan must match.
func plainSearch(t testing.TB, parts []Part, q []int8, qscale float32, k int) []Hit {
	t.Helper()
	useSketch = false
	defer func() { useSketch = true }()
	return Search(parts, q, qscale, k)
}

func TestSketchRowBound(t *testing.T) {
	// The bound must hold for every query, the worst-aligned ones included:
	// q = e itself reaches |q·e| = ||q||·||e||.
	r := rand.New(rand.NewPCG(3, 4))
	for _, dim := range []int{1, 15, 100, 128, 129, 384, 1536} {
		x := make([]int8, Stride(dim))
		row := make([]byte, sketchRowBytes(dim))
		q := make([]int8, 2*len(row))
		for trial := range 200 {
			for i := range dim {
				switch trial % 4 {
				case 0:
					x[i] = int8(r.Uint32())
				case 1:
					x[i] = int8(r.NormFloat64() * 30)
				case 2:
					x[i] = []int8{-128, 127, 0, 1, -1}[r.IntN(5)]
				default:
					x[i] = int8(r.IntN(3) - 1)
				}
			}
			a, b := sketchRow(x, dim, 1, row)
			if a < 0 || b < 0 || math.IsNaN(float64(a)) || math.IsNaN(float64(b)) {
				t.Fatalf("dim %d: a=%v b=%v", dim, a, b)
			}
			// Residual direction as the query (clamped to int8), and random
			// queries.
			for qt := range 4 {
				for i := range q {
					q[i] = 0
				}
				for i := range dim {
					if qt == 0 {
						e := float64(x[i]) - float64(a)*float64(getCode(row, i))
						q[i] = int8(max(-127, min(127, math.Round(e*4))))
					} else {
						q[i] = int8(r.Uint32())
					}
				}
				exact := dotInt8Generic(q[:dim], x[:dim])
				qn, sum := queryNorm(q)
				d := sketchDotGeneric(q, row) - 8*sum
				est := float64(a) * float64(d)
				bound := qn * float64(b)
				hi := est + bound + (math.Abs(est)+bound)*sketchSlack
				lo := est - bound - (math.Abs(est)+bound)*sketchSlack
				if float64(exact) > hi || float64(exact) < lo {
					t.Fatalf("dim %d trial %d: exact %d outside [%v, %v]", dim, trial, exact, lo, hi)
				}
			}
		}
	}
}

// sketchCase is one random data set for the property test.
type sketchCase struct {
	name  string
	sizes []int // documents per part
	gen   func(r *rand.Rand, doc int, v []float32) (zero bool)
}

// twoStageAlways makes every search of the test two-stage, however small.
func twoStageAlways(t *testing.T) {
	docs, perHit := minTwoStageDocs, twoStageDocsPerHit
	minTwoStageDocs, twoStageDocsPerHit = 0, 0
	t.Cleanup(func() { minTwoStageDocs, twoStageDocsPerHit = docs, perHit })
}

func TestTwoStageMatchesPlain(t *testing.T) {
	twoStageAlways(t)
	const dim = 96
	cases := []sketchCase{
		{"gaussian", []int{3000}, func(r *rand.Rand, _ int, v []float32) bool {
			for i := range v {
				v[i] = float32(r.NormFloat64())
			}
			return false
		}},
		{"clustered-parts", []int{1, 2500, 0, 700, 1300}, func(r *rand.Rand, doc int, v []float32) bool {
			c := rand.New(rand.NewPCG(uint64(doc%7), 9))
			for i := range v {
				v[i] = float32(c.NormFloat64() + 0.3*r.NormFloat64())
			}
			return doc%11 == 0 // zero vectors (scale 0) among them
		}},
		{"duplicates", []int{1500, 1500}, func(r *rand.Rand, doc int, v []float32) bool {
			// Few distinct vectors: many exact ties, broken by key then
			// position.
			c := rand.New(rand.NewPCG(uint64(doc%5), 1))
			for i := range v {
				v[i] = float32(c.NormFloat64())
			}
			return false
		}},
		{"near-equal", []int{2000, 1000}, func(r *rand.Rand, doc int, v []float32) bool {
			// One direction plus one-step perturbations: scores differ by a
			// few units of the last int8 code.
			c := rand.New(rand.NewPCG(1, 1))
			for i := range v {
				v[i] = float32(c.NormFloat64())
			}
			v[r.IntN(len(v))] += float32(r.NormFloat64() * 0.05)
			return false
		}},
		{"all-zero", []int{500, 500}, func(*rand.Rand, int, []float32) bool { return true }},
		{"sparse-ternary", []int{2000}, func(r *rand.Rand, _ int, v []float32) bool {
			for i := range v {
				v[i] = float32(r.IntN(3) - 1)
			}
			return false
		}},
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parts := buildCaseParts(t, r, c, dim)
			for qi := range 16 {
				q := make([]int8, dim)
				qf := make([]float32, dim)
				switch qi % 4 {
				case 3: // the residual of a document's sketch: where the
					// bound is tightest, so a bound too small prunes wrongly
					last := parts[len(parts)-1]
					doc := r.IntN(max(1, last.NumDocs()))
					x := last.Rows()[doc*Stride(dim):]
					row := make([]byte, sketchRowBytes(dim))
					a, _ := sketchRow(x, dim, 1, row)
					for i := range qf {
						qf[i] = float32(float64(x[i]) - float64(a)*float64(getCode(row, i)))
					}
				case 0: // a document's own vector, so near-ties at the top
					copy(q, parts[len(parts)-1].Rows()[:dim])
					qf = nil
				case 1:
					for i := range qf {
						qf[i] = float32(r.NormFloat64())
					}
				default:
					for i := range qf {
						qf[i] = float32(r.IntN(3) - 1)
					}
				}
				qscale := float32(0.01)
				if qf != nil {
					qscale = Quantize(qf, q)
				}
				for _, k := range []int{1, 2, 10, 100, 1000, 10_000} {
					want := plainSearch(t, parts, q, qscale, k)
					got := Search(parts, q, qscale, k)
					if !slices.Equal(got, want) {
						t.Fatalf("query %d k=%d: two-stage Search differs from plain (%d vs %d hits)", qi, k, len(got), len(want))
					}
					// A Scan in small chunks shared by two goroutines.
					s := newScan(parts, q, qscale, k, 300)
					var wg sync.WaitGroup
					wg.Go(s.Work)
					s.Work()
					wg.Wait()
					if got := s.Hits(); !slices.Equal(got, want) {
						t.Fatalf("query %d k=%d: two-stage Scan differs from plain", qi, k)
					}
				}
			}
		})
	}
}

// buildCaseParts builds c's parts: the first as a MemVectors (the head's
// incremental sketch, with some vectors Set after Add), the others as
// SegVectors (lazy sketches).
func buildCaseParts(t *testing.T, r *rand.Rand, c sketchCase, dim int) []Part {
	t.Helper()
	var parts []Part
	doc := 0
	v := make([]float32, dim)
	q := make([]int8, dim)
	for pi, n := range c.sizes {
		m := NewMemVectors("m", dim)
		for range n {
			var key [16]byte
			key[0] = byte(r.IntN(4)) // few distinct keys: ties reach the position
			var s float32
			if c.gen(r, doc, v) {
				clear(q)
			} else {
				s = Quantize(v, q)
			}
			if pi == 0 && doc%3 == 0 {
				d := m.Add(key, make([]int8, dim), 0)
				m.Set(d, q, s)
			} else {
				m.Add(key, q, s)
			}
			doc++
		}
		if pi == 0 {
			parts = append(parts, m)
			continue
		}
		seg, err := OpenSegVectors(m.Section())
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, seg)
	}
	return parts
}

func TestSketchScale0AndZeroRows(t *testing.T) {
	twoStageAlways(t)
	// A document with a non-zero row but scale 0 is never returned, whatever
	// its sketch says.
	m := NewMemVectors("m", 16)
	row := make([]int8, 16)
	for i := range row {
		row[i] = 100
	}
	for i := range 50 {
		m.Add([16]byte{byte(i)}, row, float32(i%2))
	}
	hits := Search([]Part{m}, row, 1, 30)
	want := plainSearch(t, []Part{m}, row, 1, 30)
	if !slices.Equal(hits, want) || len(hits) != 25 {
		t.Fatalf("got %d hits, want the 25 with scale 1", len(hits))
	}
	for _, h := range hits {
		if h.Doc%2 == 0 {
			t.Fatalf("hit %d has scale 0", h.Doc)
		}
	}
}

func TestSketchKernelsMatchGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, k := range supportedKernels() {
		for _, f := range fillers {
			t.Run(k.name+"/"+f.name, func(t *testing.T) {
				for _, rb := range []int{64, 128, 192, 256, 768, 2048} {
					for _, n := range []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 33} {
						q := make([]int8, 2*rb)
						fill(r, q, 0, f.val)
						data := make([]byte, n*rb+1)
						for i := range data {
							data[i] = byte(r.Uint32())
						}
						if f.name != "random" {
							for i := range data {
								data[i] = []byte{0x00, 0xff, 0x0f, 0xf0, 0x88}[r.IntN(5)]
							}
						}
						want := make([]int32, n)
						got := make([]int32, n+1)
						got[n] = 12345
						sketchBatchGeneric(q, data[:n*rb], rb, want)
						for i := range n {
							if naive := naiveSketchDot(q, data[i*rb:(i+1)*rb]); naive != want[i] {
								t.Fatalf("rb=%d: generic %d, naive %d", rb, want[i], naive)
							}
						}
						k.sketch(q, data[:n*rb], rb, got[:n])
						if !slices.Equal(got[:n], want) || got[n] != 12345 {
							t.Fatalf("rb=%d n=%d: %s = %v, want %v", rb, n, k.name, got[:n], want)
						}
					}
				}
			})
		}
	}
}

// naiveSketchDot decodes every code with getCode.
func naiveSketchDot(q []int8, row []byte) int32 {
	var s int32
	for i := range 2 * len(row) {
		s += int32(q[i]) * int32(getCode(row, i)+8)
	}
	return s
}

func TestDotGatherKernelsMatchGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, k := range supportedKernels() {
		for _, f := range fillers {
			t.Run(k.name+"/"+f.name, func(t *testing.T) {
				for _, dim := range []int{16, 32, 48, 112, 384, 1536} {
					const rows = 40
					q := make([]int8, dim)
					data := make([]int8, rows*dim)
					fill(r, q, 0, f.val)
					fill(r, data, 1, f.val)
					for _, n := range []int{0, 1, 3, 4, 5, 8, 11, 40} {
						idx := make([]int32, n)
						for i := range idx {
							idx[i] = int32(r.IntN(rows))
						}
						want := make([]int32, n)
						got := make([]int32, n+1)
						got[n] = 12345
						dotGatherGeneric(q, data, dim, idx, want)
						for i, j := range idx {
							if d := naiveDot(q, data[int(j)*dim:(int(j)+1)*dim]); d != want[i] {
								t.Fatalf("dim=%d: generic %d, naive %d", dim, want[i], d)
							}
						}
						k.gather(q, data, dim, idx, got[:n])
						if !slices.Equal(got[:n], want) || got[n] != 12345 {
							t.Fatalf("dim=%d n=%d: %s = %v, want %v", dim, n, k.name, got[:n], want)
						}
					}
				}
			})
		}
	}
}

func TestDotGatherOutOfRangePanics(t *testing.T) {
	// A bad index must not let a SIMD kernel read past the data.
	for _, k := range supportedKernels() {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic for an index past the data", k.name)
				}
			}()
			k.gather(make([]int8, 16), make([]int8, 32), 16, []int32{2}, make([]int32, 1))
		}()
	}
}

func TestTwoStagePrunesAndAllocatesNothing(t *testing.T) {
	// Clustered vectors like the benchmark's: the two-stage scan must score
	// far fewer documents exactly than the plain scan, return the same
	// hits, and allocate nothing but the result once its pools are warm.
	bv := clusteredVectors(20_000, 64, 8)
	seg := bv.segPart(t)
	parts := []Part{seg}
	for qi, q := range bv.queries {
		for _, k := range []int{10, 100} {
			want := plainSearch(t, parts, q, bv.qscales[qi], k)
			before := exactScored.Load()
			got := Search(parts, q, bv.qscales[qi], k)
			scored := exactScored.Load() - before
			if !slices.Equal(got, want) {
				t.Fatalf("query %d k=%d: two-stage differs from plain", qi, k)
			}
			if scored > int64(seg.NumDocs())/3 {
				t.Errorf("query %d k=%d: %d of %d documents scored exactly", qi, k, scored, seg.NumDocs())
			}
		}
	}
	if raceEnabled {
		return // sync.Pool drops items under the race detector
	}
	q, qs := bv.queries[0], bv.qscales[0]
	allocs := testing.AllocsPerRun(20, func() { Search(parts, q, qs, 10) })
	if allocs > 1 {
		t.Fatalf("%v allocations per search, want at most 1 (the result)", allocs)
	}
}

func TestTwoStageScanLateJoiner(t *testing.T) {
	// A Work call that finds every chunk bounded waits for the seed and
	// helps rescore; one that comes after everything finds nothing to do.
	// The answer is the plain one whichever way the work falls.
	twoStageAlways(t)
	bv := clusteredVectors(5000, 64, 4)
	parts := []Part{bv.segPart(t)}
	for qi, q := range bv.queries {
		want := plainSearch(t, parts, q, bv.qscales[qi], 50)
		s := newScan(parts, q, bv.qscales[qi], 50, 512)
		// Claim and bound every chunk but the last by hand, as a call
		// still bounding its last chunk would have.
		st := searchPool.Get().(*searchState)
		st.setQuery(q, 64)
		st.heap.reset(50)
		st.heap.keys = append(st.heap.keys, parts[0].Keys())
		s.workers = append(s.workers, st)
		last := len(s.chunks) - 1
		for c := range last {
			s.next.Add(1)
			ch := s.chunks[c]
			st.heap.boundDocs(ch.part, parts[ch.part], st, s.bounds, s.qscale, ch.start, ch.end)
			s.pending.Add(-1)
		}
		var wg sync.WaitGroup
		wg.Go(s.Work) // bounds the last chunk, seeds, rescores
		wg.Go(s.Work) // may find nothing left to bound: waits, rescores
		wg.Wait()
		s.Work()
		if got := s.Hits(); !slices.Equal(got, want) {
			t.Fatalf("query %d: scan differs from plain", qi)
		}
	}
}

func TestTwoStageHeadGrows(t *testing.T) {
	// The head's sketch follows Add and Set between searches.
	twoStageAlways(t)
	r := rand.New(rand.NewPCG(11, 12))
	const dim = 48
	m := NewMemVectors("m", dim)
	v := make([]float32, dim)
	q8 := make([]int8, dim)
	add := func(n int) {
		for range n {
			for i := range v {
				v[i] = float32(r.NormFloat64())
			}
			s := Quantize(v, q8)
			m.Add([16]byte{byte(r.IntN(3))}, q8, s)
		}
	}
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	qs := Quantize(v, q8)
	query := slices.Clone(q8)
	for round := range 4 {
		add(700)
		for range 50 { // re-embedded documents, and some zeroed
			doc := uint32(r.IntN(m.NumDocs()))
			for i := range v {
				v[i] = float32(r.NormFloat64())
			}
			s := Quantize(v, q8)
			switch doc % 5 {
			case 0:
				clear(q8)
				s = 0
			case 1: // now a top hit: a stale sketch would prune it
				copy(q8, query)
				s = qs
			}
			m.Set(doc, q8, s)
		}
		for _, k := range []int{1, 20, 300} {
			want := plainSearch(t, []Part{m}, query, qs, k)
			if len(want) != k {
				t.Fatalf("round %d: %d hits, want %d", round, len(want), k)
			}
			if got := Search([]Part{m}, query, qs, k); !slices.Equal(got, want) {
				t.Fatalf("round %d k=%d: two-stage differs from plain", round, k)
			}
		}
	}
}

func TestTwoStageConcurrentFirstSearches(t *testing.T) {
	// Searches that share a segment build its sketch together on first
	// use (run with -race).
	twoStageAlways(t)
	bv := clusteredVectors(3*sketchGranule/2, 32, 4)
	seg := bv.segPart(t)
	parts := []Part{seg}
	want := make([][]Hit, len(bv.queries))
	for i, q := range bv.queries {
		want[i] = plainSearch(t, parts, q, bv.qscales[i], 30)
	}
	var wg sync.WaitGroup
	got := make([][]Hit, len(bv.queries))
	for i, q := range bv.queries {
		wg.Go(func() { got[i] = Search(parts, q, bv.qscales[i], 30) })
	}
	wg.Wait()
	for i := range got {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("query %d: two-stage differs from plain", i)
		}
	}
}

func TestTwoStageEmptyParts(t *testing.T) {
	twoStageAlways(t)
	seg, err := OpenSegVectors(NewMemVectors("m", 8).Section())
	if err != nil {
		t.Fatal(err)
	}
	parts := []Part{NewMemVectors("m", 8), seg}
	q := []int8{1, 2, 3, 4, 5, 6, 7, 8}
	if got := Search(parts, q, 1, 5); len(got) != 0 {
		t.Fatalf("Search: %v", got)
	}
	s := NewScan(parts, q, 1, 5)
	s.Work()
	if got := s.Hits(); len(got) != 0 {
		t.Fatalf("Scan: %v", got)
	}
}

// opaquePart hides a part's sketch: a Part implemented outside vecindex.
type opaquePart struct{ Part }

func TestTwoStageMixesPartsWithoutSketch(t *testing.T) {
	// A part without a sketch is scored exactly in the bounding pass; the
	// others are pruned as usual.
	twoStageAlways(t)
	bv := clusteredVectors(6000, 32, 6)
	a, b := &benchVectors{dim: 32}, &benchVectors{dim: 32}
	a.rows, a.scales = bv.rows[:2500], bv.scales[:2500]
	b.rows, b.scales = bv.rows[2500:], bv.scales[2500:]
	parts := []Part{a.segPart(t), opaquePart{b.segPart(t)}, opaquePart{a.segPart(t)}}
	for qi, q := range bv.queries {
		for _, k := range []int{1, 40, 400} {
			want := plainSearch(t, parts, q, bv.qscales[qi], k)
			if got := Search(parts, q, bv.qscales[qi], k); !slices.Equal(got, want) {
				t.Fatalf("query %d k=%d: two-stage differs from plain", qi, k)
			}
			s := newScan(parts, q, bv.qscales[qi], k, 700)
			var wg sync.WaitGroup
			wg.Go(s.Work)
			s.Work()
			wg.Wait()
			if got := s.Hits(); !slices.Equal(got, want) {
				t.Fatalf("query %d k=%d: two-stage Scan differs from plain", qi, k)
			}
		}
	}
}

// TestBuildSketch: BuildSketch builds a segment part's whole sketch up front
// (counted by SketchBytes) when the two-stage scan can use it, leaves small
// parts alone, and searches give the same hits either way.
func TestBuildSketch(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const dim = 48
	for _, n := range []int{minTwoStageDocs / 2, minTwoStageDocs + 1000} {
		d := randDocs(r, n, dim)
		built, err := OpenSegVectors(d.mem("m", dim).Section())
		if err != nil {
			t.Fatal(err)
		}
		lazy, err := OpenSegVectors(d.mem("m", dim).Section())
		if err != nil {
			t.Fatal(err)
		}
		if built.SketchBytes() != 0 {
			t.Fatal("a sketch before BuildSketch")
		}
		built.BuildSketch(nil)
		want := int64(0)
		if useSketch && activeKernel.name != genericKernel.name && n >= minTwoStageDocs {
			want = int64(n*sketchRowBytes(dim)) + 8*int64(n)
		}
		if got := built.SketchBytes(); got != want {
			t.Fatalf("%d rows: SketchBytes %d after BuildSketch, want %d", n, got, want)
		}
		q := make([]int8, dim)
		qs := Quantize(randUnit(r, dim), q)
		a, b := Search([]Part{built}, q, qs, 50), Search([]Part{lazy}, q, qs, 50)
		if len(a) != len(b) {
			t.Fatalf("%d rows: %d hits against %d", n, len(a), len(b))
		}
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%d rows: hit %d differs: %+v, %+v", n, i, a[i], b[i])
			}
		}
	}
}
