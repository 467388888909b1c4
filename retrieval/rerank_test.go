package retrieval

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/loci-memory/loci/embed/crossenc"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/internal/enginetest"
	"github.com/loci-memory/loci/pack"
)

// TestRerankedPack packs with the built-in cross-encoder over a chat in
// which two people say similar words: the reranked pack puts the turn
// that answers the question about Caroline first, with the model's
// relevance (higher than the channels gave it: "ran a marathon" holds no
// word of "race" or "run"), its confidence is the unreranked pack's
// (pack/rerank.go says why), the pack says it was reranked, and the same
// request gives the same bytes again.
func TestRerankedPack(t *testing.T) {
	rr, err := crossenc.Default()
	if err != nil {
		t.Fatal(err)
	}
	db := twoRunners(t)
	p := New(db)
	p.SetReranker(rr)
	ctx := context.Background()
	pk := func(query string, depth int) *pack.Result {
		t.Helper()
		res, err := p.ContextPack(ctx, "t", PackRequest{Workspace: "ws", Query: query, MaxTokens: 512, ActorID: "alice", RerankDepth: depth})
		if err != nil {
			t.Fatal(err)
		}
		return res.Result
	}
	res := pk("What race did Caroline run?", 10)
	if !strings.HasPrefix(res.Citations[0].Text, "Caroline: I ran a marathon") {
		t.Errorf("first citation %q, want Caroline's marathon", res.Citations[0].Text)
	}
	if !slices.ContainsFunc(res.Assumptions, func(a string) bool { return strings.Contains(a, rr.Model()) }) {
		t.Errorf("assumptions %q do not say the pack was reranked", res.Assumptions)
	}
	lexical := pk("What race did Caroline run?", 0)
	relevance := func(r *pack.Result) float64 {
		for _, c := range r.Citations {
			if strings.HasPrefix(c.Text, "Caroline: I ran a marathon") {
				return c.RelevanceScore
			}
		}
		return -1
	}
	if !(relevance(res) > 0.95 && relevance(res) > relevance(lexical)+0.1) {
		t.Errorf("the marathon's relevance %.3f reranked, %.3f not: want the model's lift", relevance(res), relevance(lexical))
	}
	if res.Confidence != lexical.Confidence || res.Abstain != lexical.Abstain {
		t.Errorf("reranked confidence %.3f (abstain %v), unreranked %.3f (abstain %v)", res.Confidence, res.Abstain, lexical.Confidence, lexical.Abstain)
	}
	again := pk("What race did Caroline run?", 10)
	if again.PackHash != res.PackHash || again.Confidence != res.Confidence {
		t.Error("the same reranked request gave another pack")
	}
	// Without a depth, or without a model, nothing is reranked.
	plain := pk("What race did Caroline run?", 0)
	if slices.ContainsFunc(plain.Assumptions, func(a string) bool { return strings.Contains(a, rr.Model()) }) {
		t.Errorf("a pack without rerank_depth was reranked: %q", plain.Assumptions)
	}
	bare, err := New(db).ContextPack(ctx, "t", PackRequest{Workspace: "ws", Query: "What race did Caroline run?", MaxTokens: 512, ActorID: "alice", RerankDepth: 5})
	if err != nil || !slices.Contains(bare.Result.Assumptions, pack.AssumeNoReranker) {
		t.Errorf("a Packer without a model: %v", err)
	}
}

// twoRunners returns an engine whose workspace "ws" of tenant "t" holds a
// chat of six turns in which Melanie and Caroline both ran a race.
func twoRunners(t *testing.T) *engine.DB {
	t.Helper()
	db := enginetest.Open(t, t.TempDir(), engine.Options{DisableBackground: true})
	for _, tr := range twoRunnersTurns {
		in := enginetest.Chat("ws", tr.text)
		in.Payload = []byte(fmt.Sprintf(`{"role":%q,"content":%q}`, tr.role, tr.text))
		enginetest.MustIngest(t, db, "t", in)
	}
	return db
}

var twoRunnersTurns = []struct{ role, text string }{
	{"Melanie", "I ran a charity race last Sunday, it was for a mental health cause."},
	{"Caroline", "That's amazing! I went to an LGBTQ support group meeting yesterday, it was so powerful."},
	{"Melanie", "We adopted a rescue dog named Biscuit, he loves the beach."},
	{"Caroline", "I ran a marathon in Boston last spring, my first one."},
	{"Melanie", "Painting has been my way to relax lately, mostly landscapes."},
	{"Caroline", "I'm thinking about going back to school to study counseling."},
}
