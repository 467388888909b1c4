package crossenc

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestScoreAllSameBits checks the determinism rule: a pair's score is the
// same bits alone, in a batch, on one worker or many.
func TestScoreAllSameBits(t *testing.T) {
	r, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	query := "What did Caroline run?"
	passages := []string{
		"Caroline: I ran a charity race last Sunday.",
		"Melanie: I ran a charity race last Sunday.",
		"",
		strings.Repeat("a long passage that the pair bound cuts ", 100),
		"Caroline: We adopted a rescue dog named Biscuit.",
	}
	alone := make([]float32, len(passages))
	for i, p := range passages {
		if alone[i], err = r.Score(query, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, workers := range []int{1, 2, 3, 8} {
		got := make([]float32, len(passages))
		if err := r.ScoreAll(context.Background(), query, passages, got, workers); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(alone[i]) {
				t.Errorf("workers %d, passage %d: %v, alone %v", workers, i, got[i], alone[i])
			}
		}
	}
	if !(alone[0] > 0 && alone[1] < 0) {
		t.Errorf("Caroline's own turn scored %.2f, Melanie's %.2f: want the first relevant, the second not", alone[0], alone[1])
	}
}

func TestPairIDsBounds(t *testing.T) {
	r, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("word ", 1000)
	for _, tc := range []struct {
		query, passage string
		maxLen         int
	}{
		{"q", "p", 5},
		{long, "p", MaxQueryTokens + 2},
		{"q", long, DefaultMaxPairTokens},
		{long, long, DefaultMaxPairTokens},
		{"", "", 4},
	} {
		ids, split := r.PairIDs(nil, tc.query, tc.passage)
		if len(ids) > tc.maxLen || len(ids) > DefaultMaxPairTokens {
			t.Errorf("(%.10q, %.10q): %d ids, want at most %d", tc.query, tc.passage, len(ids), tc.maxLen)
		}
		cls, sep := r.qtok.Encode("")[0], r.qtok.Encode("")[1]
		if split > MaxQueryTokens || ids[0] != cls || ids[split-1] != sep || ids[len(ids)-1] != sep {
			t.Errorf("(%.10q, %.10q): split %d of %d ids: want [CLS] first and [SEP] closing both segments", tc.query, tc.passage, split, len(ids))
		}
		if _, err := r.enc.ScorePair(ids, split); err != nil {
			t.Error(err)
		}
	}
	if _, err := New(modelFile, MaxQueryTokens); err == nil {
		t.Error("New accepted a pair bound below the query's")
	}
}

func TestScoreAllStopsOnCancel(t *testing.T) {
	r, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.ScoreAll(ctx, "q", []string{"a", "b", "c"}, make([]float32, 3), 2); err == nil {
		t.Error("ScoreAll on a cancelled context returned no error")
	}
}

// BenchmarkScore is one pair of a LoCoMo-like question (12 tokens) and chat
// turn (about 35 tokens) on one goroutine.
func BenchmarkScore(b *testing.B) {
	r, err := Default()
	if err != nil {
		b.Fatal(err)
	}
	q := "What did Caroline realize after her charity race?"
	p := "Caroline: I ran a charity race for mental health last Saturday, it was really rewarding and made me realize how much self-care matters."
	ids, _ := r.PairIDs(nil, q, p)
	b.ReportMetric(float64(len(ids)), "tokens")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.Score(q, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkForwardTokens is one forward pass of the 12-layer model at a
// fixed token count on one goroutine: 16 (a question alone, as a
// bi-encoder or late-interaction model of the same shape encodes it), 32,
// 64 (a question with a chat turn) and 128. Any BERT of this shape (12
// layers, hidden 384, intermediate 1,536) costs the same on these kernels,
// so bench/relevance prices bge-small and ColBERT-small with it.
func BenchmarkForwardTokens(b *testing.B) {
	r, err := Default()
	if err != nil {
		b.Fatal(err)
	}
	q := "What did Caroline realize after her charity race?"
	p := strings.Repeat("Caroline: I ran a charity race for mental health last Saturday, it was really rewarding. ", 8)
	full, split := r.PairIDs(nil, q, p)
	for _, T := range []int{16, 32, 64, 128} {
		ids := append([]int32(nil), full[:T]...)
		ids[T-1] = full[len(full)-1] // [SEP]
		s := min(split, T-1)
		b.Run(fmt.Sprintf("tokens=%d", T), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := r.enc.ScorePair(ids, s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
