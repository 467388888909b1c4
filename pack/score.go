package pack

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/text"
)

// microsPerHour converts Unix microsecond differences to hours.
const microsPerHour = 3600e6

// score computes the channel scores and the fused relevance of every
// candidate. The query channels contribute by score, each normalised by its
// best score among the gathered candidates, so that the best candidate of
// each channel scores 1 and the others keep their distance to it:
//
//	L        = Lexical × (1 + AdjacencyBonus × adjacency), adjacency = the share of the query's adjacent term pairs
//	           that the span holds side by side, over the pairs whose two terms some lexical candidate holds (termPairs)
//	lexical  = L / the largest L among the candidates the lexical channel returned; 0 when not returned
//	semantic = max(0, Semantic) / the largest Semantic among those the semantic channel returned; likewise
//	temporal = 2^(-age / half-life), age = max(0, asOf - Timestamp) in hours;
//	           when the query names times (windows), windowScore instead
//	own      = w.Lexical*lexical + w.Semantic*semantic + w.Temporal*temporal
//
// with the effective weights w (summing to 1), rounded by round6; then
// raised by the context contribution of the candidate's neighbours (see
// ContextShare), then lowered by the speaker prior (see SpeakerPrior) for a
// query that names a speaker. A channel whose best score is not positive
// contributes 0; non-finite scores count as 0. Normalising by the best
// score needs no order, so ties cannot move a score.
//
// Scores and not ranks: with a sentence encoder the cosines are spread out
// and say how close each candidate is, and BM25 says how much of the query
// a candidate holds; rank fusion threw both away (on LoCoMo dev with the
// encoder, evidence recall at 2,048 tokens 0.766 by rank, 0.784 by
// max-normalised score; docs/pack.md).
func score(cs []*cand, w Weights, asOf int64, halfLifeHours float64, windows []Window, query []uint64, owner bool, pairs *termPairs, memo *Analyses) {
	normalise := func(in func(*cand) bool, val func(*cand) float64, set func(*cand, float64)) {
		top := 0.0
		for _, c := range cs {
			if in(c) {
				top = max(top, finite(val(c)))
			}
		}
		if !(top > 0) {
			return
		}
		for _, c := range cs {
			if in(c) {
				set(c, clamp01(finite(val(c))/top))
			}
		}
	}
	if pairs != nil {
		// Only the best lexical candidates are analysed again: a span far
		// down the lexical ranking is not the direct answer the bonus is
		// for, and analysing every candidate's text cost more than the
		// rest of the pack (BenchmarkPack: 4.7 -> 13 ms for 200 candidates).
		var lex []*cand
		for _, c := range cs {
			if c.InLexical {
				lex = append(lex, c)
			}
		}
		slices.SortFunc(lex, func(a, b *cand) int {
			if c := cmp.Compare(finite(b.Lexical), finite(a.Lexical)); c != 0 {
				return c
			}
			return compareTies(a, b)
		})
		lex = lex[:min(len(lex), adjacencyCandidates)]
		held := make([]int, len(lex))
		for i, c := range lex {
			held[i] = pairs.count(c.indexTerms(memo))
		}
		if n := pairs.reachable(); n > 0 {
			for i, c := range lex {
				c.adj = float64(held[i]) / float64(n)
			}
		}
	}
	lexical := func(c *cand) float64 { return finite(c.Lexical) * float64(1+float64(AdjacencyBonus*c.adj)) }
	normalise(func(c *cand) bool { return c.InLexical }, lexical, func(c *cand, v float64) { c.lex = v })
	normalise(func(c *cand) bool { return c.InSemantic }, func(c *cand) float64 { return c.Semantic }, func(c *cand, v float64) { c.sem = v })
	lateLo, lateHi := lateRange(cs)
	for _, c := range cs {
		if len(windows) > 0 {
			c.temp = windowScore(c.Timestamp, windows)
		} else {
			age := 0.0
			if c.Timestamp < asOf {
				age = float64(asOf-c.Timestamp) / microsPerHour
			}
			c.temp = clamp01(math.Exp2(-age / halfLifeHours))
		}
		// Explicit conversions keep the compiler from fusing multiply-adds,
		// which some architectures would round differently.
		rel := float64(w.Lexical*c.lex) + float64(w.Semantic*c.sem)
		rel += float64(w.Temporal * c.temp)
		if c.Reranked {
			rel = reranked(rel, c.Rerank)
		}
		if c.LateScored {
			rel = lateBlend(rel, c.Late, lateLo, lateHi)
		}
		c.rel = round6(clamp01(rel))
	}
	addContext(cs)
	speakerPrior(cs, query, owner)
}

// Context contribution: a span near strong evidence is likely part of the
// same exchange (the question before an answer, the answer after it, the
// turns that carry on its topic, the paragraph continuing a matched one),
// and often carries what the query asks for without sharing its words.
// Each candidate's neighbours are the gathered candidates up to
// ContextWindow places before and after it in conversation order (see
// conversationOrder) within its group: its session when it has one, else
// its artifact. A candidate's relevance becomes
//
//	max(own relevance, max over neighbours n of share(d) × own relevance of n)
//	share(d) = ContextShare - ContextShareStep × (d - 1),  d = 1..ContextWindow places apart
//
// (0.75, 0.70, 0.65), where own relevance is the fused relevance
// before this step, so that the share does not travel along a chain.
// Neighbourhood is a matter of order, not of time apart: turns that share
// one timestamp (a client stamping the session's date), that carry none
// (the store stamps the time of ingest) or that are hours apart in one
// session are still next to each other.
const (
	ContextShare     = 0.75
	ContextShareStep = 0.05
	ContextWindow    = 3
)

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

