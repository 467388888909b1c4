package bench

import (
	"math"
	"os"
	"strings"
	"testing"
)

func TestNDCGAndRecall(t *testing.T) {
	rel := map[string]int{"a": 1, "b": 1, "c": 2}
	cases := []struct {
		ranked    []string
		k         int
		ndcg, rec float64
	}{
		{[]string{"c", "a", "b"}, 10, 1, 1},
		{[]string{"x", "y"}, 10, 0, 0},
		// dcg = 1/log2(2) + 2/log2(4) = 2; ideal = 2 + 1/log2(3) + 1/log2(4)
		{[]string{"a", "x", "c"}, 10, 2 / (2 + 1/math.Log2(3) + 0.5), 2.0 / 3},
		{[]string{"x", "c"}, 1, 0, 0},
	}
	for _, c := range cases {
		if got := NDCG(c.ranked, rel, c.k); math.Abs(got-c.ndcg) > 1e-12 {
			t.Errorf("NDCG(%v, %d) = %v, want %v", c.ranked, c.k, got, c.ndcg)
		}
		if got := Recall(c.ranked, rel, c.k); math.Abs(got-c.rec) > 1e-12 {
			t.Errorf("Recall(%v, %d) = %v, want %v", c.ranked, c.k, got, c.rec)
		}
	}
}

func TestLoadSciFact(t *testing.T) {
	dir := "../../shared/data/scifact"
	if _, err := os.Stat(dir); err != nil {
		t.Skip("shared SciFact data not present")
	}
	b, err := LoadBEIR(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Corpus) != 5183 || len(b.Queries) != 300 || len(b.Qrels) != 300 {
		t.Fatalf("corpus %d, queries %d, qrels %d; want 5183, 300, 300", len(b.Corpus), len(b.Queries), len(b.Qrels))
	}
}

// TestFuseMaxNormalized: each channel's scores are divided by its best; a
// negative cosine counts as 0 and a channel with no positive score adds
// nothing, as the context packer fuses its channels.
func TestFuseMaxNormalized(t *testing.T) {
	for _, tt := range []struct {
		name     string
		lex, sem docScores
		w        float64
		want     docScores
	}{
		{"both channels", docScores{"a": 10, "b": 5}, docScores{"b": 0.8, "c": 0.4}, 0.5,
			docScores{"a": 0.5, "b": 0.75, "c": 0.25}},
		{"negative cosine", docScores{"a": 2}, docScores{"a": 0.5, "b": -0.5}, 0.5,
			docScores{"a": 1, "b": 0}},
		{"no positive cosine", docScores{"a": 4, "b": 2}, docScores{"a": -0.1}, 0.6,
			docScores{"a": 0.4, "b": 0.2}},
	} {
		got := fuseMaxNormalized(tt.lex, tt.sem, tt.w)
		for id, w := range tt.want {
			if math.Abs(got[id]-w) > 1e-12 {
				t.Errorf("%s: %s scores %v, want %v", tt.name, id, got[id], w)
			}
		}
	}
	if w := HybridSemanticWeight(); math.Abs(w-0.57/0.99) > 1e-12 {
		t.Errorf("hybrid semantic weight %v, want the pack's 0.57/0.99", w)
	}
}

// TestEvalEmbedder: the evaluations' embedder names.
func TestEvalEmbedder(t *testing.T) {
	for _, tt := range []struct {
		name, model string
		err         bool
	}{
		{"", "all-minilm-l6-v2", false},
		{EmbedderMiniLM, "all-minilm-l6-v2", false},
		{EmbedderGloVe, "glove", false},
		{EmbedderNone, "", false},
		{"bert", "", true},
	} {
		e, err := evalEmbedder(tt.name)
		if (err != nil) != tt.err {
			t.Errorf("%q: error %v", tt.name, err)
			continue
		}
		model := ""
		if e != nil {
			model = e.Model()
		}
		if !strings.HasPrefix(model, tt.model) {
			t.Errorf("%q: model %q, want %q...", tt.name, model, tt.model)
		}
	}
}
