package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/embed"
	"github.com/loci-memory/loci/embed/glove"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/internal/enginetest"
)

// dataHarness is a started service over a real engine and control state in
// a temporary data directory, which it can restart there.
type dataHarness struct {
	t    *testing.T
	dir  string
	cfg  Config
	opts engine.Options
	ctl  *control.Store
	db   *engine.DB
	svc  *Service
}

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// open is the caller of a service with authentication off.
var open = Principal{TenantID: DefaultTenant, Plan: mustPlan("enterprise"), Open: true}

func newData(t *testing.T, cfg Config) *dataHarness {
	t.Helper()
	return newDataWith(t, cfg, engine.Options{NoEmbedder: true})
}

func newDataWith(t *testing.T, cfg Config, opts engine.Options) *dataHarness {
	t.Helper()
	h := &dataHarness{t: t, dir: t.TempDir(), cfg: cfg, opts: opts}
	h.start()
	t.Cleanup(h.stop)
	return h
}

func (h *dataHarness) start() {
	h.t.Helper()
	h.ctl = control.New(time.Now)
	opts := h.opts
	opts.Logger = quietLog
	db := enginetest.OpenControlled(h.t, h.dir, opts, h.ctl)
	h.db = db
	cfg := h.cfg
	cfg.Logger = quietLog
	h.svc = New(db, h.ctl, cfg)
	h.svc.Start()
}

func (h *dataHarness) stop() {
	if h.svc == nil {
		return
	}
	h.svc.Stop()
	h.db.Close()
	h.svc = nil
}

func (h *dataHarness) restart() {
	h.t.Helper()
	h.stop()
	h.start()
}

