package pack

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/loci-memory/loci/text"
)

// Attribution of evidence to the people a question names. A chat turn's
// extracted text is "<speaker>: <content>" (text.ChatSpeaker), so its first
// span names who said it. A question about what one person said or did
// ("What did Caroline realize after her charity race?") is not answered by
// the same words from someone else ("Melanie: ... I'm starting to realize that self-care is
// important"), however well they match: that is how LoCoMo's unanswerable
// (adversarial) questions are made, and how a memory of a conversation
// misleads an agent. Term coverage cannot see it, since people address each
// other by name ("Thanks, Caroline!") and so the name is found anyway.
const (
	// AttributionTop is how many of the best lexical matches among the
	// attributed spans (chat turns whose speaker is known) the attribution
	// factor reads.
	AttributionTop = 5
	// AttributionFloor is the attribution factor when none of them was said
	// by a person the query names: low, not zero, since a turn may report
	// another's words ("Mel, you said ..."). Tuned on LoCoMo dev
	// against 0.1 and 0.2 (docs/pack.md).
	AttributionFloor = 0.15
)

// speakerTerms returns the term hashes of the speaker of a chat turn span
// that starts its artifact's text, or nil when the span names none: another
// artifact type, a later span of a long turn, or a turn whose speaker is
// not known. Extraction writes the speaker it resolved from the role, the
// content or the actor_id (text.ChatSpeaker) at the start of the text, so
// the span's "Caroline: ..." gives caroline in every client shape.
func speakerTerms(c *cand) []uint64 {
	if !c.spkRead {
		c.spk, c.spkRead = readSpeakerTerms(c), true
	}
	return c.spk
}

// turnHead is what the speaker of c's chat turn is read from
// (text.TurnSpeaker, text.TurnRole): the text of a turn's first span, which
// starts with it, or "<TurnSpeaker>: " for a later span; "" for a span of
// another type.
func (c *Candidate) turnHead() string {
	switch {
	case c.SourceType != "chat_turn":
		return ""
	case c.Start == 0:
		return c.Text
	case c.TurnSpeaker != "":
		return c.TurnSpeaker + ": "
	}
	return ""
}

// readSpeakerTerms is speakerTerms read from the span.
func readSpeakerTerms(c *cand) []uint64 {
	name := text.TurnSpeaker(c.turnHead())
	if name == "" {
		return nil
	}
	var hs []uint64
	for _, w := range text.SpeakerWords(name) {
		if h, kind := termHash([]byte(strings.ToLower(w))); kind == kindTerm {
			hs = append(hs, h)
		}
	}
	return hs
}

