package pack

import (
	"cmp"
	"math"
	"slices"

	"github.com/google/uuid"
)

// DepthTokens is the evidence, in tokens, at which evidence depth is full:
// about one span as the chunker cuts them.
const DepthTokens = 200

// confidence scores how well the included spans answer the query, in
// [0,1]. With I the included spans and r1 >= r2 >= r3 the best relevances
// in I (fewer when I is smaller):
//
//	R = 0.7*r1 + 0.3*mean(r1, r2, r3)                best relevance, runners-up
//	Q = the largest share of the query's distinct     query coverage
//	    terms and numbers found in one span of I
//	    (Q = R when the query has none)
//	strength = R * Q^2.5                             relevance strength
//	D = min(1, evidence tokens / DepthTokens)        evidence depth
//	C = sum of relevance over I / sum over I and     budget coverage
//	    the spans excluded for BUDGET
//	V = min(3, distinct artifacts in I) / 3          source diversity
//	confidence = strength * (0.6 + 0.4*(0.5*D + 0.3*C + 0.2*V))
//
// rounded to 6 decimals; 0 when I is empty. Relevance strength gates the
// rest: deep, diverse evidence that matches the query weakly still scores
// low. Query coverage gives it an absolute footing, since the channels
// score by rank and so the best candidate always tops at 1. It is measured
// per span: evidence that names what the question asks about only in
// pieces scattered over unrelated spans (the query's subject in one, its
// topic in another) does not answer it. With the default min_confidence a
// pack abstains, roughly, when no included span holds more than about a
// third of the query's terms (Q^2.5 is 0.064 at Q = 1/3, 0.088 at Q = 0.4).
func confidence(included []*cand, budgetCut []*cand, query []uint64, evidence int) float64 {
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
	if len(query) > 0 {
		best := 0
		for _, c := range included {
			n := 0
			for _, w := range query {
				if c.feat.terms.has(w) || c.feat.nums.has(w) {
					n++
				}
			}
			best = max(best, n)
		}
		q = float64(best) / float64(len(query))
	}
	// q^2.5 as q·q·√q: the square root is correctly rounded everywhere.
	strength := float64(float64(r*q)*q) * math.Sqrt(q)

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
