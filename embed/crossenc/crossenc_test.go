package crossenc

import (
	"context"
	"fmt"
	"math"
	"slices"
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

// TestScorePairOnSameBits: one pair's pass split among goroutines (matrix
// products by outputs, attention by heads) gives the bits of the pass on
// one goroutine, at pair lengths around the tile and padding boundaries.
func TestScorePairOnSameBits(t *testing.T) {
	r, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	passage := strings.Repeat("Caroline: I ran a charity race for mental health last Saturday, it was rewarding. ", 20)
	full, split := r.PairIDs(nil, "What did Caroline run?", passage)
	for _, T := range []int{split + 1, 16, 17, 33, 64, len(full)} {
		ids := slices.Clone(full[:T])
		ids[T-1] = full[len(full)-1] // [SEP]
		want, err := r.enc.ScorePair(ids, split)
		if err != nil {
			t.Fatal(err)
		}
		for _, par := range []int{2, 3, 5, 12, 16} {
			got, err := r.enc.ScorePairOn(ids, split, par)
			if err != nil {
				t.Fatal(err)
			}
			if math.Float32bits(got) != math.Float32bits(want) {
				t.Errorf("%d ids on %d goroutines: %v, on one %v", T, par, got, want)
			}
		}
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
// fixed token count on one goroutine, and split between two (ScorePairOn): 16 (a question alone, as a
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
	for _, T := range []int{16, 32, 64, 96, 128} {
		ids := append([]int32(nil), full[:T]...)
		ids[T-1] = full[len(full)-1] // [SEP]
		s := min(split, T-1)
		for _, par := range []int{1, 2} {
			b.Run(fmt.Sprintf("tokens=%d/goroutines=%d", T, par), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if _, err := r.enc.ScorePairOn(ids, s, par); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestPairWindow: a passage longer than the pair's bound is read in the
// window that holds the most of the query's words, from a word's start;
// a passage whose head holds as much is read from its start, and a short
// one whole.
func TestPairWindow(t *testing.T) {
	r, err := New(modelFile, 80)
	if err != nil {
		t.Fatal(err)
	}
	filler := strings.Repeat("The committee reviewed the quarterly budget and approved the minutes. ", 12)
	answer := "Caroline ran a charity race for mental health awareness last Sunday."
	query := "What charity race did Caroline run?"
	decode := func(ids []int32, split int) string {
		var b strings.Builder
		for _, id := range ids[split : len(ids)-1] {
			b.WriteString(r.vocab[id])
			b.WriteByte(' ')
		}
		return b.String()
	}
	for _, tc := range []struct {
		name, passage string
		want          string // a piece sequence the passage's window holds
		head          bool   // read from the passage's start
	}{
		{"answer at the end", filler + answer, "charity race", false},
		{"answer in the middle", filler + answer + " " + filler, "charity race", false},
		{"answer first", answer + " " + filler, "caroline ran", true},
		{"no word of the query", filler + filler, "the committee", true},
		{"short", answer, "caroline ran", true},
	} {
		ids, split := r.PairIDs(nil, query, tc.passage)
		if len(ids) > 80 {
			t.Fatalf("%s: %d ids, bound 80", tc.name, len(ids))
		}
		got := decode(ids, split)
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: window %q does not hold %q", tc.name, got, tc.want)
		}
		whole := r.ptok.Encode(tc.passage)
		whole = whole[1 : len(whole)-1]
		body := ids[split : len(ids)-1]
		if tc.head != slices.Equal(body, whole[:len(body)]) {
			t.Errorf("%s: window read from the start %v, want %v", tc.name, !tc.head, tc.head)
		}
		if r.skip[body[0]] == skipContinuation {
			t.Errorf("%s: window starts inside a word (%q)", tc.name, r.vocab[body[0]])
		}
		again, _ := r.PairIDs(nil, query, tc.passage)
		if !slices.Equal(again, ids) {
			t.Errorf("%s: a second call chose another window", tc.name)
		}
	}
}
