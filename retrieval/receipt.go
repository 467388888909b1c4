package retrieval

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/engine"
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
		// RerankDepth likewise: requests that rerank nothing keep their ids.
		RerankDepth int `json:",omitempty"`
		// LateDepth likewise.
		LateDepth int `json:",omitempty"`
		// Since and Until likewise: two windows never share an id.
		Since *int64 `json:",omitempty"`
		Until *int64 `json:",omitempty"`
	}{req.Query, req.ActorID, req.SessionID, req.Mode, req.Profile, req.MaxTokens, p, req.AsOf, req.Tuning, req.MaxLatencyMs, req.MaxCostUSD,
		req.Metadata, req.RerankDepth, req.LateDepth, req.Since, req.Until}
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
		Since                *string                    `json:"since,omitempty"`
		Until                *string                    `json:"until,omitempty"`
		QueryWindows         []queryWindow              `json:"query_windows,omitempty"`
	}{id, req.Query, now.Format(time.RFC3339Nano), req.Workspace, req.ActorID, res.Citations, res.ChannelContributions,
		res.Exclusions, res.Conflicts, res.TokenAccounting, res.Confidence, res.Abstain, reason, res.Assumptions, policy,
		res.PackHash, req.Mode, profile, req.MaxLatencyMs, req.MaxCostUSD, version, req.Metadata, windowTime(req.Since), windowTime(req.Until),
		receiptWindows(res.Windows)})
}

// windowTime is a window bound as the receipt shows it (RFC 3339, UTC),
// nil when unbounded.
func windowTime(us *int64) *string {
	if us == nil {
		return nil
	}
	s := pack.FormatTime(*us)
	return &s
}

// queryWindow is a time the query names as a receipt shows it (an
// extension of the contract: docs/openapi.yaml, Receipt.query_windows).
type queryWindow struct {
	Expression string `json:"expression"`
	Start      string `json:"start"`
	End        string `json:"end"`
}

// receiptWindows is ws as the receipt shows them; nil when none.
func receiptWindows(ws []pack.Window) []queryWindow {
	var out []queryWindow
	for _, w := range ws {
		out = append(out, queryWindow{w.Expr, pack.FormatTime(w.Start), pack.FormatTime(w.End)})
	}
	return out
}

// The content previews of a receipt's citations are the first 160 code
// points of span texts that the workspace's segments hold, a third of a
// receipt's compressed size. They are stored as an empty string and a
// length (an engine.ReceiptCut), and rebuilt from the span when the receipt
// is read; the span's content hash, kept in the receipt, proves it is the
// text the pack saw. The stored form is docs/format/wal.md's (record type
// 17).

// previewKey opens a citation's preview in a receipt body.
const previewKey = `"content_preview":`

// stripPreviews replaces the preview of each citation in body (in
// citation order, after "evidence") by "" and returns where they were. A
// preview it cannot find exactly, or that is not a prefix of its span's
// text, leaves the body whole: such a receipt is stored as it is.
func stripPreviews(body []byte, cites []pack.Citation) ([]byte, []engine.ReceiptCut) {
	at := bytes.Index(body, []byte(`"evidence":[`))
	if len(cites) == 0 || at < 0 {
		return body, nil
	}
	out := make([]byte, 0, len(body))
	cuts := make([]engine.ReceiptCut, 0, len(cites))
	prev := 0
	for _, c := range cites {
		val, err := json.Marshal(c.ContentPreview)
		if err != nil || c.ContentPreview == "" || !strings.HasPrefix(c.Text, c.ContentPreview) {
			return body, nil
		}
		i := bytes.Index(body[at:], append([]byte(previewKey), val...))
		if i < 0 {
			return body, nil
		}
		i += at + len(previewKey)
		out = append(out, body[prev:i]...)
		cuts = append(cuts, engine.ReceiptCut{At: len(out), Len: len(c.ContentPreview)})
		out = append(out, `""`...)
		prev = i + len(val)
		at = prev
	}
	return append(out, body[prev:]...), cuts
}

var errPreview = errors.New("content preview cannot be rebuilt")

// SpanReader reads a span of one of tenant's artifacts, or engine.ErrNotFound
// (an *engine.DB is one).
type SpanReader interface {
	Span(tenant string, artifactID, spanID uuid.UUID) (artifact.Span, error)
}

// ReceiptBody returns a stored receipt's body as served: the previews
// stripPreviews left out put back, from the spans of r's tenant that db
// holds; the preview of a span whose artifact has been erased stays empty.
func ReceiptBody(db SpanReader, r engine.Receipt) ([]byte, error) {
	body, err := restorePreviews(db, r.Tenant, r.Body, r.Cuts)
	if err != nil {
		return nil, fmt.Errorf("retrieval: receipt %s: %w", r.ID, err)
	}
	return body, nil
}

// restorePreviews puts the previews stripPreviews left out back into a
// stored body.
func restorePreviews(db SpanReader, tenant string, stored []byte, cuts []engine.ReceiptCut) ([]byte, error) {
	if len(cuts) == 0 {
		return stored, nil
	}
	var r struct {
		Evidence []struct {
			ArtifactID  uuid.UUID `json:"artifact_id"`
			SpanID      uuid.UUID `json:"span_id"`
			ContentHash string    `json:"content_hash"`
		} `json:"evidence"`
	}
	if err := json.Unmarshal(stored, &r); err != nil {
		return nil, fmt.Errorf("stored body: %w", err)
	}
	if len(r.Evidence) != len(cuts) {
		return nil, fmt.Errorf("%w: %d citations, %d previews", errPreview, len(r.Evidence), len(cuts))
	}
	out := make([]byte, 0, len(stored)+len(cuts)*previewBytesHint)
	prev := 0
	for i, c := range cuts {
		e := r.Evidence[i]
		sp, err := db.Span(tenant, e.ArtifactID, e.SpanID)
		text := sp.Text
		switch {
		case errors.Is(err, engine.ErrNotFound):
			// The artifact was erased (or its workspace, or retention took
			// it): its text is gone, and so is the preview; it stays "".
			if c.At < prev || c.At+2 > len(stored) || string(stored[c.At:c.At+2]) != `""` {
				return nil, fmt.Errorf("%w: citation %d: misplaced preview", errPreview, i)
			}
			continue
		case err != nil:
			return nil, fmt.Errorf("%w: citation %d: %v", errPreview, i, err)
		case artifact.SpanHash(text) != e.ContentHash || c.Len > len(text) || c.At < prev || c.At+2 > len(stored) || string(stored[c.At:c.At+2]) != `""`:
			return nil, fmt.Errorf("%w: citation %d: span %s does not match", errPreview, i, e.SpanID)
		}
		val, err := json.Marshal(text[:c.Len])
		if err != nil {
			return nil, err
		}
		out = append(out, stored[prev:c.At]...)
		out = append(out, val...)
		prev = c.At + 2
	}
	return append(out, stored[prev:]...), nil
}

// previewBytesHint sizes the buffer of a rebuilt receipt body per preview.
const previewBytesHint = 200
