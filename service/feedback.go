package service

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/pack"
)

// FeedbackRequest is one feedback event on a workspace's artifacts or
// spans (pin, demote, resolve a conflict, ...). Ids are as given and
// checked here.
type FeedbackRequest struct {
	WorkspaceID     string `json:"workspace_id"`
	ActorID         string `json:"actor_id"`
	Action          string `json:"action"`
	ArtifactID      string `json:"artifact_id"`
	SpanID          string `json:"span_id"`
	Reason          string `json:"reason"`
	ConflictID      string `json:"conflict_id"`
	PreferredSpanID string `json:"preferred_span_id"`
}

// FeedbackResult is a recorded feedback event.
type FeedbackResult struct {
	Action     string    `json:"action"`
	Applied    int       `json:"applied"`
	CreatedAt  string    `json:"created_at"`
	FeedbackID uuid.UUID `json:"feedback_id"`
}

// optionalID parses an optional UUID field.
func optionalID(field, v string) (uuid.UUID, error) {
	if v == "" {
		return uuid.Nil, nil
	}
	id, err := uuid.Parse(v)
	if err != nil {
		return uuid.Nil, &InvalidError{Field: field, Reason: fmt.Sprintf("%q is not a UUID", v)}
	}
	return id, nil
}

// Feedback records a feedback event in one of p's workspaces. An artifact,
// span or conflict it names that the workspace does not hold is
// ErrNotFound.
func (s *Service) Feedback(p Principal, r FeedbackRequest) (FeedbackResult, error) {
	in := engine.FeedbackInput{Workspace: r.WorkspaceID, ActorID: r.ActorID, Action: r.Action, Reason: r.Reason, ConflictID: r.ConflictID}
	db, err := s.workspaceEngine(p.TenantID, r.WorkspaceID)
	if err != nil {
		return FeedbackResult{}, err
	}
	if r.ArtifactID == "" && r.Action != engine.ActionResolveConflict {
		return FeedbackResult{}, &InvalidError{Field: "artifact_id", Reason: "is required"}
	}
	if in.ArtifactID, err = optionalID("artifact_id", r.ArtifactID); err != nil {
		return FeedbackResult{}, err
	}
	if in.SpanID, err = optionalID("span_id", r.SpanID); err != nil {
		return FeedbackResult{}, err
	}
	if in.PreferredSpanID, err = optionalID("preferred_span_id", r.PreferredSpanID); err != nil {
		return FeedbackResult{}, err
	}
	if err := checkFeedback(in); err != nil {
		return FeedbackResult{}, err
	}
	var res engine.FeedbackResult
	var stale []pack.Claim
	if in.Action == engine.ActionResolveConflict {
		if in.ConflictID != "" {
			stale, err = resolveConflict(db, p.TenantID, &in)
		}
		if err == nil {
			err = checkResolve(db, p.TenantID, in)
		}
	}
	if err == nil {
		res, err = db.Feedback(p.TenantID, in)
	}
	if err == nil && len(stale) > 0 {
		res.Applied, err = outdateStale(db, p.TenantID, in, stale, res.Applied)
	}
	if errors.Is(err, engine.ErrNotFound) {
		what := "artifact or span"
		if in.Action == engine.ActionResolveConflict {
			what = "conflict"
		}
		return FeedbackResult{}, refuse(ErrNotFound, "%s not found in workspace %s", what, strconv.Quote(in.Workspace))
	}
	if err != nil {
		return FeedbackResult{}, err
	}
	return FeedbackResult{FeedbackID: res.FeedbackID, Action: res.Action, Applied: res.Applied, CreatedAt: FormatTime(res.CreatedAt)}, nil
}

// checkFeedback checks a feedback event's fields that need no stored data
// (workspaceEngine checked workspace_id), before any lookup: errors name
// the API's fields, in the API's order. The engine's invariants
// (engine.FeedbackInput) are among them.
func checkFeedback(in engine.FeedbackInput) *InvalidError {
	// The contract does not require actor_id: feedback without one is
	// anonymous (private then hides the span from every actor).
	if err := engine.CheckID("actor_id", in.ActorID, false); err != nil {
		return err
	}
	if !slices.Contains(engine.FeedbackActions, in.Action) {
		return &InvalidError{Field: "action", Reason: fmt.Sprintf("unknown value %q; allowed: %v", in.Action, engine.FeedbackActions)}
	}
	if len(in.Reason) > engine.MaxReasonLength {
		return &InvalidError{Field: "reason", Reason: fmt.Sprintf("is longer than %d bytes", engine.MaxReasonLength)}
	}
	return nil
}

