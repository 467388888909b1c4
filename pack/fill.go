package pack

import (
	"container/heap"
	"fmt"
	"slices"
	"strconv"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/text"
)

// filler places candidates into the pack, greedily and in order, keeping a
// running token count of the text they make. The count adds up the counts
// of the text's lines; final checks the exact count of the whole text,
// since a counter such as BPE need not be additive across lines.
type filler struct {
	tok    text.TokenCounter
	budget int
	tun    Tuning

	used      int     // tokens of the lines placed so far
	included  []*cand // included spans in cite order: the pinned ones, then the working set
	npinned   int     // how many of included are pinned
	conflicts []Conflict
	taken     map[uuid.UUID]int // included spans per artifact
	red       redundancyIndex   // shingles of the included spans

	costPinned, costEvidence, costConflicts, costFooter int

	// lines, when set, memoizes evidence lines' counts without their tag;
	// tagCost[n] is the count of citeTag(n) (0: not counted yet).
	lines *LineCounts
	// analyses, when set, memoizes spans' features across packs.
	analyses *Analyses
	tagCost  []int

	// query is what the pack read of the query, for confidence.
	query *queryRead
}

// newFiller returns a filler for a budget; tokens is the sum of the
// candidates' stored token counts, to size its index.
func newFiller(tok text.TokenCounter, budget int, tun Tuning, tokens int) *filler {
	f := &filler{
		tok: tok, budget: budget, tun: tun,
		taken:         map[uuid.UUID]int{},
		costPinned:    tok.Count(headerPinned),
		costEvidence:  tok.Count(headerEvidence),
		costConflicts: tok.Count(headerConflicts),
		costFooter:    tok.Count(footer),
	}
	// The included spans hold about one distinct shingle per token, and at
	// most budget and the candidates' tokens.
	f.red.heads.reserve(min(budget, tokens, 1<<16))
	return f
}

// exclude records c as excluded.
func (f *filler) exclude(c *cand, reason, detail string) {
	c.reason, c.detail = reason, detail
}

// pinned returns the included pinned spans.
func (f *filler) pinned() []*cand { return f.included[:f.npinned] }

// working returns the included working set spans.
func (f *filler) working() []*cand { return f.included[f.npinned:] }

// QuickRejectFactor: a span whose stored token count (Candidate.Tokens) is
// more than QuickRejectFactor times the tokens left in the budget is
// excluded for BUDGET without counting its evidence line. Its line cannot
// cost less than half its text unless the stored count is wrong by a factor
// of two; the budget holds either way, since only what is counted is
// placed. It saves counting every leftover candidate once the budget is
// nearly full, which is most of the packing time with an exact counter.
const QuickRejectFactor = 2

// place tries to add c to the pinned section (pin) or the working set. It
// returns false, without changing anything, when the lines c brings (its
// evidence line, the section header and footer when c is the first, and
// the lines of the conflicts it has with included spans) do not fit; the
// reason is then in detail.
func (f *filler) place(c *cand, pin bool) (ok bool, detail string) {
	left := f.budget - f.used
	if c.Tokens > QuickRejectFactor*left {
		// Built without fmt: most exclusions of a full pack go through here.
		return false, "has " + strconv.Itoa(c.Tokens) + " stored tokens, more than " + strconv.Itoa(QuickRejectFactor) +
			" times the " + strconv.Itoa(left) + " of the " + strconv.Itoa(f.budget) + "-token budget that remain"
	}
	ok, cost := f.tryPlace(c, pin)
	if !ok {
		return false, "needs " + strconv.Itoa(cost) + " tokens but only " + strconv.Itoa(left) + " of the " +
			strconv.Itoa(f.budget) + "-token budget remain"
	}
	return true, ""
}

