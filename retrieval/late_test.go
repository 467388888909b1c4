package retrieval

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/loci-memory/loci/embed/colbert"
	"github.com/loci-memory/loci/pack"
)

// byWord is a late-interaction model for tests: a passage holding its word
// scores 10, any other 0.
type byWord string

func (byWord) Model() string { return "by-word" }

func (w byWord) ScoreAll(_ context.Context, _ string, passages []string, dst []float64) error {
	for i, p := range passages {
		dst[i] = 0
		if strings.Contains(p, string(w)) {
			dst[i] = 10
		}
	}
	return nil
}

// TestLateInteractionPack packs with late interaction over a chat: the
// scores order the pack (a model that favours one turn puts it first), the
// pack says how it was ordered, and with the built-in model the same
// request gives the same bytes again, from a scorer that remembers the
// passages' vectors and from a fresh one.
func TestLateInteractionPack(t *testing.T) {
	enc, err := colbert.Default()
	if err != nil {
		t.Fatal(err)
	}
	db := twoRunners(t)
	ctx := context.Background()
	pk := func(p *Packer, query string) *pack.Result {
		t.Helper()
		res, err := p.ContextPack(ctx, "t", PackRequest{Workspace: "ws", Query: query, MaxTokens: 512, ActorID: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		return res.Result
	}
	q := "What race did Caroline run?"
	if res := pk(New(db), q); !strings.HasPrefix(res.Citations[0].Text, "Caroline: I ran a marathon") {
		t.Fatalf("first citation %q without late interaction, want Caroline's marathon", res.Citations[0].Text)
	}
	biscuit := New(db)
	biscuit.SetLateInteraction(byWord("Biscuit"), 10)
	if res := pk(biscuit, q); !strings.Contains(res.Citations[0].Text, "Biscuit") {
		t.Errorf("first citation %q with a model that favours Biscuit", res.Citations[0].Text)
	}
	p := New(db)
	p.SetLateInteraction(colbert.NewScorer(enc, 1<<20), 10)
	res := pk(p, q)
	if !strings.HasPrefix(res.Citations[0].Text, "Caroline: I ran a marathon") {
		t.Errorf("first citation %q, want Caroline's marathon", res.Citations[0].Text)
	}
	want := fmt.Sprintf(pack.AssumeLate, len(twoRunnersTurns), enc.Model())
	if !slices.Contains(res.Assumptions, want) {
		t.Errorf("assumptions %q, want %q", res.Assumptions, want)
	}
	if again := pk(p, q); again.PackHash != res.PackHash {
		t.Error("the same request gave another pack")
	}
	fresh := New(db)
	fresh.SetLateInteraction(colbert.NewScorer(enc, 0), 10)
	if other := pk(fresh, q); other.PackHash != res.PackHash {
		t.Error("a scorer that remembers nothing gave another pack")
	}
	if plain := pk(New(db), q); slices.Contains(plain.Assumptions, want) {
		t.Errorf("a Packer without late interaction says it used it: %q", plain.Assumptions)
	}
}
