package service

import (
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/engine"
)

// jobRunner indexes accepted artifacts in the background. Jobs live in the
// control state; the queue holds the unfinished ones found at start
// (resuming what a restart interrupted) and each job accepted since.
type jobRunner struct {
	s        *Service
	mu       sync.Mutex
	cond     *sync.Cond
	queue    []control.Job
	queued   map[string]bool // job ids queued or being indexed
	workers  int
	stopping bool
	wg       sync.WaitGroup
	// The sweeper expires finished jobs past their retention
	// (control.Store.ExpireJobs) every jobSweepInterval, and sooner after
	// every sweepAfterFinished finished jobs, so a burst of jobs does not
	// pile up in memory and in the control snapshot until the next tick.
	finished  atomic.Uint64
	sweepKick chan struct{}
	stopSweep chan struct{}
	// beforeIngest, when set (tests only, under mu), runs on the worker just
	// before a job's artifact is ingested, so a test can hold jobs in flight.
	beforeIngest func(control.Job)
	// afterIngest, when set (tests only, under mu), runs on the worker once
	// a job's artifact is stored, before the job is marked done.
	afterIngest func(control.Job)
}

// Job expiry cadence, see jobRunner.
const (
	jobSweepInterval   = time.Minute
	sweepAfterFinished = 256
)

func newJobRunner(s *Service, workers int) *jobRunner {
	r := &jobRunner{s: s, queued: map[string]bool{}, workers: max(workers, 0),
		sweepKick: make(chan struct{}, 1), stopSweep: make(chan struct{})}
	r.cond = sync.NewCond(&r.mu)
	r.wg.Add(1)
	go r.sweep()
	for i := 0; i < workers; i++ {
		r.wg.Add(1)
		go r.work()
	}
	if workers > 0 {
		r.add(s.ctl.Unfinished()) // what a restart interrupted, oldest first
	}
	return r
}

// JobBacklog is the number of jobs queued or being indexed, for the
// metrics (read at scrape time; no request waits for the queue's lock
// beyond an append).
func (s *Service) JobBacklog() int {
	r := s.jobs
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.queued)
}

// add queues jobs not queued yet, in the order given. Without workers it
// keeps nothing: the jobs wait in the control state for a service with some.
func (r *jobRunner) add(jobs []control.Job) {
	if r.workers == 0 {
		return
	}
	r.mu.Lock()
	for _, j := range jobs {
		if !r.queued[j.ID] {
			r.queued[j.ID] = true
			r.queue = append(r.queue, j)
		}
	}
	r.mu.Unlock()
	r.cond.Broadcast()
}

// stop lets running jobs finish and stops the workers; queued jobs stay
// pending in the control state for the next start.
func (r *jobRunner) stop() {
	r.mu.Lock()
	r.stopping = true
	r.mu.Unlock()
	r.cond.Broadcast()
	close(r.stopSweep)
	r.wg.Wait()
}

// sweep expires finished jobs until stop.
func (r *jobRunner) sweep() {
	defer r.wg.Done()
	t := time.NewTicker(jobSweepInterval)
	defer t.Stop()
	for {
		select {
		case <-r.stopSweep:
			return
		case <-t.C:
		case <-r.sweepKick:
		}
		if _, err := r.s.ctl.ExpireJobs(); err != nil && !errors.Is(err, engine.ErrClosed) {
			r.s.log.Error("service: expiring finished jobs", "err", err)
		}
	}
}

func (r *jobRunner) work() {
	defer r.wg.Done()
	for {
		r.mu.Lock()
		for len(r.queue) == 0 && !r.stopping {
			r.cond.Wait()
		}
		if r.stopping {
			r.mu.Unlock()
			return
		}
		j := r.queue[0]
		r.queue = r.queue[1:]
		r.mu.Unlock()
		r.run(j)
		r.mu.Lock()
		delete(r.queued, j.ID)
		r.mu.Unlock()
	}
}

// ingestWhenRoom ingests a job's artifact, waiting while the engine refuses
// writes for back-pressure (engine.ErrBackpressure): the job was accepted,
// so it waits its turn instead of failing. A stop ends the wait with
// engine.ErrClosed, which leaves the job for the next start.
func (r *jobRunner) ingestWhenRoom(db *engine.DB, tenant string, in engine.IngestInput) (engine.IngestResult, error) {
	for {
		res, err := db.Ingest(tenant, in)
		if !errors.Is(err, engine.ErrBackpressure) {
			return res, err
		}
		r.mu.Lock()
		stopping := r.stopping
		r.mu.Unlock()
		if stopping {
			return res, engine.ErrClosed
		}
		select {
		case <-r.stopSweep:
			return res, engine.ErrClosed
		case <-time.After(time.Second):
		}
	}
}

