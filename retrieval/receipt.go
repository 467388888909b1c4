package retrieval

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/pack"
)

// receiptNamespace scopes receipt ids (UUIDs derived with SHA-256).
var receiptNamespace = uuid.MustParse("6f1c8a52-3c1e-4c7e-9a55-2b7f0b1d9e11")

// receiptID derives a receipt's id from the tenant, the workspace's data
// version, the canonical request and what the pack returned (its hash,
// which covers the context text and the citations, its confidence,
// abstention, tokens, exclusions and conflicts, and the profile served), so
// an identical request on identical data maps to one receipt, and two packs
// that differ in anything a client reads never share an id, whatever made
// them differ (a pack that read state its data version does not name would
// otherwise pass as the same decision).
func receiptID(tenant string, req PackRequest, version uint64, res *pack.Result, served string) uuid.UUID {
	canon, _ := json.Marshal(canonicalRequest(req))
	data := fmt.Appendf(nil, "%s\x00%s\x00%d\x00", tenant, req.Workspace, version)
	data = append(data, canon...)
	data = fmt.Appendf(data, "\x00%s\x00%x\x00%t\x00%s\x00%d\x00%d\x00%s", res.PackHash, math.Float64bits(res.Confidence),
		res.Abstain, res.AbstainReason, res.TotalTokens, len(res.Exclusions), served)
	for _, c := range res.Conflicts {
		data = fmt.Appendf(data, "\x00%s", c.ID)
	}
	return uuid.NewHash(sha256.New(), receiptNamespace, data, 8)
}

// canonicalRequest is a request with defaults applied and lists sorted.
func canonicalRequest(req PackRequest) any {
	p := req.Policy
	sorted := func(s []string) []string { c := slices.Clone(s); slices.Sort(c); return c }
	p.AllowedSources, p.DeniedSources, p.AllowedActors = sorted(p.AllowedSources), sorted(p.DeniedSources), sorted(p.AllowedActors)
	p.RBACRequired = sorted(p.RBACRequired)
	return struct {
		Query, Actor, Session, Mode, Profile string
		MaxTokens                            int
		Policy                               pack.Policy
		AsOf                                 int64
		Tuning                               pack.Tuning
		MaxLatencyMs, MaxCostUSD             *float64
		// Metadata is left out when empty, so that requests without a
		// filter keep the receipt ids they had before filters existed.
		// encoding/json writes map keys sorted: the order sent is irrelevant.
		Metadata map[string]string `json:",omitempty"`
	}{req.Query, req.ActorID, req.SessionID, req.Mode, req.Profile, req.MaxTokens, p, req.AsOf, req.Tuning, req.MaxLatencyMs, req.MaxCostUSD,
		req.Metadata}
}

// receiptBody is the full receipt as the receipts endpoint serves it.
func receiptBody(id uuid.UUID, req PackRequest, res *pack.Result, profile string, version uint64, now time.Time) ([]byte, error) {
	policy := res.PolicySummary
	var reason *string
	if res.AbstainReason != "" {
		reason = &res.AbstainReason
	}
	return json.Marshal(struct {
		ID                   uuid.UUID                  `json:"id"`
		Query                string                     `json:"query"`
		Timestamp            string                     `json:"timestamp"`
		WorkspaceID          string                     `json:"workspace_id"`
		ActorID              string                     `json:"actor_id"`
		Evidence             []pack.Citation            `json:"evidence"`
		ChannelContributions []pack.ChannelContribution `json:"channel_contributions"`
		Exclusions           []pack.Exclusion           `json:"exclusions"`
		Conflicts            []pack.Conflict            `json:"conflicts"`
		TokenAccounting      pack.TokenAccounting       `json:"token_accounting"`
		Confidence           float64                    `json:"confidence"`
		AbstainFlag          bool                       `json:"abstain_flag"`
		AbstainReason        *string                    `json:"abstain_reason"`
		Assumptions          []string                   `json:"assumptions"`
		PolicySummary        pack.Policy                `json:"policy_summary"`
		PackHash             string                     `json:"pack_hash"`
		Mode                 string                     `json:"mode"`
		ServingProfile       string                     `json:"serving_profile,omitempty"`
		MaxLatencyMs         *float64                   `json:"max_latency_ms"`
		MaxCostUSD           *float64                   `json:"max_cost_usd"`
		DataVersion          uint64                     `json:"data_version"`
		Metadata             map[string]string          `json:"metadata_filter,omitempty"`
	}{id, req.Query, now.Format(time.RFC3339Nano), req.Workspace, req.ActorID, res.Citations, res.ChannelContributions,
		res.Exclusions, res.Conflicts, res.TokenAccounting, res.Confidence, res.Abstain, reason, res.Assumptions, policy,
		res.PackHash, req.Mode, profile, req.MaxLatencyMs, req.MaxCostUSD, version, req.Metadata})
}
