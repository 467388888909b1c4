package httpd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/pack"
	"github.com/valyala/fasthttp"
)

// packRequest is a v1 context pack request as sent.
type packRequest struct {
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
	// Metadata restricts the pack to artifacts whose metadata holds
	// every given pair exactly.
	Metadata json.RawMessage `json:"metadata"`
}

// packV2Request is a v2 context pack request: v1's fields and profile.
type packV2Request struct {
	packRequest
	Profile *string `json:"profile"`
}

type policyJSON struct {
	AllowedSources []string `json:"allowed_sources"`
	DeniedSources  []string `json:"denied_sources"`
	AllowedActors  []string `json:"allowed_actors"`
	RBACRequired   []string `json:"rbac_required"`
	PrivacyLevel   string   `json:"privacy_level"`
}

// engineRequest validates a pack request and converts it. v2 requires
// max_tokens and takes profile.
func (r *packRequest) engineRequest(v2 bool, profile *string) (engine.PackRequest, error) {
	req := engine.PackRequest{Workspace: r.WorkspaceID, ActorID: r.ActorID, SessionID: r.SessionID, Mode: r.Mode,
		MaxLatencyMs: r.MaxLatencyMs, MaxCostUSD: r.MaxCostUSD}
	if r.Query == nil {
		return req, errors.New("query: is required")
	}
	req.Query = *r.Query
	if r.MaxTokens == nil {
		if v2 {
			return req, fmt.Errorf("max_tokens: is required (1 to %d)", engine.MaxPackTokens)
		}
	} else {
		if *r.MaxTokens < 1 || *r.MaxTokens > engine.MaxPackTokens {
			return req, fmt.Errorf("max_tokens: must be between 1 and %d, got %d", engine.MaxPackTokens, *r.MaxTokens)
		}
		req.MaxTokens = *r.MaxTokens
	}
	var p policyJSON
	if err := decodeStrict(r.Policy, "policy", &p); err != nil {
		return req, err
	}
	req.Policy = pack.Policy{AllowedSources: p.AllowedSources, DeniedSources: p.DeniedSources, AllowedActors: p.AllowedActors,
		RBACRequired: p.RBACRequired, PrivacyLevel: p.PrivacyLevel}
	md, err := decodeMetadata(r.Metadata, "metadata")
	if err != nil {
		return req, err
	}
	req.Metadata = md
	if r.AsOf != nil {
		t, err := parseTime("as_of", *r.AsOf)
		if err != nil {
			return req, err
		}
		req.AsOf = t.UnixMicro()
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
	req.Tuning = t
	if v2 {
		req.Profile = pack.ProfileBalanced
		if profile != nil {
			req.Profile = *profile
		}
	}
	return req, nil
}

// packTimeout bounds one pack (a remote query embedder is the slow part).
const packTimeout = 30 * time.Second

func (s *Server) runPack(ctx *fasthttp.RequestCtx, c *call, v2 bool) (*engine.PackResponse, bool) {
	// v1 decodes into packRequest alone, so that profile is unknown there.
	var r packV2Request
	var into any = &r.packRequest
	if v2 {
		into = &r
	}
	if err := decodeBody(ctx.PostBody(), into); err != nil {
		badRequest(ctx, err)
		return nil, false
	}
	req, err := r.engineRequest(v2, r.Profile)
	if err != nil {
		badRequest(ctx, err)
		return nil, false
	}
	if err := s.db.CheckWorkspace(c.who.TenantID, req.Workspace); err != nil {
		s.fail(ctx, err)
		return nil, false
	}
	// The pack ends early when its client goes away or the server stops,
	// so abandoned packs do not hold live ones up at admission.
	pctx, cancel := context.WithTimeout(s.base, packTimeout)
	defer cancel()
	stop := watchClient(ctx, cancel)
	defer stop()
	res, err := s.db.ContextPack(pctx, c.who.TenantID, req)
	if err != nil {
		s.fail(ctx, err)
		return nil, false
	}
	c.usage.Packs, c.usage.Tokens = 1, uint64(res.Result.TotalTokens)
	return res, true
}

type packV1Response struct {
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

func (s *Server) packV1(ctx *fasthttp.RequestCtx, c *call) {
	res, ok := s.runPack(ctx, c, false)
	if !ok {
		return
	}
	r := res.Result
	writeJSON(ctx, fasthttp.StatusOK, packV1Response{ContextText: r.ContextText, PrefixText: r.PrefixText, WorkingSetText: r.WorkingSetText,
		Citations: r.Citations, Confidence: r.Confidence, AbstainFlag: r.Abstain, AbstainReason: optional(r.AbstainReason),
		ReceiptID: res.ReceiptID, TotalTokens: r.TotalTokens, PackHash: r.PackHash, Conflicts: r.Conflicts})
}

type packV2Response struct {
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
}

func (s *Server) packV2(ctx *fasthttp.RequestCtx, c *call) {
	res, ok := s.runPack(ctx, c, true)
	if !ok {
		return
	}
	r := res.Result
	out := packV2Response{Snippets: pack.Snippets(r), PackHash: r.PackHash, ServingProfile: res.ServingProfile,
		ReceiptID: res.ReceiptID, Confidence: r.Confidence, AbstainFlag: r.Abstain, Assumptions: r.Assumptions}
	out.TokenAccounting.Budget = r.TokenAccounting.Budget
	out.TokenAccounting.Used = r.TotalTokens
	out.TokenAccounting.Snippets = len(out.Snippets)
	artifacts := map[uuid.UUID]bool{}
	for _, cit := range r.Citations {
		artifacts[cit.ArtifactID] = true
	}
	out.CitationCount = len(artifacts)
	writeJSON(ctx, fasthttp.StatusOK, out)
}
