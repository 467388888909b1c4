package pack

import (
	"encoding/json"

	"github.com/google/uuid"
)

// Exclusion reasons, as the contract enumerates them.
const (
	ReasonBudget       = "BUDGET"
	ReasonPolicy       = "POLICY"
	ReasonRedundancy   = "REDUNDANCY"
	ReasonLowRelevance = "LOW_RELEVANCE"
	ReasonPrivate      = "PRIVATE"
	ReasonMarkedWrong  = "MARKED_WRONG"
	ReasonOutdated     = "OUTDATED"
)

// Abstention reasons.
const (
	AbstainLowConfidence = "Confidence too low"
	AbstainFewTokens     = "Insufficient evidence tokens"
	// AbstainEmpty is the reason when the workspace holds nothing a pack
	// could cite (no artifact, or all erased or expired); the packer's
	// caller sets it, since only it sees the workspace.
	AbstainEmpty = "Workspace holds no memories"
)

// AssumeNoSemantic is the assumption noted when semantic search did not run.
const AssumeNoSemantic = "semantic search unavailable: lexical and temporal only"

// Result is a packed context: the text to inject, and everything the v1
// response and the decision receipt report about how it was made. The
// engine adds the receipt id, timestamps, workspace and actor. Its JSON
// names are those of the API; every slice is non-nil, so it marshals as [].
type Result struct {
	ContextText    string `json:"context_text"`
	PrefixText     string `json:"prefix_text"`      // the pinned section of ContextText, header included
	WorkingSetText string `json:"working_set_text"` // the top evidence section of ContextText, header included
	TotalTokens    int    `json:"total_tokens"`     // exact token count of ContextText

	Citations     []Citation `json:"citations"` // in [cite:N] order
	Confidence    float64    `json:"confidence"`
	Abstain       bool       `json:"abstain_flag"`
	AbstainReason string     `json:"abstain_reason"` // marshalled as null when empty

	Conflicts            []Conflict            `json:"conflicts"`
	Exclusions           []Exclusion           `json:"exclusions"`
	ChannelContributions []ChannelContribution `json:"channel_contributions"`
	TokenAccounting      TokenAccounting       `json:"token_accounting"`
	Assumptions          []string              `json:"assumptions"`
	PolicySummary        Policy                `json:"policy_summary"`
	PackHash             string                `json:"pack_hash"`

	// Windows are the times the query names that the temporal channel
	// preferred (Request.Windows); the receipt shows them (query_windows).
	Windows []Window `json:"-"`
}

// MarshalJSON encodes r with the API's names, abstain_reason being null
// when r did not abstain.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result // without the method, so that Marshal does not recurse
	var reason *string
	if r.AbstainReason != "" {
		reason = &r.AbstainReason
	}
	// The outer field is shallower than plain's, so it wins the name.
	return json.Marshal(struct {
		plain
		AbstainReason *string `json:"abstain_reason"`
	}{plain(r), reason})
}

// Citation is a span that made it into the pack.
type Citation struct {
	Index       int       `json:"index"` // the N of [cite:N]
	ArtifactID  uuid.UUID `json:"artifact_id"`
	SpanID      uuid.UUID `json:"span_id"`
	StartOffset int       `json:"start_offset"`
	EndOffset   int       `json:"end_offset"`
	ContentHash string    `json:"content_hash"` // of the span text, see artifact.SpanHash
	SourceType  string    `json:"source_type"`
	// Timestamp is the artifact's time, RFC 3339 in UTC; ActorID and
	// SessionID are the artifact's, nil (null) when it has none.
	Timestamp      string  `json:"timestamp"`
	ActorID        *string `json:"actor_id"`
	SessionID      *string `json:"session_id"`
	RelevanceScore float64 `json:"relevance_score"`
	ContentPreview string  `json:"content_preview"` // the first 160 code points of the span text
	Pinned         bool    `json:"pinned"`

	Text string `json:"-"` // the whole span text, for v2 snippets
}

// PreviewLength is the length of Citation.ContentPreview, in code points.
const PreviewLength = 160

// Claim is one side of a conflict.
type Claim struct {
	ArtifactID  uuid.UUID `json:"artifact_id"`
	SpanID      uuid.UUID `json:"span_id"`
	ContentHash string    `json:"content_hash"`
}

// Conflict kinds, the rule that found a conflict.
const (
	ConflictNumerical    = "numerical"
	ConflictSupersession = "supersession"
	ConflictNegation     = "negation"
)

// Conflict is a contradiction detected between two included spans. ClaimA
// is the one cited first.
type Conflict struct {
	ID          uuid.UUID `json:"id"` // see ConflictID
	ClaimA      Claim     `json:"claim_a"`
	ClaimB      Claim     `json:"claim_b"`
	Description string    `json:"description"`
	Resolution  *string   `json:"resolution"`  // nil: packs only show unresolved conflicts
	ResolvedBy  *string   `json:"resolved_by"` // nil likewise
	// SupersededSpanID is the older claim's span and SupersededBy the newer
	// one's, which supersedes it (by artifact time, then ingest order); both
	// nil when the two are equally new. An extension of the contract.
	SupersededSpanID *uuid.UUID `json:"superseded_span_id"`
	SupersededBy     *uuid.UUID `json:"superseded_by"`

	Kind         string `json:"-"` // ConflictNumerical, ConflictSupersession or ConflictNegation
	CiteA, CiteB int    `json:"-"` // the cite numbers of the claims
}

// Exclusion is a considered span that did not make it into the pack.
type Exclusion struct {
	SpanID         uuid.UUID `json:"span_id"`
	ArtifactID     uuid.UUID `json:"artifact_id"`
	Reason         string    `json:"reason"` // one of the Reason constants
	Detail         string    `json:"detail"`
	RelevanceScore float64   `json:"relevance_score"`
}

// Retrieval channels, in the order ChannelContributions lists them.
const (
	ChannelLexical  = "lexical"
	ChannelSemantic = "semantic"
	ChannelTemporal = "temporal"
)

// ChannelContribution says how much one retrieval channel contributed.
type ChannelContribution struct {
	Channel        string  `json:"channel"`
	CandidateCount int     `json:"candidate_count"` // considered spans the channel scored
	SelectedCount  int     `json:"selected_count"`  // of those, the ones cited
	Weight         float64 `json:"weight"`          // the effective weight in the fused relevance
}

// TokenAccounting is the receipt's token accounting. PrefixTokens and
// WorkingSetTokens are the counts of PrefixText and WorkingSetText on their
// own; TotalUsed is the count of the whole ContextText and is authoritative.
type TokenAccounting struct {
	Budget           int `json:"budget"`
	PrefixTokens     int `json:"prefix_tokens"`
	WorkingSetTokens int `json:"working_set_tokens"`
	TotalUsed        int `json:"total_used"`
	Remaining        int `json:"remaining"`
}
