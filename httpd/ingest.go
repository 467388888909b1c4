package httpd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/engine"
	"github.com/valyala/fasthttp"
)

// MaxBatch is the most artifacts one v2 ingest may carry.
const MaxBatch = 1000

// ingestItem is one artifact of an ingest request as sent.
type ingestItem struct {
	WorkspaceID    string          `json:"workspace_id"`
	ActorID        string          `json:"actor_id"`
	ArtifactType   string          `json:"artifact_type"`
	RawPayload     json.RawMessage `json:"raw_payload"`
	Timestamp      *string         `json:"timestamp"`
	Permissions    json.RawMessage `json:"permissions"`
	IdempotencyKey string          `json:"idempotency_key"`
	SessionID      string          `json:"session_id"`
	ThreadID       string          `json:"thread_id"`
	Metadata       json.RawMessage `json:"metadata"`
}

type permissionsJSON struct {
	Visibility    string   `json:"visibility"`
	AllowedActors []string `json:"allowed_actors"`
	DeniedActors  []string `json:"denied_actors"`
	RBACTags      []string `json:"rbac_tags"`
}

// input converts an item to the engine's form; now is the default timestamp.
func (it *ingestItem) input(now time.Time) (engine.IngestInput, error) {
	in := engine.IngestInput{Workspace: it.WorkspaceID, ActorID: it.ActorID, Type: it.ArtifactType,
		IdempotencyKey: it.IdempotencyKey, SessionID: it.SessionID, ThreadID: it.ThreadID, Timestamp: now}
	// New data only goes to workspaces whose ids are safe in a URL path.
	if err := engine.CheckWorkspaceID(it.WorkspaceID); err != nil {
		return in, err
	}
	if len(it.RawPayload) > 0 && string(it.RawPayload) != "null" {
		in.Payload = it.RawPayload
	}
	if it.Timestamp != nil {
		t, err := parseTime("timestamp", *it.Timestamp)
		if err != nil {
			return in, err
		}
		in.Timestamp = t
	}
	var p permissionsJSON
	if err := decodeStrict(it.Permissions, "permissions", &p); err != nil {
		return in, err
	}
	in.Permissions = artifact.Permissions{Visibility: p.Visibility, AllowedActors: p.AllowedActors, DeniedActors: p.DeniedActors, RBACTags: p.RBACTags}
	md, err := decodeMetadata(it.Metadata, "metadata")
	if err != nil {
		return in, err
	}
	in.Metadata = md
	return in, nil
}

// jobInput is what an asynchronous job stores: the artifact as accepted,
// its timestamp already resolved (the time of the ingest call, not of indexing).
type jobInput struct {
	Workspace      string               `json:"workspace_id"`
	ActorID        string               `json:"actor_id"`
	Type           string               `json:"artifact_type"`
	Payload        json.RawMessage      `json:"raw_payload,omitempty"`
	Timestamp      int64                `json:"timestamp_us"`
	Permissions    artifact.Permissions `json:"permissions"`
	IdempotencyKey string               `json:"idempotency_key,omitempty"`
	SessionID      string               `json:"session_id,omitempty"`
	ThreadID       string               `json:"thread_id,omitempty"`
	AcceptedAt     int64                `json:"accepted_us"`
	Metadata       map[string]string    `json:"metadata,omitempty"`
}

// encodeJobInput encodes in with raw_payload spliced in byte for byte:
// json.Marshal would compact a json.RawMessage, and the artifact must be
// stored exactly as sent.
func encodeJobInput(in engine.IngestInput, accepted time.Time) []byte {
	b, _ := json.Marshal(jobInput{in.Workspace, in.ActorID, in.Type, nil, in.Timestamp.UnixMicro(), in.Permissions,
		in.IdempotencyKey, in.SessionID, in.ThreadID, accepted.UnixMicro(), in.Metadata})
	if len(in.Payload) == 0 {
		return b
	}
	out := make([]byte, 0, len(b)+len(in.Payload)+16)
	out = append(out, `{"raw_payload":`...)
	out = append(out, in.Payload...)
	out = append(out, ',')
	return append(out, b[1:]...)
}

func decodeJobInput(b []byte) (engine.IngestInput, jobInput, error) {
	var j jobInput
	if err := json.Unmarshal(b, &j); err != nil {
		return engine.IngestInput{}, j, err
	}
	return engine.IngestInput{Workspace: j.Workspace, ActorID: j.ActorID, Type: j.Type, Payload: j.Payload,
		Timestamp: time.UnixMicro(j.Timestamp).UTC(), Permissions: j.Permissions, IdempotencyKey: j.IdempotencyKey,
		SessionID: j.SessionID, ThreadID: j.ThreadID, Metadata: j.Metadata}, j, nil
}