// checkResolve checks a resolve_conflict's conflict fields once the
// artifact whose marks change (in.ArtifactID: the request's, or the one
// resolveConflict set) is found in the workspace, else engine.ErrNotFound:
// the order the API has always had.
func checkResolve(db *engine.DB, tenant string, in engine.FeedbackInput) error {
	a, err := db.Artifact(tenant, in.ArtifactID)
	if err != nil {
		return err
	}
	if a.Workspace != in.Workspace {
		return engine.ErrNotFound // ids of other workspaces do not leak either
	}
	if in.ConflictID == "" {
		return &InvalidError{Field: "conflict_id", Reason: "is required for resolve_conflict"}
	}
	x, y := in.ConflictSpans[0], in.ConflictSpans[1]
	if x == uuid.Nil || y == uuid.Nil || x == y {
		return &InvalidError{Field: "conflict_id", Reason: "names no known conflict"}
	}
	if keep := preferredSpan(in); keep != x && keep != y {
		return &InvalidError{Field: "preferred_span_id", Reason: "is not one of the conflict's two spans"}
	}
	return nil
}

// preferredSpan is the span a resolve_conflict keeps: preferred_span_id, or
// span_id without it.
func preferredSpan(in engine.FeedbackInput) uuid.UUID {
	if in.PreferredSpanID != uuid.Nil {
		return in.PreferredSpanID
	}
	return in.SpanID
}

// resolveConflict prepares a resolve_conflict: it finds the conflict named
// by in.ConflictID in the workspace's receipts and sets the conflict's two
// spans and the artifact of the span made outdated (where the marks live),
// or returns engine.ErrNotFound. It also returns the other stale spans the
// same receipt shows (staleSpans): a value stated twice and then changed
// makes two conflicts, one per stale statement, and resolving one must not
// leave the other in later packs.
func resolveConflict(db *engine.DB, tenant string, in *engine.FeedbackInput) ([]pack.Claim, error) {
	rec, ok, err := findConflict(db, tenant, in.Workspace, in.ConflictID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, engine.ErrNotFound
	}
	claims := rec.claims
	in.ConflictSpans = [2]uuid.UUID{claims[0].SpanID, claims[1].SpanID}
	switch preferredSpan(*in) {
	case claims[0].SpanID:
		in.ArtifactID = claims[1].ArtifactID
		return rec.staleSpans(claims[0].SpanID, claims[1].SpanID), nil
	case claims[1].SpanID:
		in.ArtifactID = claims[0].ArtifactID
		return rec.staleSpans(claims[1].SpanID, claims[0].SpanID), nil
	}
	return nil, nil
}

// receiptConflicts is what a receipt says about one conflict and the
// spans around it.
type receiptConflicts struct {
	claims     [2]pack.Claim
	conflicts  []pack.Conflict
	exclusions []pack.Exclusion
}

// staleSpans returns, besides the outdated span drop, the spans the
// receipt shows stating what the kept span keep contradicts: the other
// claims of the receipt's other conflicts with keep, and the spans
// excluded as near-duplicates (REDUNDANCY) of drop or of those, which
// would take their place in the next pack. In receipt order, each once.
func (r *receiptConflicts) staleSpans(keep, drop uuid.UUID) []pack.Claim {
	var out []pack.Claim
	add := func(c pack.Claim) {
		if c.SpanID != keep && c.SpanID != drop && !slices.ContainsFunc(out, func(o pack.Claim) bool { return o.SpanID == c.SpanID }) {
			out = append(out, c)
		}
	}
	for _, c := range r.conflicts {
		switch keep {
		case c.ClaimA.SpanID:
			add(c.ClaimB)
		case c.ClaimB.SpanID:
			add(c.ClaimA)
		}
	}
	names := func(detail string, id uuid.UUID) bool { return strings.Contains(detail, "span "+id.String()+" ") }
	for _, e := range r.exclusions {
		if e.Reason == pack.ReasonRedundancy && (names(e.Detail, drop) || slices.ContainsFunc(out, func(o pack.Claim) bool { return names(e.Detail, o.SpanID) })) {
			add(pack.Claim{ArtifactID: e.ArtifactID, SpanID: e.SpanID})
		}
	}
	return out
}

// outdateStale marks the stale spans of a resolved conflict outdated, one
// feedback event each (the marks live with each span's artifact), and
// returns applied plus the spans they changed. A span erased since the
// receipt is skipped.
func outdateStale(db *engine.DB, tenant string, in engine.FeedbackInput, stale []pack.Claim, applied int) (int, error) {
	keep := preferredSpan(in)
	for _, c := range stale {
		res, err := db.Feedback(tenant, engine.FeedbackInput{Workspace: in.Workspace, ActorID: in.ActorID, Action: engine.ActionOutdated,
			ArtifactID: c.ArtifactID, SpanID: c.SpanID,
			Reason: fmt.Sprintf("resolve_conflict %s: contradicts span %s, which was preferred", in.ConflictID, keep)})
		if errors.Is(err, engine.ErrNotFound) {
			continue
		}
		if err != nil {
			return applied, err
		}
		applied += res.Applied
	}
	return applied, nil
}

