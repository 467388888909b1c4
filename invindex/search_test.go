package invindex

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
)

// TestSearchProperty: on random corpora split at random points into random
// mixes of MemIndex and SegIndex parts, Search returns exactly what
// SearchExhaustive returns (order, parts, docs, keys, scores bit for bit), and
// the same ranking as a search over one MemIndex holding every doc.
func TestSearchProperty(t *testing.T) {
	// With lookupCost 0 every window that can have non-essential terms looks
	// candidates up in them; with +Inf none does. With denseShare 0 every
	// window without non-essential terms is scored dense once the top k is
	// full; with +Inf none is.
	// With split, every part of more than one window is split among three
	// searchers taking a window at a time (scoreSplit).
	for _, tc := range []struct {
		lookup, dense float64
		split         bool
	}{
		{lookupCost, denseShare, false}, {0, denseShare, false}, {math.Inf(1), denseShare, false}, {lookupCost, 0, false},
		{math.Inf(1), 0, false}, {lookupCost, math.Inf(1), false}, {lookupCost, denseShare, true}, {0, 0, true},
	} {
		t.Run(fmt.Sprintf("lookupCost=%v,denseShare=%v,split=%v", tc.lookup, tc.dense, tc.split), func(t *testing.T) {
			defer func(lc, ds float64) { lookupCost, denseShare = lc, ds }(lookupCost, denseShare)
			lookupCost, denseShare = tc.lookup, tc.dense
			if tc.split {
				defer forceSplit(3, 1)()
			}
			testSearchProperty(t)
		})
	}
}

// checkSplit fails t unless Search, with every part of more than chunk
// windows split among each number of workers, returns want.
func checkSplit(t *testing.T, parts []Part, query []Term, k int, p BM25, want []Hit, chunk int, workers ...int) {
	t.Helper()
	for _, w := range workers {
		restore := forceSplit(w, chunk)
		got := Search(parts, query, k, p)
		restore()
		if !sameHits(got, want) {
			t.Fatalf("query %v k %d, split among %d: Search %v, want %v", query, k, w, got, want)
		}
	}
}

// forceSplit makes Search split every part of more than chunk windows among
// workers searchers, and returns what restores the defaults.
func forceSplit(workers, chunk int) func() {
	sp, sw, sc := splitPostings, splitWorkers, splitChunk
	splitPostings, splitWorkers, splitChunk = 0, workers, chunk
	return func() { splitPostings, splitWorkers, splitChunk = sp, sw, sc }
}

func testSearchProperty(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 80
	props := gopter.NewProperties(params)
	props.Property("Search is exact and layout independent", prop.ForAll(func(seed uint64) string {
		r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		vocab := 30 + r.IntN(271)
		n := r.IntN(2001)
		c := genCorpus(r, n, vocab, 1+r.IntN(120))
		np := 1 + r.IntN(4)
		cuts := make([]int, np-1)
		for i := range cuts {
			cuts[i] = r.IntN(n + 1)
		}
		slices.Sort(cuts)
		seg := make([]bool, np)
		for i := range seg {
			seg[i] = r.IntN(2) == 0
		}
		parts, firsts := buildParts(t, c, cuts, seg)
		whole := []Part{memOf(c)}
		z := newZipf(r, vocab+vocab/10+1, 0.8) // ranks >= vocab are unknown terms
		for q := range 10 {
			raw := make([]string, 1+r.IntN(8))
			for i := range raw {
				raw[i] = termName(z.next())
			}
			var query []Term
			switch q % 3 {
			case 0:
				query = QueryTerms(raw)
			case 1: // duplicates kept as separate terms
				for _, s := range raw {
					query = append(query, Term{Text: s, Weight: 1})
				}
			default: // fractional weights
				for _, s := range raw {
					query = append(query, Term{Text: s, Weight: 0.25 + 2*r.Float64()})
				}
			}
			k := 1 + r.IntN(100)
			p := DefaultBM25
			p.LossyNorms = r.IntN(2) == 0
			got := Search(parts, query, k, p)
			want := SearchExhaustive(parts, query, k, p)
			if !sameHits(got, want) {
				return fmt.Sprintf("query %v k %d %+v: Search %v, SearchExhaustive %v", query, k, p, got, want)
			}
			if single := Search(whole, query, k, p); !sameRanking(got, single) {
				return fmt.Sprintf("query %v k %d %+v: parts %v, one MemIndex %v", query, k, p, got, single)
			}
			for _, h := range got {
				if c.keys[firsts[h.Part]+int(h.Doc)] != h.Key {
					return fmt.Sprintf("hit %+v has the key of another doc", h)
				}
			}
		}
		return ""
	}, gen.UInt64()))
	props.TestingRun(t)
}

