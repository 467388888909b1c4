package control

import (
	"slices"
	"time"

	"github.com/google/uuid"
)

// JobStatus is the state of an asynchronous indexing job: pending, then
// processing, then done or failed. A job may go from pending straight to done
// or failed, and processing may be set again when a worker resumes a job after
// a restart. Done and failed are final.
type JobStatus string

const (
	StatusPending    JobStatus = "pending"
	StatusProcessing JobStatus = "processing"
	StatusDone       JobStatus = "done"
	StatusFailed     JobStatus = "failed"
)

// Job is an asynchronous indexing job of one artifact.
type Job struct {
	ID, TenantID, Workspace string
	ArtifactID              uuid.UUID // assigned when the job is created
	IdempotencyKey          string
	Status                  JobStatus
	CreatedAt, UpdatedAt    time.Time
	ErrorMessage            string // set when failed
	// Seq is the seq of the record that created the job: the erasure fence
	// its artifact is ingested with (engine.IngestInput.Fence), so an
	// erasure of the workspace after it keeps the artifact out.
	Seq uint64
	// Input is the caller's opaque input, kept only while the job is pending
	// or processing. It is shared with the store: do not modify it.
	Input []byte
}

// JobInput is one job to create.
type JobInput struct {
	ArtifactID     uuid.UUID
	IdempotencyKey string
	Input          []byte
}

func (j *jobState) public() Job {
	return Job{ID: j.id.String(), TenantID: j.tenantID, Workspace: j.ws, ArtifactID: j.artifact, IdempotencyKey: j.idem,
		Status: j.status, CreatedAt: fromMicros(j.created), UpdatedAt: fromMicros(j.updated), ErrorMessage: j.errMsg, Seq: j.seq, Input: j.input}
}

// CreateJobs creates one pending job per input, all in one record, and
// returns them in input order.
func (s *Store) CreateJobs(tenantID, ws string, in []JobInput) ([]Job, error) {
	if err := validWorkspace(ws); err != nil {
		return nil, err
	}
	if len(in) == 0 {
		return nil, nil
	}
	if _, ok := s.Tenant(tenantID); !ok {
		return nil, ErrNotFound
	}
	if err := s.checkBacklog(tenantID, in); err != nil {
		return nil, err
	}
	r := jobsCreateRec{tenantID: tenantID, ws: ws, created: micros(s.now())}
	for _, x := range in {
		if x.ArtifactID == uuid.Nil {
			return nil, &InvalidError{Field: "artifact_id", Reason: "is the nil UUID"}
		}
		id, err := uuid.NewRandom()
		if err != nil {
			return nil, err
		}
		r.jobs = append(r.jobs, jobInRec{id: id, artifact: x.ArtifactID, idem: x.IdempotencyKey, input: x.Input})
	}
	if err := s.append(kindJob, encodeJobsCreate(r)); err != nil {
		return nil, err
	}
	var seq uint64 // the record's: applied before append returned
	s.mu.RLock()
	if j := s.st.jobs[r.jobs[0].id]; j != nil {
		seq = j.seq
	}
	s.mu.RUnlock()
	out := make([]Job, len(r.jobs))
	for i, j := range r.jobs {
		out[i] = Job{ID: j.id.String(), TenantID: tenantID, Workspace: ws, ArtifactID: j.artifact, IdempotencyKey: j.idem,
			Status: StatusPending, CreatedAt: fromMicros(r.created), UpdatedAt: fromMicros(r.created), Seq: seq, Input: j.input}
	}
	return out, nil
}

// Job returns one of the tenant's jobs; another tenant's job is not found.
func (s *Store) Job(tenantID, jobID string) (Job, bool) {
	id, err := uuid.Parse(jobID)
	if err != nil {
		return Job{}, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return jobFor(s.st.jobs[id], tenantID)
}

// JobByArtifact returns the latest job of one of the tenant's artifacts.
func (s *Store) JobByArtifact(tenantID string, artifactID uuid.UUID) (Job, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return jobFor(s.st.byArtifact[artifactID], tenantID)
}

// jobFor returns j as tenantID sees it: another tenant's job is not found,
// so job ids do not leak.
func jobFor(j *jobState, tenantID string) (Job, bool) {
	if j == nil || j.tenantID != tenantID {
		return Job{}, false
	}
	return j.public(), true
}

// JobByIdempotencyKey returns the latest pending or processing job with the
// key in the workspace, so a retried batch does not queue an artifact twice.
// Once the job is done, the artifact itself carries the key.
func (s *Store) JobByIdempotencyKey(tenantID, ws, key string) (Job, bool) {
	if key == "" {
		return Job{}, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	list := s.st.byIdem[idemKey{tenantID, ws, key}]
	if len(list) == 0 {
		return Job{}, false
	}
	return list[len(list)-1].public(), true
}

// SetJobStatus moves a job to processing, done or failed (errMsg is kept
// only for failed). Done and failed drop the job's input. An unknown job is
// ErrNotFound, a finished one ErrJobFinished.
func (s *Store) SetJobStatus(jobID string, st JobStatus, errMsg string) error {
	if st != StatusProcessing && st != StatusDone && st != StatusFailed {
		return &InvalidError{Field: "status", Reason: "must be processing, done or failed"}
	}
	if st != StatusFailed {
		errMsg = ""
	}
	id, err := uuid.Parse(jobID)
	if err != nil {
		return ErrNotFound
	}
	s.mu.RLock()
	j := s.st.jobs[id]
	finished := j != nil && j.finished()
	s.mu.RUnlock()
	switch {
	case j == nil:
		return ErrNotFound
	case finished:
		return ErrJobFinished
	}
	return s.append(kindJob, encodeStatus(statusRec{jobID: id, status: st, at: micros(s.now()), errMsg: errMsg}))
}

// Unfinished returns the pending and processing jobs in creation order, for
// a worker pool to resume after a restart.
func (s *Store) Unfinished() []Job {
	s.mu.RLock()
	defer s.mu.RUnlock()
	list := make([]*jobState, 0, len(s.st.unfinished))
	for _, j := range s.st.unfinished {
		list = append(list, j)
	}
	slices.SortFunc(list, compareJobs)
	out := make([]Job, len(list))
	for i, j := range list {
		out[i] = j.public()
	}
	return out
}

// ErasedMessage is the error message of a job cancelled by the erasure of
// its workspace.
const ErasedMessage = "workspace erased"

// EraseWorkspaceJobs ends, as part of a workspace's erasure, every unfinished
// job of the workspace created before fence (the erase record's seq, see
// engine.EraseResult.Seq): they become failed with ErasedMessage and drop
// their input, so clients polling them see a final status. Jobs created
// after the erasure are not touched: their artifacts go into the workspace
// as it is now. The engine refuses the artifact of a cancelled job that a
// worker was indexing at that moment (engine.ErrWorkspaceErased), so none
// reappears. A workspace without such jobs writes no record.
func (s *Store) EraseWorkspaceJobs(tenantID, ws string, fence uint64) error {
	if fence == 0 {
		return &InvalidError{Field: "fence", Reason: "must be the erase record's seq, not 0"}
	}
	s.mu.RLock()
	found := false
	for _, j := range s.st.unfinished {
		if j.tenantID == tenantID && j.ws == ws && j.seq < fence {
			found = true
			break
		}
	}
	s.mu.RUnlock()
	if !found {
		return nil
	}
	return s.append(kindJob, encodeCancelJobs(cancelJobsRec{tenantID: tenantID, ws: ws, fence: fence, at: micros(s.now())}))
}
