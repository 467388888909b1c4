package httpd

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/engine"
	"github.com/valyala/fasthttp"
)

// Artifact indexing states of the status endpoint.
const (
	statusPending  = "pending"
	statusIndexing = "indexing"
	statusIndexed  = "indexed"
	statusFailed   = "failed"
)

type spanJSON struct {
	SpanID      uuid.UUID `json:"span_id"`
	StartOffset uint32    `json:"start_offset"`
	EndOffset   uint32    `json:"end_offset"`
	TokenCount  uint32    `json:"token_count"`
}

// artifactJSON is an artifact as GET /v1/artifacts/{id} returns it, but for
// raw_payload, which writeArtifact puts in byte for byte (encoding/json would
// re-indent it).
type artifactJSON struct {
	ArtifactID     uuid.UUID         `json:"artifact_id"`
	WorkspaceID    string            `json:"workspace_id"`
	ActorID        string            `json:"actor_id"`
	ArtifactType   string            `json:"artifact_type"`
	RawPayload     json.RawMessage   `json:"-"`
	ContentHash    string            `json:"content_hash"`
	Timestamp      string            `json:"timestamp"`
	Created        string            `json:"created"`
	Permissions    permissionsJSON   `json:"permissions"`
	IdempotencyKey *string           `json:"idempotency_key"`
	SessionID      *string           `json:"session_id"`
	ThreadID       *string           `json:"thread_id"`
	Metadata       map[string]string `json:"metadata"`
	Status         string            `json:"status"`
	Spans          []spanJSON        `json:"spans"`
}

// metadataOf is metadata as responses show it: an object, {} when none.
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

func permissionsOf(p artifact.Permissions) permissionsJSON {
	vis := p.Visibility
	if vis == "" {
		vis = "public"
	}
	return permissionsJSON{Visibility: vis, AllowedActors: nonNil(p.AllowedActors), DeniedActors: nonNil(p.DeniedActors), RBACTags: nonNil(p.RBACTags)}
}

// found is the path's artifact: stored (a and spans set), or accepted by an
// asynchronous job and not stored yet (job set).
type found struct {
	id    uuid.UUID
	a     *artifact.Artifact
	spans []artifact.Span
	job   control.Job
}

// findArtifact resolves the path's artifact for the caller's tenant. It
// answers 404 itself (a malformed id is simply not found) and reports other
// failures.
func (s *Server) findArtifact(ctx *fasthttp.RequestCtx, c *call) (found, bool) {
	id, err := uuid.Parse(c.params["artifact_id"])
	if err != nil {
		writeError(ctx, fasthttp.StatusNotFound, "artifact not found")
		return found{}, false
	}
	a, err := s.db.Artifact(c.who.tenant, id)
	if errors.Is(err, engine.ErrNotFound) {
		// A job done whose artifact is not found: the artifact was erased.
		if j, ok := s.ctl.JobByArtifact(c.who.tenant, id); ok && j.Status != control.StatusDone {
			return found{id: id, job: j}, true
		}
		writeError(ctx, fasthttp.StatusNotFound, "artifact not found")
		return found{}, false
	}
	if err != nil {
		s.fail(ctx, err)
		return found{}, false
	}
	spans, err := s.db.ArtifactSpans(c.who.tenant, id)
	if err != nil {
		s.fail(ctx, err)
		return found{}, false
	}
	return found{id: id, a: a, spans: spans}, true
}

func (s *Server) getArtifact(ctx *fasthttp.RequestCtx, c *call) {
	f, ok := s.findArtifact(ctx, c)
	if !ok {
		return
	}
	if f.a == nil {
		// Accepted for asynchronous indexing and not indexed yet: the raw
		// artifact is stored in its job until it is.
		in, ji, err := decodeJobInput(f.job.Input)
		if err != nil {
			writeError(ctx, fasthttp.StatusNotFound, "artifact not found (its indexing job failed; see its status)")
			return
		}
		writeArtifact(ctx, artifactJSON{ArtifactID: f.id, WorkspaceID: in.Workspace, ActorID: in.ActorID,
			ArtifactType: in.Type, RawPayload: rawOrNull(in.Payload), ContentHash: hashString(artifact.ContentHash(in.Payload)),
			Timestamp: formatTime(in.Timestamp), Created: formatTime(time.UnixMicro(ji.AcceptedAt)), Permissions: permissionsOf(in.Permissions),
			IdempotencyKey: optional(in.IdempotencyKey), SessionID: optional(in.SessionID), ThreadID: optional(in.ThreadID),
			Metadata: metadataOf(in.Metadata), Status: jobArtifactStatus(f.job), Spans: []spanJSON{}})
		return
	}
	a := f.a
	out := artifactJSON{ArtifactID: a.ID, WorkspaceID: a.Workspace, ActorID: a.ActorID, ArtifactType: a.Type,
		RawPayload: rawOrNull(a.Payload), ContentHash: hashString(a.ContentHash), Timestamp: formatTime(time.UnixMicro(a.Timestamp)),
		Created: formatTime(time.UnixMicro(a.IngestedAt)), Permissions: permissionsOf(a.Permissions),
		IdempotencyKey: optional(a.IdempotencyKey), SessionID: optional(a.SessionID), ThreadID: optional(a.ThreadID),
		Metadata: metadataOf(a.Metadata), Status: statusIndexed, Spans: make([]spanJSON, len(f.spans))}
	for i, sp := range f.spans {
		out.Spans[i] = spanJSON{sp.ID, sp.Start, sp.End, sp.Tokens}
	}
	writeArtifact(ctx, out)
}

// writeArtifact writes a: its raw_payload exactly as it was ingested.
func writeArtifact(ctx *fasthttp.RequestCtx, a artifactJSON) {
	rest, err := json.Marshal(a)
	if err != nil {
		writeError(ctx, fasthttp.StatusInternalServerError, "internal error: response encoding failed")
		return
	}
	b := make([]byte, 0, len(rest)+len(a.RawPayload)+16)
	b = append(b, `{"raw_payload":`...)
	b = append(b, a.RawPayload...)
	b = append(b, ',')
	b = append(b, rest[1:]...)
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
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
		return statusPending
	case control.StatusProcessing:
		return statusIndexing
	case control.StatusFailed:
		return statusFailed
	}
	return statusIndexed
}

type statusJSON struct {
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

func (s *Server) artifactStatus(ctx *fasthttp.RequestCtx, c *call) {
	f, ok := s.findArtifact(ctx, c)
	if !ok {
		return
	}
	if f.a == nil {
		out := statusJSON{ArtifactID: f.id, WorkspaceID: f.job.Workspace, Status: jobArtifactStatus(f.job), Embedding: engine.EmbeddingPending}
		if f.job.Status == control.StatusFailed {
			out.Embedding = engine.EmbeddingNone
		}
		if in, _, err := decodeJobInput(f.job.Input); err == nil {
			out.ArtifactType = optional(in.Type)
		}
		if f.job.Status == control.StatusFailed {
			out.ErrorMessage = optional(f.job.ErrorMessage)
		}
		writeJSON(ctx, fasthttp.StatusOK, out)
		return
	}
	total := 0
	for _, sp := range f.spans {
		total += int(sp.Tokens)
	}
	at := formatTime(time.UnixMicro(f.a.IngestedAt))
	emb, err := s.db.EmbeddingState(c.who.tenant, f.id)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, statusJSON{ArtifactID: f.id, WorkspaceID: f.a.Workspace, ArtifactType: optional(f.a.Type),
		Status: statusIndexed, Indexed: true, SpanCount: len(f.spans), TotalTokens: total, IndexedAt: &at, Embedding: emb})
}
