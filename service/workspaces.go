package service

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/pack"
)

// WorkspaceJSON is one workspace of a listing, with its counts.
type WorkspaceJSON struct {
	WorkspaceID      string  `json:"workspace_id"`
	ArtifactCount    int     `json:"artifact_count"`
	SpanCount        int     `json:"span_count"`
	NewestArtifactAt *string `json:"newest_artifact_at"`
	DataVersion      uint64  `json:"data_version"`
}

// WorkspacesResult lists workspaces.
type WorkspacesResult struct {
	Workspaces []WorkspaceJSON `json:"workspaces"`
	// Elsewhere names, when this node serves only some shards, where each
	// shard it does not serve is served: the transport gathers their
	// workspaces from there (ListWorkspacesOf) and merges them in (Merge).
	Elsewhere []*NotServedError `json:"-"`
}

// Merge adds workspaces listed elsewhere (a part of a tenant-wide listing
// gathered from another node) and keeps the listing sorted by id, so that
// a gathered listing is the listing a node serving every shard makes.
func (r *WorkspacesResult) Merge(parts ...[]WorkspaceJSON) {
	for _, p := range parts {
		r.Workspaces = append(r.Workspaces, p...)
	}
	slices.SortFunc(r.Workspaces, func(a, b WorkspaceJSON) int { return strings.Compare(a.WorkspaceID, b.WorkspaceID) })
}

// ListWorkspaces lists p's workspaces that hold artifacts, by id. When this
// node serves only some shards, Elsewhere says where the others are.
func (s *Service) ListWorkspaces(p Principal) (WorkspacesResult, error) {
	return s.listWorkspaces(p, nil)
}

// ListWorkspacesOf is ListWorkspaces restricted to some shards, all of
// them served here (a part of a listing another node gathers); a shard
// served elsewhere is a *NotServedError.
func (s *Service) ListWorkspacesOf(p Principal, shards []int) (WorkspacesResult, error) {
	if shards == nil {
		shards = []int{}
	}
	return s.listWorkspaces(p, shards)
}

func (s *Service) listWorkspaces(p Principal, only []int) (WorkspacesResult, error) {
	list, elsewhere, err := s.workspaces(p.TenantID, only)
	if err != nil {
		return WorkspacesResult{}, err
	}
	out := make([]WorkspaceJSON, len(list))
	for i, w := range list {
		out[i] = WorkspaceJSON{WorkspaceID: w.Workspace, ArtifactCount: w.Artifacts, SpanCount: w.Spans, DataVersion: w.Version}
		if w.Newest != math.MinInt64 {
			at := FormatTime(time.UnixMicro(w.Newest))
			out[i].NewestArtifactAt = &at
		}
	}
	return WorkspacesResult{Workspaces: out, Elsewhere: elsewhere}, nil
}

// Artifact listing page sizes.
const (
	DefaultListLimit = 50
	MaxListLimit     = 500
)

// ListArtifactsRequest asks for a page of a workspace's artifacts, newest
// first. The optional fields are as given (a query string's values): nil
// is absent, and an empty filter is refused rather than read as "all".
type ListArtifactsRequest struct {
	WorkspaceID  string  `json:"workspace_id"`
	SessionID    *string `json:"session_id"`
	ActorID      *string `json:"actor_id"`
	ArtifactType *string `json:"artifact_type"`
	Since        *string `json:"since"` // ISO 8601, inclusive
	Until        *string `json:"until"` // ISO 8601
	Limit        *string `json:"limit"` // 1 to MaxListLimit (default DefaultListLimit)
	Cursor       *string `json:"cursor"`
}

// ArtifactSummary is an artifact as a listing shows it: its metadata,
// without the payload (Artifact has it).
type ArtifactSummary struct {
	ArtifactID     uuid.UUID         `json:"artifact_id"`
	WorkspaceID    string            `json:"workspace_id"`
	ActorID        string            `json:"actor_id"`
	ArtifactType   string            `json:"artifact_type"`
	ContentHash    string            `json:"content_hash"`
	Timestamp      string            `json:"timestamp"`
	Created        string            `json:"created"`
	IdempotencyKey *string           `json:"idempotency_key"`
	SessionID      *string           `json:"session_id"`
	ThreadID       *string           `json:"thread_id"`
	Metadata       map[string]string `json:"metadata"`
	// Preview is the start of the artifact's text: the first
	// pack.PreviewLength code points of its first span (a chat turn's
	// starts with its speaker), as a citation's content_preview is of its
	// span; "" while it has no span.
	Preview string `json:"preview"`
}

