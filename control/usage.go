package control

import (
	"maps"
	"time"

	"github.com/google/uuid"
)

// Usage is what a tenant used in one calendar month (UTC).
type Usage struct {
	TenantID, Period  string            // Period is "YYYY-MM"
	Requests          map[string]uint64 // by endpoint name, such as "POST /v1/ingest"
	ArtifactsIngested uint64
	RawBytesStored    uint64
	ContextPacks      uint64
	TokensPacked      uint64
	RateLimited       uint64
}

// UsageDelta is what one request used. A non-empty Endpoint counts one
// request of that endpoint.
type UsageDelta struct {
	Endpoint                   string
	Artifacts, RawBytes, Packs uint64
	Tokens                     uint64
	RateLimited                bool
}

// Period returns the usage period of t: its month in UTC, as "YYYY-MM".
func Period(t time.Time) string { return t.UTC().Format("2006-01") }

// Count adds d to the tenant's usage in the period of at. It only touches
// memory: the delta is visible to Usage at once and written by the next
// FlushUsage. A delta without a tenant, or at a time outside years 1..9999,
// is dropped: no usage record could carry it.
func (s *Store) Count(tenantID string, at time.Time, d UsageDelta) {
	k := usageKey{tenantID, Period(at)}
	if tenantID == "" || validPeriod(k.period) != nil {
		return
	}
	s.mu.Lock()
	c := s.pending[k]
	if c == nil {
		c = &counts{}
		s.pending[k] = c
	}
	if d.Endpoint != "" {
		if c.requests == nil {
			c.requests = make(map[string]uint64)
		}
		c.requests[d.Endpoint]++
	}
	c.artifacts += d.Artifacts
	c.rawBytes += d.RawBytes
	c.packs += d.Packs
	c.tokens += d.Tokens
	if d.RateLimited {
		c.rateLimited++
	}
	s.mu.Unlock()
	s.signal()
}

// signal wakes RunUsageWriter; it never blocks.
func (s *Store) signal() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// FlushUsage writes every pending delta and key last-used time as one usage
// record. Nothing pending is a no-op. What arrives while the record is being
// appended stays pending for the next flush; when the append fails, what the
// record carried becomes pending again, so no count is lost or doubled.
func (s *Store) FlushUsage() error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	s.mu.Lock()
	if len(s.pending) == 0 && len(s.pendingUsed) == 0 {
		s.mu.Unlock()
		return nil
	}
	app := s.app
	if app == nil {
		s.mu.Unlock()
		return ErrNotAttached
	}
	// Usage reads applied + inflight + pending, and ApplyControl clears
	// inflight in the step that applies the record: totals never jump.
	s.inflight, s.pending = s.pending, make(map[usageKey]*counts)
	s.inflightUsed, s.pendingUsed = s.pendingUsed, make(map[uuid.UUID]int64)
	s.flushing = true
	payload := encodeUsage(s.inflight, s.inflightUsed)
	s.mu.Unlock()

	err := app(kindUsage, payload)

	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.flushing {
		return err // applied
	}
	for k, c := range s.inflight {
		p := s.pending[k]
		if p == nil {
			p = &counts{}
			s.pending[k] = p
		}
		p.add(c)
	}
	for id, at := range s.inflightUsed {
		if old, ok := s.pendingUsed[id]; !ok || at > old {
			s.pendingUsed[id] = at
		}
	}
	s.inflight, s.inflightUsed, s.flushing = nil, nil, false
	if err == nil {
		err = errUsageNotApplied
	}
	return err
}

// Usage returns a tenant's usage in period ("YYYY-MM"): applied counts plus
// those not yet flushed. Requests is never nil.
func (s *Store) Usage(tenantID, period string) Usage {
	k := usageKey{tenantID, period}
	total := &counts{requests: make(map[string]uint64)}
	s.mu.RLock()
	for _, m := range [...]map[usageKey]*counts{s.st.usage, s.inflight, s.pending} {
		if c := m[k]; c != nil {
			total.add(c)
		}
	}
	s.mu.RUnlock()
	return Usage{TenantID: tenantID, Period: period, Requests: maps.Clone(total.requests),
		ArtifactsIngested: total.artifacts, RawBytesStored: total.rawBytes, ContextPacks: total.packs,
		TokensPacked: total.tokens, RateLimited: total.rateLimited}
}

// Retry delays of RunUsageWriter after a failed flush.
const (
	minFlushRetry = 100 * time.Millisecond
	maxFlushRetry = 10 * time.Second
)

// RunUsageWriter flushes usage whenever some is pending, until stop is
// closed; then it flushes a last time and returns that flush's error.
// Everything counted while one record is being appended goes into the next,
// so records coalesce under load. A failed flush is retried with backoff.
func (s *Store) RunUsageWriter(stop <-chan struct{}) error {
	retry := time.Duration(0)
	for {
		if retry > 0 {
			t := time.NewTimer(retry)
			select {
			case <-stop:
				t.Stop()
				return s.FlushUsage()
			case <-t.C:
			}
		} else {
			select {
			case <-stop:
				return s.FlushUsage()
			case <-s.kick:
			}
		}
		if err := s.FlushUsage(); err != nil {
			retry = min(max(2*retry, minFlushRetry), maxFlushRetry)
			continue
		}
		retry = 0
		// At most one usage record per UsageFlushInterval: the counts of a
		// busy server ride in one record instead of one per request, and
		// their fsyncs do not queue in front of the requests' own writes.
		t := time.NewTimer(UsageFlushInterval)
		select {
		case <-stop:
			t.Stop()
			return s.FlushUsage()
		case <-t.C:
		}
	}
}

// UsageFlushInterval is the least time between two usage records. A crash
// (not a graceful stop, which writes what is pending) loses at most the
// counts of this interval.
const UsageFlushInterval = 100 * time.Millisecond
