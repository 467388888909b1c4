package pack

import (
	"math"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
)

// Candidate is one span offered to the packer, with everything needed to
// decide about it. The engine fills it from the span, its artifact, the
// retrieval channels and the feedback log.
type Candidate struct {
	SpanID, ArtifactID uuid.UUID
	SourceType         string // artifact type
	CreatorID          string // artifact actor_id
	SessionID          string
	Timestamp          int64  // artifact time, Unix microseconds
	Seq                uint64 // the artifact's ingest sequence number: orders ingest within the workspace (see compareTies)
	Text               string // the span text
	Tokens             int    // token count of Text, stored at indexing
	Start, End         int    // code point offsets into the artifact's extracted text
	Permissions        artifact.Permissions
	// TurnSpeaker is, for a span of a chat turn after its first, the
	// speaker its turn's text starts with: a name ("Caroline") or a generic
	// role ("user"), as text.TurnSpeaker or text.TurnRole read it from the
	// first span. Empty for a first span (its Text starts with it) and for
	// other types. Without it a long turn's later spans would have no
	// speaker: the speaker prior, attribution and the evidence line's head
	// could not tell whose they are.
	TurnSpeaker string

	Lexical  float64 // BM25 score; 0 when the lexical channel did not return the span
	Semantic float64 // cosine similarity; 0 when the semantic channel did not return it

	InLexical, InSemantic bool // which channels returned the span

	// Rerank is the relevance model's logit for the query and the span
	// (retrieval's reranker, a cross-encoder), set when Reranked: only the
	// best candidates are reranked (see Rank).
	Rerank   float64
	Reranked bool

	// Late is the late-interaction score of the query and the span
	// (retrieval's late-interaction model, MaxSim of token vectors), set
	// when LateScored: only the best candidates are scored (see Rank).
	Late       float64
	LateScored bool
	// LateContent is the late-interaction score of the span's content
	// (its speaker's name aside) for the query without the names of the
	// scored spans' speakers (retrieval.LateWithout), set when
	// LateContentScored: what the span says about what is asked, whoever
	// is named. Attribution weighs turns by it (see attribution).
	LateContent       float64
	LateContentScored bool

	Marks Marks // effective feedback state

	// TieKey is artifact.TieKey(Text, Timestamp) when the caller has it at
	// hand (the engine's indexes hold it); the zero value means unknown, and
	// Pack computes it when it needs it.
	TieKey [16]byte
}

// Marks is the effective feedback state of a span, as the engine derives it
// from the workspace's feedback log.
type Marks struct {
	Pinned      bool
	Private     bool     // marked private: visible only to PrivateFor
	PrivateFor  []string // actors who marked it private (they still see it, unless privacy_level is strict)
	MarkedWrong bool
	Outdated    bool
	OutdatedBy  string // why it is outdated, e.g. "resolve_conflict <id>" or the feedback reason
}

// Policy is a request's access policy. Its JSON names are those of the
// request's policy object; it is echoed, normalised, as the receipt's
// policy_summary.
type Policy struct {
	AllowedSources []string `json:"allowed_sources"` // artifact types; empty allows all
	DeniedSources  []string `json:"denied_sources"`  // artifact types
	AllowedActors  []string `json:"allowed_actors"`  // artifact creators; empty allows all
	RBACRequired   []string `json:"rbac_required"`   // every tag must be on the artifact
	PrivacyLevel   string   `json:"privacy_level"`   // "default" (or "") | "strict"
}

// Privacy levels of Policy.PrivacyLevel.
const (
	PrivacyDefault = "default"
	PrivacyStrict  = "strict"
)

// Tuning holds the packer's tunable thresholds; the JSON names are those of
// the request's tuning overrides.
type Tuning struct {
	MinConfidence         float64 `json:"min_confidence"`               // abstain below this confidence
	MinEvidenceTokens     int     `json:"min_evidence_tokens"`          // abstain below this many evidence tokens
	MaxSpansPerArtifact   int     `json:"max_spans_per_artifact"`       // diversity cap
	DiversityDecay        float64 `json:"diversity_decay"`              // coverage mode discount per span already taken
	RedundancyJaccard     float64 `json:"redundancy_jaccard_threshold"` // shingle Jaccard at which a span is redundant
	TemporalHalfLifeHours float64 `json:"temporal_half_life_hours"`     // half-life of the temporal score
	MinRelevance          float64 `json:"min_relevance"`                // the relevance floor, a share of the best relevance (see Pack)
}

// DefaultTuning returns the defaults of decisions.md. MinEvidenceTokens is
// 5, not the 20 it once was: one sentence that answers the question (about
// 10-20 tokens) is evidence, and whether evidence answers is confidence's
// call; the token floor only catches fragments.
func DefaultTuning() Tuning {
	return Tuning{
		MinConfidence:         0.06,
		MinEvidenceTokens:     5,
		MaxSpansPerArtifact:   3,
		DiversityDecay:        0.5,
		RedundancyJaccard:     0.8,
		TemporalHalfLifeHours: 720,
		MinRelevance:          MinRelevance,
	}
}

