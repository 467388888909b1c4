package service

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/engine"
)

// Artifact indexing states (ArtifactStatus, Artifact).
const (
	StatusPending  = "pending"
	StatusIndexing = "indexing"
	StatusIndexed  = "indexed"
	StatusFailed   = "failed"
)

// SpanJSON is one span of an artifact.
type SpanJSON struct {
	SpanID      uuid.UUID `json:"span_id"`
	StartOffset uint32    `json:"start_offset"`
	EndOffset   uint32    `json:"end_offset"`
	TokenCount  uint32    `json:"token_count"`
	Text        string    `json:"text"` // the extracted text from StartOffset to EndOffset
}

// ArtifactResult is one artifact (GET /v1/artifacts/{id}). Its raw_payload
// is kept out of encoding/json, which would re-indent it: encode it with
// JSON, which puts the payload in byte for byte as it was ingested.
type ArtifactResult struct {
	ArtifactID     uuid.UUID         `json:"artifact_id"`
	WorkspaceID    string            `json:"workspace_id"`
	ActorID        string            `json:"actor_id"`
	ArtifactType   string            `json:"artifact_type"`
	RawPayload     json.RawMessage   `json:"-"`
	ContentHash    string            `json:"content_hash"`
	Timestamp      string            `json:"timestamp"`
	Created        string            `json:"created"`
	Permissions    PermissionsJSON   `json:"permissions"`
	IdempotencyKey *string           `json:"idempotency_key"`
	SessionID      *string           `json:"session_id"`
	ThreadID       *string           `json:"thread_id"`
	Metadata       map[string]string `json:"metadata"`
	Status         string            `json:"status"`
	Spans          []SpanJSON        `json:"spans"`
}

// JSON encodes a as the API returns it: raw_payload first, exactly as it
// was ingested, then the other fields.
func (a *ArtifactResult) JSON() ([]byte, error) {
	rest, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	return spliceRaw(rest, "raw_payload", a.RawPayload), nil
}

