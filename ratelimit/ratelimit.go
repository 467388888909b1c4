// Package ratelimit is a sliding-window rate limiter per key: a tenant (the
// plan's requests per minute) or a client address (open registrations).
//
// It keeps an exact log of each key's allowed requests in the last window:
// a ring buffer of timestamps sized to the tenant's limit. A request is
// allowed when fewer than limit requests fall in the window that ends at it.
// Denied requests are not logged, so a client that keeps retrying does not
// push its own recovery further out.
package ratelimit

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// shardCount spreads tenants over independent locks.
const shardCount = 64

// Limiter limits requests per tenant. It is safe for concurrent use. Memory
// is bounded by the tenants active in the last window: a tenant whose log has
// wholly left the window is dropped by a periodic sweep of its shard.
type Limiter struct {
	window time.Duration
	now    func() time.Time
	seed   maphash.Seed
	cursor atomic.Uint64 // the shard to sweep-check next
	shards [shardCount]shard
}

type shard struct {
	mu      sync.Mutex
	logs    map[string]*ring
	touches int // Allow calls since the last sweep
}

// ring is a tenant's log: the times of its allowed requests, oldest first,
// in buf[head], buf[head+1], ... (modulo len(buf)); len(buf) is the limit.
type ring struct {
	buf  []time.Time
	head int
	n    int
}

// New returns a limiter with the given window (60 s when not positive) that
// reads the time from now (time.Now when nil).
func New(window time.Duration, now func() time.Time) *Limiter {
	if window <= 0 {
		window = time.Minute
	}
	if now == nil {
		now = time.Now
	}
	l := &Limiter{window: window, now: now, seed: maphash.MakeSeed()}
	for i := range l.shards {
		l.shards[i].logs = make(map[string]*ring)
	}
	return l
}

// Window returns the length of the sliding window.
func (l *Limiter) Window() time.Duration { return l.window }

// Allow records a request of tenant at the current time if fewer than limit
// of its requests fall in the last window. It returns whether the request is
// allowed, how many more the window admits after it, and, when it is denied,
// how long until the oldest logged request leaves the window. A limit below
// 1 denies every request with a retry of one window. The limit may differ
// from call to call (a plan change): the log keeps the newest requests that
// fit the new limit.
func (l *Limiter) Allow(tenant string, limit int) (ok bool, remaining int, retryAfter time.Duration) {
	if limit < 1 {
		return false, 0, l.window
	}
	now := l.now()
	sh := &l.shards[maphash.String(l.seed, tenant)%shardCount]
	sh.mu.Lock()
	ok, remaining, retryAfter = sh.allow(tenant, limit, now, l.window)
	sh.mu.Unlock()
	// Visit the shards in turn, so that idle tenants are dropped even from
	// shards no active tenant hashes to.
	o := &l.shards[l.cursor.Add(1)%shardCount]
	o.mu.Lock()
	o.sweep(now, l.window)
	o.mu.Unlock()
	return ok, remaining, retryAfter
}

func (sh *shard) allow(tenant string, limit int, now time.Time, window time.Duration) (bool, int, time.Duration) {
	sh.sweep(now, window)
	r := sh.logs[tenant]
	if r == nil {
		r = &ring{}
		sh.logs[tenant] = r
	}
	if len(r.buf) != limit {
		r.resize(limit)
	}
	r.expire(now, window)
	if r.n >= limit {
		wait := r.buf[r.head].Add(window).Sub(now)
		return false, 0, max(wait, time.Nanosecond)
	}
	r.buf[(r.head+r.n)%len(r.buf)] = now
	r.n++
	return true, limit - r.n, 0
}

// expire drops the requests that have left the window ending at now: a
// request at t counts in windows ending before t+window.
func (r *ring) expire(now time.Time, window time.Duration) {
	for r.n > 0 && !now.Before(r.buf[r.head].Add(window)) {
		r.buf[r.head] = time.Time{}
		r.head = (r.head + 1) % len(r.buf)
		r.n--
	}
}

// resize makes room for limit entries, keeping the newest of the log.
func (r *ring) resize(limit int) {
	keep := min(r.n, limit)
	buf := make([]time.Time, limit)
	for i := 0; i < keep; i++ {
		buf[i] = r.buf[(r.head+r.n-keep+i)%len(r.buf)]
	}
	r.buf, r.head, r.n = buf, 0, keep
}

// sweep drops the logs of idle tenants once the shard has been visited twice
// as often as it holds tenants, so the cost per call stays O(1) amortised.
func (sh *shard) sweep(now time.Time, window time.Duration) {
	sh.touches++
	if sh.touches < 2*len(sh.logs)+64 {
		return
	}
	sh.touches = 0
	for tenant, r := range sh.logs {
		r.expire(now, window)
		if r.n == 0 {
			delete(sh.logs, tenant)
		}
	}
}

// RetryAfterSeconds rounds a retry delay up to whole seconds, at least 1, for
// the Retry-After header.
func RetryAfterSeconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	return max(s, 1)
}
