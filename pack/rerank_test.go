package pack

import (
	"slices"
	"testing"

	"github.com/google/uuid"
)

// TestRerankOrdersNotConfidence: the model lifts the relevance of what it
// finds relevant and lowers nothing; confidence stays the unreranked
// formula's, whatever the logits.
func TestRerankOrdersNotConfidence(t *testing.T) {
	mk := func(n byte, text string, lexical float64) Candidate {
		c := Candidate{SpanID: uuid.UUID{n}, ArtifactID: uuid.UUID{n}, SourceType: "note", Text: text, Tokens: 10,
			Lexical: lexical, InLexical: true, Timestamp: 1}
		return c
	}
	cands := []Candidate{
		mk(1, "the words of the question, about someone else", 10),
		mk(2, "the answer, in other words", 6),
		mk(3, "unrelated", 2),
	}
	req := Request{Query: "question words", MaxTokens: 512, AsOf: 1}
	if got := Rank(req, nil, cands); !slices.Equal(got, []uuid.UUID{{1}, {2}, {3}}) {
		t.Fatalf("Rank %v, want the lexical order", got)
	}
	lexical := Pack(req, nil, cands, est)

	// The model finds the second span the answer, the first not.
	cands[0].Rerank, cands[0].Reranked = -8, true
	cands[1].Rerank, cands[1].Reranked = 6, true
	// Rank gives the order before reranking, whatever the logits.
	if got := Rank(req, nil, cands); !slices.Equal(got, []uuid.UUID{{1}, {2}, {3}}) {
		t.Fatalf("Rank of reranked candidates %v, want the order before reranking", got)
	}
	res := Pack(req, nil, cands, est)
	rel := map[uuid.UUID]float64{}
	for _, c := range res.Citations {
		rel[c.SpanID] = c.RelevanceScore
	}
	// The model vouches for the second span (lifted to its probability),
	// never vetoes the first (kept at its fused relevance).
	if want := round6(sigmoid(6)); rel[uuid.UUID{2}] != want {
		t.Errorf("relevance of the span the model finds relevant %v, want %v", rel[uuid.UUID{2}], want)
	}
	if rel[uuid.UUID{1}] != 1 {
		t.Errorf("relevance of the span the model finds irrelevant %v, want its fused 1", rel[uuid.UUID{1}])
	}
	if res.Confidence != lexical.Confidence || res.Abstain != lexical.Abstain {
		t.Errorf("confidence %v abstain %v with a span the model finds relevant, unreranked %v %v", res.Confidence, res.Abstain, lexical.Confidence, lexical.Abstain)
	}
	// Only irrelevant spans: no veto, of relevance or of confidence.
	cands[1].Rerank = -9
	res = Pack(req, nil, cands, est)
	if res.Confidence != lexical.Confidence || res.Abstain {
		t.Errorf("confidence %v abstain %v with no span the model finds relevant, unreranked %v", res.Confidence, res.Abstain, lexical.Confidence)
	}
	for i, c := range res.Citations {
		if want := lexical.Citations[i]; c.SpanID != want.SpanID || c.RelevanceScore != want.RelevanceScore {
			t.Errorf("citation %d: %v at %v, unreranked %v at %v", i, c.SpanID, c.RelevanceScore, want.SpanID, want.RelevanceScore)
		}
	}
	// A pinned copy of a reranked span keeps its logit (merge).
	pinned := cands[1]
	pinned.Reranked, pinned.Rerank = false, 0
	cands[1].Rerank = 6
	res = Pack(req, []Candidate{pinned}, cands, est)
	for _, c := range res.Citations {
		if c.SpanID == (uuid.UUID{2}) && c.RelevanceScore != round6(sigmoid(6)) {
			t.Errorf("relevance of the pinned copy %v, want the model's %v", c.RelevanceScore, round6(sigmoid(6)))
		}
	}
}

// TestLateInteraction: late-interaction scores blend into the relevance of
// the scored candidates by their place between the pool's least and largest
// score, may lower a candidate (unlike the cross-encoder's logits), leave
// the others alone, and do not change Rank.
func TestLateInteraction(t *testing.T) {
	mk := func(n byte, text string, lexical float64) Candidate {
		return Candidate{SpanID: uuid.UUID{n}, ArtifactID: uuid.UUID{n}, SourceType: "note", Text: text, Tokens: 10,
			Lexical: lexical, InLexical: true, Timestamp: 1}
	}
	cands := []Candidate{
		mk(1, "the words of the question, about someone else", 10),
		mk(2, "the answer, in other words", 6),
		mk(3, "the question's words once more", 5),
		mk(4, "unrelated", 2),
	}
	// No relevance floor: every span is cited with its relevance.
	tun := DefaultTuning()
	tun.MinRelevance = 0
	req := Request{Query: "question words", MaxTokens: 512, AsOf: 1, Tuning: tun}
	before := Pack(req, nil, cands, est)
	rank := Rank(req, nil, cands)
	fused := map[uuid.UUID]float64{}
	for _, c := range before.Citations {
		fused[c.SpanID] = c.RelevanceScore
	}
	// The three best are scored; the answer best, the first worst.
	for i, s := range []float64{4.0, 9.0, 6.5} {
		cands[i].Late, cands[i].LateScored = s, true
	}
	if got := Rank(req, nil, cands); !slices.Equal(got, rank) {
		t.Fatalf("Rank of late-scored candidates %v, want the order before, %v", got, rank)
	}
	res := Pack(req, nil, cands, est)
	rel := map[uuid.UUID]float64{}
	var order []uuid.UUID
	for _, c := range res.Citations {
		rel[c.SpanID] = c.RelevanceScore
		order = append(order, c.SpanID)
	}
	for id, norm := range map[uuid.UUID]float64{{1}: 0, {2}: 1, {3}: 0.5} {
		if want := round6(LateWeight*norm + (1-LateWeight)*fused[id]); rel[id] != want {
			t.Errorf("span %v: relevance %v, want %v (fused %v, place in the pool %v)", id, rel[id], want, fused[id], norm)
		}
	}
	if rel[uuid.UUID{4}] != fused[uuid.UUID{4}] {
		t.Errorf("unscored span: relevance %v, want its fused %v", rel[uuid.UUID{4}], fused[uuid.UUID{4}])
	}
	if rel[uuid.UUID{1}] >= fused[uuid.UUID{1}] {
		t.Errorf("the worst-scored span kept %v of its fused %v: late interaction should lower it", rel[uuid.UUID{1}], fused[uuid.UUID{1}])
	}
	if order[0] != (uuid.UUID{2}) {
		t.Errorf("order %v, want the best-scored span first", order)
	}
	// Equal scores say nothing about order: each scored span gets the
	// same lift, so the fused order stands.
	for i := range 3 {
		cands[i].Late = 5
	}
	res = Pack(req, nil, cands, est)
	for i, c := range res.Citations[:3] {
		if c.SpanID != before.Citations[i].SpanID {
			t.Fatalf("with equal scores, citation %d is %v, want the fused order's %v", i, c.SpanID, before.Citations[i].SpanID)
		}
	}
}