// addContext raises each candidate's relevance to the context share of its
// strongest neighbour (see ContextShare). cs must have their own relevance
// in rel; the result is rounded by round6.
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
		v := 0.0
		for d := 1; d <= ContextWindow; d++ {
			share := float64(ContextShare - ContextShareStep*float64(d-1))
			if j := i - d; j >= 0 && sameGroup(es[j].c, es[i].c) {
				v = max(v, round6(float64(share*es[j].own)))
			}
			if j := i + d; j < len(es) && sameGroup(es[i].c, es[j].c) {
				v = max(v, round6(float64(share*es[j].own)))
			}
		}
		if v > es[i].own {
			es[i].c.rel = v
		}
	}
}

// SpeakerPrior: when the query names the speaker of a gathered chat turn
// ("What did Caroline paint?"), the relevance of every chat turn said by
// someone the query does not name is multiplied by SpeakerPrior, after the
// context step (so a turn of the other speaker next to a strong answer
// keeps part of its context). On LoCoMo dev 96% of the evidence of
// answerable questions that name a speaker was said by that speaker; the
// prior raised evidence recall at 2,048 tokens from 0.79 to 0.81 and at
// 4,096 from 0.86 to 0.90 (docs/pack.md). Spans whose speaker is not known
// (other artifact types, later chunks of a long turn) are left as they are,
// and so is every span when the query names no speaker. Speakers are read
// from the span text as attribution reads them (speakerTerms).
//
// The memory's owner is a speaker too: a question in the first person that
// does not address the agent ("How many plants did I buy?", "What is my
// dog's name?", not "What did you recommend?") asks about what the user
// did or said, so when such a query names no speaker, the turns of an
// agent role (text.TurnRole: assistant, ai, bot, model) weigh SpeakerPrior,
// provided some gathered turn is of an owner role (user, human): the
// agent's echoes and long advice otherwise crowd out the user's own
// remarks. On LongMemEval_S dev (user/assistant sessions, 76 of 101
// questions in the first person without "you") it raised evidence turn
// recall at 512 / 4,096 tokens from 0.553 / 0.856 to 0.622 / 0.910
// (docs/pack.md); LoCoMo's questions are all in the third person.
const SpeakerPrior = 0.65

// speakerPrior applies SpeakerPrior to cs for the query terms query
// (sorted, see queryTerms); owner is whether the query asks about the
// memory's owner (asksOwner).
func speakerPrior(cs []*cand, query []uint64, owner bool) {
	named := len(query) > 0 && slices.ContainsFunc(cs, func(c *cand) bool { return namesSpeaker(query, speakerTerms(c)) })
	if !named {
		if owner {
			ownerPrior(cs)
		}
		return
	}
	for _, c := range cs {
		if sp := speakerTerms(c); sp != nil && !namesSpeaker(query, sp) {
			c.rel = round6(float64(SpeakerPrior * c.rel))
		}
	}
}

// ownerPrior applies SpeakerPrior to the chat turns of agent roles, when
// some turn of cs is of an owner role.
func ownerPrior(cs []*cand) {
	var agents []*cand
	owned := false
	for _, c := range cs {
		if c.SourceType != "chat_turn" {
			continue
		}
		switch r := text.TurnRole(c.turnHead()); {
		case ownerRole(r):
			owned = true
		case agentRole(r):
			agents = append(agents, c)
		}
	}
	if !owned {
		return
	}
	for _, c := range agents {
		c.rel = round6(float64(SpeakerPrior * c.rel))
	}
}

// ownerRole and agentRole sort the generic roles (text.TurnRole) that
// stand for the memory's owner and for the agent that answers them.
func ownerRole(r string) bool { return r == "user" || r == "human" }
func agentRole(r string) bool { return r == "assistant" || r == "ai" || r == "bot" || r == "model" }

// asksOwner reports whether query is in the first person ("I", "me",
// "my", "mine", "myself", contractions included) and does not address the
// agent ("you", "your", "yours", "yourself", "yourselves"): a question
// about the memory's owner.
func asksOwner(query string) bool {
	first, second := false, false
	for w := range strings.FieldsFuncSeq(strings.ToLower(query), func(r rune) bool { return !unicode.IsLetter(r) }) {
		switch w {
		case "i", "me", "my", "mine", "myself":
			first = true
		case "you", "your", "yours", "yourself", "yourselves":
			second = true
		}
	}
	return first && !second
}

// namesSpeaker reports whether the sorted query terms hold one of the
// speaker's terms.
func namesSpeaker(query, speaker []uint64) bool {
	for _, h := range speaker {
		if _, found := slices.BinarySearch(query, h); found {
			return true
		}
	}
	return false
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
