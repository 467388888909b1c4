package pack

import (
	"fmt"
	"slices"

	"github.com/loci-memory/loci/text"
)

// Relevance floor: a working set candidate whose relevance is below
// max(FloorAbsolute, FloorFraction × the best relevance among the working
// set candidates that passed the policy and feedback filters) is excluded
// for LOW_RELEVANCE. The floor is low on purpose: it drops what is clearly
// noise next to the best evidence and leaves the rest to the budget.
const (
	FloorAbsolute = 0.02
	FloorFraction = 0.2
)

// Pack decides, for the pinned spans of the workspace and the retrieved
// candidates, what goes into the pack, and lays it out within
// req.MaxTokens tokens as counted by tok.
//
// It is a pure function: the same inputs, in any order, give the same
// Result, byte for byte when marshalled. The pipeline, in order:
//
//  1. gather: one candidate per span id (pinned and retrieved merged);
//     retrieved spans of other sessions are dropped when req.SessionID is
//     set (silently: they were out of scope, not considered);
//  2. score: fused relevance per candidate (see score); candidates are
//     ordered by relevance, then span id;
//  3. policy filter (POLICY, see policyDenial);
//  4. feedback filter (PRIVATE, MARKED_WRONG, OUTDATED, see feedbackDenial);
//  5. relevance floor (LOW_RELEVANCE, see FloorFraction), not for pinned spans;
//  6. the pinned prefix, in order, until a pinned span does not fit (BUDGET);
//  7. the working set, greedily: redundancy against every included span
//     (REDUNDANCY), diversity (REDUNDANCY: max_spans_per_artifact; in
//     coverage mode the order is by discounted relevance, see fillCoverage),
//     budget (BUDGET, see QuickRejectFactor);
//  8. the exact count of the final text, taking out the last spans while
//     it exceeds the budget (BUDGET);
//  9. confidence and abstention; conflicts were found while placing, and
//     the spans they join were ordered newest first (supersede).
//
// Every candidate that survives step 1 ends up cited or in Exclusions,
// exactly once.
func Pack(req Request, pinned, candidates []Candidate, tok text.TokenCounter) *Result {
	tun := req.Tuning.effective()
	w := req.Weights.effective(req.SemanticAvailable)
	if len(req.Windows) > 0 {
		w = w.withWindows()
	}
	budget := max(req.MaxTokens, 0)

	cs := gather(pinned, candidates, req.SessionID)
	score(cs, w, req.AsOf, tun.TemporalHalfLifeHours, req.Windows, queryTerms(req.Query), newTermPairs(req.Query))
	slices.SortFunc(cs, byRelevance)

	tokens := 0
	for _, c := range cs {
		tokens += max(c.Tokens, 0)
	}
	f := newFiller(tok, budget, tun, tokens)
	if req.Lines != nil && splitsAfterTag(tok) {
		f.lines = req.Lines
	}
	var pins, rest []*cand
	for _, c := range cs {
		if d := policyDenial(&c.Candidate, req.ActorID, req.Policy); d != "" {
			f.exclude(c, ReasonPolicy, d)
			continue
		}
		if reason, d := feedbackDenial(&c.Marks, req.ActorID, req.Policy); reason != "" {
			f.exclude(c, reason, d)
			continue
		}
		if c.pinned {
			pins = append(pins, c)
		} else {
			rest = append(rest, c)
		}
	}
	rest = f.floor(rest)

	f.placePinned(pins)
	if req.Mode == ModeCoverage {
		f.fillCoverage(rest)
	} else {
		f.fillRelevance(rest)
	}
	f.supersede()
	contextText, prefix, ws, tokens := f.final()
	return f.result(req, w, cs, contextText, prefix, ws, tokens)
}

// floor excludes the candidates of cs below the relevance floor for
// LOW_RELEVANCE and returns the others, in order.
func (f *filler) floor(cs []*cand) []*cand {
	best := 0.0
	for _, c := range cs {
		best = max(best, c.rel)
	}
	floor := round6(max(FloorAbsolute, FloorFraction*best))
	kept := cs[:0]
	for _, c := range cs {
		if c.rel < floor {
			f.exclude(c, ReasonLowRelevance, fmt.Sprintf("relevance %v is below the floor %v (the larger of %v and %v × the best relevance %v)", c.rel, floor, FloorAbsolute, FloorFraction, best))
			continue
		}
		kept = append(kept, c)
	}
	return kept
}