// waitJob polls a job until it is done or failed.
func (h *dataHarness) waitJob(id string) JobResult {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		j, err := h.svc.Job(open, id)
		if err != nil {
			h.t.Fatalf("job %s: %v", id, err)
		}
		if j.Status == string(control.StatusDone) || j.Status == string(control.StatusFailed) {
			return j
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("job %s still %s", id, j.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func note(content string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"artifact_type": "note", "raw_payload": map[string]any{"content": content}})
	return b
}

func asyncBatch(items ...json.RawMessage) IngestBatchRequest {
	return IngestBatchRequest{WorkspaceID: "ws", ActorID: "a", AsyncIndex: true, Artifacts: items}
}

// TestEraseFencesInFlightJobs erases a workspace while asynchronous jobs of
// it are in flight: some held by workers just before their ingest, the rest
// queued. None of their artifacts may be readable or listed afterwards, nor
// after a restart, and every job ends failed with "workspace erased".
func TestEraseFencesInFlightJobs(t *testing.T) {
	const workers, jobs = 3, 24
	h := newData(t, Config{IndexWorkers: workers})
	entered := make(chan string, jobs)
	gate := make(chan struct{})
	h.svc.jobs.mu.Lock()
	h.svc.jobs.beforeIngest = func(j control.Job) {
		entered <- j.ID
		<-gate
	}
	h.svc.jobs.mu.Unlock()

	var items []json.RawMessage
	for i := range jobs {
		items = append(items, note(fmt.Sprintf("zebracorn sighting number %d", i)))
	}
	res, err := h.svc.IngestBatch(context.Background(), open, asyncBatch(items...))
	if err != nil || len(res.QueuedJobs) != jobs || !res.Created || res.Usage.Artifacts != jobs {
		t.Fatalf("async batch: %+v %v", res, err)
	}
	for range workers { // every worker holds a job that is already processing
		select {
		case <-entered:
		case <-time.After(20 * time.Second):
			t.Fatal("workers did not take jobs")
		}
	}
	if _, err := h.svc.EraseWorkspace(open, "ws"); err != nil {
		t.Fatal(err)
	}
	close(gate)

	check := func(when string) {
		t.Helper()
		for _, q := range res.QueuedJobs {
			j := h.waitJob(q.JobID)
			if j.Status != "failed" || j.ErrorMessage == nil || *j.ErrorMessage != control.ErasedMessage {
				t.Fatalf("%s: job %s: %+v", when, q.JobID, j)
			}
			cj, ok := h.ctl.Job(DefaultTenant, q.JobID)
			if !ok {
				t.Fatalf("%s: job %s gone", when, q.JobID)
			}
			if _, err := h.svc.Artifact(open, cj.ArtifactID.String()); !errors.Is(err, ErrNotFound) {
				t.Fatalf("%s: artifact of cancelled job %s: %v", when, q.JobID, err)
			}
		}
		page, err := h.svc.ListArtifacts(open, ListArtifactsRequest{WorkspaceID: "ws"})
		if err != nil || len(page.Artifacts) != 0 {
			t.Fatalf("%s: erased workspace lists %d job artifacts (%v)", when, len(page.Artifacts), err)
		}
	}
	check("after erasure")
	h.restart()
	check("after restart")
	// The workspace takes new artifacts afterwards.
	res, err = h.svc.IngestBatch(context.Background(), open, asyncBatch(note("zebracorn after the erasure")))
	if err != nil {
		t.Fatal(err)
	}
	if j := h.waitJob(res.QueuedJobs[0].JobID); j.Status != "done" {
		t.Fatalf("job after erasure: %+v", j)
	}
}

// TestJobBacklogRefused refuses a batch with control.ErrJobBacklog,
// queuing nothing, when a tenant's unfinished jobs reach the backlog bound.
func TestJobBacklogRefused(t *testing.T) {
	h := newData(t, Config{IndexWorkers: -1}) // no workers: jobs stay pending
	h.ctl.SetJobRetention(control.JobRetention{MaxUnfinished: 2})
	if _, err := h.svc.IngestBatch(context.Background(), open, asyncBatch(note("note 0"), note("note 1"))); err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.IngestBatch(context.Background(), open, asyncBatch(note("note 2"))); !errors.Is(err, control.ErrJobBacklog) {
		t.Fatalf("backlog refusal: %v", err)
	}
	if un, _ := h.ctl.JobCounts(); un != 2 {
		t.Fatalf("%d unfinished jobs after a refusal, want 2", un)
	}
	if n := h.svc.JobBacklog(); n != 0 {
		t.Fatalf("a service without workers queues %d jobs", n)
	}
}

// TestEraseArtifactWaitsForItsJob holds an asynchronous job between the
// ingest of its artifact and its durable "done": the artifact is readable
// there, but erasing it must be refused (ErrConflict naming the job), since
// a crash at that point resumes the job, which would store the erased
// artifact again. Once the job is done the erase goes through and the
// artifact stays gone across a restart.
func TestEraseArtifactWaitsForItsJob(t *testing.T) {
	h := newData(t, Config{IndexWorkers: 1})
	stored := make(chan control.Job, 1)
	gate := make(chan struct{})
	h.svc.jobs.mu.Lock()
	h.svc.jobs.afterIngest = func(j control.Job) {
		stored <- j
		<-gate
	}
	h.svc.jobs.mu.Unlock()

	res, err := h.svc.IngestBatch(context.Background(), open, asyncBatch(note("the heron count was 12")))
	if err != nil {
		t.Fatal(err)
	}
	jobID := res.QueuedJobs[0].JobID
	var j control.Job
	select {
	case j = <-stored:
	case <-time.After(20 * time.Second):
		t.Fatal("the job's artifact was not stored")
	}
	id := j.ArtifactID.String()
	if a, err := h.svc.Artifact(open, id); err != nil || a.Status != StatusIndexed { // readable while the job is not done
		t.Fatalf("artifact while its job finishes: %+v %v", a, err)
	}
	var e *Error
	if _, err := h.svc.EraseArtifact(open, id); !errors.Is(err, ErrConflict) || !errors.As(err, &e) || !strings.Contains(e.Detail, jobID) {
		t.Fatalf("erase while the job is processing: %v, want ErrConflict naming the job", err)
	}
	close(gate)
	if st := h.waitJob(jobID); st.Status != "done" {
		t.Fatalf("job status %q, want done", st.Status)
	}
	if r, err := h.svc.EraseArtifact(open, id); err != nil || r.ArtifactsErased != 1 || r.SpansErased == 0 {
		t.Fatalf("erase: %+v %v", r, err)
	}
	if _, err := h.svc.Artifact(open, id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("erased artifact: %v", err)
	}
	h.restart()
	if _, err := h.svc.Artifact(open, id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("erased artifact after restart: %v", err)
	}
}

// A job that cannot be indexed is recorded as failed, with the reason; its
// artifact's status says so and the artifact itself is not found.
func TestAsyncJobFailure(t *testing.T) {
	h := newData(t, Config{})
	jobs, err := h.ctl.CreateJobs(DefaultTenant, "ws", []control.JobInput{{ArtifactID: uuid.New(), Input: []byte("not a job input")}})
	if err != nil {
		t.Fatal(err)
	}
	h.svc.jobs.add(jobs)
	j := h.waitJob(jobs[0].ID)
	if j.Status != "failed" || j.ErrorMessage == nil || !strings.Contains(*j.ErrorMessage, "unreadable") || j.ArtifactID != nil {
		t.Fatalf("failed job %+v", j)
	}
	art := jobs[0].ArtifactID.String()
	st, err := h.svc.ArtifactStatus(open, art)
	if err != nil || st.Status != StatusFailed || st.Indexed || st.ErrorMessage == nil || !strings.Contains(*st.ErrorMessage, "unreadable") {
		t.Fatalf("status of a failed artifact %+v %v", st, err)
	}
	if _, err := h.svc.Artifact(open, art); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "failed") {
		t.Fatalf("artifact of a failed job: %v", err)
	}
}