// tryPlace adds c if its lines fit, counting them; it returns whether they
// did and what they cost.
func (f *filler) tryPlace(c *cand, pin bool) (ok bool, cost int) {
	cite := len(f.included) + 1
	if c.rendered == "" {
		c.rendered = renderedLine(&c.Candidate)
	}
	cost = f.lineCost(cite, c)
	if len(f.included) == 0 {
		cost += f.costFooter
	}
	switch {
	case pin && f.npinned == 0:
		cost += f.costPinned
	case !pin && len(f.included) == f.npinned:
		cost += f.costEvidence
	}
	if f.used+cost > f.budget {
		return false, cost
	}
	c.features(f.analyses)
	var found []Conflict
	for _, s := range f.included {
		if len(found) == MaxConflictsPerSpan {
			break
		}
		kind, desc := detectConflict(s.feat, c.feat, newerOf(s.Timestamp, s.Seq, c.Timestamp, c.Seq), bothChat(s, c))
		if kind == "" {
			continue
		}
		cf := Conflict{
			ID:          ConflictID(s.SpanID, c.SpanID),
			ClaimA:      claim(s),
			ClaimB:      claim(c),
			Description: desc,
			Kind:        kind,
			CiteA:       s.cite,
			CiteB:       cite,
		}
		cost += f.tok.Count(conflictLine(&cf))
		if len(f.conflicts)+len(found) == 0 {
			cost += f.costConflicts
		}
		found = append(found, cf)
	}
	if f.used+cost > f.budget {
		return false, cost
	}
	f.used += cost
	c.included, c.cite = true, cite
	f.included = append(f.included, c)
	if pin {
		f.npinned++
	}
	f.taken[c.ArtifactID]++
	f.conflicts = append(f.conflicts, found...) // in order of CiteB; final sorts them
	return true, cost
}

// lineCost returns the token count of c's evidence line when cited as cite.
func (f *filler) lineCost(cite int, c *cand) int {
	if f.lines == nil {
		return f.tok.Count(evidenceLine(cite, c.rendered))
	}
	for len(f.tagCost) <= cite {
		f.tagCost = append(f.tagCost, 0)
	}
	if f.tagCost[cite] == 0 {
		f.tagCost[cite] = f.tok.Count(citeTag(cite))
	}
	return f.tagCost[cite] + f.lines.body(c.SpanID, c.rendered, f.tok)
}

// MaxConflictsPerSpan bounds the conflicts recorded when a span is placed:
// with the first MaxConflictsPerSpan included spans (in cite order, so the
// most relevant) that it conflicts with. Without a bound, a span that
// supersedes a topic would add a line for every span about it, and the
// conflicts section would grow with the square of the pack.
const MaxConflictsPerSpan = 3

// claim returns the conflict claim of an included span.
func claim(c *cand) Claim {
	return Claim{ArtifactID: c.ArtifactID, SpanID: c.SpanID, ContentHash: c.contentHash()}
}

// placePinned places the pinned spans in order. Once one does not fit, it
// and every later one are excluded for BUDGET, so that the prefix is always
// a head of the pinned order.
func (f *filler) placePinned(cs []*cand) {
	overflow := false
	for _, c := range cs {
		if overflow {
			f.exclude(c, ReasonBudget, "pinned overflow: an earlier pinned span did not fit in the budget, so no later pinned span is placed")
			continue
		}
		ok, detail := f.place(c, true)
		if !ok {
			overflow = true
			f.exclude(c, ReasonBudget, "pinned overflow: the pinned spans exceed the budget; this one "+detail)
			continue
		}
		f.red.add(len(f.included)-1, f.red.distinct(c.Text))
	}
}

// considerWorking decides about one working set candidate: REDUNDANCY when
// its shingle set has a Jaccard similarity of at least RedundancyJaccard
// with an included span's (the detail names the most similar one) or its
// artifact has its share of spans, else BUDGET when it does not fit, else
// it is included.
func (f *filler) considerWorking(c *cand) {
	shingles := f.red.distinct(c.Text)
	t := f.tun.RedundancyJaccard
	if ord, j := f.red.mostSimilar(shingles); ord >= 0 && j >= t {
		s := f.included[ord]
		f.exclude(c, ReasonRedundancy, fmt.Sprintf("Jaccard similarity %.2f of word 3-gram shingles with span %s (%s) reaches the redundancy threshold %.2f", j, s.SpanID, citeTag(s.cite), t))
		return
	}
	if n := f.taken[c.ArtifactID]; n >= f.tun.MaxSpansPerArtifact {
		f.exclude(c, ReasonRedundancy, fmt.Sprintf("artifact already has %d spans in the pack (max_spans_per_artifact)", n))
		return
	}
	ok, detail := f.place(c, false)
	if !ok {
		f.exclude(c, ReasonBudget, detail)
		return
	}
	f.red.add(len(f.included)-1, shingles)
}

// fillRelevance decides about the working set candidates in their order.
func (f *filler) fillRelevance(cs []*cand) {
	for _, c := range cs {
		f.considerWorking(c)
	}
}

