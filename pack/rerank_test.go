package pack

import (
	"slices"
	"testing"

	"github.com/google/uuid"
)

func TestRerankOrdersAndGivesConfidence(t *testing.T) {
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
	if res.Citations[0].SpanID != (uuid.UUID{2}) {
		t.Errorf("first citation %v, want the span the model found relevant", res.Citations[0].SpanID)
	}
	if want := neuralConfidence(6); res.Confidence != want || !(res.Confidence > 0.9) {
		t.Errorf("confidence %v, want the model's %v", res.Confidence, want)
	}
	if res.Confidence == lexical.Confidence {
		t.Error("reranking left the lexical confidence")
	}
	// Only irrelevant spans: low confidence, abstention at the default threshold.
	cands[1].Rerank = -9
	if res := Pack(req, nil, cands, est); !(res.Confidence < 0.01) || !res.Abstain {
		t.Errorf("confidence %v abstain %v with no span the model finds relevant", res.Confidence, res.Abstain)
	}
	// A pinned copy of a reranked span keeps its logit (merge).
	pinned := cands[1]
	pinned.Reranked, pinned.Rerank = false, 0
	res = Pack(req, []Candidate{pinned}, cands, est)
	if res.Confidence != neuralConfidence(-8) && res.Confidence != neuralConfidence(-9) {
		t.Errorf("confidence %v after merging a pinned copy", res.Confidence)
	}
}
