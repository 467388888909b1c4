package pack

import (
	"cmp"
	"math"
	"slices"

	"github.com/google/uuid"
)

// microsPerHour converts Unix microsecond differences to hours.
const microsPerHour = 3600e6

// rrfK is the constant of the reciprocal-rank channel scores.
const rrfK = 60

// score computes the channel scores and the fused relevance of every
// candidate. The query channels contribute by rank, not by raw score
// (reciprocal rank fusion, normalised so the best rank scores 1), because
// BM25 scores and cosines live on unrelated scales and cosines of averaged
// word vectors bunch together:
//
//	lexical  = (rrfK+1) / (rrfK+1 + r)  r = rank by Lexical among candidates the lexical channel returned, from 0; else 0
//	semantic = likewise by Semantic among those the semantic channel returned
//	temporal = 2^(-age / half-life), age = max(0, asOf - Timestamp) in hours
//	relevance = w.Lexical*lexical + w.Semantic*semantic + w.Temporal*temporal
//
// with the effective weights w (summing to 1), rounded by round6, and then
// raised by the context contribution of the candidate's neighbours (see
// ContextShare). Ranks order by score descending, then compareTies;
// non-finite scores count as 0.
func score(cs []*cand, w Weights, asOf int64, halfLifeHours float64) {
	rankBy := func(in func(*cand) bool, val func(*cand) float64, set func(*cand, float64)) {
		var ranked []*cand
		for _, c := range cs {
			if in(c) {
				ranked = append(ranked, c)
			}
		}
		slices.SortFunc(ranked, func(a, b *cand) int {
			if va, vb := finite(val(a)), finite(val(b)); va != vb {
				if va > vb {
					return -1
				}
				return 1
			}
			return compareTies(a, b)
		})
		for r, c := range ranked {
			set(c, float64(rrfK+1)/float64(rrfK+1+r))
		}
	}
	rankBy(func(c *cand) bool { return c.InLexical }, func(c *cand) float64 { return c.Lexical }, func(c *cand, v float64) { c.lex = v })
	rankBy(func(c *cand) bool { return c.InSemantic }, func(c *cand) float64 { return c.Semantic }, func(c *cand, v float64) { c.sem = v })
	for _, c := range cs {
		age := 0.0
		if c.Timestamp < asOf {
			age = float64(asOf-c.Timestamp) / microsPerHour
		}
		c.temp = clamp01(math.Exp2(-age / halfLifeHours))
		// Explicit conversions keep the compiler from fusing multiply-adds,
		// which some architectures would round differently.
		rel := float64(w.Lexical*c.lex) + float64(w.Semantic*c.sem)
		rel += float64(w.Temporal * c.temp)
		c.rel = round6(clamp01(rel))
	}
	addContext(cs)
}

// Context contribution: a span next to strong evidence is likely part of
// the same exchange (the question before an answer, the answer after it,
// the paragraph continuing a matched one), and often carries what the query
// asks for without sharing its words. Each candidate's neighbours are the
// gathered candidates just before and just after it in conversation order
// (see conversationOrder) within its group: its session when it has one,
// else its artifact. A candidate's relevance becomes
//
//	max(own relevance, ContextShare × the higher own relevance of its neighbours)
//
// where own relevance is the fused relevance before this step, so that the
// share does not travel further than one neighbour. Neighbourhood is a
// matter of order, not of time apart: turns that share one timestamp (a
// client stamping the session's date), that carry none (the store stamps
// the time of ingest) or that are hours apart in one session are still
// next to each other.
const ContextShare = 0.75

// conversationOrder orders candidates as a conversation runs: by group
// (sessions by id, then the spans without a session by artifact), then,
// within a group, by Timestamp, then Seq (ingest order, so equal timestamps
// keep the order the client sent), then Start (chunks of one artifact),
// then compareTies. It never consults span ids, which are random per data
// directory, so the same writes give the same neighbours anywhere. Groups
// are ordered by artifact id, which is harmless: neighbours are taken
// within one group only.
func conversationOrder(a, b *cand) int {
	if c := cmp.Or(
		cmp.Compare(grouped(a), grouped(b)),
		cmp.Compare(a.SessionID, b.SessionID),
		compareID(ungroupedArtifact(a), ungroupedArtifact(b)),
		cmp.Compare(a.Timestamp, b.Timestamp),
		cmp.Compare(a.Seq, b.Seq),
		cmp.Compare(a.Start, b.Start),
	); c != 0 {
		return c
	}
	return compareTies(a, b)
}

// grouped is 0 for a candidate in a session and 1 for one without, so that
// sessions sort before the artifacts that group the rest.
func grouped(c *cand) int {
	if c.SessionID == "" {
		return 1
	}
	return 0
}

// ungroupedArtifact is the artifact that groups a candidate without a
// session, or uuid.Nil for one in a session.
func ungroupedArtifact(c *cand) uuid.UUID {
	if c.SessionID == "" {
		return c.ArtifactID
	}
	return uuid.Nil
}

// sameGroup reports whether two candidates are in one context group.
func sameGroup(a, b *cand) bool {
	return a.SessionID == b.SessionID && ungroupedArtifact(a) == ungroupedArtifact(b)
}

// addContext raises each candidate's relevance to ContextShare times that
// of its strongest neighbour (see ContextShare). cs must have their own
// relevance in rel; the result is rounded by round6.
func addContext(cs []*cand) {
	if len(cs) < 2 {
		return
	}
	type entry struct {
		c   *cand
		own float64
	}
	es := make([]entry, len(cs))
	for i, c := range cs {
		es[i] = entry{c, c.rel}
	}
	slices.SortFunc(es, func(a, b entry) int { return conversationOrder(a.c, b.c) })
	for i := range es {
		ctx := 0.0
		if i > 0 && sameGroup(es[i-1].c, es[i].c) {
			ctx = es[i-1].own
		}
		if i+1 < len(es) && sameGroup(es[i].c, es[i+1].c) {
			ctx = max(ctx, es[i+1].own)
		}
		if v := round6(float64(ContextShare * ctx)); v > es[i].own {
			es[i].c.rel = v
		}
	}
}

// round6 rounds x to 6 decimal places. Scores are reported and compared
// rounded, so that they print short and differ between machines only when a
// last-bit difference in math.Exp2 crosses a rounding boundary.
func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// finite returns x, or 0 when x is NaN or infinite.
func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}

// clamp01 clamps x to [0,1]; NaN becomes 0.
func clamp01(x float64) float64 {
	if !(x > 0) {
		return 0
	}
	return min(x, 1)
}
