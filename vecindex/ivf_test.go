package vecindex

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
)

// testCentroids returns n random unit centroids of dim.
func testCentroids(t testing.TB, r *rand.Rand, model string, n, dim int) *Centroids {
	t.Helper()
	cents := make([][]float32, n)
	for i := range cents {
		cents[i] = randUnit(r, dim)
	}
	b, err := EncodeCentroids(model, cents)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseCentroids(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// refIVF is the definition SearchIVF must meet: the exact search over the
// documents whose list, computed by the generic kernel from the row, is one
// of the nprobe nearest the query's (also computed here, independently).
func refIVF(d testDocs, c *Centroids, q []int8, qs float32, k, nprobe int) []Hit {
	near := func(v []int8) []float64 {
		s := make([]float64, c.Lists())
		for l := range s {
			row := c.sec.Rows()[l*Stride(c.Dim()):]
			s[l] = float64(dotInt8Generic(v, row[:len(v)])) * float64(c.sec.Scales()[l])
		}
		return s
	}
	qn := near(q)
	order := make([]int, c.Lists())
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case qn[a] > qn[b]:
			return -1
		case qn[a] < qn[b]:
			return 1
		}
		return 0
	})
	probed := map[int]bool{}
	for _, l := range order[:min(nprobe, len(order))] {
		probed[l] = true
	}
	var sub testDocs
	var orig []int
	for i, v := range d.vecs {
		s := near(v)
		best := 0
		for l := range s {
			if s[l] > s[best] {
				best = l
			}
		}
		if probed[best] {
			sub.keys, sub.vecs, sub.scales = append(sub.keys, d.keys[i]), append(sub.vecs, v), append(sub.scales, d.scales[i])
			orig = append(orig, i)
		}
	}
	hits := refSearch(sub, q, qs, k)
	for i := range hits {
		hits[i].Doc = uint32(orig[hits[i].Doc])
	}
	return hits
}

// ivfSplit cuts d at random points into parts of four kinds: a head
// keeping lists for c, a section with c's lists, a section without lists
// (written before IVF, or for other centroids) and a head without them.
func ivfSplit(t *testing.T, r *rand.Rand, d testDocs, c *Centroids, nparts int) ([]Part, []int) {
	cuts := []int{0, len(d.keys)}
	for range nparts - 1 {
		cuts = append(cuts, r.IntN(len(d.keys)+1))
	}
	slices.Sort(cuts)
	var parts []Part
	var firsts []int
	for i := 0; i+1 < len(cuts); i++ {
		lo, hi := cuts[i], cuts[i+1]
		cc := c
		kind := r.IntN(4)
		if kind >= 2 {
			cc = nil
		}
		m := NewMemVectorsWith(c.Model(), c.Dim(), cc)
		for j := lo; j < hi; j++ {
			m.Add(d.keys[j], d.vecs[j], d.scales[j])
		}
		var p Part = m
		if kind%2 == 1 {
			s, err := OpenSegVectors(m.Section())
			if err != nil {
				t.Fatal(err)
			}
			if (s.lists != nil) != (cc != nil) {
				t.Fatalf("section lists %v, centroids %v", s.lists != nil, cc != nil)
			}
			p = s
		}
		parts = append(parts, p)
		firsts = append(firsts, lo)
	}
	return parts, firsts
}

// TestSearchIVFLayoutIndependence: the same documents split into random
// parts of every kind give, hit for hit and bit for bit, the exact search
// over the documents of the probed lists: the candidate set does not depend
// on the layout, nor on whether a part stores its lists.
// It runs twice: as the sizes here choose (the plain scan of the probed
// documents), and with the two-stage scan forced on every search.
func TestSearchIVFLayoutIndependence(t *testing.T) {
	t.Run("plain", searchIVFLayoutProperty)
	t.Run("two-stage", func(t *testing.T) {
		twoStageAlways(t)
		searchIVFLayoutProperty(t)
	})
}

