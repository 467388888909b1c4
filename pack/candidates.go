package pack

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
)

// cand is a candidate while it is being decided about.
type cand struct {
	Candidate
	pinned bool
	adj    float64 // share of the query's adjacent term pairs the span holds (see AdjacencyBonus)
	lex    float64 // normalised lexical score in [0,1]
	sem    float64 // semantic score in [0,1]
	temp   float64 // temporal score in [0,1]
	rel    float64 // fused relevance in [0,1], rounded (see round6)

	// Filled in when the candidate gets that far.
	rendered string    // evidenceHead and Text with line breaks replaced, see renderedLine
	feat     *features // see cand.features
	spk      []uint64  // see speakerTerms
	spkRead  bool      // spk is set
	byAddr   bool      // spk was found by address (addressSpeakers), not in the text
	hash     string    // artifact.SpanHash(Text), see contentHash

	// The decision.
	included       bool
	cite           int    // cite number when included
	reason, detail string // when excluded
}

// gather merges pinned and retrieved candidates into one list with one
// entry per span, drops retrieved spans of other sessions when session is
// set, and returns them ordered by SpanID (which only serves to merge
// duplicates: every later order is decided by content, see compareTies).
// The result does not depend on the order of the inputs.
//
// A span listed more than once (found by both channels, or pinned and
// retrieved) becomes one candidate: its channel scores are the maxima, its
// channel flags and feedback marks the union. The remaining fields should
// agree; where they do not, they come from the entry that sorts first by
// compareMeta, so that the choice does not depend on input order either.
func gather(pinned, retrieved []Candidate, session string) []*cand {
	store := make([]cand, 0, len(pinned)+len(retrieved))
	for i := range pinned {
		store = append(store, cand{Candidate: pinned[i], pinned: true})
	}
	for i := range retrieved {
		store = append(store, cand{Candidate: retrieved[i], pinned: retrieved[i].Marks.Pinned})
	}
	all := make([]*cand, len(store))
	for i := range store {
		all[i] = &store[i]
	}
	slices.SortFunc(all, func(a, b *cand) int {
		if c := compareID(a.SpanID, b.SpanID); c != 0 {
			return c
		}
		return compareMeta(&a.Candidate, &b.Candidate)
	})
	out := all[:0]
	for _, c := range all {
		if n := len(out); n > 0 && out[n-1].SpanID == c.SpanID {
			merge(out[n-1], c)
			continue
		}
		c.Marks.PrivateFor = slices.Clone(c.Marks.PrivateFor)
		out = append(out, c)
	}
	for _, c := range out {
		c.pinned = c.pinned || c.Marks.Pinned
		c.Marks.Pinned = c.pinned
		slices.Sort(c.Marks.PrivateFor)
		c.Marks.PrivateFor = slices.Compact(c.Marks.PrivateFor)
	}
	if session == "" {
		return out
	}
	scoped := out[:0]
	for _, c := range out {
		if c.pinned || c.SessionID == session {
			scoped = append(scoped, c)
		}
	}
	return scoped
}

// merge folds the duplicate d into c, which sorts before it.
func merge(c, d *cand) {
	c.pinned = c.pinned || d.pinned
	c.Lexical = max(finite(c.Lexical), finite(d.Lexical))
	c.Semantic = max(finite(c.Semantic), finite(d.Semantic))
	c.InLexical = c.InLexical || d.InLexical
	c.InSemantic = c.InSemantic || d.InSemantic
	if d.Reranked && (!c.Reranked || finite(d.Rerank) > finite(c.Rerank)) {
		c.Rerank, c.Reranked = finite(d.Rerank), true
	}
	if d.LateScored && (!c.LateScored || finite(d.Late) > finite(c.Late)) {
		c.Late, c.LateScored = finite(d.Late), true
	}
	if d.LateContentScored && (!c.LateContentScored || finite(d.LateContent) > finite(c.LateContent)) {
		c.LateContent, c.LateContentScored = finite(d.LateContent), true
	}
	m, n := &c.Marks, &d.Marks
	m.Pinned = m.Pinned || n.Pinned
	m.Private = m.Private || n.Private
	m.PrivateFor = append(m.PrivateFor, n.PrivateFor...)
	m.MarkedWrong = m.MarkedWrong || n.MarkedWrong
	m.Outdated = m.Outdated || n.Outdated
	if m.OutdatedBy == "" || (n.OutdatedBy != "" && n.OutdatedBy < m.OutdatedBy) {
		m.OutdatedBy = n.OutdatedBy
	}
}

// compareID orders span ids by their bytes, which is also the order of
// their canonical string forms.
func compareID(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) }

// compareMeta orders two entries of the same span by their metadata, to
// pick deterministically among duplicates that disagree.
func compareMeta(a, b *Candidate) int {
	return cmp.Or(
		compareID(a.ArtifactID, b.ArtifactID),
		cmp.Compare(a.Text, b.Text),
		cmp.Compare(a.SourceType, b.SourceType),
		cmp.Compare(a.CreatorID, b.CreatorID),
		cmp.Compare(a.TurnSpeaker, b.TurnSpeaker),
		cmp.Compare(a.SessionID, b.SessionID),
		cmp.Compare(a.Timestamp, b.Timestamp),
		cmp.Compare(a.Seq, b.Seq),
		cmp.Compare(a.Tokens, b.Tokens),
		cmp.Compare(a.Start, b.Start),
		cmp.Compare(a.End, b.End),
		cmp.Compare(a.Permissions.Visibility, b.Permissions.Visibility),
		slices.Compare(a.Permissions.AllowedActors, b.Permissions.AllowedActors),
		slices.Compare(a.Permissions.DeniedActors, b.Permissions.DeniedActors),
		slices.Compare(a.Permissions.RBACTags, b.Permissions.RBACTags),
		cmp.Compare(finite(a.Lexical), finite(b.Lexical)),
		cmp.Compare(finite(a.Semantic), finite(b.Semantic)),
	)
}

// byRelevance is the candidate order: relevance descending, then
// compareTies.
func byRelevance(a, b *cand) int {
	if c := cmp.Compare(b.rel, a.rel); c != 0 {
		return c
	}
	return compareTies(a, b)
}

// contentHash returns artifact.SpanHash(c.Text), computed once.
func (c *cand) contentHash() string {
	if c.hash == "" {
		c.hash = artifact.SpanHash(c.Text)
	}
	return c.hash
}
