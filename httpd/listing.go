package httpd

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/engine"
	"github.com/valyala/fasthttp"
)

// Artifact listing page sizes.
const (
	defaultListLimit = 50
	maxListLimit     = 500
)

// queryParams reads the request's query parameters strictly, as bodies are
// read: a parameter the route does not know, or one given twice, is an
// error naming it. Values are returned by name.
func queryParams(ctx *fasthttp.RequestCtx, allowed ...string) (map[string]string, error) {
	out := map[string]string{}
	var err error
	ctx.QueryArgs().VisitAll(func(k, v []byte) {
		name := string(k)
		switch {
		case err != nil:
		case !slices.Contains(allowed, name):
			known := "none"
			if len(allowed) > 0 {
				known = strings.Join(allowed, ", ")
			}
			err = fmt.Errorf("%s: unknown query parameter; allowed here: %s", name, known)
		default:
			if _, dup := out[name]; dup {
				err = fmt.Errorf("%s: query parameter given more than once", name)
			}
			out[name] = string(v)
		}
	})
	return out, err
}

type workspaceJSON struct {
	WorkspaceID      string  `json:"workspace_id"`
	ArtifactCount    int     `json:"artifact_count"`
	SpanCount        int     `json:"span_count"`
	NewestArtifactAt *string `json:"newest_artifact_at"`
	DataVersion      uint64  `json:"data_version"`
}

// listWorkspaces answers GET /v1/workspaces: the caller's workspaces that
// hold artifacts, by id.
func (s *Server) listWorkspaces(ctx *fasthttp.RequestCtx, c *call) {
	if _, err := queryParams(ctx); err != nil {
		badRequest(ctx, err)
		return
	}
	list, err := s.db.Workspaces(c.who.tenant)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	out := make([]workspaceJSON, len(list))
	for i, w := range list {
		out[i] = workspaceJSON{WorkspaceID: w.Workspace, ArtifactCount: w.Artifacts, SpanCount: w.Spans, DataVersion: w.Version}
		if w.Newest != math.MinInt64 {
			at := formatTime(time.UnixMicro(w.Newest))
			out[i].NewestArtifactAt = &at
		}
	}
	writeJSON(ctx, fasthttp.StatusOK, map[string]any{"workspaces": out})
}

// artifactSummaryJSON is an artifact as a listing shows it: its metadata,
// without the payload (GET /v1/artifacts/{id} has it).
type artifactSummaryJSON struct {
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
		return engine.ListPosition{}, errors.New("cursor: not a cursor this API returned (pass next_cursor as is)")
	}
	return engine.ListPosition{Timestamp: int64(binary.BigEndian.Uint64(b[1:])), Seq: binary.BigEndian.Uint64(b[9:])}, nil
}

// listArtifacts answers GET /v1/workspaces/{workspace_id}/artifacts.
func (s *Server) listArtifacts(ctx *fasthttp.RequestCtx, c *call) {
	ws := c.params["workspace_id"]
	params, err := queryParams(ctx, "session_id", "actor_id", "artifact_type", "since", "until", "limit", "cursor")
	if err != nil {
		badRequest(ctx, err)
		return
	}
	if err := s.db.CheckWorkspace(c.who.tenant, ws); err != nil {
		s.fail(ctx, err)
		return
	}
	q := engine.ListQuery{Limit: defaultListLimit}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"session_id", &q.SessionID}, {"actor_id", &q.ActorID}, {"artifact_type", &q.Type}} {
		v, ok := params[f.name]
		if !ok {
			continue
		}
		if v == "" {
			badRequest(ctx, fmt.Errorf("%s: must not be empty (leave the parameter out to list all)", f.name))
			return
		}
		*f.dst = v
	}
	if q.Type != "" && !slices.Contains(artifact.Types, q.Type) {
		badRequest(ctx, fmt.Errorf("artifact_type: %q is not one of %s", q.Type, strings.Join(artifact.Types, ", ")))
		return
	}
	for _, f := range []struct {
		name string
		dst  *int64
		has  *bool
	}{{"since", &q.Since, &q.HasSince}, {"until", &q.Until, &q.HasUntil}} {
		v, ok := params[f.name]
		if !ok {
			continue
		}
		t, err := parseTime(f.name, v)
		if err != nil {
			badRequest(ctx, err)
			return
		}
		*f.dst, *f.has = t.UnixMicro(), true
	}
	if v, ok := params["limit"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxListLimit {
			badRequest(ctx, fmt.Errorf("limit: must be an integer from 1 to %d, got %q", maxListLimit, v))
			return
		}
		q.Limit = n
	}
	if v, ok := params["cursor"]; ok {
		if q.After, err = decodeCursor(v); err != nil {
			badRequest(ctx, err)
			return
		}
		q.HasAfter = true
	}
	page, err := s.db.ListArtifacts(c.who.tenant, ws, q)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	out := make([]artifactSummaryJSON, len(page.Artifacts))
	for i, a := range page.Artifacts {
		out[i] = artifactSummaryJSON{ArtifactID: a.ID, WorkspaceID: a.Workspace, ActorID: a.ActorID, ArtifactType: a.Type,
			ContentHash: hashString(a.ContentHash), Timestamp: formatTime(time.UnixMicro(a.Timestamp)),
			Created: formatTime(time.UnixMicro(a.IngestedAt)), IdempotencyKey: optional(a.IdempotencyKey),
			SessionID: optional(a.SessionID), ThreadID: optional(a.ThreadID), Metadata: metadataOf(a.Metadata)}
	}
	var next *string
	if page.More {
		cur := encodeCursor(engine.Position(page.Artifacts[len(page.Artifacts)-1]))
		next = &cur
	}
	writeJSON(ctx, fasthttp.StatusOK, map[string]any{"workspace_id": ws, "artifacts": out, "limit": q.Limit, "next_cursor": next})
}

// eraseArtifact answers DELETE /v1/artifacts/{artifact_id}: 200 with what
// was erased; an id that is not the caller's, not stored or already erased
// is 404 (the same answer, so ids do not leak); an artifact still waiting
// in an unfinished indexing job is 409 (retry once the job is done).
func (s *Server) eraseArtifact(ctx *fasthttp.RequestCtx, c *call) {
	if _, err := queryParams(ctx); err != nil {
		badRequest(ctx, err)
		return
	}
	id, err := uuid.Parse(c.params["artifact_id"])
	if err != nil {
		writeError(ctx, fasthttp.StatusNotFound, "artifact not found")
		return
	}
	// An unfinished job is refused before erasing, not only when its
	// artifact is not stored yet: between the job's ingest and its durable
	// "done" the artifact is readable, and a crash there resumes the job,
	// which would store the erased artifact again. A job's status turns
	// done in memory only once its record is durable.
	if j, ok := s.ctl.JobByArtifact(c.who.tenant, id); ok && (j.Status == control.StatusPending || j.Status == control.StatusProcessing) {
		writeError(ctx, fasthttp.StatusConflict, "artifact is still being indexed by job "+j.ID+"; erase it once the job is done")
		return
	}
	res, err := s.db.EraseArtifact(c.who.tenant, id)
	if errors.Is(err, engine.ErrNotFound) {
		writeError(ctx, fasthttp.StatusNotFound, "artifact not found")
		return
	}
	if err != nil {
		s.fail(ctx, err)
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, map[string]any{"artifact_id": id, "workspace_id": res.Workspace, "artifacts_erased": 1, "spans_erased": res.Spans})
}