func searchIVFLayoutProperty(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 200
	params.Rng.Seed(20261128)
	props := gopter.NewProperties(params)
	props.Property("partitioning does not change the IVF top k", prop.ForAll(
		func(seed uint64, dim, n, k, nparts, lists, nprobe int, ties bool) bool {
			r := rand.New(rand.NewPCG(seed, 7))
			c := testCentroids(t, r, "m", lists, dim)
			var d testDocs
			if ties {
				d = tieDocs(r, n, dim)
			} else {
				d = randDocs(r, n, dim)
			}
			q := make([]int8, dim)
			qs := Quantize(randUnit(r, dim), q)
			want := refIVF(d, c, q, qs, k, nprobe)
			if nprobe >= lists && !slices.EqualFunc(want, refSearch(d, q, qs, k), func(a, b Hit) bool { return a == b }) {
				t.Log("probing every list is not the exact search")
				return false
			}
			for range 3 {
				parts, firsts := ivfSplit(t, r, d, c, nparts)
				got, probed := SearchIVF(parts, c, q, qs, k, nprobe)
				if !sameHits(t, got, want, firsts) {
					return false
				}
				// An IVFScan shared by 1-4 goroutines, in jobs of 1-64
				// documents.
				scan := newIVFScan(parts, c, q, qs, k, nprobe, 1+r.IntN(64))
				if scan.Probed() != probed {
					t.Logf("a shared IVFScan probes %d documents, SearchIVF %d", scan.Probed(), probed)
					return false
				}
				var wg sync.WaitGroup
				for range 1 + r.IntN(4) {
					wg.Go(scan.Work)
				}
				wg.Wait()
				if got := scan.Hits(); !sameHits(t, got, want, firsts) {
					t.Logf("(a shared IVFScan)")
					return false
				}
			}
			return true
		},
		gen.UInt64(), gen.IntRange(1, 70), gen.IntRange(0, 300), gen.IntRange(1, 40), gen.IntRange(1, 6),
		gen.IntRange(1, 12), gen.IntRange(1, 12), gen.Bool(),
	))
	props.TestingRun(t)
}

// TestSearchIVFTwoStage: over clustered vectors in a segment that stores
// its lists, IVF's two-stage scan returns what scoring every probed row
// gives (the plain scan of the probed documents), scores far fewer of them
// exactly, and allocates nothing per document once its pools are warm.
func TestSearchIVFTwoStage(t *testing.T) {
	twoStageAlways(t)
	bv := clusteredVectors(20_000, 64, 8)
	r := rand.New(rand.NewPCG(3, 4))
	c := testCentroids(t, r, "bench", 32, 64)
	m := NewMemVectorsWith("bench", 64, c)
	for i, row := range bv.rows {
		var k [16]byte
		binary.BigEndian.PutUint32(k[:], uint32(i))
		m.Add(k, row, bv.scales[i])
	}
	seg, err := OpenSegVectors(m.Section())
	if err != nil {
		t.Fatal(err)
	}
	for _, parts := range [][]Part{{seg}, {m}} {
		for qi, q := range bv.queries {
			for _, k := range []int{10, 100} {
				useSketch = false
				want, probed := SearchIVF(parts, c, q, bv.qscales[qi], k, 8)
				useSketch = true
				before := exactScored.Load()
				got, probed2 := SearchIVF(parts, c, q, bv.qscales[qi], k, 8)
				scored := exactScored.Load() - before
				if !slices.Equal(got, want) || probed2 != probed {
					t.Fatalf("%T query %d k=%d: two-stage differs from scoring every probed row", parts[0], qi, k)
				}
				if scored > int64(probed)/3 {
					t.Errorf("%T query %d k=%d: %d of %d probed documents scored exactly", parts[0], qi, k, scored, probed)
				}
			}
		}
	}
	if raceEnabled {
		return
	}
	q, qs := bv.queries[0], bv.qscales[0]
	// The probe's four slices of the lists' size, and the result: none per
	// document.
	if allocs := testing.AllocsPerRun(20, func() { SearchIVF([]Part{seg}, c, q, qs, 10, 8) }); allocs > 5 {
		t.Fatalf("%v allocations per search, want at most 5 (the probe's and the result)", allocs)
	}
}

