package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/pack"
	"github.com/loci-memory/loci/retrieval"
)

// PackRequest is a context pack request with the v1 fields, as every
// transport sends it; the service validates it.
type PackRequest struct {
	Query                 *string         `json:"query"`
	MaxTokens             *int            `json:"max_tokens"`
	WorkspaceID           string          `json:"workspace_id"`
	ActorID               string          `json:"actor_id"`
	SessionID             string          `json:"session_id"`
	Policy                json.RawMessage `json:"policy"`
	Mode                  string          `json:"mode"`
	MaxLatencyMs          *float64        `json:"max_latency_ms"`
	MaxCostUSD            *float64        `json:"max_cost_usd"`
	AsOf                  *string         `json:"as_of"`
	MinConfidence         *float64        `json:"min_confidence"`
	MinEvidenceTokens     *int            `json:"min_evidence_tokens"`
	MaxSpansPerArtifact   *int            `json:"max_spans_per_artifact"`
	DiversityDecay        *float64        `json:"diversity_decay"`
	RedundancyJaccard     *float64        `json:"redundancy_jaccard_threshold"`
	TemporalHalfLifeHours *float64        `json:"temporal_half_life_hours"`
	// MinRelevance is the relevance floor, a share of the best relevance
	// (pack.MinRelevance); nil is the profile's (pack.ProfileMinRelevance).
	MinRelevance *float64 `json:"min_relevance"`
	// Metadata restricts the pack to artifacts whose metadata holds
	// every given pair exactly.
	Metadata json.RawMessage `json:"metadata"`
	// RerankDepth is how many of the best candidates the relevance model
	// rereads (0 to retrieval.MaxRerankDepth); nil is 0 in every profile:
	// measured on the dev sets, rereading gives too little for its cost to
	// be a default (docs/pack.md § Reranking).
	RerankDepth *int `json:"rerank_depth"`
	// LateDepth is how many of the best candidates late interaction scores
	// (0 to retrieval.MaxRerankDepth); nil is the server's depth
	// (Config.LateInteractionDepth) where the server runs it by default
	// (Config.LateInteractionMaxSpans), 0 otherwise.
	LateDepth *int `json:"late_depth"`
	// Since and Until (ISO 8601, as the artifact listing reads them; both
	// inclusive) restrict the retrieved spans to artifacts of that time.
	Since *string `json:"since"`
	Until *string `json:"until"`
}

// AsOfNow is the as_of of a pack that asks for the service's clock: the
// only pack that reads it (the default is the workspace's newest artifact
// time, so that a pack is a function of the request and the stored data;
// docs/pack.md § Dates in the query).
const AsOfNow = "now"

// PackV2Request is a v2 context pack request: v1's fields and profile.
type PackV2Request struct {
	PackRequest
	Profile *string `json:"profile"`
}

// PolicyJSON is a pack request's policy as the API names it.
type PolicyJSON struct {
	AllowedSources []string `json:"allowed_sources"`
	DeniedSources  []string `json:"denied_sources"`
	AllowedActors  []string `json:"allowed_actors"`
	RBACRequired   []string `json:"rbac_required"`
	PrivacyLevel   string   `json:"privacy_level"`
}

