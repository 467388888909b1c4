package pack

import (
	"math"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/text"
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
	AssumeLate       = "Reranked the %d best candidates by late interaction with %s"
	AssumeNoLate     = "No late-interaction model is configured: candidates were not scored by late interaction"
)

// Late interaction: retrieval may score the best candidates of the fused
// ranking (Rank) by MaxSim of the query's and the span's token vectors
// (embed/colbert). A scored candidate's relevance before the context step
// becomes
//
//	LateWeight × (s - lo)/(hi - lo) + (1 - LateWeight) × fused relevance
//
// where s is its score and lo, hi the least and largest scores of the
// scored candidates (the first term is LateWeight when they are equal):
// the scores are sums of cosines over the query's tokens, so only their
// spread within the pool says anything, and the blend keeps what the
// channels know. Unlike the cross-encoder's logits, they may lower a
// candidate. On the dev sets (docs/benchmarks.md § Late interaction in the
// pack) replacing the fused relevance lost recall on LoCoMo; the blend
// gained there and on LongMemEval.
const LateWeight = 0.7

// lateRange returns the least and largest late-interaction scores of cs.
func lateRange(cs []*cand) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, c := range cs {
		if c.LateScored {
			lo, hi = min(lo, finite(c.Late)), max(hi, finite(c.Late))
		}
	}
	return lo, hi
}

// lateBlend is the relevance of a late-scored candidate whose fused
// relevance is rel and score s, the pool's scores spanning [lo, hi].
func lateBlend(rel, s, lo, hi float64) float64 {
	norm := 1.0
	if hi > lo {
		norm = (finite(s) - lo) / (hi - lo)
	}
	return float64(LateWeight*norm) + float64((1-LateWeight)*rel)
}

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
	ids, _ := RankTexts(req, pinned, candidates)
	return ids
}

// RankTexts is Rank with, for each span, the text a relevance model reads:
// its text, except that a chat turn sent under a generic role whose
// speaker the pack found by address (§ Speakers by address in
// docs/pack.md) reads as said by that name, as the query writes it
// ("Caroline: I ran ..." for "user: I ran ..."). So the models see the
// same text whichever way a client sent the turn: they read who said a
// thing from the text.
func RankTexts(req Request, pinned, candidates []Candidate) ([]uuid.UUID, []string) {
	tun := req.Tuning.effective()
	w := req.Weights.effective(req.SemanticAvailable)
	if len(req.Windows) > 0 {
		w = w.withWindows()
	}
	cs := gather(pinned, candidates, req.SessionID)
	for _, c := range cs {
		c.Reranked, c.LateScored = false, false // the order before reranking
	}
	query := queryTerms(req.Query)
	addressSpeakers(cs, req, query)
	score(cs, w, req.AsOf, tun.TemporalHalfLifeHours, req.Windows, query, asksOwner(req.Query), newTermPairs(req.Query), req.Analyses)
	slices.SortFunc(cs, byRelevance)
	var ids []uuid.UUID
	var texts []string
	names := wordNames(req.Query)
	for _, c := range cs {
		if c.pinned || policyDenial(&c.Candidate, req.ActorID, req.Policy) != "" {
			continue
		}
		if reason, _ := feedbackDenial(&c.Marks, req.ActorID, req.Policy); reason != "" {
			continue
		}
		ids = append(ids, c.SpanID)
		texts = append(texts, modelText(c, names))
	}
	return ids, texts
}

// modelText is the text of c as a relevance model reads it (RankTexts):
// names are the query's words as names (wordNames).
func modelText(c *cand, names []wordName) string {
	if !c.byAddr || len(c.spk) == 0 {
		return c.Text
	}
	role := text.TurnRole(c.Text)
	if role == "" {
		return c.Text
	}
	for _, n := range names {
		if slices.Contains(c.spk, n.term) {
			return n.name + c.Text[len(role):]
		}
	}
	return c.Text // the role has no name the query says
}

// wordName is a query word written as a name, with its term hash.
type wordName struct {
	term uint64
	name string
}

// wordNames returns the words of query, in order, each with its first
// letter in upper case, with their term hashes.
func wordNames(query string) []wordName {
	var ns []wordName
	eachWord(query, func(w []byte, _ int, _ bool) {
		h, _ := termHash(w)
		r, n := utf8.DecodeRune(w)
		ns = append(ns, wordName{h, string(unicode.ToUpper(r)) + string(w[n:])})
	})
	return ns
}