// TestSearchIVFRestricts: with few lists probed, SearchIVF scores fewer
// documents than there are and finds only documents of probed lists, which
// the exact search over the allowed documents confirms.
func TestSearchIVFRestricts(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const dim, n = 64, 2000
	c := testCentroids(t, r, "m", 16, dim)
	d := randDocs(r, n, dim)
	m := NewMemVectorsWith("m", dim, c)
	for i := range d.keys {
		m.Add(d.keys[i], d.vecs[i], d.scales[i])
	}
	seg, err := OpenSegVectors(m.Section())
	if err != nil {
		t.Fatal(err)
	}
	q := make([]int8, dim)
	qs := Quantize(randUnit(r, dim), q)
	mask := c.probeInto(padQuery(q, dim), 2, new(searchState))
	allow := roaring.New()
	for i, v := range d.vecs {
		if mask[c.Assign(v)] {
			allow.Add(uint32(i))
		}
	}
	want := SearchAllowed([]Part{m}, []*roaring.Bitmap{allow}, q, qs, 50)
	for _, p := range []Part{m, seg} {
		got, scored := SearchIVF([]Part{p}, c, q, qs, 50, 2)
		if scored != int(allow.GetCardinality()) || scored >= n {
			t.Errorf("%T: scored %d documents, want %d (of %d)", p, scored, allow.GetCardinality(), n)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%T: hits differ from the exact search over the probed lists", p)
		}
	}
}

func padQuery(q []int8, dim int) []int8 {
	p := make([]int8, Stride(dim))
	copy(p, q)
	return p
}

// TestSectionIVFVersions: a head with centroids writes version 2 with
// lists that group every document under its Assign; one without writes
// version 1, byte for byte what it wrote before IVF (and version 2 only
// appends to those bytes, apart from the version); BuildSection and
// Section agree for the built-in model.
func TestSectionIVFVersions(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const dim = 40
	c := testCentroids(t, r, "m", 5, dim)
	d := randDocs(r, 100, dim)
	with, without := NewMemVectorsWith("m", dim, c), NewMemVectorsWith("m", dim, nil)
	for i := range d.keys {
		with.Add(d.keys[i], d.vecs[i], d.scales[i])
		without.Add(d.keys[i], d.vecs[i], d.scales[i])
	}
	v1, v2 := without.Section(), with.Section()
	if binary.LittleEndian.Uint16(v1[4:]) != SectionVersion || binary.LittleEndian.Uint16(v2[4:]) != SectionVersionIVF {
		t.Fatalf("versions %d and %d", binary.LittleEndian.Uint16(v1[4:]), binary.LittleEndian.Uint16(v2[4:]))
	}
	if !bytes.Equal(v1[:4], v2[:4]) || !bytes.Equal(v1[6:], v2[6:len(v1)]) {
		t.Error("version 2 does not extend version 1's bytes after the header")
	}
	s, err := OpenSegVectors(v2)
	if err != nil {
		t.Fatal(err)
	}
	samePart(t, s, with)
	if s.lists.id != c.ID() {
		t.Error("lists' centroid id")
	}
	for l := range c.Lists() {
		for _, doc := range s.lists.docs[s.lists.offsets[l]:s.lists.offsets[l+1]] {
			if a := c.Assign(d.vecs[doc]); a != uint32(l) {
				t.Fatalf("doc %d stored in list %d, assigned %d", doc, l, a)
			}
		}
	}

	builtin := CentroidsFor(MiniLMModel)
	if builtin == nil {
		t.Fatal("no built-in centroids for " + MiniLMModel)
	}
	bd := randDocs(r, 50, builtin.Dim())
	built, err := BuildSection(builtin.Dim(), MiniLMModel, bd.keys, bd.vecs, bd.scales)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(built, bd.mem(MiniLMModel, builtin.Dim()).Section()) {
		t.Error("BuildSection and MemVectors.Section differ for the built-in model")
	}
	if binary.LittleEndian.Uint16(built[4:]) != SectionVersionIVF {
		t.Error("the built-in model's sections are not version 2")
	}
}