// attribution is the attribution factor of confidence, in
// [AttributionFloor, 1]. visible are the candidates the request may see
// (those that passed the policy and feedback filters). With N the query
// terms that name the speaker of a visible span, C the other query terms
// (what is asked about), P the AttributionPool visible spans whose speaker
// is known with the highest BM25 score (Lexical; among those the lexical
// channel returned with a positive score, ties by compareTies), and for a
// span t of P
//
//	w(t) = 0                                  when t asks a question (holds a "?")
//	w(t) = Lexical(t) * |C in t| / |C|        otherwise
//
// and T the AttributionTop spans of P with the largest positive w (ties by
// compareTies):
//
//	A = 1                                                  when N, C or T is empty
//	A = F + (1-F) * sum w(t in T said by one named in N) / sum w(T)
//
// with F = AttributionFloor. So a question that names a speaker of the
// conversation keeps its confidence when the turns that best state what it
// asks about are that speaker's own, and loses most of it when they were
// said by someone else.
//
// It reads the lexical channel's best matches, not the pack's relevance:
// the fused relevance carries the speaker prior (see SpeakerPrior), and the
// sentence encoder's vectors carry the speaker's name (a turn's text starts
// with it), so both lean towards the named speaker's turns whatever they
// say, while BM25 weighs the question's rarer words, the ones that name
// what was said or done.
//
// A turn that asks is the speaker's reaction to the other's news, not news
// of their own: "That bowl is gorgeous! The black and white design looks so
// fancy. Did you make it?" holds the words of "Did Caroline make the black
// and white bowl?" and was said by Caroline about Melanie's bowl. In a
// conversation the turn that best matches a question about one speaker is
// often the other speaker asking about it, so such turns are not read, and
// the others weigh by the share of the words asked about they hold as well
// as by BM25 (which also counts the name, "Thanks, Caroline!"). On LoCoMo
// dev (prefix shape, 512 tokens) the confidence AUC went from 0.772 (BM25
// weights over every turn) to 0.852; docs/pack.md § Attribution. The spans
// read do not depend on the budget.
//
// T may hold none of the named speaker's turns: when the turns that best
// match what is asked about are all the other party's, that is the case
// attribution exists for. (It once returned 1 then, and "What was
// grandma's gift to Melanie?", asked of Caroline's "Thanks, Melanie! This
// necklace is ... a gift from my grandma", kept a confidence of 0.89
// whenever Melanie's turns held no word of the question: always without
// names, since a name sent in the text is a word her turns hold.)
//
// names and content are splitNames's split of the query's terms.
func attribution(visible []*cand, names, content []uint64) float64 {
	if len(names) == 0 || len(content) == 0 {
		return 1
	}
	pool, score := lateAttribution(visible)
	if pool == nil {
		for _, c := range visible {
			if c.InLexical && finite(c.Lexical) > 0 && speakerTerms(c) != nil {
				pool = append(pool, c)
			}
		}
		score = nameLexical(pool, visible, names, content)
	}
	order := make([]int, len(pool))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int {
		if c := cmp.Compare(score[j], score[i]); c != 0 {
			return c
		}
		return compareTies(pool[i], pool[j])
	})
	var spans []weighed
	for _, i := range order[:min(AttributionPool, len(order))] {
		c := pool[i]
		if strings.Contains(c.Text, "?") {
			continue
		}
		if w := float64(score[i]*float64(heldTerms(c.Text, content))) / float64(len(content)); w > 0 {
			spans = append(spans, weighed{c, w, namesSpeaker(names, speakerTerms(c))})
		}
	}
	return attributionOf(spans)
}

// AttributionSharpness is the power lateAttribution raises a turn's place
// between the pool's least and largest score to: the few turns that best
// state what is asked decide, as the largest BM25 scores did. On LoCoMo dev
// at 512 tokens (confidence AUC, prefix / none shapes) the powers 1, 2, 3,
// 4 and 6 gave 0.846 / 0.850, 0.851 / 0.856, 0.854 / 0.863, 0.857 / 0.866
// and 0.860 / 0.867, with false abstention rising past 4 in shape none
// (docs/benchmarks.md § Attribution by late interaction).
const AttributionSharpness = 4

// lateAttribution returns the turns attribution reads and their scores
// when late interaction scored the candidates' contents without the
// speakers' names (LateContentScored): every such visible span whose
// speaker is known, scored by ((s - lo) / (hi - lo))^AttributionSharpness,
// s its LateContent and lo, hi the least and largest of the pool (1 when
// all are equal). It returns nil when no candidate was so scored (no
// late-interaction model, a workspace past its limit, or a query that names
// none of the scored turns' speakers): attribution then reads BM25
// (nameLexical).
//
// Why: BM25 counts the name. A turn sent as "Melanie: ..." holds her name,
// and so do the other party's turns that address her ("Thanks, Melanie!"),
// while without names in the text only the latter do, so the lexical
// channel's weights depend on how a client sends chat turns (nameLexical's
// raise corrects part of it). Late interaction reads every turn as said by
// its speaker, found by address where the turn does not say it
// (pack.RankTexts), and scoring the content for the query without the
// names leaves what the turn says about what is asked: the same in every
// client shape. On LoCoMo dev at 512 tokens the confidence AUC went from
// 0.852 (named shapes) and 0.844 (none) to 0.857 and 0.866.
func lateAttribution(visible []*cand) ([]*cand, []float64) {
	var pool []*cand
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range visible {
		if c.LateContentScored && speakerTerms(c) != nil {
			pool = append(pool, c)
			lo, hi = min(lo, finite(c.LateContent)), max(hi, finite(c.LateContent))
		}
	}
	if pool == nil {
		return nil, nil
	}
	score := make([]float64, len(pool))
	for i, c := range pool {
		score[i] = 1
		if hi > lo {
			score[i] = math.Pow((finite(c.LateContent)-lo)/(hi-lo), AttributionSharpness)
		}
	}
	return pool, score
}

