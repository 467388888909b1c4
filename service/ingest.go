package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/engine"
)

// MaxBatch is the most artifacts one batch ingest may carry.
const MaxBatch = 1000

// MaxEmbeddingWait bounds how long a batch ingest with wait_for_embedding
// waits for the background embedder.
const MaxEmbeddingWait = 20 * time.Second

// IngestRequest is one artifact to store, with its fields as the API names
// them. raw_payload is kept byte for byte; permissions and metadata are
// decoded (strictly, naming the field) by the service.
type IngestRequest struct {
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
	// BlobPointer is an attachment's pointer to its binary content, stored
	// as raw_payload.blob_pointer (withBlobPointer).
	BlobPointer json.RawMessage `json:"blob_pointer"`
}

// PermissionsJSON is an artifact's permissions as the API names them.
type PermissionsJSON struct {
	Visibility    string   `json:"visibility"`
	AllowedActors []string `json:"allowed_actors"`
	DeniedActors  []string `json:"denied_actors"`
	RBACTags      []string `json:"rbac_tags"`
}

// input converts a request to the engine's form; now is the default
// timestamp. Errors name the field as the request does.
func (r *IngestRequest) input(now time.Time) (engine.IngestInput, error) {
	in := engine.IngestInput{Workspace: r.WorkspaceID, ActorID: r.ActorID, Type: r.ArtifactType,
		IdempotencyKey: r.IdempotencyKey, SessionID: r.SessionID, ThreadID: r.ThreadID, Timestamp: now}
	// New data only goes to workspaces whose ids are safe in a URL path.
	if err := engine.CheckWorkspaceID(r.WorkspaceID); err != nil {
		return in, err
	}
	if len(r.RawPayload) > 0 && string(r.RawPayload) != "null" {
		in.Payload = r.RawPayload
	}
	payload, err := withBlobPointer(r.ArtifactType, in.Payload, r.BlobPointer)
	if err != nil {
		return in, err
	}
	in.Payload = payload
	if r.Timestamp != nil {
		t, err := ParseTime("timestamp", *r.Timestamp)
		if err != nil {
			return in, err
		}
		// A far-future time would make the artifact the workspace's newest
		// for years; acceptance may use the clock, what is stored does not.
		if err := engine.CheckFutureTime("timestamp", t, now); err != nil {
			return in, err
		}
		in.Timestamp = t
	}
	var p PermissionsJSON
	if err := DecodeOptionalJSON(r.Permissions, "permissions", &p); err != nil {
		return in, err
	}
	in.Permissions = artifact.Permissions{Visibility: p.Visibility, AllowedActors: p.AllowedActors, DeniedActors: p.DeniedActors, RBACTags: p.RBACTags}
	md, err := DecodeMetadata(r.Metadata, "metadata")
	if err != nil {
		return in, err
	}
	in.Metadata = md
	return in, nil
}

// checkRetained refuses inputs timestamped before the workspace's retention
// cutoff: the engine would store them and erase them as they are applied,
// acknowledging an artifact that no read then finds. field names input i's
// timestamp. The cutoff only moves forward, so an input that passes may
// still meet a later cutoff; then it is erased as the retention documents.
func checkRetained(db *engine.DB, tenant, ws string, ins []engine.IngestInput, field func(i int) string) error {
	cutoff, ok, err := db.RetentionCutoff(tenant, ws)
	if err != nil || !ok {
		return err
	}
	for i, in := range ins {
		if in.Timestamp.UnixMicro() < cutoff {
			return &InvalidError{Field: field(i), Reason: fmt.Sprintf("%s lies before the workspace's retention cutoff (%s): it would be erased at once; send a later time or lengthen retention_days",
				FormatTime(in.Timestamp), FormatTime(time.UnixMicro(cutoff)))}
		}
	}
	return nil
}