// MiniLMModel is the built-in encoder's model name (embed/minilm).
const MiniLMModel = "all-minilm-l6-v2-w8a8"

// TestOpenSegVectorsIVFCorrupt: damaged lists are ErrCorrupt, never a
// panic or a silently wrong candidate set.
func TestOpenSegVectorsIVFCorrupt(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const dim, n, lists = 16, 20, 3
	c := testCentroids(t, r, "m", lists, dim)
	m := NewMemVectorsWith("m", dim, c)
	d := randDocs(r, n, dim)
	for i := range d.keys {
		m.Add(d.keys[i], d.vecs[i], d.scales[i])
	}
	good := m.Section()
	at := len(good) - 4*n - 4*(lists+1) - listsHeaderSize
	le := binary.LittleEndian
	for _, tc := range []struct {
		name string
		edit func(b []byte) []byte
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)-4] }},
		{"no lists", func(b []byte) []byte { return b[:at] }},
		{"zero lists", func(b []byte) []byte { le.PutUint32(b[at+8:], 0); return b }},
		{"reserved", func(b []byte) []byte { le.PutUint32(b[at+12:], 1); return b }},
		{"first offset", func(b []byte) []byte { le.PutUint32(b[at+16:], 1); return b }},
		{"last offset", func(b []byte) []byte { le.PutUint32(b[at+16+4*lists:], n-1); return b }},
		{"doc out of range", func(b []byte) []byte { le.PutUint32(b[len(b)-4:], n); return b }},
		{"doc repeated", func(b []byte) []byte { copy(b[len(b)-4:], b[len(b)-8:len(b)-4]); return b }},
		{"decreasing offsets", func(b []byte) []byte {
			le.PutUint32(b[at+16+4:], n)
			le.PutUint32(b[at+16+8:], 0)
			return b
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := OpenSegVectors(tc.edit(slices.Clone(good))); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}
		})
	}
	if _, err := OpenSegVectors(good); err != nil {
		t.Fatal(err)
	}
}

// TestParseCentroids: the built-in file parses, and bad files are refused.
func TestParseCentroids(t *testing.T) {
	if _, err := ParseCentroids([]byte("LVEC")); !errors.Is(err, ErrCorrupt) {
		t.Errorf("short file: %v", err)
	}
	empty, _ := BuildSection(8, "m", nil, nil, nil)
	if _, err := ParseCentroids(empty); !errors.Is(err, ErrCorrupt) {
		t.Errorf("no centroids: %v", err)
	}
	zero, _ := BuildSection(8, "m", [][16]byte{{}}, [][]int8{make([]int8, 8)}, []float32{0})
	if _, err := ParseCentroids(zero); !errors.Is(err, ErrCorrupt) {
		t.Errorf("zero centroid: %v", err)
	}
	if _, err := EncodeCentroids("m", [][]float32{make([]float32, 8)}); err == nil {
		t.Error("EncodeCentroids accepted a zero centroid")
	}
}

// useTestCentroids makes lists random centroids of dim the process's
// centroids of model for the test (IVF from minSpans, 2 lists probed), and
// returns its random source, them, and n random documents.
func useTestCentroids(t *testing.T, seed uint64, model string, lists, dim, n, minSpans int) (*rand.Rand, *Centroids, testDocs) {
	r := rand.New(rand.NewPCG(seed, seed+1))
	c := testCentroids(t, r, model, lists, dim)
	t.Cleanup(UseCentroids(c, minSpans, 2))
	return r, c, randDocs(r, n, dim)
}

