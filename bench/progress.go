package bench

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// progressEvery is the least time between two progress lines: a run of
// minutes shows it is alive, a run of seconds prints nothing.
var progressEvery = 5 * time.Second // a var: tests shorten it

// progress reports how far a long phase got (building a workspace,
// embedding, an ingest loop) through a config's Progress func, which
// loci bench and loci eval point at stderr. A nil *progress or one without
// a func reports nothing. It is safe for concurrent use.
type progress struct {
	f     func(string)
	mu    sync.Mutex
	start time.Time
	last  time.Time // of the last line, or the start
}

func newProgress(f func(string)) *progress {
	now := time.Now()
	return &progress{f: f, start: now, last: now}
}

// tick reports the state of the phase, unless a line went out less than
// progressEvery ago.
func (p *progress) tick(format string, args ...any) {
	if p == nil || p.f == nil {
		return
	}
	p.mu.Lock()
	now := time.Now()
	if now.Sub(p.last) < progressEvery {
		p.mu.Unlock()
		return
	}
	p.last = now
	p.mu.Unlock()
	p.f(fmt.Sprintf(format, args...) + fmt.Sprintf(" (%s)", now.Sub(p.start).Round(time.Second)))
}

// during reports what every progressEvery until the returned stop is
// called, for one long call that has no loop to tick in (a compaction, say).
func (p *progress) during(what string) (stop func()) {
	if p == nil || p.f == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		began := time.Now()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				p.tick("%s: %s so far", what, time.Since(began).Round(time.Second))
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// counter returns the func a loop of total items calls with how many are
// done: a line "what: done of total" at most every progressEvery. Between
// lines a call costs a clock read and an atomic load, so timed loops may
// call it per item. Safe for concurrent use.
func (p *progress) counter(what string, total int) func(done int) {
	if p == nil || p.f == nil {
		return func(int) {}
	}
	var due atomic.Int64
	due.Store(time.Now().Add(progressEvery).UnixNano())
	return func(done int) {
		now := time.Now().UnixNano()
		if d := due.Load(); now < d || !due.CompareAndSwap(d, now+int64(progressEvery)) {
			return
		}
		p.tick("%s: %d of %d", what, done, total)
	}
}