// effective returns t with every out-of-range or NaN field replaced by its
// default. The zero Tuning stands for DefaultTuning, so that a caller that
// forgets to set it does not pack with thresholds of zero.
func (t Tuning) effective() Tuning {
	d := DefaultTuning()
	if t == (Tuning{}) {
		return d
	}
	if !(t.MinConfidence >= 0 && t.MinConfidence <= 1) {
		t.MinConfidence = d.MinConfidence
	}
	if t.MinEvidenceTokens < 0 {
		t.MinEvidenceTokens = d.MinEvidenceTokens
	}
	if t.MaxSpansPerArtifact < 1 {
		t.MaxSpansPerArtifact = d.MaxSpansPerArtifact
	}
	if !(t.DiversityDecay >= 0 && t.DiversityDecay <= 1) {
		t.DiversityDecay = d.DiversityDecay
	}
	if !(t.RedundancyJaccard > 0 && t.RedundancyJaccard <= 1) {
		t.RedundancyJaccard = d.RedundancyJaccard
	}
	if !(t.TemporalHalfLifeHours > 0) {
		t.TemporalHalfLifeHours = d.TemporalHalfLifeHours
	}
	if !(t.MinRelevance >= 0 && t.MinRelevance <= 1) {
		t.MinRelevance = d.MinRelevance
	}
	return t
}

// Weights are the weights of the retrieval channels in the fused relevance.
type Weights struct{ Lexical, Semantic, Temporal float64 }

// DefaultWeights returns the channel weights used when a request sets none:
// lexical 0.42, semantic 0.57, temporal 0.01. The query channels carry the
// relevance, the sentence encoder's channel a little more (on LoCoMo dev
// lexical 0.35-0.45 measured within 0.01 of each other; docs/pack.md);
// recency only breaks near-ties: in a long conversation the question is as
// often about an old session as a recent one (temporal 0.05 cost 0.010 of
// evidence recall at 4,096 tokens).
func DefaultWeights() Weights {
	return Weights{Lexical: 0.42, Semantic: 0.57, Temporal: 0.01}
}

// effective returns the weights actually used: negative and NaN weights
// count as 0, all-zero weights stand for DefaultWeights, the semantic weight
// is given to the other channels in proportion to theirs when semantic search
// is unavailable, and the result is scaled to sum to 1 so that the fused
// relevance stays in [0,1].
func (w Weights) effective(semantic bool) Weights {
	clean := func(x float64) float64 {
		if !(x > 0) || math.IsInf(x, 1) {
			return 0
		}
		return x
	}
	w = Weights{clean(w.Lexical), clean(w.Semantic), clean(w.Temporal)}
	if w.Lexical+w.Semantic+w.Temporal == 0 {
		w = DefaultWeights()
	}
	if !semantic {
		w.Semantic = 0
		if w.Lexical+w.Temporal == 0 {
			d := DefaultWeights()
			w.Lexical, w.Temporal = d.Lexical, d.Temporal
		}
	}
	sum := w.Lexical + w.Semantic + w.Temporal
	return Weights{w.Lexical / sum, w.Semantic / sum, w.Temporal / sum}
}

// Modes of Request.Mode.
const (
	ModeRelevance = "relevance"
	ModeCoverage  = "coverage"
)

// Request is what Pack needs of a context pack request, with the defaults
// the engine resolved (as_of, tuning, weights).
type Request struct {
	Query     string
	MaxTokens int    // 1..128000, validated by the caller; Pack never exceeds it
	ActorID   string // "" is an anonymous request: public artifacts only
	SessionID string // non-empty: only candidates of this session (pinned spans are workspace-wide)
	Mode      string // ModeRelevance (default) or ModeCoverage
	Policy    Policy
	AsOf      int64 // Unix microseconds; recency is measured against it
	Tuning    Tuning
	Weights   Weights

	// Windows are the times the query names, resolved against AsOf (see
	// Window). When there are any, the temporal channel scores nearness to
	// them instead of recency, with WindowWeight; none leaves the pack as
	// it was.
	Windows []Window

	// SemanticAvailable is false when the semantic channel did not run;
	// the pack then notes it among its assumptions and gives the semantic
	// weight to the other channels.
	SemanticAvailable bool

	// Lines, when set, memoizes evidence line counts across packs (see
	// LineCounts); it changes how fast a pack is, never what it is.
	Lines *LineCounts
	// Analyses, when set, memoizes what the packer reads from span texts
	// across packs (see Analyses); like Lines, it changes how fast a pack
	// is, never what it is.
	Analyses *Analyses
}
