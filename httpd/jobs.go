package httpd

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/engine"
	"github.com/valyala/fasthttp"
)

// jobRunner indexes accepted artifacts in the background. Jobs live in the
// control state; the queue holds the unfinished ones found at start
// (resuming what a restart interrupted) and each job accepted since.
type jobRunner struct {
	s        *Server
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

func newJobRunner(s *Server, workers int) *jobRunner {
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

// add queues jobs not queued yet, in the order given. Without workers it
// keeps nothing: the jobs wait in the control state for a server with some.
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
			r.s.log.Error("httpd: expiring finished jobs", "err", err)
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

// run indexes one job. Bad input is recorded in the job (failed, with the
// reason); a shutdown leaves it for the next start.
func (r *jobRunner) run(j control.Job) {
	s := r.s
	if err := s.ctl.SetJobStatus(j.ID, control.StatusProcessing, ""); err != nil {
		if !jobGone(err) {
			s.log.Error("httpd: job state", "job", j.ID, "err", err)
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
	res, err := s.db.Ingest(j.TenantID, in)
	var inv *engine.InvalidError
	var conflict *engine.IdempotencyConflictError
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
		s.log.Error("httpd: indexing job failed", "job", j.ID, "err", err)
		r.finish(j, control.StatusFailed, "indexing failed: "+err.Error())
		return
	}
	if res.ArtifactID != j.ArtifactID {
		s.log.Warn("httpd: job's idempotency key was stored meanwhile under another artifact", "job", j.ID, "artifact", res.ArtifactID)
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
		r.s.log.Error("httpd: job state", "job", j.ID, "err", err)
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

type jobResponse struct {
	JobID        string  `json:"job_id"`
	WorkspaceID  string  `json:"workspace_id"`
	Status       string  `json:"status"`
	ArtifactID   *string `json:"artifact_id,omitempty"`
	CreatedAt    string  `json:"created_at"`
	UpdatedAt    string  `json:"updated_at"`
	ErrorMessage *string `json:"error_message"`
}

func (s *Server) getJob(ctx *fasthttp.RequestCtx, c *call) {
	j, ok := s.ctl.Job(c.who.tenant, c.params["job_id"])
	if !ok {
		writeError(ctx, fasthttp.StatusNotFound, "job not found")
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, jobJSON(j))
}

func jobJSON(j control.Job) jobResponse {
	r := jobResponse{JobID: j.ID, WorkspaceID: j.Workspace, Status: string(j.Status), CreatedAt: formatTime(j.CreatedAt), UpdatedAt: formatTime(j.UpdatedAt)}
	if j.Status == control.StatusDone {
		id := j.ArtifactID.String()
		r.ArtifactID = &id
	}
	if j.Status == control.StatusFailed {
		msg := j.ErrorMessage
		r.ErrorMessage = &msg
	}
	return r
}
