package pack

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/text"
)

// est is the token counter of most tests.
var est = text.Estimate{}

// superAdditive counts like text.Estimate plus one token per 64 bytes of
// the whole string, so a text costs more than its lines did one by one:
// it exercises the exact recount of the final text.
type superAdditive struct{}

func (superAdditive) Count(s string) int { return est.Count(s) + len(s)/64 }

// lineSquare counts like text.Estimate plus n(n-1)/16 tokens for a text
// of n line breaks: a single line costs what Estimate says, a whole pack
// much more. It makes the exact recount take out many spans.
type lineSquare struct{}

func (lineSquare) Count(s string) int {
	n := strings.Count(s, "\n")
	return est.Count(s) + n*(n-1)/16
}

// spanID returns a span id whose first byte is n, so that ids sort by n.
func spanID(n int) uuid.UUID { return uuid.UUID{byte(n >> 8), byte(n), 0x5a} }

// artID returns an artifact id for n.
func artID(n int) uuid.UUID { return uuid.UUID{0xa0, byte(n >> 8), byte(n)} }

// cnd returns a public candidate with span n of artifact a, found by the
// lexical channel with score lex.
func cnd(n, a int, txt string, lex float64) Candidate {
	return Candidate{
		SpanID:     spanID(n),
		ArtifactID: artID(a),
		SourceType: "note",
		CreatorID:  "alice",
		Timestamp:  1_700_000_000_000_000,
		Text:       txt,
		Tokens:     est.Count(txt),
		Start:      0,
		End:        len([]rune(txt)),
		Lexical:    lex,
		InLexical:  lex > 0,
	}
}

// req returns a request as alice with the given budget and defaults.
// req is a request with the default tuning, except the relevance floor:
// the old 0.2 (HighRecallMinRelevance), which most tests' candidate sets
// were built around; TestRelevanceFloor covers the default.
func req(query string, budget int) Request {
	t := DefaultTuning()
	t.MinRelevance = HighRecallMinRelevance
	return Request{
		Query:             query,
		MaxTokens:         budget,
		ActorID:           "alice",
		AsOf:              1_700_000_000_000_000,
		Tuning:            t,
		Weights:           DefaultWeights(),
		SemanticAvailable: true,
	}
}

// outcome summarises what happened to a span in a result: "cite:N" or
// the exclusion reason, or "" when the span is in neither.
func outcome(r *Result, id uuid.UUID) string {
	for _, c := range r.Citations {
		if c.SpanID == id {
			return citeTag(c.Index)[1 : len(citeTag(c.Index))-1]
		}
	}
	for _, e := range r.Exclusions {
		if e.SpanID == id {
			return e.Reason
		}
	}
	return ""
}

// exclusionOf returns the exclusion of a span, failing the test when it
// is not excluded.
func exclusionOf(t *testing.T, r *Result, id uuid.UUID) Exclusion {
	t.Helper()
	for _, e := range r.Exclusions {
		if e.SpanID == id {
			return e
		}
	}
	t.Fatalf("span %s not excluded; outcome %q", id, outcome(r, id))
	return Exclusion{}
}

// words n returns a text of n distinct made-up words starting at word k,
// so that texts with different k share few shingles.
func wordsText(k, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = "w" + strings.Repeat("x", (k+i)%5) + string(rune('a'+(k+i)%26)) + string(rune('a'+(k+i)/26%26))
	}
	return strings.Join(ws, " ") + "."
}

// perm returns permissions with a visibility.
func perm(vis string, allowed, denied, tags []string) artifact.Permissions {
	return artifact.Permissions{Visibility: vis, AllowedActors: allowed, DeniedActors: denied, RBACTags: tags}
}

// featuresOf reads the features of a text that names no speaker (a note,
// a document): featuresAfter with no label.
func featuresOf(s string) *features { return featuresAfter(s, 0) }