type ingestResponse struct {
	ArtifactID  uuid.UUID   `json:"artifact_id"`
	ContentHash string      `json:"content_hash"`
	Indexed     bool        `json:"indexed"`
	SpanIDs     []uuid.UUID `json:"span_ids"`
	Created     string      `json:"created"`
}

func (s *Server) ingestV1(ctx *fasthttp.RequestCtx, c *call) {
	var it ingestItem
	if err := decodeBody(ctx.PostBody(), &it); err != nil {
		badRequest(ctx, err)
		return
	}
	now := s.cfg.Now().UTC()
	in, err := it.input(now)
	if err != nil {
		badRequest(ctx, err)
		return
	}
	if err := s.db.Validate(in); err != nil {
		s.fail(ctx, err)
		return
	}
	if err := s.ctl.ClaimWorkspace(c.who.tenant, in.Workspace); err != nil {
		s.fail(ctx, err)
		return
	}
	if s.cfg.AsyncIndexing {
		s.ingestAsyncV1(ctx, c, in, now)
		return
	}
	res, err := s.db.Ingest(c.who.tenant, in)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	status := fasthttp.StatusCreated
	if res.Replayed {
		ctx.Response.Header.Set("Idempotent-Replay", "true")
		status = fasthttp.StatusOK
	} else {
		c.usage.Artifacts, c.usage.RawBytes = 1, uint64(len(in.Payload))
	}
	writeJSON(ctx, status, ingestResponse{ArtifactID: res.ArtifactID, ContentHash: hashString(res.ContentHash),
		Indexed: res.Indexed, SpanIDs: nonNilIDs(res.SpanIDs), Created: formatTime(res.Created)})
}

// ingestAsyncV1 is v1 ingest with ASYNC_INDEXING: the artifact is stored
// in a durable job and indexed in the background (indexed: false). A key
// already stored or pending answers with that artifact, as a replay.
func (s *Server) ingestAsyncV1(ctx *fasthttp.RequestCtx, c *call, in engine.IngestInput, now time.Time) {
	if in.IdempotencyKey != "" {
		id, ok, err := s.db.ArtifactByIdempotencyKey(c.who.tenant, in.Workspace, in.IdempotencyKey)
		if err != nil {
			s.fail(ctx, err)
			return
		}
		if ok {
			a, err := s.db.Artifact(c.who.tenant, id)
			if err != nil {
				s.fail(ctx, err)
				return
			}
			if diff := engine.IdempotencyDiff(a, &in); diff != nil {
				s.fail(ctx, &engine.IdempotencyConflictError{Field: "idempotency_key", Key: in.IdempotencyKey,
					Workspace: in.Workspace, ArtifactID: a.ID, Differs: diff})
				return
			}
			spans, err := s.db.ArtifactSpans(c.who.tenant, id)
			if err != nil {
				s.fail(ctx, err)
				return
			}
			ids := make([]uuid.UUID, len(spans))
			for i := range spans {
				ids[i] = spans[i].ID
			}
			ctx.Response.Header.Set("Idempotent-Replay", "true")
			writeJSON(ctx, fasthttp.StatusOK, ingestResponse{ArtifactID: a.ID, ContentHash: hashString(a.ContentHash),
				Indexed: a.Indexed, SpanIDs: ids, Created: formatTime(time.UnixMicro(a.IngestedAt))})
			return
		}
	}
	jobs, replay, err := s.accept(c.who.tenant, in.Workspace, []engine.IngestInput{in}, now, false)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	j := jobs[0]
	payload := in.Payload
	status := fasthttp.StatusCreated
	if replay[0] { // a pending job holds the key: answer with its artifact
		if stored, _, err := decodeJobInput(j.Input); err == nil {
			payload = stored.Payload
		}
		ctx.Response.Header.Set("Idempotent-Replay", "true")
		status = fasthttp.StatusOK
	} else {
		c.usage.Artifacts, c.usage.RawBytes = 1, uint64(len(in.Payload))
	}
	writeJSON(ctx, status, ingestResponse{ArtifactID: j.ArtifactID, ContentHash: hashString(artifact.ContentHash(payload)),
		Indexed: false, SpanIDs: []uuid.UUID{}, Created: formatTime(j.CreatedAt)})
}