// retrievalRequest validates a pack request and converts it. v2 requires
// max_tokens and takes profile.
func (r *PackRequest) retrievalRequest(v2 bool, profile *string) (retrieval.PackRequest, error) {
	req := retrieval.PackRequest{Workspace: r.WorkspaceID, ActorID: r.ActorID, SessionID: r.SessionID, Mode: r.Mode,
		MaxLatencyMs: r.MaxLatencyMs, MaxCostUSD: r.MaxCostUSD}
	if r.Query == nil {
		return req, errors.New("query: is required")
	}
	req.Query = *r.Query
	if r.MaxTokens == nil {
		if v2 {
			return req, fmt.Errorf("max_tokens: is required (1 to %d)", retrieval.MaxPackTokens)
		}
	} else {
		if *r.MaxTokens < 1 || *r.MaxTokens > retrieval.MaxPackTokens {
			return req, fmt.Errorf("max_tokens: must be between 1 and %d, got %d", retrieval.MaxPackTokens, *r.MaxTokens)
		}
		req.MaxTokens = *r.MaxTokens
	}
	var p PolicyJSON
	if err := DecodeOptionalJSON(r.Policy, "policy", &p); err != nil {
		return req, err
	}
	req.Policy = pack.Policy{AllowedSources: p.AllowedSources, DeniedSources: p.DeniedSources, AllowedActors: p.AllowedActors,
		RBACRequired: p.RBACRequired, PrivacyLevel: p.PrivacyLevel}
	md, err := DecodeMetadata(r.Metadata, "metadata")
	if err != nil {
		return req, err
	}
	req.Metadata = md
	if r.AsOf != nil && *r.AsOf != AsOfNow { // now: Service.Pack reads the clock
		t, err := ParseTime("as_of", *r.AsOf)
		if err != nil {
			return req, err
		}
		req.AsOf = t.UnixMicro()
	}
	if err := packWindow(r.Since, r.Until, &req); err != nil {
		return req, err
	}
	t := pack.DefaultTuning()
	if v := r.MinConfidence; v != nil {
		if !(*v >= 0 && *v <= 1) {
			return req, fmt.Errorf("min_confidence: must be between 0 and 1, got %v", *v)
		}
		t.MinConfidence = *v
	}
	if v := r.MinEvidenceTokens; v != nil {
		if *v < 0 {
			return req, fmt.Errorf("min_evidence_tokens: must not be negative, got %d", *v)
		}
		t.MinEvidenceTokens = *v
	}
	if v := r.MaxSpansPerArtifact; v != nil {
		if *v < 1 {
			return req, fmt.Errorf("max_spans_per_artifact: must be at least 1, got %d", *v)
		}
		t.MaxSpansPerArtifact = *v
	}
	if v := r.DiversityDecay; v != nil {
		if !(*v >= 0 && *v <= 1) {
			return req, fmt.Errorf("diversity_decay: must be between 0 and 1, got %v", *v)
		}
		t.DiversityDecay = *v
	}
	if v := r.RedundancyJaccard; v != nil {
		if !(*v > 0 && *v <= 1) {
			return req, fmt.Errorf("redundancy_jaccard_threshold: must be in (0, 1], got %v", *v)
		}
		t.RedundancyJaccard = *v
	}
	if v := r.TemporalHalfLifeHours; v != nil {
		if !(*v > 0) {
			return req, fmt.Errorf("temporal_half_life_hours: must be positive, got %v", *v)
		}
		t.TemporalHalfLifeHours = *v
	}
	if v2 {
		req.Profile = pack.ProfileBalanced
		if profile != nil {
			req.Profile = *profile
		}
		t.MinRelevance = pack.ProfileMinRelevance(req.Profile)
	}
	if v := r.MinRelevance; v != nil {
		if !(*v >= 0 && *v <= 1) {
			return req, fmt.Errorf("min_relevance: must be between 0 and 1, got %v", *v)
		}
		t.MinRelevance = *v
	}
	req.Tuning = t
	if req.RerankDepth, err = depthOption("rerank_depth", "reranks", r.RerankDepth, req.Profile); err != nil {
		return req, err
	}
	if req.LateDepth, err = depthOption("late_depth", "runs late interaction", r.LateDepth, req.Profile); err != nil {
		return req, err
	}
	return req, nil
}

// depthOption checks a pack's depth field (rerank_depth, late_depth): 0 to
// retrieval.MaxRerankDepth, and 0 in the low_latency profile, which never
// does what it asks for; nil is 0.
func depthOption(field, does string, v *int, profile string) (int, error) {
	switch {
	case v == nil:
		return 0, nil
	case *v < 0 || *v > retrieval.MaxRerankDepth:
		return 0, fmt.Errorf("%s: must be between 0 and %d, got %d", field, retrieval.MaxRerankDepth, *v)
	case *v > 0 && profile == pack.ProfileLowLatency:
		return 0, fmt.Errorf("%s: the low_latency profile never %s; use balanced or high_recall, or leave %s out", field, does, field)
	}
	return *v, nil
}