// metadataOf is metadata as results show it: an object, {} when none.
func metadataOf(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func permissionsOf(p artifact.Permissions) PermissionsJSON {
	vis := p.Visibility
	if vis == "" {
		vis = "public"
	}
	return PermissionsJSON{Visibility: vis, AllowedActors: nonNil(p.AllowedActors), DeniedActors: nonNil(p.DeniedActors), RBACTags: nonNil(p.RBACTags)}
}

// errArtifactNotFound answers every artifact that is not the caller's,
// not stored, already erased, or named by a malformed id alike, so that
// ids do not leak.
var errArtifactNotFound = &Error{Kind: ErrNotFound, Detail: "artifact not found"}

// found is an artifact: stored (a and spans set), or accepted by an
// asynchronous job and not stored yet (job set).
type found struct {
	id    uuid.UUID
	db    *engine.DB // the engine that holds a
	a     *artifact.Artifact
	spans []artifact.Span
	job   control.Job
}

// findArtifact resolves an artifact id for p's tenant.
func (s *Service) findArtifact(p Principal, artifactID string) (found, error) {
	id, err := uuid.Parse(artifactID)
	if err != nil {
		return found{}, errArtifactNotFound
	}
	db, a, err := s.artifact(p.TenantID, id)
	if errors.Is(err, engine.ErrNotFound) {
		// A job done whose artifact is not found: the artifact was erased.
		if j, ok := s.ctl.JobByArtifact(p.TenantID, id); ok && j.Status != control.StatusDone {
			return found{id: id, job: j}, nil
		}
		return found{}, errArtifactNotFound
	}
	if err != nil {
		return found{}, err
	}
	spans, err := db.ArtifactSpans(p.TenantID, id)
	if err != nil {
		return found{}, err
	}
	return found{id: id, db: db, a: a, spans: spans}, nil
}

// Artifact returns one of p's artifacts with its payload and spans; one
// accepted by an asynchronous job and not indexed yet comes from its job
// (no spans yet).
func (s *Service) Artifact(p Principal, artifactID string) (ArtifactResult, error) {
	f, err := s.findArtifact(p, artifactID)
	if err != nil {
		return ArtifactResult{}, err
	}
	if f.a == nil {
		// Accepted for asynchronous indexing and not indexed yet: the raw
		// artifact is stored in its job until it is.
		in, ji, err := decodeJobInput(f.job.Input)
		if err != nil {
			return ArtifactResult{}, refuse(ErrNotFound, "artifact not found (its indexing job failed; see its status)")
		}
		return ArtifactResult{ArtifactID: f.id, WorkspaceID: in.Workspace, ActorID: in.ActorID,
			ArtifactType: in.Type, RawPayload: rawOrNull(in.Payload), ContentHash: hashString(artifact.ContentHash(in.Payload)),
			Timestamp: FormatTime(in.Timestamp), Created: FormatTime(time.UnixMicro(ji.AcceptedAt)), Permissions: permissionsOf(in.Permissions),
			IdempotencyKey: optional(in.IdempotencyKey), SessionID: optional(in.SessionID), ThreadID: optional(in.ThreadID),
			Metadata: metadataOf(in.Metadata), Status: jobArtifactStatus(f.job), Spans: []SpanJSON{}}, nil
	}
	a := f.a
	out := ArtifactResult{ArtifactID: a.ID, WorkspaceID: a.Workspace, ActorID: a.ActorID, ArtifactType: a.Type,
		RawPayload: rawOrNull(a.Payload), ContentHash: hashString(a.ContentHash), Timestamp: FormatTime(time.UnixMicro(a.Timestamp)),
		Created: FormatTime(time.UnixMicro(a.IngestedAt)), Permissions: permissionsOf(a.Permissions),
		IdempotencyKey: optional(a.IdempotencyKey), SessionID: optional(a.SessionID), ThreadID: optional(a.ThreadID),
		Metadata: metadataOf(a.Metadata), Status: StatusIndexed, Spans: make([]SpanJSON, len(f.spans))}
	for i, sp := range f.spans {
		out.Spans[i] = SpanJSON{sp.ID, sp.Start, sp.End, sp.Tokens, sp.Text}
	}
	return out, nil
}

func rawOrNull(b []byte) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

func jobArtifactStatus(j control.Job) string {
	switch j.Status {
	case control.StatusPending:
		return StatusPending
	case control.StatusProcessing:
		return StatusIndexing
	case control.StatusFailed:
		return StatusFailed
	}
	return StatusIndexed
}

// ArtifactStatusResult is where an artifact's indexing stands
// (GET /v1/artifacts/{id}/status).
type ArtifactStatusResult struct {
	ArtifactID   uuid.UUID `json:"artifact_id"`
	WorkspaceID  string    `json:"workspace_id"`
	ArtifactType *string   `json:"artifact_type"`
	Status       string    `json:"status"`
	Indexed      bool      `json:"indexed"`
	SpanCount    int       `json:"span_count"`
	TotalTokens  int       `json:"total_tokens"`
	IndexedAt    *string   `json:"indexed_at"`
	ErrorMessage *string   `json:"error_message"`
	// Embedding is the semantic channel's state: none (no embedder),
	// pending (embedded in the background soon), embedded, failed.
	Embedding string `json:"embedding"`
}

// ArtifactStatus returns where one of p's artifacts stands: indexed, or
// pending, indexing or failed in its asynchronous job.
func (s *Service) ArtifactStatus(p Principal, artifactID string) (ArtifactStatusResult, error) {
	f, err := s.findArtifact(p, artifactID)
	if err != nil {
		return ArtifactStatusResult{}, err
	}
	if f.a == nil {
		out := ArtifactStatusResult{ArtifactID: f.id, WorkspaceID: f.job.Workspace, Status: jobArtifactStatus(f.job), Embedding: engine.EmbeddingPending}
		if f.job.Status == control.StatusFailed {
			out.Embedding = engine.EmbeddingNone
		}
		if in, _, err := decodeJobInput(f.job.Input); err == nil {
			out.ArtifactType = optional(in.Type)
		}
		if f.job.Status == control.StatusFailed {
			out.ErrorMessage = optional(f.job.ErrorMessage)
		}
		return out, nil
	}
	total := 0
	for _, sp := range f.spans {
		total += int(sp.Tokens)
	}
	at := FormatTime(time.UnixMicro(f.a.IngestedAt))
	emb, err := f.db.EmbeddingState(p.TenantID, f.id)
	if err != nil {
		return ArtifactStatusResult{}, err
	}
	return ArtifactStatusResult{ArtifactID: f.id, WorkspaceID: f.a.Workspace, ArtifactType: optional(f.a.Type),
		Status: StatusIndexed, Indexed: true, SpanCount: len(f.spans), TotalTokens: total, IndexedAt: &at, Embedding: emb}, nil
}

// ErasedArtifact is what erasing one artifact removed.
type ErasedArtifact struct {
	ArtifactID      uuid.UUID `json:"artifact_id"`
	ArtifactsErased int       `json:"artifacts_erased"`
	SpansErased     int       `json:"spans_erased"`
	WorkspaceID     string    `json:"workspace_id"`
}

// EraseArtifact erases one of p's artifacts: unreadable at once, gone
// from disk after compaction. An id that is not p's, not stored or already
// erased is ErrNotFound (the same answer, so ids do not leak); an artifact
// still waiting in an unfinished indexing job is ErrConflict (retry once
// the job is done).
func (s *Service) EraseArtifact(p Principal, artifactID string) (ErasedArtifact, error) {
	id, err := uuid.Parse(artifactID)
	if err != nil {
		return ErasedArtifact{}, errArtifactNotFound
	}
	// An unfinished job is refused before erasing, not only when its
	// artifact is not stored yet: between the job's ingest and its durable
	// "done" the artifact is readable, and a crash there resumes the job,
	// which would store the erased artifact again. A job's status turns
	// done in memory only once its record is durable.
	if j, ok := s.ctl.JobByArtifact(p.TenantID, id); ok && (j.Status == control.StatusPending || j.Status == control.StatusProcessing) {
		return ErasedArtifact{}, refuse(ErrConflict, "artifact is still being indexed by job %s; erase it once the job is done", j.ID)
	}
	db, _, err := s.artifact(p.TenantID, id)
	if err == nil {
		var res engine.ArtifactErasure
		res, err = db.EraseArtifact(p.TenantID, id)
		return erasedArtifact(id, res, err)
	}
	return erasedArtifact(id, engine.ArtifactErasure{}, err)
}

// erasedArtifact is EraseArtifact's answer to the engine's.
func erasedArtifact(id uuid.UUID, res engine.ArtifactErasure, err error) (ErasedArtifact, error) {
	if errors.Is(err, engine.ErrNotFound) {
		return ErasedArtifact{}, errArtifactNotFound
	}
	if err != nil {
		return ErasedArtifact{}, err
	}
	return ErasedArtifact{ArtifactID: id, WorkspaceID: res.Workspace, ArtifactsErased: 1, SpansErased: res.Spans}, nil
}
