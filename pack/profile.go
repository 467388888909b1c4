package pack

import (
	"cmp"
	"slices"

	"github.com/google/uuid"
)

// Serving profiles of the v2 context pack.
const (
	ProfileLowLatency = "low_latency"
	ProfileBalanced   = "balanced"
	ProfileHighRecall = "high_recall"
)

// BudgetFor returns the token budget a v2 profile packs with, given the
// request's max_tokens and whether a first pass found the evidence sparse
// (see Sparse):
//
//	low_latency  max_tokens
//	balanced     floor(max_tokens / 1.5), or max_tokens when sparse
//	high_recall  max_tokens
//
// It is at least 1 and never above max_tokens; an unknown profile gets
// max_tokens. The v2 profiles are Pack with these budgets (and the
// engine's channel choices): the adaptive budget may use less than
// max_tokens but never more.
//
// high_recall once started at max_tokens/4 and grew to max_tokens only on
// sparse evidence, so whenever it found three or more spans it kept a
// quarter of the budget and returned less evidence than balanced (3
// snippets against 9 at max_tokens 1,500). Recall is what the profile is
// for: it packs its deeper pool into the whole budget, which is also the
// pass balanced escalates to, so balanced never returns more.
func BudgetFor(profile string, maxTokens int, sparse bool) int {
	if maxTokens < 1 {
		return max(maxTokens, 0)
	}
	b := maxTokens
	if profile == ProfileBalanced && !sparse {
		b = maxTokens * 2 / 3
	}
	return max(b, 1)
}

// SparseCitations is the number of citations below which a pack's
// evidence counts as sparse.
const SparseCitations = 3

// Sparse reports whether a pack found sparse evidence: it abstained, or
// it cites fewer than SparseCitations spans. The balanced profile escalates
// to high_recall (with the whole budget) on sparse evidence.
func Sparse(r *Result) bool {
	return r.Abstain || len(r.Citations) < SparseCitations
}

// Snippet is a cited span as the v2 context pack returns it.
type Snippet struct {
	Content      string    `json:"content"`
	ArtifactID   uuid.UUID `json:"artifact_id"`
	SpanID       uuid.UUID `json:"span_id"`
	Score        float64   `json:"score"`
	ArtifactType string    `json:"artifact_type"`
	StartOffset  int       `json:"start_offset"`
	EndOffset    int       `json:"end_offset"`
	Citation     int       `json:"citation"` // the N of [cite:N] in the context text
	// The artifact's time (RFC 3339, UTC), actor and session (null when
	// none), as in Citation.
	Timestamp string  `json:"timestamp"`
	ActorID   *string `json:"actor_id"`
	SessionID *string `json:"session_id"`
}

// Snippets returns the cited spans of r as v2 snippets, ordered by
// relevance (descending, then by cite number).
func Snippets(r *Result) []Snippet {
	out := make([]Snippet, len(r.Citations))
	for i, c := range r.Citations {
		out[i] = Snippet{
			Content:      c.Text,
			ArtifactID:   c.ArtifactID,
			SpanID:       c.SpanID,
			Score:        c.RelevanceScore,
			ArtifactType: c.SourceType,
			StartOffset:  c.StartOffset,
			EndOffset:    c.EndOffset,
			Citation:     c.Index,
			Timestamp:    c.Timestamp,
			ActorID:      c.ActorID,
			SessionID:    c.SessionID,
		}
	}
	slices.SortStableFunc(out, func(a, b Snippet) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.Citation, b.Citation))
	})
	return out
}
