package pack

import (
	"cmp"
	"slices"
	"strings"
)

// Attribution of evidence to the people a question names. A chat turn's
// extracted text is "<role>: <content>", so its first span names who said
// it. A question about what one person said or did ("What did Caroline
// realize after her charity race?") is not answered by the same words from
// someone else ("Melanie: ... I'm starting to realize that self-care is
// important"), however well they match: that is how LoCoMo's unanswerable
// (adversarial) questions are made, and how a memory of a conversation
// misleads an agent. Term coverage cannot see it, since people address each
// other by name ("Thanks, Caroline!") and so the name is found anyway.
const (
	// AttributionTop is how many of the most relevant attributed spans
	// (chat turns whose speaker is known) the attribution factor reads.
	AttributionTop = 3
	// AttributionFloor is the attribution factor when none of them was said
	// by a person the query names: low, not zero, since a turn may report
	// another's words ("Mel, you said ..."). Tuned on LoCoMo dev
	// against 0.05 and 0.2 (docs/pack.md).
	AttributionFloor = 0.15
	// maxSpeakerBytes and maxSpeakerWords bound what counts as a role prefix.
	maxSpeakerBytes = 48
	maxSpeakerWords = 3
)

// speakerTerms returns the term hashes of the speaker of a chat turn span
// that starts its artifact's text ("Caroline: ..." gives caroline), or nil
// when the span has no such prefix: another artifact type, a later span of
// a long turn, or text before the first ": " that is not one to three words
// of letters (a time "10:30", a sentence "Note: ...").
func speakerTerms(c *cand) []uint64 {
	if c.SourceType != "chat_turn" || c.Start != 0 {
		return nil
	}
	i := strings.Index(c.Text, ": ")
	if i <= 0 || i > maxSpeakerBytes {
		return nil
	}
	role := c.Text[:i]
	var hs []uint64
	n, ok := 0, true
	for _, w := range strings.FieldsFunc(role, func(r rune) bool { return r == ' ' || r == '_' || r == '-' || r == '.' }) {
		for _, r := range w {
			if !isLetter(r) && r != '\'' {
				ok = false
			}
		}
		n++
		if h, kind := termHash([]byte(strings.ToLower(w))); kind == kindTerm {
			hs = append(hs, h)
		}
	}
	if !ok || n == 0 || n > maxSpeakerWords {
		return nil
	}
	return hs
}

// attribution is the attribution factor of confidence, in
// [AttributionFloor, 1]. With S the query terms that name the speaker of an
// included span, and T the AttributionTop most relevant included spans
// whose speaker is known:
//
//	A = 1                                              when S or T is empty
//	A = F + (1-F) * sum rel(t in T said by one in S) / sum rel(T)
//
// with F = AttributionFloor. So a question that names a speaker of the
// conversation keeps its confidence when its best evidence is that
// speaker's own turns, and loses most of it when the best evidence was
// said by someone else.
func attribution(included []*cand, query []uint64) float64 {
	if len(query) == 0 {
		return 1
	}
	type said struct {
		c       *cand
		queried bool
	}
	var spans []said
	named := false
	for _, c := range included {
		sp := speakerTerms(c)
		if sp == nil {
			continue
		}
		q := false
		for _, h := range sp {
			if _, found := slices.BinarySearch(query, h); found {
				q = true
			}
		}
		named = named || q
		spans = append(spans, said{c, q})
	}
	if !named {
		return 1
	}
	// Most relevant first; included order (cite order) breaks ties.
	slices.SortStableFunc(spans, func(a, b said) int { return cmp.Compare(b.c.rel, a.c.rel) })
	spans = spans[:min(AttributionTop, len(spans))]
	all, by := 0.0, 0.0
	for _, s := range spans {
		all += s.c.rel
		if s.queried {
			by += s.c.rel
		}
	}
	if !(all > 0) {
		return 1
	}
	return AttributionFloor + float64((1-AttributionFloor)*(by/all))
}
