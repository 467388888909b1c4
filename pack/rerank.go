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
//	RerankWeight × sigmoid(logit) + (1 − RerankWeight) × fused relevance
//
// so that the model's judgement (does this span answer the question, about
// the person asked about?) decides the order among the reranked, while the
// channels' agreement still counts, and a candidate the model finds
// irrelevant sinks below the ones it was not asked about only when the
// channels also rank it low. Confidence reads the model's best logit (see
// neuralConfidence).
const RerankWeight = 0.7

// Assumptions of a reranked pack (retrieval adds them).
const (
	AssumeReranked   = "Reranked the %d best candidates with the relevance model %s"
	AssumeNoReranker = "No relevance model is configured: candidates were not reranked"
)

// reranked is the relevance of a reranked candidate whose fused relevance
// is rel and model logit logit.
func reranked(rel, logit float64) float64 {
	return float64(RerankWeight*sigmoid(logit)) + float64((1-RerankWeight)*rel)
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
	cs := gather(pinned, candidates, req.SessionID)
	for _, c := range cs {
		c.Reranked = false // the order before reranking
	}
	score(cs, w, req.AsOf, tun.TemporalHalfLifeHours, queryTerms(req.Query), newTermPairs(req.Query))
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

// Confidence of a reranked pack: the relevance model's judgement of the
// best included span, read as a probability that the pack answers the
// query, sigmoid(ConfidenceSlope × (best logit − ConfidenceMidpoint)),
// calibrated on the dev sets (docs/pack.md), times the square of the
// attribution factor with the reranked spans weighted by the model's
// probabilities (attributionBy, rerankWeight). It replaces the lexical
// confidence: the model reads meaning (a paraphrase answers), which term
// coverage cannot; but measured on LoCoMo, it does not see that a long
// turn about a charity race was said by Melanie when the question asks
// what Caroline did (the best logit alone separates category 5 from 1-4
// no better than chance), which the speaker of the turns it finds best
// does.
const (
	ConfidenceSlope    = 1.0
	ConfidenceMidpoint = 0.0
)

// RerankedMinConfidence is the default min_confidence of a reranked pack
// (the service applies it when a request sets none): chosen on the dev
// sets so that at most about 5% of answerable questions abstain
// (docs/pack.md).
const RerankedMinConfidence = 0.08

// bestRerank is the highest logit among the reranked spans of included.
func bestRerank(included []*cand) (float64, bool) {
	best, ok := math.Inf(-1), false
	for _, c := range included {
		if c.Reranked {
			best, ok = max(best, finite(c.Rerank)), true
		}
	}
	return best, ok
}

func neuralConfidence(best float64) float64 {
	return round6(clamp01(sigmoid(float64(ConfidenceSlope * (best - ConfidenceMidpoint)))))
}
