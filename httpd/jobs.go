package httpd

import (
	"errors"
	"sync"

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
}

func newJobRunner(s *Server, workers int) *jobRunner {
	r := &jobRunner{s: s, queued: map[string]bool{}, workers: max(workers, 0)}
	r.cond = sync.NewCond(&r.mu)
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
	r.wg.Wait()
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
		if !errors.Is(err, control.ErrNotFound) { // erased with its workspace meanwhile
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
	res, err := s.db.Ingest(j.TenantID, in)
	var inv *engine.InvalidError
	switch {
	case errors.Is(err, engine.ErrClosed):
		return
	case errors.As(err, &inv):
		r.finish(j, control.StatusFailed, inv.Error())
		return
	case err != nil:
		s.log.Error("httpd: indexing job failed", "job", j.ID, "err", err)
		r.finish(j, control.StatusFailed, "indexing failed: "+err.Error())
		return
	}
	if res.ArtifactID != j.ArtifactID {
		s.log.Warn("httpd: job's idempotency key was stored meanwhile under another artifact", "job", j.ID, "artifact", res.ArtifactID)
	}
	r.finish(j, control.StatusDone, "")
}

func (r *jobRunner) finish(j control.Job, st control.JobStatus, msg string) {
	if err := r.s.ctl.SetJobStatus(j.ID, st, msg); err != nil && !errors.Is(err, control.ErrNotFound) {
		r.s.log.Error("httpd: job state", "job", j.ID, "err", err)
	}
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