// IngestResult is what one ingest stored, or found again by its
// idempotency key (Replayed).
type IngestResult struct {
	ArtifactID  uuid.UUID   `json:"artifact_id"`
	ContentHash string      `json:"content_hash"`
	Indexed     bool        `json:"indexed"`
	SpanIDs     []uuid.UUID `json:"span_ids"`
	Created     string      `json:"created"`
	// Replayed: an earlier ingest with the same idempotency key stored (or
	// accepted) the artifact, and nothing new was stored.
	Replayed bool `json:"-"`
	// Usage is what the ingest adds to the tenant's usage (Meter).
	Usage UsageDelta `json:"-"`
}

// Ingest stores one artifact in p's workspace (POST /v1/ingest): indexed
// before it returns, or with Config.AsyncIndexing accepted in a durable job
// and indexed in the background (Indexed false). The payload is parsed
// once: the text the validation extracts is what the engine indexes.
func (s *Service) Ingest(ctx context.Context, p Principal, r IngestRequest) (IngestResult, error) {
	now := s.cfg.Now().UTC()
	in, err := r.input(now)
	if err != nil {
		return IngestResult{}, invalid(err)
	}
	if err := prepareInput(&in); err != nil {
		return IngestResult{}, err
	}
	// The routing decision comes before any write (the claim): a request
	// forwarded to the node serving the workspace is served there whole.
	db, err := s.engine(p.TenantID, in.Workspace)
	if err != nil {
		return IngestResult{}, err
	}
	if err := checkRetained(db, p.TenantID, in.Workspace, []engine.IngestInput{in}, func(int) string { return "timestamp" }); err != nil {
		return IngestResult{}, err
	}
	if err := s.ctl.ClaimWorkspace(p.TenantID, in.Workspace); err != nil {
		return IngestResult{}, err
	}
	if s.cfg.AsyncIndexing {
		return s.ingestAsync(db, p, in, now)
	}
	in.ArtifactID = s.newArtifactID(p.TenantID, in.Workspace)
	res, err := db.Ingest(p.TenantID, in)
	if err != nil {
		return IngestResult{}, keyError(err, false)
	}
	out := IngestResult{ArtifactID: res.ArtifactID, ContentHash: hashString(res.ContentHash), Indexed: res.Indexed,
		SpanIDs: nonNilIDs(res.SpanIDs), Created: FormatTime(res.Created), Replayed: res.Replayed}
	if !res.Replayed {
		out.Usage = UsageDelta{Artifacts: 1, RawBytes: uint64(len(in.Payload))}
	}
	return out, nil
}

// ingestAsync is Ingest with AsyncIndexing: the artifact is stored in a
// durable job and indexed in the background (Indexed false). A key
// already stored or pending answers with that artifact, as a replay.
func (s *Service) ingestAsync(db *engine.DB, p Principal, in engine.IngestInput, now time.Time) (IngestResult, error) {
	if in.IdempotencyKey != "" {
		id, ok, err := db.ArtifactByIdempotencyKey(p.TenantID, in.Workspace, in.IdempotencyKey)
		if err != nil {
			return IngestResult{}, err
		}
		if ok {
			a, err := db.Artifact(p.TenantID, id)
			if err != nil {
				return IngestResult{}, err
			}
			if diff := engine.IdempotencyDiff(a, &in); diff != nil {
				return IngestResult{}, keyError(&engine.IdempotencyConflictError{Key: in.IdempotencyKey,
					Workspace: in.Workspace, ArtifactID: a.ID, Differs: diff}, false)
			}
			spans, err := db.ArtifactSpans(p.TenantID, id)
			if err != nil {
				return IngestResult{}, err
			}
			ids := make([]uuid.UUID, len(spans))
			for i := range spans {
				ids[i] = spans[i].ID
			}
			return IngestResult{ArtifactID: a.ID, ContentHash: hashString(a.ContentHash), Indexed: a.Indexed, SpanIDs: ids,
				Created: FormatTime(time.UnixMicro(a.IngestedAt)), Replayed: true}, nil
		}
	}
	jobs, replay, err := s.accept(db, p.TenantID, in.Workspace, []engine.IngestInput{in}, now, false)
	if err != nil {
		return IngestResult{}, err
	}
	j := jobs[0]
	payload := in.Payload
	out := IngestResult{ArtifactID: j.ArtifactID, SpanIDs: []uuid.UUID{}, Created: FormatTime(j.CreatedAt), Replayed: replay[0]}
	if replay[0] { // a pending job holds the key: answer with its artifact
		if stored, _, err := decodeJobInput(j.Input); err == nil {
			payload = stored.Payload
		}
	} else {
		out.Usage = UsageDelta{Artifacts: 1, RawBytes: uint64(len(in.Payload))}
	}
	out.ContentHash = hashString(artifact.ContentHash(payload))
	return out, nil
}