// nameLexical returns the BM25 score attribution reads for each span of
// pool. A turn whose speaker was found by address (addressSpeakers) does
// not hold its speaker's name, as a turn sent with the name does
// ("Melanie: ..."), while the other party's turns that address that speaker
// do ("Thanks, Melanie!"): so the lexical channel, which counts the name,
// favours the other party. For such a turn the score is raised by what the
// name alone scores: the least BM25 score of a visible turn that holds one
// of names and none of content (the longest such turn, where one
// occurrence of the name counts least; on LoCoMo dev, in the shape without
// names, the least gave a confidence AUC of 0.842 and 5.1% false abstention
// at 512 tokens, no raise 0.832 and 12.0%; the median and the largest, before
// T could hold none of the named speaker's turns, 0.831 and 0.797 against
// the least's 0.834).
func nameLexical(pool, visible []*cand, names, content []uint64) []float64 {
	lexical := make([]float64, len(pool))
	for i, c := range pool {
		lexical[i] = finite(c.Lexical)
	}
	if !slices.ContainsFunc(pool, func(c *cand) bool { return c.byAddr && namesSpeaker(names, c.spk) }) {
		return lexical
	}
	alone := math.Inf(1)
	for _, c := range visible {
		if c.byAddr && c.InLexical && finite(c.Lexical) > 0 {
			if heldTerms(c.Text, names) > 0 && heldTerms(c.Text, content) == 0 {
				alone = min(alone, finite(c.Lexical))
			}
		}
	}
	if math.IsInf(alone, 1) {
		return lexical
	}
	for i, c := range pool {
		if c.byAddr && namesSpeaker(names, c.spk) && heldTerms(c.Text, names) == 0 {
			lexical[i] += alone
		}
	}
	return lexical
}

// AttributionPool is how many of the best lexical matches among the
// attributed spans attribution weighs.
const AttributionPool = 20

// splitNames splits the sorted query terms into those that name a speaker
// of a visible span and the others, both sorted.
func splitNames(visible []*cand, query []uint64) (names, content []uint64) {
	for _, c := range visible {
		for _, h := range speakerTerms(c) {
			if _, found := slices.BinarySearch(query, h); found {
				names = append(names, h)
			}
		}
	}
	names = sortedSet(names)
	for _, h := range query {
		if _, found := slices.BinarySearch(names, h); !found {
			content = append(content, h)
		}
	}
	return names, content
}

// heldTerms returns how many of the sorted terms s holds.
func heldTerms(s string, terms []uint64) int {
	n := 0
	for _, held := range heldMask(s, terms) {
		if held {
			n++
		}
	}
	return n
}

// heldMask reports, for each of the sorted terms, whether s holds it.
func heldMask(s string, terms []uint64) []bool {
	held := make([]bool, len(terms))
	eachWord(s, func(w []byte, _ int, _ bool) {
		if h, kind := termHash(w); kind != kindStop {
			if i, found := slices.BinarySearch(terms, h); found {
				held[i] = true
			}
		}
	})
	return held
}

// weighed is a span of an attribution pool with its weight, and whether
// the speaker the query asks about said it.
type weighed struct {
	c     *cand
	w     float64
	asked bool
}

// attributionOf is AttributionFloor + (1 - AttributionFloor) × the asked
// speaker's share of the weight of the AttributionTop heaviest spans (ties
// by compareTies), or 1 when none weighs anything.
func attributionOf(spans []weighed) float64 {
	slices.SortFunc(spans, func(a, b weighed) int {
		if c := cmp.Compare(b.w, a.w); c != 0 {
			return c
		}
		return compareTies(a.c, b.c)
	})
	spans = spans[:min(AttributionTop, len(spans))]
	all, by := 0.0, 0.0
	for _, s := range spans {
		all += s.w
		if s.asked {
			by += s.w
		}
	}
	if !(all > 0) {
		return 1
	}
	return AttributionFloor + float64((1-AttributionFloor)*(by/all))
}

