package pack

import (
	"fmt"
	"slices"

	"github.com/loci-memory/loci/text"
)

// Relevance floor: a working set candidate whose relevance is below
// max(FloorAbsolute, min_relevance × the best relevance among the working
// set candidates that passed the policy and feedback filters) is excluded
// for LOW_RELEVANCE, so that a budget is a ceiling and not a quota: a pack
// stops at the evidence that is clearly weaker than its best. The fused
// relevance is relative (each channel's best candidate scores 1), so the
// floor is a share of the best, not an absolute score.
//
// MinRelevance, the default share, was chosen on LoCoMo dev
// (docs/pack.md § Relevance floor): at 0.4 a pack uses 18% fewer tokens at
// 4,096 and 8% fewer at 2,048 than at 0.2 (the floor before), for evidence
// recall 0.005 and 0.001 lower; at 0.5 it used 47% fewer at 4,096 but
// lost 0.04 of recall. HighRecallMinRelevance is the old 0.2, which
// the v2 high_recall profile keeps (it is for recall; see
// ProfileMinRelevance), as does any request that sets min_relevance.
const (
	FloorAbsolute          = 0.02
	MinRelevance           = 0.4
	HighRecallMinRelevance = 0.2
)

// ProfileMinRelevance is the min_relevance a pack of a v2 serving profile
// uses when the request sets none: high_recall fills its budget down to
// HighRecallMinRelevance; low_latency and balanced stop at MinRelevance,
// as v1 does.
func ProfileMinRelevance(profile string) float64 {
	if profile == ProfileHighRecall {
		return HighRecallMinRelevance
	}
	return MinRelevance
}

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
//  2. score: fused relevance per candidate (see score), after the speakers
//     of user/assistant turns are found by address (addressSpeakers);
//     candidates are ordered by relevance, then span id;
//  3. policy filter (POLICY, see policyDenial);
//  4. feedback filter (PRIVATE, MARKED_WRONG, OUTDATED, see feedbackDenial);
//  5. relevance floor (LOW_RELEVANCE, see MinRelevance), not for pinned spans;
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
	q := readQuery(req.Query, req.Windows)
	addressSpeakers(cs, req, q.terms)
	score(cs, w, req.AsOf, tun.TemporalHalfLifeHours, req.Windows, q.terms, q.owner, newTermPairs(req.Query), req.Analyses)
	slices.SortFunc(cs, byRelevance)

	tokens := 0
	for _, c := range cs {
		tokens += max(c.Tokens, 0)
	}
	f := newFiller(tok, budget, tun, tokens)
	f.query = q
	if req.Lines != nil && splitsAfterTag(tok) {
		f.lines = req.Lines
	}
	f.analyses = req.Analyses
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
	rest = f.floor(rest, tun.MinRelevance, req.Windows)

	f.placePinned(pins)
	if req.Mode == ModeCoverage {
		f.fillCoverage(rest)
	} else {
		f.fillRelevance(rest)
	}
	f.supersede()
	contextText, prefix, ws, tokens, prefixTokens, wsTokens := f.final()
	return f.result(req, w, cs, contextText, prefix, ws, [3]int{tokens, prefixTokens, wsTokens})
}

// floor excludes the candidates of cs below the relevance floor (share
// of the best relevance) for LOW_RELEVANCE and returns the others, in
// order. A candidate of a time the query names (in one of windows) is held
// only to the absolute floor: "What did we decide on October 13?" is
// answered by a turn of that day that may share no word with it, which the
// query's own date makes relevant.
func (f *filler) floor(cs []*cand, share float64, windows []Window) []*cand {
	best := 0.0
	for _, c := range cs {
		best = max(best, c.rel)
	}
	floor := round6(max(FloorAbsolute, share*best))
	kept := cs[:0]
	for _, c := range cs {
		if c.rel >= floor {
			kept = append(kept, c)
			continue
		}
		if !inWindow(c.Timestamp, windows) {
			f.exclude(c, ReasonLowRelevance, fmt.Sprintf("relevance %v is below the floor %v (the larger of %v and min_relevance %v × the best relevance %v)", c.rel, floor, FloorAbsolute, share, best))
			continue
		}
		if c.rel < FloorAbsolute {
			f.exclude(c, ReasonLowRelevance, fmt.Sprintf("relevance %v is below the absolute floor %v (a span of a time the query names is held to it only)", c.rel, FloorAbsolute))
			continue
		}
		kept = append(kept, c)
	}
	return kept
}

// inWindow reports whether ts lies in one of ws.
func inWindow(ts int64, ws []Window) bool {
	for _, w := range ws {
		if ts >= w.Start && ts < w.End {
			return true
		}
	}
	return false
}
