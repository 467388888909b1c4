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