// findConflict looks a conflict id up in a workspace's receipts, newest
// first: conflicts are found by packs, and every pack's receipt lists them
// (in the stored body, which only leaves content previews out). It
// returns the conflict's claims with the receipt's conflicts and
// exclusions.
func findConflict(db *engine.DB, tenant, ws, conflictID string) (*receiptConflicts, bool, error) {
	id, err := uuid.Parse(conflictID)
	if err != nil {
		return nil, false, nil
	}
	needle := []byte(id.String())
	page, err := db.ListReceipts(tenant, ws, "", 0, math.MaxInt)
	if err != nil {
		return nil, false, err
	}
	for _, listed := range page.Receipts {
		rec, err := db.GetReceipt(tenant, listed.ID)
		if errors.Is(err, engine.ErrNotFound) {
			continue // dropped since the listing (retention, erasure)
		}
		if err != nil {
			return nil, false, err
		}
		if !bytes.Contains(rec.Body, needle) {
			continue
		}
		var r struct {
			Conflicts  []pack.Conflict  `json:"conflicts"`
			Exclusions []pack.Exclusion `json:"exclusions"`
		}
		if err := json.Unmarshal(rec.Body, &r); err != nil {
			return nil, false, fmt.Errorf("service: receipt %s: %w", rec.ID, err)
		}
		for _, c := range r.Conflicts {
			if c.ID == id {
				return &receiptConflicts{claims: [2]pack.Claim{c.ClaimA, c.ClaimB}, conflicts: r.Conflicts, exclusions: r.Exclusions}, true, nil
			}
		}
	}
	return nil, false, nil
}

// ListReceiptsRequest asks for a page of a workspace's receipts, newest
// first, optionally those of one pack hash. Limit and Offset are as given
// (a query string's values); nil is absent.
type ListReceiptsRequest struct {
	WorkspaceID string  `json:"workspace_id"`
	PackHash    string  `json:"pack_hash"`
	Limit       *string `json:"limit"`  // 1 to 500, default 50
	Offset      *string `json:"offset"` // default 0
}

// ReceiptSummary is a receipt as a listing shows it, without its body.
type ReceiptSummary struct {
	ID          uuid.UUID `json:"id"`
	Query       string    `json:"query"`
	Timestamp   string    `json:"timestamp"`
	ActorID     string    `json:"actor_id"`
	Confidence  float64   `json:"confidence"`
	AbstainFlag bool      `json:"abstain_flag"`
	PackHash    string    `json:"pack_hash"`
	TotalTokens int       `json:"total_tokens"`
}

// ReceiptsPage is one page of receipts; Total counts them all.
type ReceiptsPage struct {
	Limit    int              `json:"limit"`
	Offset   int              `json:"offset"`
	Receipts []ReceiptSummary `json:"receipts"`
	Total    int              `json:"total"`
}

// ListReceipts returns a page of one of p's workspaces' receipts.
func (s *Service) ListReceipts(p Principal, r ListReceiptsRequest) (ReceiptsPage, error) {
	if r.WorkspaceID == "" {
		return ReceiptsPage{}, &InvalidError{Field: "workspace_id", Reason: "query parameter is required"}
	}
	db, err := s.workspaceEngine(p.TenantID, r.WorkspaceID)
	if err != nil {
		return ReceiptsPage{}, err
	}
	limit, offset := 50, 0
	if r.Limit != nil {
		n, err := strconv.Atoi(*r.Limit)
		if err != nil || n < 1 || n > 500 {
			return ReceiptsPage{}, &InvalidError{Field: "limit", Reason: fmt.Sprintf("must be an integer from 1 to 500, got %q", *r.Limit)}
		}
		limit = n
	}
	if r.Offset != nil {
		n, err := strconv.Atoi(*r.Offset)
		if err != nil || n < 0 {
			return ReceiptsPage{}, &InvalidError{Field: "offset", Reason: fmt.Sprintf("must be a non-negative integer, got %q", *r.Offset)}
		}
		offset = n
	}
	page, err := db.ListReceipts(p.TenantID, r.WorkspaceID, r.PackHash, offset, limit)
	if err != nil {
		return ReceiptsPage{}, err
	}
	out := make([]ReceiptSummary, len(page.Receipts))
	for i, r := range page.Receipts {
		out[i] = ReceiptSummary{r.ID, r.Query, FormatTime(time.UnixMicro(r.Timestamp)), r.ActorID, r.Confidence, r.Abstain, r.PackHash, r.TotalTokens}
	}
	return ReceiptsPage{Receipts: out, Total: page.Total, Limit: limit, Offset: offset}, nil
}

// Receipt returns one of p's receipts: the JSON body the pack made, as it
// was made (its content previews rebuilt; empty for erased artifacts).
func (s *Service) Receipt(p Principal, receiptID string) (json.RawMessage, error) {
	notFound := refuse(ErrNotFound, "receipt not found")
	id, err := uuid.Parse(receiptID)
	if err != nil {
		return nil, notFound
	}
	body, err := s.receipt(p.TenantID, id)
	if errors.Is(err, engine.ErrNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	return body, nil
}