// TestIVFPolicy: IVF is chosen by the workspace's span count and the
// parts' model, and SearchAuto follows the choice.
func TestIVFPolicy(t *testing.T) {
	const dim = 32
	r, c, d := useTestCentroids(t, 7, "policy-model", 8, dim, 300, 100)
	m := d.mem("policy-model", dim)
	other := d.mem("another-model", dim)
	q := make([]int8, dim)
	qs := Quantize(randUnit(r, dim), q)
	for _, tc := range []struct {
		parts []Part
		spans int
		ivf   bool
	}{
		{[]Part{m}, 99, false},
		{[]Part{m}, 100, true},
		{[]Part{other}, 1000, false},
		{nil, 1000, false},
	} {
		got, nprobe := IVFFor(tc.parts, tc.spans)
		if (got != nil) != tc.ivf || (got != nil && (got != c || nprobe != 2)) {
			t.Errorf("IVFFor(%d parts, %d spans) = %v, %d; want IVF %v", len(tc.parts), tc.spans, got != nil, nprobe, tc.ivf)
		}
		if len(tc.parts) == 0 {
			continue
		}
		want := Search(tc.parts, q, qs, 20)
		if tc.ivf {
			want, _ = SearchIVF(tc.parts, c, q, qs, 20, 2)
		}
		if auto := SearchAuto(tc.parts, tc.spans, q, qs, 20); !slices.Equal(auto, want) {
			t.Errorf("SearchAuto(%d spans) does not follow the policy", tc.spans)
		}
	}
	if exact, _ := SearchIVF([]Part{m}, c, q, qs, 20, 2); slices.Equal(exact, Search([]Part{m}, q, qs, 20)) {
		t.Error("2 of 8 lists gave the exact answer: the policy test cannot tell them apart")
	}
}

// TestListsCopied: documents copied from a part that keeps lists (AddFrom,
// BuildSectionLists with ListOf) get the lists their rows assign to, so
// copying gives the bytes assigning would.
func TestListsCopied(t *testing.T) {
	const dim = 24
	_, c, d := useTestCentroids(t, 9, "copy-model", 6, dim, 120, 1)
	src := d.mem("copy-model", dim)
	seg, err := OpenSegVectors(src.Section())
	if err != nil {
		t.Fatal(err)
	}
	want := src.Section()
	for _, p := range []Part{src, seg} {
		m := NewMemVectors("copy-model", dim)
		known := make([]uint32, p.NumDocs())
		for doc := range p.NumDocs() {
			m.AddFrom(p, uint32(doc))
			l, ok := ListOf(p, doc)
			if !ok || l != c.Assign(d.vecs[doc]) {
				t.Fatalf("%T: ListOf(%d) = %d, %v; the row assigns to %d", p, doc, l, ok, c.Assign(d.vecs[doc]))
			}
			known[doc] = l
		}
		if !bytes.Equal(m.Section(), want) {
			t.Errorf("%T: AddFrom copies give other bytes", p)
		}
		b, err := BuildSectionLists(dim, "copy-model", d.keys, d.vecs, d.scales, known)
		if err != nil || !bytes.Equal(b, want) {
			t.Errorf("%T: BuildSectionLists with ListOf's lists: %v, or other bytes", p, err)
		}
	}
	known := make([]uint32, len(d.keys))
	known[0] = uint32(c.Lists())
	if _, err := BuildSectionLists(dim, "copy-model", d.keys, d.vecs, d.scales, known); err == nil {
		t.Error("a list out of range was accepted")
	}
	if _, ok := ListOf(NewMemVectorsWith("copy-model", dim, nil), 0); ok {
		t.Error("ListOf answered for a part that keeps no lists")
	}
}