// packWindow parses a pack's since and until into req: ISO 8601 as the
// artifact listing parses them (ParseTime), both inclusive; since after
// until is refused, naming both.
func packWindow(since, until *string, req *retrieval.PackRequest) error {
	for _, f := range []struct {
		name string
		v    *string
		dst  **int64
	}{{"since", since, &req.Since}, {"until", until, &req.Until}} {
		if f.v == nil {
			continue
		}
		t, err := ParseTime(f.name, *f.v)
		if err != nil {
			return err
		}
		us := t.UnixMicro()
		*f.dst = &us
	}
	return checkWindow(req)
}

// checkWindow refuses a window that ends before it starts.
func checkWindow(req *retrieval.PackRequest) error {
	if req.Since != nil && req.Until != nil && *req.Since > *req.Until {
		return &InvalidError{Field: "since", Reason: fmt.Sprintf("%s is after until (%s): the window is empty",
			FormatTime(time.UnixMicro(*req.Since)), FormatTime(time.UnixMicro(*req.Until)))}
	}
	return nil
}

// CheckPackRequest is the validation of a converted pack request, after
// the checks of its conversion (which a transport's JSON needs) and the
// workspace's routing: errors name the API's fields. Benchmarks and tests
// that build a retrieval.PackRequest themselves may call it; the packer
// does not check again.
func CheckPackRequest(req *retrieval.PackRequest) error {
	if err := engine.CheckID("workspace_id", req.Workspace, true); err != nil {
		return err
	}
	if req.Query == "" {
		return &InvalidError{Field: "query", Reason: "is required and must not be empty"}
	}
	if len(req.Query) > 16<<10 {
		return &InvalidError{Field: "query", Reason: "is longer than 16384 bytes"}
	}
	// 0 is the default, retrieval.DefaultPackTokens.
	if req.MaxTokens != 0 && (req.MaxTokens < 1 || req.MaxTokens > retrieval.MaxPackTokens) {
		return &InvalidError{Field: "max_tokens", Reason: fmt.Sprintf("must be between 1 and %d, got %d", retrieval.MaxPackTokens, req.MaxTokens)}
	}
	if err := engine.CheckID("actor_id", req.ActorID, false); err != nil {
		return err
	}
	if err := engine.CheckID("session_id", req.SessionID, false); err != nil {
		return err
	}
	switch req.Mode {
	case "", "relevance", "coverage":
	default:
		return &InvalidError{Field: "mode", Reason: fmt.Sprintf("unknown value %q; allowed: relevance, coverage", req.Mode)}
	}
	switch req.Policy.PrivacyLevel {
	case "", pack.PrivacyDefault, pack.PrivacyStrict:
	default:
		return &InvalidError{Field: "policy.privacy_level", Reason: fmt.Sprintf("unknown value %q; allowed: default, strict", req.Policy.PrivacyLevel)}
	}
	if err := engine.CheckMetadata("metadata", req.Metadata); err != nil {
		return err
	}
	if err := checkWindow(req); err != nil {
		return err
	}
	switch req.Profile {
	case "", pack.ProfileLowLatency, pack.ProfileBalanced, pack.ProfileHighRecall:
	default:
		return &InvalidError{Field: "profile", Reason: fmt.Sprintf("unknown value %q; allowed: low_latency, balanced, high_recall", req.Profile)}
	}
	return nil
}

// PackResult is a context pack with what it adds to the tenant's usage.
type PackResult struct {
	*retrieval.PackResponse
	Usage UsageDelta
}