// TestSearchLarge covers bitmap containers (more than 4096 docs of one key),
// several containers (more than 65536 docs), wide tfs and long skips, with
// thresholds that prune most windows.
func TestSearchLarge(t *testing.T) {
	defer func(lc, ds float64) { lookupCost, denseShare = lc, ds }(lookupCost, denseShare)
	r := rand.New(rand.NewPCG(7, 7))
	c := genCorpus(r, 70000, 400, 12)
	c.docs[3] = slices.Repeat([]string{"t1"}, 300)       // tf width 2
	c.docs[69999] = slices.Repeat([]string{"t2"}, 70000) // tf width 4
	parts, _ := buildParts(t, c, []int{30000, 66000}, []bool{true, false, true})
	segAll := []Part{mustSeg(t, c.keys, c.docs)}
	for q := range 40 {
		var raw []string
		for range 1 + q%6 {
			raw = append(raw, termName(r.IntN(60)))
		}
		query := QueryTerms(raw)
		for _, k := range []int{1, 10, 100} {
			lookupCost = float64(q % 3)
			denseShare = []float64{0, 0.25, math.Inf(1)}[q/3%3]
			p := BM25{K1: 0.9, B: 0.4, LossyNorms: q%2 == 0}
			want := SearchExhaustive(parts, query, k, p)
			if got := Search(parts, query, k, p); !sameHits(got, want) {
				t.Fatalf("query %v k %d: Search %v, want %v", query, k, got, want)
			}
			checkSplit(t, parts, query, k, p, want, 1+q%4, 2, 3)
			if got := Search(segAll, query, k, p); !sameRanking(got, want) {
				t.Fatalf("query %v k %d: one segment %v, parts %v", query, k, got, want)
			}
		}
	}
}

// TestSearchSplitTies: a corpus of few distinct texts, so that many docs in
// every window tie at the k-th best score; split among searchers, the hits
// tied at that score that another searcher kept must still compete by key.
func TestSearchSplitTies(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	texts := genCorpus(r, 40, 12, 6).docs
	c := corpus{keys: make([][16]byte, 20000), docs: make([][]string, 20000)}
	for i := range c.docs {
		for j := range 16 {
			c.keys[i][j] = byte(r.Uint32())
		}
		c.docs[i] = texts[r.IntN(len(texts))]
	}
	parts, _ := buildParts(t, c, []int{12000}, []bool{true, false})
	for q := range 30 {
		query := QueryTerms([]string{termName(q % 12), termName((q + 5) % 12)})
		for _, k := range []int{1, 10, 100} {
			p := BM25{K1: 1.2, B: 0.75}
			checkSplit(t, parts, query, k, p, SearchExhaustive(parts, query, k, p), 1+q%3, 2, 4)
		}
	}
}

func TestSearchEdges(t *testing.T) {
	c := corpus{
		keys: [][16]byte{{3}, {1}, {2}, {4}},
		docs: [][]string{{"a", "b"}, {"a", "b"}, {}, {"c"}},
	}
	parts, _ := buildParts(t, c, []int{2}, []bool{false, true})
	q := []Term{{Text: "a", Weight: 1}}
	tests := []struct {
		name  string
		parts []Part
		query []Term
		k     int
		want  int
	}{
		{"no parts", nil, q, 10, 0},
		{"k zero", parts, q, 0, 0},
		{"empty query", parts, nil, 10, 0},
		{"unknown term", parts, []Term{{Text: "zz", Weight: 1}}, 10, 0},
		{"zero weight", parts, []Term{{Text: "a", Weight: 0}}, 10, 0},
		{"negative weight", parts, []Term{{Text: "a", Weight: -1}}, 10, 0},
		{"NaN weight", parts, []Term{{Text: "a", Weight: math.NaN()}}, 10, 0},
		{"tie broken by key", parts, q, 10, 2},
		{"k below matches", parts, []Term{{Text: "a", Weight: 1}, {Text: "c", Weight: 1}}, 2, 2},
		{"empty docs only", []Part{memOf(corpus{keys: [][16]byte{{1}}, docs: [][]string{{}}})}, q, 10, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Search(tt.parts, tt.query, tt.k, DefaultBM25)
			if len(got) != tt.want {
				t.Fatalf("got %d hits %v, want %d", len(got), got, tt.want)
			}
			if !sameHits(got, SearchExhaustive(tt.parts, tt.query, tt.k, DefaultBM25)) {
				t.Fatal("Search and SearchExhaustive differ")
			}
		})
	}
	// Docs 0 and 1 tie; key {1} (doc 1, part 0) ranks first.
	got := Search(parts, q, 10, DefaultBM25)
	if got[0].Key != ([16]byte{1}) || got[1].Key != ([16]byte{3}) || got[0].Score != got[1].Score {
		t.Fatalf("tie order %v", got)
	}
}

