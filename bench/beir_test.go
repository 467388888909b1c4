package bench

import (
	"math"
	"os"
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