// run indexes one job. Bad input is recorded in the job (failed, with the
// reason); a shutdown leaves it for the next start.
func (r *jobRunner) run(j control.Job) {
	s := r.s
	if err := s.ctl.SetJobStatus(j.ID, control.StatusProcessing, ""); err != nil {
		if !jobGone(err) {
			s.log.Error("service: job state", "job", j.ID, "err", err)
		}
		return
	}
	in, _, err := decodeJobInput(j.Input)
	if err != nil {
		r.finish(j, control.StatusFailed, "stored job input is unreadable: "+err.Error())
		return
	}
	in.ArtifactID = j.ArtifactID
	in.Fence = j.Seq // an erasure of the workspace after the job was accepted keeps its artifact out
	r.mu.Lock()
	hook := r.beforeIngest
	r.mu.Unlock()
	if hook != nil {
		hook(j)
	}
	var res engine.IngestResult
	db, err := s.engine(j.TenantID, in.Workspace)
	if err == nil {
		res, err = r.ingestWhenRoom(db, j.TenantID, in)
		err = keyError(err, false)
	}
	var inv *engine.InvalidError
	var conflict *IdempotencyConflictError
	switch {
	case errors.Is(err, engine.ErrClosed):
		return
	case errors.Is(err, engine.ErrWorkspaceErased):
		r.finish(j, control.StatusFailed, control.ErasedMessage)
		return
	case errors.As(err, &inv):
		r.finish(j, control.StatusFailed, inv.Error())
		return
	case errors.As(err, &conflict):
		// Another request stored a different artifact under the job's key
		// while the job waited.
		r.finish(j, control.StatusFailed, conflict.Error())
		return
	case err != nil:
		s.log.Error("service: indexing job failed", "job", j.ID, "err", err)
		r.finish(j, control.StatusFailed, "indexing failed: "+err.Error())
		return
	}
	if res.ArtifactID != j.ArtifactID {
		s.log.Warn("service: job's idempotency key was stored meanwhile under another artifact", "job", j.ID, "artifact", res.ArtifactID)
	}
	r.mu.Lock()
	after := r.afterIngest
	r.mu.Unlock()
	if after != nil {
		after(j)
	}
	r.finish(j, control.StatusDone, "")
}

func (r *jobRunner) finish(j control.Job, st control.JobStatus, msg string) {
	if err := r.s.ctl.SetJobStatus(j.ID, st, msg); err != nil && !jobGone(err) {
		r.s.log.Error("service: job state", "job", j.ID, "err", err)
	}
	if r.finished.Add(1)%sweepAfterFinished == 0 {
		select {
		case r.sweepKick <- struct{}{}:
		default: // a sweep is due already
		}
	}
}

// jobGone reports a status change that raced the end of the job: its
// workspace's erasure cancelled it, or retention removed it.
func jobGone(err error) bool {
	return errors.Is(err, control.ErrNotFound) || errors.Is(err, control.ErrJobFinished)
}

// jobInput is what an asynchronous job stores, the durable job-input
// format: the artifact as accepted, its timestamp already resolved (the
// time of the ingest call, not of indexing).
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
	return spliceRaw(b, "raw_payload", in.Payload)
}

// spliceRaw returns the JSON object obj with "name": raw put first, raw
// byte for byte (encoding/json compacts and escapes a json.RawMessage, and
// a payload is stored and returned exactly as sent). An empty raw leaves
// obj as it is.
func spliceRaw(obj []byte, name string, raw []byte) []byte {
	if len(raw) == 0 {
		return obj
	}
	out := make([]byte, 0, len(obj)+len(raw)+len(name)+8)
	out = append(out, '{', '"')
	out = append(out, name...)
	out = append(out, '"', ':')
	out = append(out, raw...)
	out = append(out, ',')
	return append(out, obj[1:]...)
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

// JobResult is an asynchronous indexing job (GET /v2/jobs/{job_id}).
type JobResult struct {
	JobID        string  `json:"job_id"`
	WorkspaceID  string  `json:"workspace_id"`
	Status       string  `json:"status"`
	ArtifactID   *string `json:"artifact_id,omitempty"`
	CreatedAt    string  `json:"created_at"`
	UpdatedAt    string  `json:"updated_at"`
	ErrorMessage *string `json:"error_message"`
}

// Job returns one of p's jobs; another tenant's, or an expired one, is
// ErrNotFound.
func (s *Service) Job(p Principal, jobID string) (JobResult, error) {
	j, ok := s.ctl.Job(p.TenantID, jobID)
	if !ok {
		return JobResult{}, refuse(ErrNotFound, "job not found")
	}
	r := JobResult{JobID: j.ID, WorkspaceID: j.Workspace, Status: string(j.Status), CreatedAt: FormatTime(j.CreatedAt), UpdatedAt: FormatTime(j.UpdatedAt)}
	if j.Status == control.StatusDone {
		id := j.ArtifactID.String()
		r.ArtifactID = &id
	}
	if j.Status == control.StatusFailed {
		msg := j.ErrorMessage
		r.ErrorMessage = &msg
	}
	return r, nil
}