// accept stores artifacts for asynchronous indexing: one durable job record
// for the batch, raw artifacts included, then the workers are woken. An item
// whose idempotency key is already stored or pending gets that artifact's
// job (replay true): a pending one is returned as is; for a stored one a job
// is created that completes at once with the existing artifact. A key whose
// artifact (stored, pending or earlier in the batch) differs from the item
// fails the whole call and queues nothing (engine.IdempotencyDiff). batch
// says whether errors name items as artifacts[i] (keyError).
func (s *Service) accept(db *engine.DB, tenant, ws string, ins []engine.IngestInput, now time.Time, batch bool) ([]control.Job, []bool, error) {
	conflict := func(i int, a *artifact.Artifact, diff []string) error {
		return keyError(&engine.IdempotencyConflictError{Item: i, Key: ins[i].IdempotencyKey, Workspace: ws, ArtifactID: a.ID, Differs: diff}, batch)
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
					return nil, nil, keyError(&engine.IdempotencyRepeatError{Item: i, Earlier: j, Key: k, Differs: diff}, batch)
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
			existing, ok, err := db.ArtifactByIdempotencyKey(tenant, ws, k)
			if err != nil {
				return nil, nil, err
			}
			if ok {
				a, err := db.Artifact(tenant, existing)
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

// IngestBatchRequest is a batch of artifacts for one workspace and actor
// (POST /v2/ingest). Each item is shaped like an IngestRequest and kept as
// sent, so that the service decodes it (strictly, errors naming
// artifacts[i]) in order with the rest of its validation.
type IngestBatchRequest struct {
	WorkspaceID string            `json:"workspace_id"`
	ActorID     string            `json:"actor_id"`
	Artifacts   []json.RawMessage `json:"artifacts"`
	// AsyncIndex accepts the batch in durable jobs, indexed in the
	// background; the result lists the jobs.
	AsyncIndex bool `json:"async_index"`
	// WaitForEmbedding holds the result until the batch's artifacts are
	// embedded and, in a workspace whose packs run late interaction, have
	// their token rows (at most MaxEmbeddingWait; each item's embedding
	// field says where its vectors stand). Rows change no answer, only
	// how soon the next packs come (engine.DB.WaitEmbedded).
	WaitForEmbedding bool `json:"wait_for_embedding"`

	// items are the artifacts already decoded by DecodeIngestBatch, in
	// place of Artifacts; nil otherwise.
	items []IngestRequest
}

// DecodeIngestBatch decodes a POST /v2/ingest body in one pass, items
// included, as DecodeJSON would decode it and then each of its items:
// it accepts exactly the bodies those two steps accept (the same decoder,
// unknown fields refused at every level, and DecodeJSON's duplicate-key
// scan of the whole body covers every item). A body that one pass refuses
// is decoded again the two-step way, so that its error is the one the
// items' order and paths give (IngestBatch: artifacts[i] in order with the
// rest of each item's validation). The pass saves the second reading of
// every item, about a tenth of an ingest's CPU time.
func DecodeIngestBatch(body []byte) (IngestBatchRequest, error) {
	var one struct {
		WorkspaceID      string          `json:"workspace_id"`
		ActorID          string          `json:"actor_id"`
		Artifacts        []IngestRequest `json:"artifacts"`
		AsyncIndex       bool            `json:"async_index"`
		WaitForEmbedding bool            `json:"wait_for_embedding"`
	}
	if DecodeJSON(body, "", &one) == nil && one.Artifacts != nil {
		return IngestBatchRequest{WorkspaceID: one.WorkspaceID, ActorID: one.ActorID, AsyncIndex: one.AsyncIndex,
			WaitForEmbedding: one.WaitForEmbedding, items: one.Artifacts}, nil
	}
	var r IngestBatchRequest
	err := DecodeJSON(body, "", &r)
	return r, err
}

// itemCount returns how many artifacts r holds, and whether it holds the
// field at all.
func (r *IngestBatchRequest) itemCount() (int, bool) {
	if r.items != nil {
		return len(r.items), true
	}
	return len(r.Artifacts), r.Artifacts != nil
}

// item returns the i-th artifact of r, decoding it when it came raw.
func (r *IngestBatchRequest) item(i int) (IngestRequest, error) {
	if r.items != nil {
		return r.items[i], nil
	}
	var it IngestRequest
	err := DecodeJSON(r.Artifacts[i], fmt.Sprintf("artifacts[%d]", i), &it)
	return it, err
}

// IngestedItem is one artifact of a batch, stored or found again.
type IngestedItem struct {
	ArtifactID       uuid.UUID   `json:"artifact_id"`
	SpanIDs          []uuid.UUID `json:"span_ids"`
	Created          string      `json:"created"`
	ContentHash      string      `json:"content_hash"`
	IdempotentReplay bool        `json:"idempotent_replay"`
	Embedding        string      `json:"embedding"`
}

// QueuedJob is the job of one artifact of an asynchronous batch.
type QueuedJob struct {
	JobID          string `json:"job_id"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	Status         string `json:"status"`
}

// IngestBatchResult is what a batch ingest did: Ingested (stored in the
// call) or, with AsyncIndex, QueuedJobs.
type IngestBatchResult struct {
	Ingested    []IngestedItem `json:"ingested,omitempty"`
	QueuedJobs  []QueuedJob    `json:"queued_jobs,omitempty"`
	WorkspaceID string         `json:"workspace_id"`
	// Created: at least one artifact was new (not an idempotent replay).
	Created bool `json:"-"`
	// Usage is what the ingest adds to the tenant's usage (Meter).
	Usage UsageDelta `json:"-"`
}

// IngestBatch stores a batch of artifacts into p's workspace, all or none:
// every item is validated first (errors name artifacts[i]), then stored
// with one group commit, or with AsyncIndex accepted in durable jobs.
// Idempotency keys are resolved before anything is embedded, so a retried
// batch does not pay the embedder again.
func (s *Service) IngestBatch(ctx context.Context, p Principal, r IngestBatchRequest) (IngestBatchResult, error) {
	n, given := r.itemCount()
	switch {
	case !given:
		return IngestBatchResult{}, &InvalidError{Field: "artifacts", Reason: "is required (an array of 1 to 1000 artifacts)"}
	case n == 0:
		return IngestBatchResult{}, &InvalidError{Field: "artifacts", Reason: "must hold at least one artifact"}
	case n > MaxBatch:
		return IngestBatchResult{}, &InvalidError{Field: "artifacts", Reason: fmt.Sprintf("%d artifacts exceed the batch limit of %d", n, MaxBatch)}
	}
	if err := engine.CheckWorkspaceID(r.WorkspaceID); err != nil {
		return IngestBatchResult{}, err
	}
	if r.AsyncIndex && r.WaitForEmbedding {
		return IngestBatchResult{}, &InvalidError{Field: "wait_for_embedding", Reason: "cannot be combined with async_index (poll the jobs, then each artifact's status)"}
	}
	now := s.cfg.Now().UTC()
	ins := make([]engine.IngestInput, n)
	for i := range ins {
		it, err := r.item(i)
		if err != nil {
			return IngestBatchResult{}, invalid(err)
		}
		// workspace_id and actor_id are given once, at the top level; an
		// item (shaped like a v1 artifact) may repeat them, but not differ.
		for _, f := range []struct{ name, item, top string }{{"workspace_id", it.WorkspaceID, r.WorkspaceID}, {"actor_id", it.ActorID, r.ActorID}} {
			if f.item != "" && f.item != f.top {
				return IngestBatchResult{}, &InvalidError{Field: fmt.Sprintf("artifacts[%d].%s", i, f.name),
					Reason: fmt.Sprintf("%q differs from the top-level %s %q; give it once, at the top level", f.item, f.name, f.top)}
			}
		}
		it.WorkspaceID, it.ActorID = r.WorkspaceID, r.ActorID
		in, err := it.input(now)
		if err != nil {
			return IngestBatchResult{}, invalid(fmt.Errorf("artifacts[%d].%v", i, err))
		}
		if err := prepareInput(&in); err != nil {
			var inv *engine.InvalidError
			if errors.As(err, &inv) && inv.Field != "workspace_id" && inv.Field != "actor_id" {
				return IngestBatchResult{}, &InvalidError{Field: fmt.Sprintf("artifacts[%d].%s", i, inv.Field), Reason: inv.Reason}
			}
			return IngestBatchResult{}, err
		}
		ins[i] = in
	}
	// The routing decision comes before any write (the claim).
	db, err := s.engine(p.TenantID, r.WorkspaceID)
	if err != nil {
		return IngestBatchResult{}, err
	}
	if err := checkRetained(db, p.TenantID, r.WorkspaceID, ins, func(i int) string { return fmt.Sprintf("artifacts[%d].timestamp", i) }); err != nil {
		return IngestBatchResult{}, err
	}
	if err := s.ctl.ClaimWorkspace(p.TenantID, r.WorkspaceID); err != nil {
		return IngestBatchResult{}, err
	}
	out := IngestBatchResult{WorkspaceID: r.WorkspaceID}
	if r.AsyncIndex {
		if s.cfg.NoJobs {
			return IngestBatchResult{}, &InvalidError{Field: "async_index", Reason: "asynchronous indexing is not available in cluster mode; send the batch without it (it is indexed before the answer)"}
		}
		jobs, replay, err := s.accept(db, p.TenantID, r.WorkspaceID, ins, now, true)
		if err != nil {
			return IngestBatchResult{}, err
		}
		out.QueuedJobs = make([]QueuedJob, len(jobs))
		for i, j := range jobs {
			out.QueuedJobs[i] = QueuedJob{JobID: j.ID, IdempotencyKey: j.IdempotencyKey, Status: string(j.Status)}
			if !replay[i] {
				out.Created = true
				out.Usage.Artifacts++
				out.Usage.RawBytes += uint64(len(ins[i].Payload))
			}
		}
		return out, nil
	}
	for i := range ins {
		ins[i].ArtifactID = s.newArtifactID(p.TenantID, r.WorkspaceID)
	}
	res, err := db.IngestBatch(p.TenantID, ins)
	if err != nil {
		return IngestBatchResult{}, keyError(err, true)
	}
	if r.WaitForEmbedding {
		ids := make([]uuid.UUID, len(res))
		for i, r := range res {
			ids[i] = r.ArtifactID
		}
		wctx, cancel := context.WithTimeout(ctx, MaxEmbeddingWait)
		err := db.WaitEmbedded(wctx, p.TenantID, ids)
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return IngestBatchResult{}, err
		}
	}
	out.Ingested = make([]IngestedItem, len(res))
	for i, r := range res {
		emb, err := db.EmbeddingState(p.TenantID, r.ArtifactID)
		if err != nil {
			return IngestBatchResult{}, err
		}
		out.Ingested[i] = IngestedItem{ArtifactID: r.ArtifactID, SpanIDs: nonNilIDs(r.SpanIDs), Created: FormatTime(r.Created),
			ContentHash: hashString(r.ContentHash), IdempotentReplay: r.Replayed, Embedding: emb}
		if !r.Replayed {
			out.Created = true
			out.Usage.Artifacts++
			out.Usage.RawBytes += uint64(len(ins[i].Payload))
		}
	}
	return out, nil
}

func nonNilIDs(ids []uuid.UUID) []uuid.UUID {
	if ids == nil {
		return []uuid.UUID{}
	}
	return ids
}

func hashString(h [32]byte) string { return fmt.Sprintf("sha256:%x", h) }