// accept stores artifacts for asynchronous indexing: one durable job record
// for the batch, raw artifacts included, then the workers are woken. An item
// whose idempotency key is already stored or pending gets that artifact's
// job (replay true): a pending one is returned as is; for a stored one a job
// is created that completes at once with the existing artifact. A key whose
// artifact (stored, pending or earlier in the batch) differs from the item
// fails the whole call and queues nothing (engine.IdempotencyDiff). batch
// says whether errors name items as artifacts[i].
func (s *Server) accept(tenant, ws string, ins []engine.IngestInput, now time.Time, batch bool) ([]control.Job, []bool, error) {
	field := func(i int) string {
		if batch {
			return fmt.Sprintf("artifacts[%d].idempotency_key", i)
		}
		return "idempotency_key"
	}
	conflict := func(i int, a *artifact.Artifact, diff []string) error {
		return &engine.IdempotencyConflictError{Field: field(i), Key: ins[i].IdempotencyKey, Workspace: ws, ArtifactID: a.ID, Differs: diff}
	}
	out := make([]control.Job, len(ins))
	replay := make([]bool, len(ins))
	dupOf := make([]int, len(ins))     // index of an earlier item with the same key, or -1
	createdAt := make([]int, len(ins)) // index into create, or -1
	var create []control.JobInput
	first := map[string]int{}
	for i, in := range ins {
		dupOf[i], createdAt[i] = -1, -1
		id := uuid.New()
		if k := in.IdempotencyKey; k != "" {
			if j, ok := first[k]; ok {
				if diff := engine.IdempotencyDiff(pendingArtifact(uuid.Nil, ins[j]), &ins[i]); diff != nil {
					return nil, nil, &engine.InvalidError{Field: field(i), Reason: fmt.Sprintf(
						"%q is also the key of artifacts[%d], which differs from this item in %s; one key names one artifact", k, j, strings.Join(diff, ", "))}
				}
				dupOf[i], replay[i] = j, true
				continue
			}
			first[k] = i
			if j, ok := s.ctl.JobByIdempotencyKey(tenant, ws, k); ok && j.Status != control.StatusFailed {
				if stored, _, err := decodeJobInput(j.Input); err == nil {
					if diff := engine.IdempotencyDiff(pendingArtifact(j.ArtifactID, stored), &ins[i]); diff != nil {
						return nil, nil, conflict(i, pendingArtifact(j.ArtifactID, stored), diff)
					}
				}
				out[i], replay[i] = j, true
				continue
			}
			existing, ok, err := s.db.ArtifactByIdempotencyKey(tenant, ws, k)
			if err != nil {
				return nil, nil, err
			}
			if ok {
				a, err := s.db.Artifact(tenant, existing)
				if err != nil {
					return nil, nil, err
				}
				if diff := engine.IdempotencyDiff(a, &ins[i]); diff != nil {
					return nil, nil, conflict(i, a, diff)
				}
				id, replay[i] = existing, true
			}
		}
		createdAt[i] = len(create)
		create = append(create, control.JobInput{ArtifactID: id, IdempotencyKey: in.IdempotencyKey, Input: encodeJobInput(in, now)})
	}
	if len(create) > 0 {
		created, err := s.ctl.CreateJobs(tenant, ws, create)
		if err != nil {
			return nil, nil, err
		}
		for i, c := range createdAt {
			if c >= 0 {
				out[i] = created[c]
			}
		}
		s.jobs.add(created)
	}
	for i, j := range dupOf {
		if j >= 0 {
			out[i] = out[j]
		}
	}
	return out, replay, nil
}

// pendingArtifact is the artifact an accepted ingest will store, as far
// as engine.IdempotencyDiff compares it.
func pendingArtifact(id uuid.UUID, in engine.IngestInput) *artifact.Artifact {
	return &artifact.Artifact{ID: id, Type: in.Type, ActorID: in.ActorID, SessionID: in.SessionID, ThreadID: in.ThreadID,
		Permissions: in.Permissions, ContentHash: artifact.ContentHash(in.Payload), Metadata: in.Metadata}
}

type v2IngestRequest struct {
	WorkspaceID string            `json:"workspace_id"`
	ActorID     string            `json:"actor_id"`
	Artifacts   []json.RawMessage `json:"artifacts"`
	AsyncIndex  bool              `json:"async_index"`
	// WaitForEmbedding holds the response until the batch's artifacts are
	// embedded (at most MaxEmbeddingWait; each item's embedding field says
	// where it stands).
	WaitForEmbedding bool `json:"wait_for_embedding"`
}

// MaxEmbeddingWait bounds how long a v2 ingest with wait_for_embedding
// waits for the background embedder.
const MaxEmbeddingWait = 20 * time.Second

type v2Ingested struct {
	ArtifactID       uuid.UUID   `json:"artifact_id"`
	SpanIDs          []uuid.UUID `json:"span_ids"`
	Created          string      `json:"created"`
	ContentHash      string      `json:"content_hash"`
	IdempotentReplay bool        `json:"idempotent_replay"`
	Embedding        string      `json:"embedding"`
}

