package pack

import (
	"cmp"
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
	if c.SourceType != "chat_turn" || c.Start != 0 {
		return nil
	}
	name := text.TurnSpeaker(c.Text)
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
// (those that passed the policy and feedback filters). With S the query
// terms that name the speaker of a visible span, and T the AttributionTop
// visible spans whose speaker is known with the highest BM25 score
// (Lexical; among those the lexical channel returned with a positive score,
// ties by compareTies):
//
//	A = 1                                                  when S or T is empty
//	A = F + (1-F) * sum Lexical(t in T said by one in S) / sum Lexical(T)
//
// with F = AttributionFloor. So a question that names a speaker of the
// conversation keeps its confidence when the turns that best hold its words
// are that speaker's own, and loses most of it when they were said by
// someone else.
//
// It reads the lexical channel's best matches, not the pack's relevance:
// the fused relevance carries the speaker prior (see SpeakerPrior), and the
// sentence encoder's vectors carry the speaker's name (a turn's text starts
// with it), so both lean towards the named speaker's turns whatever they
// say, while BM25 weighs the question's rarer words, the ones that name
// what was said or done (on LoCoMo dev with the encoder, confidence AUC
// 0.70 with the relevance of the included spans, 0.77 with this;
// docs/pack.md). The spans read do not depend on the budget.
func attribution(visible []*cand, query []uint64) float64 {
	return attributionBy(visible, query, lexicalWeight)
}

// lexicalWeight is a span's weight in attribution: its BM25 score, when
// the lexical channel returned it with a positive one.
func lexicalWeight(c *cand) (float64, bool) {
	return finite(c.Lexical), c.InLexical && finite(c.Lexical) > 0
}

// rerankWeight is a reranked span's weight in the attribution of a
// reranked pack: the relevance model's probability that it answers the
// query.
func rerankWeight(c *cand) (float64, bool) {
	return sigmoid(finite(c.Rerank)), c.Reranked
}

// attributionBy is attribution with the spans weighted (and those that
// count chosen) by weight.
func attributionBy(visible []*cand, query []uint64, weight func(*cand) (float64, bool)) float64 {
	if len(query) == 0 {
		return 1
	}
	type said struct {
		c       *cand
		w       float64
		queried bool
	}
	var spans []said
	named := false
	for _, c := range visible {
		sp := speakerTerms(c)
		if sp == nil {
			continue
		}
		q := namesSpeaker(query, sp)
		named = named || q
		if w, ok := weight(c); ok {
			spans = append(spans, said{c, w, q})
		}
	}
	if !named || len(spans) == 0 {
		return 1
	}
	slices.SortFunc(spans, func(a, b said) int {
		if c := cmp.Compare(b.w, a.w); c != 0 {
			return c
		}
		return compareTies(a.c, b.c)
	})
	spans = spans[:min(AttributionTop, len(spans))]
	all, by := 0.0, 0.0
	for _, s := range spans {
		all += s.w
		if s.queried {
			by += s.w
		}
	}
	if !(all > 0) {
		return 1
	}
	return AttributionFloor + float64((1-AttributionFloor)*(by/all))
}
