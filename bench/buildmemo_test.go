package bench

import (
	"context"
	"math"
	"testing"

	"github.com/loci-memory/loci/embed"
	"github.com/loci-memory/loci/embed/glove"
)

// countingEmbedder counts the texts it is asked to embed.
type countingEmbedder struct {
	embed.Embedder
	texts int
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.texts += len(texts)
	return c.Embedder.Embed(ctx, texts)
}

// TestBuildMemo: while on, the memo answers repeated texts with the
// embedder's own bits and embeds each distinct text once; after stop,
// every text goes to the embedder again.
func TestBuildMemo(t *testing.T) {
	inner := &countingEmbedder{Embedder: glove.New()}
	wrapped, memo := withBuildMemo(inner)
	if _, ok := wrapped.(embed.InProcess); ok {
		t.Fatal("a memo over an embedder that is not in-process claims to be")
	}
	if _, ok := func() embed.Embedder { w, _ := withBuildMemo(glove.New()); return w }().(embed.InProcess); !ok {
		t.Fatal("a memo over glove (in-process) does not say so")
	}
	ctx := context.Background()
	batches := [][]string{
		{"the refund window is 30 days", "Caroline ran a charity race", "the refund window is 30 days"},
		{"Caroline ran a charity race", "a new text"},
	}
	for _, b := range batches {
		got, err := wrapped.Embed(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		want, err := glove.New().Embed(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for i := range b {
			for j := range want[i] {
				if math.Float32bits(got[i][j]) != math.Float32bits(want[i][j]) {
					t.Fatalf("%q: vector differs from the embedder's at %d", b[i], j)
				}
			}
		}
		got[0][0] = 42 // the caller's copy, not the memo's
	}
	if inner.texts != 3 {
		t.Fatalf("the embedder was asked for %d texts, want the 3 distinct ones", inner.texts)
	}
	again, _ := wrapped.Embed(ctx, batches[0][:1])
	if again[0][0] == 42 {
		t.Fatal("a caller's change to its vector reached the memo")
	}
	served, embedded := memo.stop()
	if served != 6 || embedded != 3 {
		t.Fatalf("stop: served %d, embedded %d; want 6 and 3", served, embedded)
	}
	if _, err := wrapped.Embed(ctx, batches[1]); err != nil {
		t.Fatal(err)
	}
	if inner.texts != 5 {
		t.Fatalf("after stop the embedder was asked for %d texts in all, want 5", inner.texts)
	}
}