type queuedJob struct {
	JobID          string `json:"job_id"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	Status         string `json:"status"`
}

func (s *Server) ingestV2(ctx *fasthttp.RequestCtx, c *call) {
	var req v2IngestRequest
	if err := decodeBody(ctx.PostBody(), &req); err != nil {
		badRequest(ctx, err)
		return
	}
	switch {
	case req.Artifacts == nil:
		badRequest(ctx, errors.New("artifacts: is required (an array of 1 to 1000 artifacts)"))
		return
	case len(req.Artifacts) == 0:
		badRequest(ctx, errors.New("artifacts: must hold at least one artifact"))
		return
	case len(req.Artifacts) > MaxBatch:
		badRequest(ctx, fmt.Errorf("artifacts: %d artifacts exceed the batch limit of %d", len(req.Artifacts), MaxBatch))
		return
	}
	if err := engine.CheckWorkspaceID(req.WorkspaceID); err != nil {
		badRequest(ctx, err)
		return
	}
	if req.AsyncIndex && req.WaitForEmbedding {
		badRequest(ctx, errors.New("wait_for_embedding: cannot be combined with async_index (poll the jobs, then each artifact's status)"))
		return
	}
	now := s.cfg.Now().UTC()
	ins := make([]engine.IngestInput, len(req.Artifacts))
	var rawBytes uint64
	for i, raw := range req.Artifacts {
		var it ingestItem
		if err := decodeAt(raw, fmt.Sprintf("artifacts[%d]", i), &it); err != nil {
			badRequest(ctx, err)
			return
		}
		// workspace_id and actor_id are given once, at the top level; an
		// item (shaped like a v1 artifact) may repeat them, but not differ.
		for _, f := range []struct{ name, item, top string }{{"workspace_id", it.WorkspaceID, req.WorkspaceID}, {"actor_id", it.ActorID, req.ActorID}} {
			if f.item != "" && f.item != f.top {
				badRequest(ctx, fmt.Errorf("artifacts[%d].%s: %q differs from the top-level %s %q; give it once, at the top level", i, f.name, f.item, f.name, f.top))
				return
			}
		}
		it.WorkspaceID, it.ActorID = req.WorkspaceID, req.ActorID
		in, err := it.input(now)
		if err != nil {
			badRequest(ctx, fmt.Errorf("artifacts[%d].%v", i, err))
			return
		}
		if err := s.db.Validate(in); err != nil {
			var inv *engine.InvalidError
			if errors.As(err, &inv) && inv.Field != "workspace_id" && inv.Field != "actor_id" {
				badRequest(ctx, fmt.Errorf("artifacts[%d].%s: %s", i, inv.Field, inv.Reason))
				return
			}
			s.fail(ctx, err)
			return
		}
		ins[i] = in
		rawBytes += uint64(len(in.Payload))
	}
	if err := s.ctl.ClaimWorkspace(c.who.tenant, req.WorkspaceID); err != nil {
		s.fail(ctx, err)
		return
	}
	if req.AsyncIndex {
		jobs, replay, err := s.accept(c.who.tenant, req.WorkspaceID, ins, now, true)
		if err != nil {
			s.fail(ctx, err)
			return
		}
		queued := make([]queuedJob, len(jobs))
		for i, j := range jobs {
			queued[i] = queuedJob{JobID: j.ID, IdempotencyKey: j.IdempotencyKey, Status: string(j.Status)}
			if !replay[i] {
				c.usage.Artifacts++
				c.usage.RawBytes += uint64(len(ins[i].Payload))
			}
		}
		writeJSON(ctx, fasthttp.StatusAccepted, map[string]any{"workspace_id": req.WorkspaceID, "queued_jobs": queued})
		return
	}
	res, err := s.db.IngestBatch(c.who.tenant, ins)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	if req.WaitForEmbedding {
		ids := make([]uuid.UUID, len(res))
		for i, r := range res {
			ids[i] = r.ArtifactID
		}
		wctx, cancel := context.WithTimeout(context.Background(), MaxEmbeddingWait)
		err := s.db.WaitEmbedded(wctx, c.who.tenant, ids)
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			s.fail(ctx, err)
			return
		}
	}
	out := make([]v2Ingested, len(res))
	status := fasthttp.StatusOK
	for i, r := range res {
		emb, err := s.db.EmbeddingState(c.who.tenant, r.ArtifactID)
		if err != nil {
			s.fail(ctx, err)
			return
		}
		out[i] = v2Ingested{ArtifactID: r.ArtifactID, SpanIDs: nonNilIDs(r.SpanIDs), Created: formatTime(r.Created),
			ContentHash: hashString(r.ContentHash), IdempotentReplay: r.Replayed, Embedding: emb}
		if !r.Replayed {
			status = fasthttp.StatusCreated
			c.usage.Artifacts++
			c.usage.RawBytes += uint64(len(ins[i].Payload))
		}
	}
	writeJSON(ctx, status, map[string]any{"workspace_id": req.WorkspaceID, "ingested": out})
}

func nonNilIDs(ids []uuid.UUID) []uuid.UUID {
	if ids == nil {
		return []uuid.UUID{}
	}
	return ids
}
