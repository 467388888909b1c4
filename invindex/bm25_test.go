package invindex

import (
	"math"
	"slices"
	"testing"
)

// TestBM25Scores checks scores against values computed by hand (in Python,
// from the formula in the package doc) on tiny corpora, in a MemIndex and in
// a SegIndex.
func TestBM25Scores(t *testing.T) {
	abc := corpus{
		keys: [][16]byte{{0}, {1}, {2}, {3}},
		docs: [][]string{{"a", "b", "c"}, {"a", "a", "b"}, {"c", "d", "e", "f"}, {}},
	}
	long := corpus{
		keys: [][16]byte{{0}, {1}},
		docs: [][]string{append([]string{"x"}, slices.Repeat([]string{"f"}, 99)...), {"x", "y"}},
	}
	type want struct {
		doc   uint32
		score float64
	}
	tests := []struct {
		name  string
		c     corpus
		query []Term
		p     BM25
		want  []want
	}{
		{"two terms", abc, QueryTerms([]string{"a", "b"}), DefaultBM25,
			[]want{{1, 0.8179461827551708}, {0, 0.7029890269370642}}},
		{"weighted term, key breaks the tie", abc, QueryTerms([]string{"c", "c"}), DefaultBM25,
			[]want{{0, 0.7029890269370642}, {2, 0.655148563856281}}},
		{"other parameters", abc, QueryTerms([]string{"d"}), BM25{K1: 1.2, B: 0.75},
			[]want{{2, 0.4394061329656701}}},
		{"exact lengths", long, QueryTerms([]string{"x"}), DefaultBM25,
			[]want{{1, 0.11731515766454308}, {0, 0.08118036839961308}}},
		{"lossy lengths", long, QueryTerms([]string{"x"}), BM25{K1: 0.9, B: 0.4, LossyNorms: true},
			[]want{{1, 0.11731515766454308}, {0, 0.0822139646020485}}},
	}
	for _, tt := range tests {
		for _, kind := range []string{"mem", "seg"} {
			t.Run(tt.name+"/"+kind, func(t *testing.T) {
				part := Part(memOf(tt.c))
				if kind == "seg" {
					part = mustSeg(t, tt.c.keys, tt.c.docs)
				}
				got := Search([]Part{part}, tt.query, 10, tt.p)
				if len(got) != len(tt.want) {
					t.Fatalf("got %v, want %v", got, tt.want)
				}
				for i, w := range tt.want {
					if got[i].Doc != w.doc || math.Abs(got[i].Score-w.score) > 1e-12 {
						t.Errorf("hit %d: doc %d score %v, want doc %d score %v", i, got[i].Doc, got[i].Score, w.doc, w.score)
					}
				}
			})
		}
	}
}

func TestIDF(t *testing.T) {
	tests := []struct {
		n, df int64
		want  float64
	}{
		{3, 2, math.Log(1.6)},
		{4, 2, math.Log(2)},
		{1, 1, math.Log(1 + 0.5/1.5)},
		{1000000, 1, math.Log(1 + 999999.5/1.5)},
	}
	for _, tt := range tests {
		if got := idf(tt.n, tt.df); got != tt.want {
			t.Errorf("idf(%d, %d) = %v, want %v", tt.n, tt.df, got, tt.want)
		}
	}
}