// TestBuildSketchIVFParts: a part of a workspace that reaches the IVF size
// (by its own documents or by what the caller says of its workspace), with
// lists of its model's centroids, builds its sketch in list order only; a
// part of a smaller one builds it in document order; either answers IVF
// and the exact scan as before.
func TestBuildSketchIVFParts(t *testing.T) {
	twoStageAlways(t)
	r := rand.New(rand.NewPCG(5, 6))
	const dim, n = 64, 9000
	c := testCentroids(t, r, "m", 16, dim)
	d := randDocs(r, n, dim)
	section := func() *SegVectors {
		m := NewMemVectorsWith("m", dim, c)
		for i := range d.keys {
			m.Add(d.keys[i], d.vecs[i], d.scales[i])
		}
		s, err := OpenSegVectors(m.Section())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	rowBytes := int64(n*sketchRowBytes(dim)) + 8*int64(n)
	q := make([]int8, dim)
	qs := Quantize(randUnit(r, dim), q)
	for _, tc := range []struct {
		minSpans, workspace int
		listOrder           bool
	}{{n, 0, true}, {n + 1, 0, false}, {n + 1, n + 1, true}, {3 * n, 2 * n, false}} {
		restore := UseCentroids(c, tc.minSpans, 4)
		s := section()
		s.BuildSketch(func() int { return tc.workspace })
		if useSketch && activeKernel.name != genericKernel.name {
			docOrder, listOrder := s.sketch.bytes.Load(), s.listSketch.bytes.Load()
			if tc.listOrder && (docOrder != 0 || listOrder != rowBytes) || !tc.listOrder && (docOrder != rowBytes || listOrder != 0) {
				t.Errorf("%+v: sketch bytes in document order %d, in list order %d", tc, docOrder, listOrder)
			}
		}
		want, _ := SearchIVF([]Part{section()}, c, q, qs, 30, 4)
		if got, _ := SearchIVF([]Part{s}, c, q, qs, 30, 4); !slices.Equal(got, want) {
			t.Errorf("%+v: IVF hits differ after BuildSketch", tc)
		}
		if got := Search([]Part{s}, q, qs, 30); !slices.Equal(got, Search([]Part{section()}, q, qs, 30)) {
			t.Errorf("%+v: exact hits differ after BuildSketch", tc)
		}
		restore()
	}
}

// TestListSketchOnCores: the list-order sketch, built on every core, holds
// for each row exactly what sketching that document's row alone gives.
func TestListSketchOnCores(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const dim, n = 48, 3*sketchGranule + 77
	c := testCentroids(t, r, "m", 8, dim)
	d := randDocs(r, n, dim)
	m := NewMemVectorsWith("m", dim, c)
	for i := range d.keys {
		s := d.scales[i]
		if i%500 == 0 {
			s = 0 // a document never returned: NaN residual bound
		}
		m.Add(d.keys[i], d.vecs[i], s)
	}
	seg, err := OpenSegVectors(m.Section())
	if err != nil {
		t.Fatal(err)
	}
	sk, lists := seg.listSketchFor(c)
	rb := sketchRowBytes(dim)
	row := make([]byte, rb)
	rows, scales, stride := seg.Rows(), seg.Scales(), Stride(dim)
	for j, doc := range lists.docs {
		a, b := sketchRow(rows[int(doc)*stride:], dim, scales[doc], row)
		if scales[doc] == 0 {
			b = float32(math.NaN())
		}
		ga, gb := sk.ab[2*j], sk.ab[2*j+1]
		if !bytes.Equal(sk.packed[j*rb:(j+1)*rb], row) || ga != a || !(gb == b || math.IsNaN(float64(gb)) && math.IsNaN(float64(b))) {
			t.Fatalf("row %d (document %d) differs from its sketch alone", j, doc)
		}
	}
}

// TestOnCores: every index of [0, n) is given to exactly one call, in runs
// of at most run.
func TestOnCores(t *testing.T) {
	for _, tc := range []struct{ n, run int }{{0, 4}, {1, 4}, {4, 4}, {5, 4}, {1000, 7}, {1 << 16, 8192}} {
		seen := make([]atomic.Int32, tc.n)
		onCores(tc.n, tc.run, func(from, to int) {
			if from < 0 || to > tc.n || to-from > tc.run || to <= from {
				t.Errorf("n %d run %d: a call for [%d, %d)", tc.n, tc.run, from, to)
			}
			for i := from; i < to; i++ {
				seen[i].Add(1)
			}
		})
		for i := range seen {
			if c := seen[i].Load(); c != 1 {
				t.Fatalf("n %d run %d: index %d given %d times", tc.n, tc.run, i, c)
			}
		}
	}
}
