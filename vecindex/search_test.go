package vecindex

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
)

// refSearch is the definition Search must meet: score every document of one
// flat list with Score, sort by Score descending then Key ascending, and keep
// the first k, skipping zero-scale documents.
func refSearch(d testDocs, q []int8, qs float32, k int) []Hit {
	var all []Hit
	for i, v := range d.vecs {
		if d.scales[i] == 0 {
			continue
		}
		all = append(all, Hit{Doc: uint32(i), Score: Score(dotInt8Generic(q, v), qs, d.scales[i]), Key: d.keys[i]})
	}
	slices.SortFunc(all, func(a, b Hit) int { return compareHits(&a, &b) })
	return all[:min(k, len(all))]
}

// tieDocs makes documents from few distinct small vectors and scales, so
// many scores tie and the key order decides.
func tieDocs(r *rand.Rand, n, dim int) testDocs {
	var d testDocs
	protos := make([][]int8, 1+r.IntN(4))
	for i := range protos {
		protos[i] = make([]int8, dim)
		for j := range protos[i] {
			protos[i][j] = int8(r.IntN(5) - 2)
		}
	}
	perm := r.Perm(n)
	for i := range n {
		var k [16]byte
		binary.BigEndian.PutUint32(k[12:], uint32(perm[i])) // unique, shuffled
		k[0] = byte(r.IntN(2))
		d.keys = append(d.keys, k)
		d.vecs = append(d.vecs, slices.Clone(protos[r.IntN(len(protos))]))
		d.scales = append(d.scales, []float32{0, 0.5, 1, 0.25}[r.IntN(4)])
	}
	return d
}

// split cuts d at random points into parts, each either a MemVectors or a
// SegVectors opened from its section, and returns the parts with the index
// of their first document in d.
func split(t *testing.T, r *rand.Rand, d testDocs, dim, nparts int) ([]Part, []int) {
	cuts := []int{0, len(d.keys)}
	for range nparts - 1 {
		cuts = append(cuts, r.IntN(len(d.keys)+1))
	}
	slices.Sort(cuts)
	var parts []Part
	var firsts []int
	for i := 0; i+1 < len(cuts); i++ {
		lo, hi := cuts[i], cuts[i+1]
		sub := testDocs{d.keys[lo:hi], d.vecs[lo:hi], d.scales[lo:hi]}
		m := sub.mem("m", dim)
		if r.IntN(2) == 0 {
			s, err := OpenSegVectors(m.Section())
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, s)
		} else {
			parts = append(parts, m)
		}
		firsts = append(firsts, lo)
	}
	return parts, firsts
}

// TestSearchLayoutIndependence: random documents split into random parts
// give, hit for hit and bit for bit, the result of the flat reference scan.
func TestSearchLayoutIndependence(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 300
	params.Rng.Seed(20261121)
	props := gopter.NewProperties(params)
	props.Property("partitioning does not change the top k", prop.ForAll(
		func(seed uint64, dim, n, k, nparts int, ties bool) bool {
			r := rand.New(rand.NewPCG(seed, 99))
			var d testDocs
			if ties {
				d = tieDocs(r, n, dim)
			} else {
				d = randDocs(r, n, dim)
			}
			q := make([]int8, dim)
			qs := Quantize(randUnit(r, dim), q)
			want := refSearch(d, q, qs, k)
			flat, _ := split(t, r, d, dim, 1)
			parts, firsts := split(t, r, d, dim, nparts)
			for _, ps := range []struct {
				parts  []Part
				firsts []int
			}{{flat, []int{0}}, {parts, firsts}} {
				got := Search(ps.parts, q, qs, k)
				if !sameHits(t, got, want, ps.firsts) {
					return false
				}
				// A Scan shared by 1-4 goroutines, in chunks of 1-64 documents.
				scan := newScan(ps.parts, q, qs, k, 1+r.IntN(64))
				var wg sync.WaitGroup
				for range 1 + r.IntN(4) {
					wg.Go(scan.Work)
				}
				wg.Wait()
				got = scan.Hits()
				if !sameHits(t, got, want, ps.firsts) {
					t.Logf("(a shared Scan)")
					return false
				}
			}
			return true
		},
		gen.UInt64(), gen.IntRange(1, 70), gen.IntRange(0, 300), gen.IntRange(1, 40), gen.IntRange(1, 6), gen.Bool(),
	))
	props.TestingRun(t)
}