// ownerAttribution is attribution for a query about the memory's owner
// (asksOwner) that names no speaker: the owner-role turns (user, human)
// take the named speaker's place and the agent-role turns (assistant, ai,
// bot, model) the other party's. Of the AttributionPool chat turns of those
// roles with the highest BM25 score, the AttributionTop with the largest
// weight BM25 × the share of the query's terms they hold give
//
//	A_owner = AttributionFloor + (1 - AttributionFloor) × the owner's share of that weight
//
// Unlike attribution, turns that ask are read: an owner's remarks come
// inside requests ("I've been training for a marathon, can you suggest a
// plan?"). And it counts once in the strength (Q × A_owner, not Q × A^2):
// an agent restates what the owner said, so its turns holding the words
// asked about is weaker evidence that the owner never said them than the
// other speaker's are in a conversation of two. Nothing changes when no
// turn of either role is among the lexical matches.
func ownerAttribution(visible []*cand, query []uint64) float64 {
	var pool []*cand
	for _, c := range visible {
		// A turn is read by its first span, where its speaker says what it
		// is about: the later spans of an agent's long answer are advice that
		// repeats the query's words, and reading them as the agent's raised
		// LongMemEval's false abstention from 1.1% to 4.2% (docs/pack.md).
		if c.SourceType != "chat_turn" || c.Start != 0 || !c.InLexical || !(finite(c.Lexical) > 0) {
			continue
		}
		if r := text.TurnRole(c.Text); ownerRole(r) || agentRole(r) {
			pool = append(pool, c)
		}
	}
	slices.SortFunc(pool, func(a, b *cand) int {
		if c := cmp.Compare(finite(b.Lexical), finite(a.Lexical)); c != 0 {
			return c
		}
		return compareTies(a, b)
	})
	pool = pool[:min(AttributionPool, len(pool))]
	var spans []weighed
	for _, c := range pool {
		w := float64(finite(c.Lexical)*float64(heldTerms(c.Text, query))) / float64(len(query))
		if w > 0 {
			spans = append(spans, weighed{c, w, ownerRole(text.TurnRole(c.Text))})
		}
	}
	return attributionOf(spans)
}

// ownerGrounding is how much of what a query about the memory's owner names
// the memory holds outside the agent's words: with named the query's named
// terms (namedTerms) and g the share of them that some visible span holds
// other than an agent-role chat turn (assistant, ai, bot, model),
//
//	G = AttributionFloor + (1 - AttributionFloor) × g²
//
// and 1 when the query names nothing. A question about the owner's life
// that names a thing the owner never mentioned ("How often do I see Dr.
// Johnson?" when they see Dr. Smith; "How many Italian restaurants have I
// tried?" when they told of Korean ones) asks about something else, and the
// agent's words do not ground it: an assistant's advice names places and
// brands its user never spoke of. Names are seldom paraphrased, so an
// answerable question's names are held. A span is read as it is stored, so a
// name held by a later span of the owner's long turn counts.
func ownerGrounding(visible []*cand, named names) float64 {
	if len(named.terms) == 0 {
		return 1
	}
	held := make([]bool, len(named.terms))
	left := len(named.terms)
	for _, c := range visible {
		if agentRole(text.TurnRole(c.turnHead())) || !mayHold(c.Text, named.keys, held) {
			continue
		}
		for i, h := range heldMask(c.Text, named.terms) {
			if h && !held[i] {
				held[i] = true
				left--
			}
		}
		if left == 0 {
			return 1
		}
	}
	g := float64(len(named.terms)-left) / float64(len(named.terms))
	return AttributionFloor + float64((1-AttributionFloor)*float64(g*g))
}

// mayHold reports whether a word of s starts, ignoring case, with the key
// of a name not yet held: reading a span's words costs much more. It is
// never wrong when it says no: a text holding İ or K (Kelvin), the two
// runes that lower-case to ASCII letters, may hold any name, and so may any
// text when a key is not ASCII ("").
func mayHold(s string, keys []string, held []bool) bool {
	if strings.ContainsRune(s, 'İ') || strings.ContainsRune(s, '\u212a') {
		return true
	}
	for i, k := range keys {
		if !held[i] && hasWordPrefix(s, k) {
			return true
		}
	}
	return false
}
