package minilm

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// determinismTexts are texts of many lengths (1 to 256 tokens, around the
// kernels' tile and padding boundaries).
func determinismTexts() []string {
	words := strings.Fields("the memory store keeps every turn of the conversation, with citations and receipts; " +
		"Caroline asked when the flight to Seattle leaves, and Melanie answered: Tuesday at 14:00 UTC! 東京 naïve")
	var texts []string
	for _, n := range []int{0, 1, 2, 3, 4, 5, 7, 12, 13, 14, 15, 16, 17, 30, 31, 47, 64, 100, 300} {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(words[i%len(words)])
			b.WriteByte(' ')
		}
		texts = append(texts, b.String())
	}
	return texts
}

// TestDeterminism checks that a text's embedding is a pure function of the
// text: the same bits embedded alone or in a batch (in any order), on any
// goroutine, at any GOMAXPROCS.
func TestDeterminism(t *testing.T) {
	e := defaultEmbedder(t)
	texts := determinismTexts()
	alone := make([][]float32, len(texts))
	for i, text := range texts {
		alone[i] = make([]float32, e.Dim())
		if err := e.EmbedOne(text, alone[i]); err != nil {
			t.Fatal(err)
		}
	}
	same := func(how string, i int, got []float32) {
		t.Helper()
		for j := range got {
			if math.Float32bits(got[j]) != math.Float32bits(alone[i][j]) {
				t.Fatalf("%s: text %d (%.30q) differs from its embedding alone at %d: %v, %v", how, i, texts[i], j, got[j], alone[i][j])
			}
		}
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rng := rand.New(rand.NewPCG(7, 8))
	for _, procs := range []int{1, 2, 4} {
		runtime.GOMAXPROCS(procs)
		// A batch in shuffled order, with repeats.
		var batch []string
		var idx []int
		for r := 0; r < 2; r++ {
			for _, i := range rng.Perm(len(texts)) {
				batch = append(batch, texts[i])
				idx = append(idx, i)
			}
		}
		got, err := e.Embed(context.Background(), batch)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range got {
			same("batch", idx[k], v)
		}
		// Several goroutines at once, each embedding every text.
		var wg sync.WaitGroup
		res := make([][][]float32, 4)
		for g := range res {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res[g], _ = e.Embed(context.Background(), texts)
			}()
		}
		wg.Wait()
		for _, r := range res {
			for i, v := range r {
				same("concurrent", i, v)
			}
		}
	}
}