// ArtifactsPage is one page of a listing; NextCursor (nil on the last
// page) continues it.
type ArtifactsPage struct {
	Artifacts   []ArtifactSummary `json:"artifacts"`
	Limit       int               `json:"limit"`
	NextCursor  *string           `json:"next_cursor"`
	WorkspaceID string            `json:"workspace_id"`
}

// cursorVersion leads every cursor, so its encoding can change.
const cursorVersion = 1

// encodeCursor makes the opaque cursor that continues a listing after p.
func encodeCursor(p engine.ListPosition) string {
	b := make([]byte, 0, 17)
	b = append(b, cursorVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(p.Timestamp))
	b = binary.BigEndian.AppendUint64(b, p.Seq)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(v string) (engine.ListPosition, error) {
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(b) != 17 || b[0] != cursorVersion || binary.BigEndian.Uint64(b[9:]) == 0 {
		return engine.ListPosition{}, &InvalidError{Field: "cursor", Reason: "not a cursor this API returned (pass next_cursor as is)"}
	}
	return engine.ListPosition{Timestamp: int64(binary.BigEndian.Uint64(b[1:])), Seq: binary.BigEndian.Uint64(b[9:])}, nil
}

// listQuery validates a listing request and converts it.
func listQuery(r ListArtifactsRequest) (engine.ListQuery, error) {
	q := engine.ListQuery{Limit: DefaultListLimit}
	for _, f := range []struct {
		name string
		v    *string
		dst  *string
	}{{"session_id", r.SessionID, &q.SessionID}, {"actor_id", r.ActorID, &q.ActorID}, {"artifact_type", r.ArtifactType, &q.Type}} {
		if f.v == nil {
			continue
		}
		if *f.v == "" {
			return q, &InvalidError{Field: f.name, Reason: "must not be empty (leave the parameter out to list all)"}
		}
		*f.dst = *f.v
	}
	if q.Type != "" && !slices.Contains(artifact.Types, q.Type) {
		return q, &InvalidError{Field: "artifact_type", Reason: fmt.Sprintf("%q is not one of %s", q.Type, strings.Join(artifact.Types, ", "))}
	}
	for _, f := range []struct {
		name string
		v    *string
		dst  *int64
		has  *bool
	}{{"since", r.Since, &q.Since, &q.HasSince}, {"until", r.Until, &q.Until, &q.HasUntil}} {
		if f.v == nil {
			continue
		}
		t, err := ParseTime(f.name, *f.v)
		if err != nil {
			return q, invalid(err)
		}
		*f.dst, *f.has = t.UnixMicro(), true
	}
	if r.Limit != nil {
		n, err := strconv.Atoi(*r.Limit)
		if err != nil || n < 1 || n > MaxListLimit {
			return q, &InvalidError{Field: "limit", Reason: fmt.Sprintf("must be an integer from 1 to %d, got %q", MaxListLimit, *r.Limit)}
		}
		q.Limit = n
	}
	if r.Cursor != nil {
		after, err := decodeCursor(*r.Cursor)
		if err != nil {
			return q, err
		}
		q.After, q.HasAfter = after, true
	}
	return q, nil
}

// ListArtifacts returns a page of one of p's workspaces' artifacts, newest
// first, filtered by session, actor, type and time.
func (s *Service) ListArtifacts(p Principal, r ListArtifactsRequest) (ArtifactsPage, error) {
	db, err := s.workspaceEngine(p.TenantID, r.WorkspaceID)
	if err != nil {
		return ArtifactsPage{}, err
	}
	q, err := listQuery(r)
	if err != nil {
		return ArtifactsPage{}, err
	}
	page, err := db.ListArtifacts(p.TenantID, r.WorkspaceID, q)
	if err != nil {
		return ArtifactsPage{}, err
	}
	out := make([]ArtifactSummary, len(page.Artifacts))
	for i, a := range page.Artifacts {
		out[i] = ArtifactSummary{ArtifactID: a.ID, WorkspaceID: a.Workspace, ActorID: a.ActorID, ArtifactType: a.Type,
			ContentHash: hashString(a.ContentHash), Timestamp: FormatTime(time.UnixMicro(a.Timestamp)),
			Created: FormatTime(time.UnixMicro(a.IngestedAt)), IdempotencyKey: optional(a.IdempotencyKey),
			SessionID: optional(a.SessionID), ThreadID: optional(a.ThreadID), Metadata: metadataOf(a.Metadata)}
		spans, err := db.ArtifactSpans(p.TenantID, a.ID)
		if err != nil && !errors.Is(err, engine.ErrNotFound) { // erased since the page was read: no preview
			return ArtifactsPage{}, err
		}
		if len(spans) > 0 {
			out[i].Preview = firstRunes(spans[0].Text, pack.PreviewLength)
		}
	}
	var next *string
	if page.More {
		cur := encodeCursor(engine.Position(page.Artifacts[len(page.Artifacts)-1]))
		next = &cur
	}
	return ArtifactsPage{WorkspaceID: r.WorkspaceID, Artifacts: out, Limit: q.Limit, NextCursor: next}, nil
}

// firstRunes is the first n code points of s.
func firstRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// ErasedWorkspace is what erasing a workspace removed.
type ErasedWorkspace struct {
	ArtifactsErased int    `json:"artifacts_erased"`
	FeedbackErased  int    `json:"feedback_erased"`
	ReceiptsErased  int    `json:"receipts_erased"`
	SpansErased     int    `json:"spans_erased"`
	WorkspaceID     string `json:"workspace_id"`
}

// EraseWorkspace erases one of p's workspaces: its artifacts, spans,
// feedback and receipts are unreadable at once; its unfinished jobs are
// cancelled (fenced, so a job being indexed stores nothing), and the
// workspace no longer counts against the plan.
func (s *Service) EraseWorkspace(p Principal, ws string) (ErasedWorkspace, error) {
	db, err := s.workspaceEngine(p.TenantID, ws)
	if err != nil {
		return ErasedWorkspace{}, err
	}
	res, err := db.EraseWorkspace(p.TenantID, ws)
	if err != nil {
		return ErasedWorkspace{}, err
	}
	if err := s.ctl.EraseWorkspaceJobs(p.TenantID, ws, res.Seq); err != nil {
		return ErasedWorkspace{}, err
	}
	if err := s.ctl.ReleaseWorkspace(p.TenantID, ws); err != nil {
		return ErasedWorkspace{}, err
	}
	return ErasedWorkspace{WorkspaceID: ws, ArtifactsErased: res.Artifacts, SpansErased: res.Spans,
		FeedbackErased: res.MarkedSpans, ReceiptsErased: res.Receipts}, nil
}

// SettingsResult is a workspace's settings. RetentionDays is null when no
// retention is set.
type SettingsResult struct {
	WorkspaceID   string `json:"workspace_id"`
	RetentionDays *int   `json:"retention_days"`
}

// Settings returns one of p's workspaces' settings. A workspace p never
// wrote has the default settings, as its listing is empty: workspaces are
// per tenant, so another tenant's are never seen.
func (s *Service) Settings(p Principal, ws string) (SettingsResult, error) {
	db, err := s.workspaceEngine(p.TenantID, ws)
	if err != nil {
		return SettingsResult{}, err
	}
	return settings(db, p.TenantID, ws)
}

func settings(db *engine.DB, tenant, ws string) (SettingsResult, error) {
	days, err := db.Retention(tenant, ws)
	if err != nil {
		return SettingsResult{}, err
	}
	out := SettingsResult{WorkspaceID: ws}
	if days > 0 {
		out.RetentionDays = &days
	}
	return out, nil
}

// SetSettingsRequest changes a workspace's settings. RetentionDays is the
// JSON value as given: required, a number of days from 1 to
// engine.MaxRetentionDays, or null to clear the retention.
type SetSettingsRequest struct {
	WorkspaceID   string          `json:"-"` // from the route, not the body
	RetentionDays json.RawMessage `json:"retention_days"`
}

// SetSettings changes one of p's workspaces' settings. They are durable
// when it returns, and artifacts the retention leaves behind are already
// hidden.
func (s *Service) SetSettings(p Principal, r SetSettingsRequest) (SettingsResult, error) {
	days := 0 // null clears
	switch {
	case r.RetentionDays == nil:
		return SettingsResult{}, &InvalidError{Field: "retention_days", Reason: "is required (null clears the retention)"}
	case !bytes.Equal(r.RetentionDays, []byte("null")):
		if err := DecodeJSON(r.RetentionDays, "retention_days", &days); err != nil {
			return SettingsResult{}, invalid(err)
		}
		if days < 1 || days > engine.MaxRetentionDays {
			return SettingsResult{}, &InvalidError{Field: "retention_days", Reason: fmt.Sprintf("must be between 1 and %d, or null to clear", engine.MaxRetentionDays)}
		}
	}
	db, err := s.workspaceEngine(p.TenantID, r.WorkspaceID)
	if err != nil {
		return SettingsResult{}, err
	}
	if err := db.SetRetention(p.TenantID, r.WorkspaceID, days); err != nil {
		return SettingsResult{}, err
	}
	return settings(db, p.TenantID, r.WorkspaceID)
}
