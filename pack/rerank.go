package pack

import (
	"math"
	"slices"

	"github.com/google/uuid"
)

// Reranking: retrieval may have a relevance model (a cross-encoder, which
// reads the query and a span together) score the best candidates of the
// fused ranking; Rank says which those are. A reranked candidate's
// relevance before the context step becomes
//
//	max(fused relevance, sigmoid(logit))
//
// the model can vouch for a candidate, never veto one. Measured on LoCoMo
// dev (docs/pack.md), a blend that also lowered the candidates the model
// finds irrelevant cost evidence recall at 512 tokens (0.68 -> 0.62 over
// 646 questions): a turn that answers a question indirectly, or one hop of
// a multi-hop answer, does not read as an answer to an MS MARCO model.
//
// A reranked pack's confidence is the unreranked formula's (confidence):
// the model orders candidates, it does not vouch for them. Its judgement
// lowered the separation of unanswerable questions wherever it was
// measured: as the geometric mean of the two confidences, with the
// attribution weighted by its probabilities, LoCoMo dev's ROC AUC of
// category 5 against 1-4 fell from 0.854 to 0.695 (prefix shape, depth 3,
// 512 tokens) and LongMemEval's answerable questions abstained 21% of the
// time against 0% (docs/pack.md § Reranking).

// Assumptions of a reranked pack (retrieval adds them).
const (
	AssumeReranked   = "Reranked the %d best candidates with the relevance model %s"
	AssumeNoReranker = "No relevance model is configured: candidates were not reranked"
)

// reranked is the relevance of a reranked candidate whose fused relevance
// is rel and model logit logit.
func reranked(rel, logit float64) float64 {
	return max(rel, sigmoid(logit))
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// Rank returns the span ids of the candidates that a pack of req could
// include, best first by fused relevance (context and speaker prior
// included; ties as Pack orders them), without pinned spans, and those the
// policy or feedback would exclude: the ones worth reranking. It is a pure
// function of its inputs, like Pack.
func Rank(req Request, pinned, candidates []Candidate) []uuid.UUID {
	tun := req.Tuning.effective()
	w := req.Weights.effective(req.SemanticAvailable)
	if len(req.Windows) > 0 {
		w = w.withWindows()
	}
	cs := gather(pinned, candidates, req.SessionID)
	for _, c := range cs {
		c.Reranked = false // the order before reranking
	}
	score(cs, w, req.AsOf, tun.TemporalHalfLifeHours, req.Windows, queryTerms(req.Query), asksOwner(req.Query), newTermPairs(req.Query), req.Analyses)
	slices.SortFunc(cs, byRelevance)
	ids := make([]uuid.UUID, 0, len(cs))
	for _, c := range cs {
		if c.pinned || policyDenial(&c.Candidate, req.ActorID, req.Policy) != "" {
			continue
		}
		if reason, _ := feedbackDenial(&c.Marks, req.ActorID, req.Policy); reason != "" {
			continue
		}
		ids = append(ids, c.SpanID)
	}
	return ids
}