// TestJobInputKeepsPayloadBytes: an asynchronous job must store raw_payload
// exactly as sent (spacing, key order, escapes), or the artifact indexed
// later is not the one acknowledged (found by loci torture).
func TestJobInputKeepsPayloadBytes(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, payload := range []string{
		`{"content": "hello  world" }`,
		"{\n  \"title\": \"t\",\n  \"content\": \"a \\u00e9 \\\"q\\\"\"\n}",
		`"just a string"`,
		`[1, 2,3]`,
		``,
	} {
		in := engine.IngestInput{Workspace: "ws", ActorID: "a", Type: "note", Payload: []byte(payload), Timestamp: now, IdempotencyKey: "k"}
		got, _, err := decodeJobInput(encodeJobInput(in, now))
		if err != nil {
			t.Fatalf("payload %q: %v", payload, err)
		}
		if string(got.Payload) != payload {
			t.Errorf("payload %q came back as %q", payload, got.Payload)
		}
		if got.Workspace != "ws" || got.IdempotencyKey != "k" || !got.Timestamp.Equal(now) {
			t.Errorf("payload %q: other fields changed: %+v", payload, got)
		}
	}
}

// countingEmbedder counts the texts it embeds.
type countingEmbedder struct {
	embed.Embedder
	mu    sync.Mutex
	texts int
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.mu.Lock()
	c.texts += len(texts)
	c.mu.Unlock()
	return c.Embedder.Embed(ctx, texts)
}

func (c *countingEmbedder) count() int { c.mu.Lock(); defer c.mu.Unlock(); return c.texts }

// A retried ingest (same idempotency key, v1 and batch, with
// wait_for_embedding) is answered from the stored artifact and does not
// pay the embedder again: idempotency is resolved before embedding.
func TestRetriesDoNotPayTheEmbedder(t *testing.T) {
	emb := &countingEmbedder{Embedder: glove.New()}
	h := newDataWith(t, Config{}, engine.Options{Embedder: emb, EmbedInBackground: true})
	one := json.RawMessage(`{"artifact_type":"note","raw_payload":"the deploy moved to Friday","idempotency_key":"k1"}`)
	req := IngestBatchRequest{WorkspaceID: "ws", ActorID: "a", WaitForEmbedding: true, Artifacts: []json.RawMessage{one}}
	first, err := h.svc.IngestBatch(context.Background(), open, req)
	if err != nil || !first.Created || first.Ingested[0].Embedding != engine.EmbeddingEmbedded {
		t.Fatalf("first ingest: %+v %v", first, err)
	}
	paid := emb.count()
	if paid == 0 {
		t.Fatal("the embedder was never called")
	}
	for range 3 {
		again, err := h.svc.IngestBatch(context.Background(), open, req)
		if err != nil || again.Created || !again.Ingested[0].IdempotentReplay || again.Ingested[0].ArtifactID != first.Ingested[0].ArtifactID || again.Usage.Artifacts != 0 {
			t.Fatalf("retry: %+v %v", again, err)
		}
		v1, err := h.svc.Ingest(context.Background(), open, IngestRequest{WorkspaceID: "ws", ActorID: "a", ArtifactType: "note",
			RawPayload: json.RawMessage(`"the deploy moved to Friday"`), IdempotencyKey: "k1"})
		if err != nil || !v1.Replayed || v1.ArtifactID != first.Ingested[0].ArtifactID {
			t.Fatalf("v1 retry: %+v %v", v1, err)
		}
	}
	if n := emb.count(); n != paid {
		t.Fatalf("the embedder embedded %d texts for one artifact sent seven times, %d for the first", n, paid)
	}
}

// Jobs accepted by a service without workers stay pending across a stop
// and are indexed by the next service that has workers, which stores the
// payload exactly as it was accepted.
func TestJobsResumeAfterRestart(t *testing.T) {
	h := newData(t, Config{IndexWorkers: -1, AsyncIndexing: true})
	payload := json.RawMessage("{ \"content\" :  \"the heron count was 12\" }")
	res, err := h.svc.Ingest(context.Background(), open, IngestRequest{WorkspaceID: "ws", ActorID: "a", ArtifactType: "note", RawPayload: payload})
	if err != nil || res.Indexed || res.Replayed || len(res.SpanIDs) != 0 {
		t.Fatalf("async ingest: %+v %v", res, err)
	}
	a, err := h.svc.Artifact(open, res.ArtifactID.String())
	if err != nil || a.Status != StatusPending {
		t.Fatalf("pending artifact: %+v %v", a, err)
	}
	h.cfg.IndexWorkers = 1
	h.restart()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := h.svc.ArtifactStatus(open, res.ArtifactID.String())
		if err != nil {
			t.Fatal(err)
		}
		if st.Status == StatusIndexed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("artifact still %s after the restart", st.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
	a, err = h.svc.Artifact(open, res.ArtifactID.String())
	if err != nil || len(a.Spans) == 0 || a.ContentHash != res.ContentHash {
		t.Fatalf("indexed artifact: %+v %v", a, err)
	}
	b, err := a.JSON()
	if err != nil || !strings.HasPrefix(string(b), `{"raw_payload":`+string(payload)+`,"artifact_id":`) {
		t.Fatalf("artifact JSON does not carry the payload as sent: %s %v", b, err)
	}
}