// fillCoverage decides about the working set candidates greedily by
// discounted relevance: a candidate's relevance times DiversityDecay to the
// power of the number of spans of its artifact already in the pack (pinned
// ones included), ties by compareTies. The discount only orders; reported
// scores stay undiscounted.
func (f *filler) fillCoverage(cs []*cand) {
	h := make(coverageHeap, 0, len(cs))
	for _, c := range cs {
		h = append(h, coverageEntry{c: c, stamp: f.taken[c.ArtifactID]})
		h[len(h)-1].eff = discount(c.rel, f.tun.DiversityDecay, h[len(h)-1].stamp)
	}
	heap.Init(&h)
	for h.Len() > 0 {
		e := heap.Pop(&h).(coverageEntry)
		// Discounts only grow, so a stale entry overstates its candidate:
		// refresh it and let it compete again.
		if n := f.taken[e.c.ArtifactID]; n != e.stamp {
			e.stamp, e.eff = n, discount(e.c.rel, f.tun.DiversityDecay, n)
			heap.Push(&h, e)
			continue
		}
		f.considerWorking(e.c)
	}
}

// discount returns rel * decay^n, by repeated multiplication so that every
// machine computes the same bits.
func discount(rel, decay float64, n int) float64 {
	for range n {
		rel *= decay
	}
	return rel
}

type coverageEntry struct {
	c     *cand
	eff   float64 // discounted relevance
	stamp int     // spans of the artifact in the pack when eff was computed
}

// coverageHeap is a max-heap by discounted relevance, ties by compareTies.
type coverageHeap []coverageEntry

func (h coverageHeap) Len() int { return len(h) }
func (h coverageHeap) Less(i, j int) bool {
	if h[i].eff != h[j].eff {
		return h[i].eff > h[j].eff
	}
	return compareTies(h[i].c, h[j].c) < 0
}
func (h coverageHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *coverageHeap) Push(x any)   { *h = append(*h, x.(coverageEntry)) }
func (h *coverageHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// final orders the conflicts by cite numbers, lays the pack out and counts
// it exactly. While the text exceeds the budget (the line counts did not
// add up to the whole), it takes out the last included span (of the
// working set while there is one), with its conflicts, and excludes it for
// BUDGET.
func (f *filler) final() (text, prefix, ws string, tokens, prefixTokens, wsTokens int) {
	slices.SortFunc(f.conflicts, func(a, b Conflict) int {
		if a.CiteA != b.CiteA {
			return a.CiteA - b.CiteA
		}
		return a.CiteB - b.CiteB
	})
	if f.lines != nil && f.used <= f.budget {
		// The counter splits after every line as well (its lines end in
		// "\n" and begin with "=", "[" or "C", see TestContextTextSplits),
		// so the lines' counts add up to the text's.
		// The sections' counts are their header's and lines' too.
		text, prefix, ws = layout(f.pinned(), f.working(), f.conflicts)
		for i, c := range f.included {
			n := f.lineCost(i+1, c)
			if i < f.npinned {
				prefixTokens += n
			} else {
				wsTokens += n
			}
		}
		if f.npinned > 0 {
			prefixTokens += f.costPinned
		}
		if len(f.included) > f.npinned {
			wsTokens += f.costEvidence
		}
		return text, prefix, ws, f.used, prefixTokens, wsTokens
	}
	for {
		text, prefix, ws = layout(f.pinned(), f.working(), f.conflicts)
		tokens = f.tok.Count(text)
		if tokens <= f.budget || len(f.included) == 0 {
			return text, prefix, ws, tokens, countOrZero(f.tok, prefix), countOrZero(f.tok, ws)
		}
		n := len(f.included) - 1
		c := f.included[n]
		f.included = f.included[:n]
		f.npinned = min(f.npinned, n)
		f.conflicts = slices.DeleteFunc(f.conflicts, func(cf Conflict) bool { return cf.CiteB == c.cite })
		f.taken[c.ArtifactID]--
		c.included, c.cite = false, 0
		f.exclude(c, ReasonBudget, fmt.Sprintf("taken out after the exact token count of the context text (%d) exceeded the budget of %d", tokens, f.budget))
	}
}

// bothChat reports whether two spans are chat turns, whose conflicts
// detectConflict reads by its chat rule.
func bothChat(a, b *cand) bool {
	return a.SourceType == "chat_turn" && b.SourceType == "chat_turn"
}