// TestSearchFallbacks: queries of more than 64 terms and parameters that
// break the bounds are scored exhaustively, with the same results.
func TestSearchFallbacks(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	c := genCorpus(r, 3000, 200, 40)
	parts, _ := buildParts(t, c, []int{1000}, []bool{true, false})
	var many []string
	for i := range 80 {
		many = append(many, termName(i))
	}
	for _, tt := range []struct {
		name  string
		query []Term
		p     BM25
	}{
		{"80 terms", QueryTerms(many), DefaultBM25},
		{"b above 1", QueryTerms(many[:5]), BM25{K1: 1.2, B: 1.5}},
		{"k1 zero", QueryTerms(many[:5]), BM25{K1: 0, B: 0.75}},
		{"b zero", QueryTerms(many[:5]), BM25{K1: 1.2, B: 0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, want := Search(parts, tt.query, 50, tt.p), SearchExhaustive(parts, tt.query, 50, tt.p)
			if len(want) == 0 || !sameHits(got, want) {
				t.Fatalf("Search %v, want %v", got, want)
			}
		})
	}
}

func TestSearchFiltered(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	c := genCorpus(r, 4000, 150, 50)
	parts, firsts := buildParts(t, c, []int{2500}, []bool{true, false})
	filters := []*roaring.Bitmap{roaring.New(), nil}
	for d := uint32(0); d < 2500; d += 3 {
		filters[0].Add(d)
	}
	for q := range 20 {
		query := QueryTerms([]string{termName(q), termName(q + 7), termName(2 * q)})
		all := SearchExhaustive(parts, query, 4000, DefaultBM25)
		var want []Hit
		for _, h := range all {
			if h.Part == 1 || filters[0].Contains(h.Doc) {
				want = append(want, h)
			}
		}
		want = want[:min(len(want), 25)]
		got := SearchFiltered(parts, filters, query, 25, DefaultBM25)
		if !sameHits(got, want) {
			t.Fatalf("query %v: got %v, want %v", query, got, want)
		}
		_ = firsts
	}
}

func TestQueryTerms(t *testing.T) {
	tests := []struct {
		in   []string
		want []Term
	}{
		{nil, nil},
		{[]string{"b", "a", "b", "c", "b"}, []Term{{"a", 1}, {"b", 3}, {"c", 1}}},
		{[]string{"x"}, []Term{{"x", 1}}},
	}
	for _, tt := range tests {
		if got := QueryTerms(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("QueryTerms(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestSearchConcurrent: concurrent searches over shared parts (pooled
// searchers) give the results of sequential ones.
func TestSearchConcurrent(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	c := genCorpus(r, 5000, 300, 60)
	parts, _ := buildParts(t, c, []int{3000}, []bool{true, false})
	var queries [][]Term
	var want [][]Hit
	for q := range 40 {
		query := QueryTerms([]string{termName(q), termName(3 * q), termName(q + 50)})
		queries = append(queries, query)
		want = append(want, SearchExhaustive(parts, query, 20, DefaultBM25))
	}
	errs := make(chan string, 4)
	for g := range 4 {
		go func() {
			for i := range 200 {
				q := (i + g*7) % len(queries)
				if got := Search(parts, queries[q], 20, DefaultBM25); !sameHits(got, want[q]) {
					errs <- fmt.Sprintf("goroutine %d query %d: %v, want %v", g, q, got, want[q])
					return
				}
			}
			errs <- ""
		}()
	}
	for range 4 {
		if e := <-errs; e != "" {
			t.Fatal(e)
		}
	}
}
