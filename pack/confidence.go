package pack

import (
	"cmp"
	"slices"

	"github.com/google/uuid"
)

// DepthTokens is the evidence, in tokens, at which evidence depth is full:
// about one span as the chunker cuts them.
const DepthTokens = 200

// confidence scores how well the included spans answer the query, in
// [0,1]. With I the included spans, r1 >= r2 >= r3 the best relevances in I
// (fewer when I is smaller) and V the visible candidates (I and those
// excluded for LOW_RELEVANCE, REDUNDANCY or BUDGET):
//
//	Q = the largest share of the query's distinct     query coverage
//	    terms and numbers found in one of the
//	    CoverageTop most relevant spans of I, the
//	    words of a date the query names found in
//	    a span of that time (dated)
//	    (when the query has none: R = 0.7*r1 +
//	    0.3*mean(r1, r2, r3), the best relevance)
//	A = attribution(V, names, content)               who said the words asked about (attribution.go)
//	strength = Q * A^2                               relevance strength
//	           (Q * A_owner * G for a query about the memory's owner
//	           that names no speaker: ownerAttribution, ownerGrounding)
//	D = min(1, evidence tokens / DepthTokens)        evidence depth
//	C = sum of relevance over I / sum over I and     budget coverage
//	    the spans excluded for BUDGET
//	V' = min(3, distinct artifacts in I) / 3         source diversity
//	confidence = strength * (0.6 + 0.4*(0.5*D + 0.3*C + 0.2*V'))
//
// rounded to 6 decimals; 0 when I is empty. Relevance strength gates the
// rest: deep, diverse evidence that matches the query weakly still scores
// low. It is absolute, not the channels' relevance, which is relative (each
// channel's best candidate scores 1) and, measured on LoCoMo, says little
// about whether the question can be answered. Query coverage is measured
// per span: evidence that names what the question asks about only in
// pieces scattered over unrelated spans does not answer it. And it is
// measured on the most relevant spans only, so that a larger budget, which
// lets weaker matches in, does not raise it (on LoCoMo dev, over all
// included spans, the AUC of category 5 against 1-4 fell from 0.851 at 512
// tokens to 0.849 at 4,096; over the best five it is 0.853 at both). Attribution
// catches the question about one person answered by another's words, the
// commonest way evidence misleads about a conversation; it is squared so
// that, with the default min_confidence, a pack abstains when the turns
// that best hold the question's words were said by someone else than the
// speaker it names (A^2 is 0.0225 when none of them is the speaker's, 0.11
// when a fifth of their weight is), or when no included span holds
// more than about a twelfth of the query's terms. docs/pack.md has the
// calibration.
func confidence(included, budgetCut, visible []*cand, query *queryRead, evidence int) float64 {
	if len(included) == 0 {
		return 0
	}
	rels := make([]float64, len(included))
	for i, c := range included {
		rels[i] = c.rel
	}
	slices.SortFunc(rels, func(a, b float64) int { return cmp.Compare(b, a) })
	top := rels[:min(3, len(rels))]
	mean := 0.0
	for _, x := range top {
		mean += x
	}
	mean /= float64(len(top))
	r := float64(0.7*rels[0]) + float64(0.3*mean)

	q := r
	if terms := query.terms; len(terms) > 0 {
		best := 0
		for _, c := range coverageSpans(included) {
			n := 0
			when := len(query.dated) > 0 && inWindow(c.Timestamp, query.windows)
			for _, w := range terms {
				if c.feat.terms.has(w) || c.feat.nums.has(w) || (c.byAddr && slices.Contains(c.spk, w)) ||
					(when && slices.Contains(query.dated, w)) {
					n++
				}
			}
			best = max(best, n)
		}
		q = float64(best) / float64(len(terms))
	}
	names, content := splitNames(visible, query.terms)
	a := attribution(visible, names, content)
	strength := float64(q*a) * a
	if query.owner && len(names) == 0 {
		// A question about the memory's owner: the owner's attribution,
		// counted once (ownerAttribution), and how much of what it names
		// the memory holds outside the agent's words (ownerGrounding).
		strength = float64(float64(q*ownerAttribution(visible, query.terms)) * ownerGrounding(visible, query.named))
	}

	d := min(1, float64(evidence)/DepthTokens)
	kept, cut := 0.0, 0.0
	for _, c := range included {
		kept += c.rel
	}
	for _, c := range budgetCut {
		cut += c.rel
	}
	cov := 1.0
	if kept+cut > 0 {
		cov = kept / (kept + cut)
	}
	arts := make([]uuid.UUID, len(included))
	for i, c := range included {
		arts[i] = c.ArtifactID
	}
	slices.SortFunc(arts, compareID)
	v := float64(min(3, len(slices.Compact(arts)))) / 3
	support := float64(0.5*d) + float64(0.3*cov) + float64(0.2*v)
	return round6(clamp01(float64(strength * (0.6 + float64(0.4*support)))))
}

// queryRead is what the pack reads of a query once, for speakers, scores
// and confidence.
type queryRead struct {
	terms   []uint64 // its distinct terms and numbers (queryTerms)
	owner   bool     // whether it asks about the memory's owner (asksOwner)
	named   names    // the words that name something (namedTerms), read when owner
	windows []Window // the request's time windows
	dated   []uint64 // the terms their expressions hold (datedTerms)
}

// readQuery reads query, with the request's windows.
func readQuery(query string, windows []Window) *queryRead {
	q := &queryRead{terms: queryTerms(query), owner: asksOwner(query), windows: windows}
	if q.owner {
		q.named = namedTerms(query)
	}
	q.dated = datedTerms(q.terms, windows)
	return q
}

// datedTerms returns the terms of query (queryTerms) that the expressions
// of its windows hold ("5", "day", "ago" of "5 days ago"): words that say
// when, which a span says by its time rather than its text. A span whose
// time lies in a window holds them for query coverage: "What did I buy 10
// days ago?" is answered by that day's "I just got a smoker today", which
// holds none of them. Nil without windows.
func datedTerms(query []uint64, windows []Window) []uint64 {
	var out []uint64
	for _, w := range windows {
		for _, h := range queryTerms(w.Expr) {
			if _, ok := slices.BinarySearch(query, h); ok && !slices.Contains(out, h) {
				out = append(out, h)
			}
		}
	}
	return out
}

// CoverageTop is how many of the included spans, the most relevant first,
// query coverage reads: as many as attribution reads (AttributionTop).
const CoverageTop = AttributionTop

// coverageSpans returns the CoverageTop most relevant of the included spans
// (ties in placement order).
func coverageSpans(included []*cand) []*cand {
	if len(included) <= CoverageTop {
		return included
	}
	top := slices.Clone(included)
	slices.SortStableFunc(top, func(a, b *cand) int { return cmp.Compare(b.rel, a.rel) })
	return top[:CoverageTop]
}