// Pack builds a context pack from one of p's workspaces (POST
// /v1/context-pack, and /v2/context-pack when v2, which requires max_tokens
// and takes r.Profile; a v1 transport leaves Profile nil). The pack ends
// early, with ctx's error, when ctx ends (its client has gone).
func (s *Service) Pack(ctx context.Context, p Principal, r PackV2Request, v2 bool) (PackResult, error) {
	req, err := r.retrievalRequest(v2, r.Profile)
	if err != nil {
		return PackResult{}, invalid(err)
	}
	if r.AsOf != nil && *r.AsOf == AsOfNow {
		req.AsOf = s.cfg.Now().UnixMicro()
	}
	if r.LateDepth == nil && s.cfg.LateInteraction != nil && !(v2 && req.Profile == pack.ProfileLowLatency) {
		// The server's default: within the span limit when there is one,
		// else in v2 packs only.
		if s.cfg.LateInteractionMaxSpans > 0 || v2 {
			req.LateDepth = min(s.cfg.LateInteractionDepth, retrieval.MaxRerankDepth)
			req.LateMaxSpans = s.cfg.LateInteractionMaxSpans
		}
	}
	db, err := s.workspaceEngine(p.TenantID, req.Workspace)
	if err != nil {
		return PackResult{}, err
	}
	if err := CheckPackRequest(&req); err != nil {
		return PackResult{}, err
	}
	res, err := s.packer.ContextPackIn(ctx, db, p.TenantID, req)
	if err != nil {
		return PackResult{}, err
	}
	return PackResult{PackResponse: res, Usage: UsageDelta{Packs: 1, Tokens: uint64(res.Result.TotalTokens)}}, nil
}

// Packer returns the service's packer (its pack counters feed metrics).
func (s *Service) Packer() *retrieval.Packer { return s.packer }

// PackV1Response is a v1 context pack as the API returns it.
type PackV1Response struct {
	ContextText    string          `json:"context_text"`
	PrefixText     string          `json:"prefix_text"`
	WorkingSetText string          `json:"working_set_text"`
	Citations      []pack.Citation `json:"citations"`
	Confidence     float64         `json:"confidence"`
	AbstainFlag    bool            `json:"abstain_flag"`
	AbstainReason  *string         `json:"abstain_reason"`
	ReceiptID      uuid.UUID       `json:"receipt_id"`
	TotalTokens    int             `json:"total_tokens"`
	PackHash       string          `json:"pack_hash"`
	Conflicts      []pack.Conflict `json:"conflicts"`
}

// PackV2Response is a v2 context pack as the API returns it.
type PackV2Response struct {
	Snippets        []pack.Snippet `json:"snippets"`
	PackHash        string         `json:"pack_hash"`
	ServingProfile  string         `json:"serving_profile"`
	TokenAccounting struct {
		Budget   int `json:"budget"`
		Used     int `json:"used"`
		Snippets int `json:"snippets"`
	} `json:"token_accounting"`
	CitationCount int       `json:"citation_count"`
	ReceiptID     uuid.UUID `json:"receipt_id"`
	Confidence    float64   `json:"confidence"`
	AbstainFlag   bool      `json:"abstain_flag"`
	Assumptions   []string  `json:"assumptions"`
	// ContextText and Conflicts extend the contract's v2 pack (which has
	// neither): the text to inject, with its dated [cite:N] lines, and the
	// conflicts among the snippets, as v1 returns them.
	ContextText string          `json:"context_text"`
	Conflicts   []pack.Conflict `json:"conflicts"`
}

// V1 is the pack as a v1 response.
func (r PackResult) V1() PackV1Response {
	res := r.Result
	return PackV1Response{ContextText: res.ContextText, PrefixText: res.PrefixText, WorkingSetText: res.WorkingSetText,
		Citations: res.Citations, Confidence: res.Confidence, AbstainFlag: res.Abstain, AbstainReason: optional(res.AbstainReason),
		ReceiptID: r.ReceiptID, TotalTokens: res.TotalTokens, PackHash: res.PackHash, Conflicts: res.Conflicts}
}

// V2 is the pack as a v2 response: snippets, and the number of distinct
// artifacts cited.
func (r PackResult) V2() PackV2Response {
	res := r.Result
	out := PackV2Response{Snippets: pack.Snippets(res), PackHash: res.PackHash, ServingProfile: r.ServingProfile,
		ReceiptID: r.ReceiptID, Confidence: res.Confidence, AbstainFlag: res.Abstain, Assumptions: res.Assumptions,
		ContextText: res.ContextText, Conflicts: res.Conflicts}
	out.TokenAccounting.Budget = res.TokenAccounting.Budget
	out.TokenAccounting.Used = res.TotalTokens
	out.TokenAccounting.Snippets = len(out.Snippets)
	artifacts := map[uuid.UUID]bool{}
	for _, cit := range res.Citations {
		artifacts[cit.ArtifactID] = true
	}
	out.CitationCount = len(artifacts)
	return out
}
