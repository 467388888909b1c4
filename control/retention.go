package control

import (
	"cmp"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"
)

// JobRetention bounds how long finished (done or failed) jobs are kept, and
// how many unfinished jobs a tenant may have waiting. Unfinished jobs are
// never expired. Jobs drop their input as soon as they finish, so what is
// kept is a few hundred bytes of status per job.
type JobRetention struct {
	// Age: a finished job whose last update is older than this is removed.
	Age time.Duration
	// MaxFinished: per tenant, only the newest this many finished jobs are
	// kept (by last update, then creation order).
	MaxFinished int
	// MaxUnfinished and MaxUnfinishedBytes bound a tenant's backlog: the
	// unfinished jobs and the bytes of their inputs, which are held in
	// memory and in the payloads file until indexed. CreateJobs refuses
	// jobs beyond them with ErrJobBacklog (the client retries later).
	MaxUnfinished      int
	MaxUnfinishedBytes int64
}

// Defaults of JobRetention: a day, 10,000 finished jobs per tenant, and a
// backlog of 10,000 unfinished jobs or 256 MiB of inputs per tenant.
const (
	DefaultJobRetentionAge       = 24 * time.Hour
	DefaultMaxFinishedJobs       = 10_000
	DefaultMaxUnfinishedJobs     = 10_000
	DefaultMaxUnfinishedJobBytes = 256 << 20
)

// DefaultJobRetention is the retention a Store starts with.
var DefaultJobRetention = JobRetention{Age: DefaultJobRetentionAge, MaxFinished: DefaultMaxFinishedJobs,
	MaxUnfinished: DefaultMaxUnfinishedJobs, MaxUnfinishedBytes: DefaultMaxUnfinishedJobBytes}

// ErrJobBacklog: the tenant has as many unfinished jobs, or bytes of their
// inputs, as JobRetention allows; nothing was created. Its text reaches
// callers, so it has no package prefix.
var ErrJobBacklog = errors.New("too many unfinished indexing jobs for this tenant: nothing was queued; retry when some are done")

// maxExpirePerRecord bounds the size of one expiry record (16 bytes per id).
const maxExpirePerRecord = 4096

// SetJobRetention replaces the retention; zero fields take the defaults.
func (s *Store) SetJobRetention(r JobRetention) {
	if r.Age <= 0 {
		r.Age = DefaultJobRetentionAge
	}
	if r.MaxFinished <= 0 {
		r.MaxFinished = DefaultMaxFinishedJobs
	}
	if r.MaxUnfinished <= 0 {
		r.MaxUnfinished = DefaultMaxUnfinishedJobs
	}
	if r.MaxUnfinishedBytes <= 0 {
		r.MaxUnfinishedBytes = DefaultMaxUnfinishedJobBytes
	}
	s.mu.Lock()
	s.retention = r
	s.mu.Unlock()
}

// ExpireJobs removes the finished jobs the retention no longer keeps and
// returns how many. Removal is a durable record listing the job ids, so
// replay removes exactly the same jobs whatever the clock says then; a job
// resumed or erased meanwhile is skipped by apply.
func (s *Store) ExpireJobs() (int, error) {
	s.mu.RLock()
	ids := s.st.expired(s.retention, micros(s.now()))
	s.mu.RUnlock()
	done := 0
	for done < len(ids) {
		n := min(len(ids)-done, maxExpirePerRecord)
		if err := s.append(kindJob, encodeExpireJobs(expireJobsRec{ids: ids[done : done+n]})); err != nil {
			return done, err
		}
		done += n
	}
	return done, nil
}

// expired lists, in creation order, the finished jobs older than r.Age at
// now (Unix µs) or beyond the newest r.MaxFinished of their tenant.
func (s *state) expired(r JobRetention, now int64) []uuid.UUID {
	cutoff := now - r.Age.Microseconds()
	perTenant := map[string][]*jobState{}
	for _, j := range s.jobs {
		if j.finished() {
			perTenant[j.tenantID] = append(perTenant[j.tenantID], j)
		}
	}
	var out []*jobState
	for _, list := range perTenant {
		// Newest first: by last update, then by creation order.
		slices.SortFunc(list, func(a, b *jobState) int {
			if c := cmp.Compare(b.updated, a.updated); c != 0 {
				return c
			}
			return compareJobs(b, a)
		})
		for i, j := range list {
			if i >= r.MaxFinished || j.updated < cutoff {
				out = append(out, j)
			}
		}
	}
	slices.SortFunc(out, compareJobs)
	ids := make([]uuid.UUID, len(out))
	for i, j := range out {
		ids[i] = j.id
	}
	return ids
}

// JobCounts returns how many jobs the state holds, unfinished and finished.
func (s *Store) JobCounts() (unfinished, finished int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.st.unfinished), len(s.st.jobs) - len(s.st.unfinished)
}

// checkBacklog refuses a batch of jobs that would take the tenant's backlog
// over the retention's bounds. A batch is admitted whole or not at all; an
// empty backlog admits any one batch, so a batch larger than the bounds is
// not refused forever. Concurrent batches may overshoot by what they carry.
func (s *Store) checkBacklog(tenantID string, in []JobInput) error {
	var bytes int64
	for _, x := range in {
		bytes += int64(len(x.Input))
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	b := s.st.backlog[tenantID]
	if b.jobs > 0 && (b.jobs+len(in) > s.retention.MaxUnfinished || b.bytes+bytes > s.retention.MaxUnfinishedBytes) {
		return ErrJobBacklog
	}
	return nil
}