// sameHits reports whether got, whose parts start at firsts in the flat
// list, equals want hit for hit and bit for bit (logging the first
// difference).
func sameHits(t *testing.T, got, want []Hit, firsts []int) bool {
	if len(got) != len(want) {
		t.Logf("%d hits, want %d", len(got), len(want))
		return false
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Score != w.Score || g.Key != w.Key || firsts[g.Part]+int(g.Doc) != int(w.Doc) {
			t.Logf("hit %d: got %+v, want %+v", i, g, w)
			return false
		}
	}
	return true
}

func TestSearchEdges(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	d := randDocs(r, 50, 10)
	m := d.mem("m", 10)
	q := make([]int8, 10)
	qs := Quantize(randUnit(r, 10), q)
	for _, tc := range []struct {
		name  string
		parts []Part
		q     []int8
		qs    float32
		k     int
		want  int
	}{
		{"no parts", nil, q, qs, 5, 0},
		{"k 0", []Part{m}, q, qs, 0, 0},
		{"zero query", []Part{m}, q, 0, 5, 0},
		{"negative scale", []Part{m}, q, -1, 5, 0},
		{"k 5", []Part{m}, q, qs, 5, 5},
		{"k past n", []Part{m}, q, qs, 1000, refLen(d)},
		{"padded query", []Part{m}, append(slices.Clone(q), make([]int8, 6)...), qs, 5, 5},
		{"empty part", []Part{NewMemVectors("m", 10), m}, q, qs, 5, 5},
	} {
		if got := Search(tc.parts, tc.q, tc.qs, tc.k); len(got) != tc.want {
			t.Errorf("%s: %d hits, want %d", tc.name, len(got), tc.want)
		}
	}
	for _, tc := range []struct {
		name  string
		parts []Part
		q     []int8
	}{
		{"query length", []Part{m}, q[:9]},
		{"mixed dims", []Part{m, NewMemVectors("m", 11)}, q},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			Search(tc.parts, tc.q, qs, 3)
		})
	}
}

func refLen(d testDocs) int {
	n := 0
	for _, s := range d.scales {
		if s != 0 {
			n++
		}
	}
	return n
}

func TestSearchOrder(t *testing.T) {
	// Equal scores come out by key; keys order bytewise.
	m := NewMemVectors("m", 2)
	keys := [][16]byte{{3}, {1}, {2}, {0, 9}}
	for _, k := range keys {
		m.Add(k, []int8{1, 1}, 1)
	}
	m.Add([16]byte{9}, []int8{2, 2}, 1)
	got := Search([]Part{m}, []int8{1, 1}, 1, 10)
	wantKeys := [][16]byte{{9}, {0, 9}, {1}, {2}, {3}}
	for i, h := range got {
		if !bytes.Equal(h.Key[:], wantKeys[i][:]) {
			t.Fatalf("hit %d: key %v, want %v", i, h.Key, wantKeys[i])
		}
	}
	if got[0].Score != 4 || got[1].Score != 2 {
		t.Fatalf("scores %v %v", got[0].Score, got[1].Score)
	}
}

func TestSearchAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	r := rand.New(rand.NewPCG(23, 24))
	d := randDocs(r, 5000, 100)
	parts := []Part{d.mem("m", 100)}
	q := make([]int8, 100)
	qs := Quantize(randUnit(r, 100), q)
	Search(parts, q, qs, 10) // warm the pool
	allocs := testing.AllocsPerRun(20, func() { Search(parts, q, qs, 10) })
	if allocs > 1 {
		t.Fatalf("%v allocations per search, want at most 1 (the result)", allocs)
	}
}

func TestSearchDuplicateKeys(t *testing.T) {
	// Equal scores and equal keys: (Part, Doc) ascending decides, so the
	// order is still total and deterministic.
	a, b := NewMemVectors("m", 2), NewMemVectors("m", 2)
	for range 3 {
		a.Add([16]byte{7}, []int8{1, 1}, 1)
		b.Add([16]byte{7}, []int8{1, 1}, 1)
	}
	for _, k := range []int{1, 2, 4, 6} {
		got := Search([]Part{b, a}, []int8{1, 1}, 1, k)
		want := []Hit{{0, 0, 2, [16]byte{7}}, {0, 1, 2, [16]byte{7}}, {0, 2, 2, [16]byte{7}}, {1, 0, 2, [16]byte{7}}, {1, 1, 2, [16]byte{7}}, {1, 2, 2, [16]byte{7}}}[:k]
		if !slices.Equal(got, want) {
			t.Fatalf("k=%d: got %v, want %v", k, got, want)
		}
	}
}
