package ratelimit

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// clock is a fake time source that is safe for concurrent use.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// step is one call in a scripted scenario: advance the clock, then call Allow.
type step struct {
	advance   time.Duration
	tenant    string
	limit     int
	ok        bool
	remaining int
	retry     time.Duration
}

func TestAllow(t *testing.T) {
	s := time.Second
	tests := []struct {
		name  string
		steps []step
	}{
		{"limit reached", []step{
			{0, "a", 3, true, 2, 0},
			{s, "a", 3, true, 1, 0},
			{s, "a", 3, true, 0, 0},
			{s, "a", 3, false, 0, 57 * s}, // oldest (t=0) leaves at t=60
		}},
		{"recovery after the window", []step{
			{0, "a", 2, true, 1, 0},
			{10 * s, "a", 2, true, 0, 0},
			{10 * s, "a", 2, false, 0, 40 * s},
			{40 * s, "a", 2, true, 0, 0}, // t=60: the t=0 request left exactly now
			{0, "a", 2, false, 0, 10 * s},
			{70 * s, "a", 2, true, 1, 0}, // everything left
		}},
		{"denied requests are not logged", []step{
			{0, "a", 1, true, 0, 0},
			{30 * s, "a", 1, false, 0, 30 * s},
			{29 * s, "a", 1, false, 0, s},
			{s, "a", 1, true, 0, 0},
		}},
		{"limit raised", []step{
			{0, "a", 2, true, 1, 0},
			{s, "a", 2, true, 0, 0},
			{s, "a", 2, false, 0, 58 * s},
			{0, "a", 4, true, 1, 0},
			{0, "a", 4, true, 0, 0},
			{0, "a", 4, false, 0, 58 * s},
		}},
		{"limit lowered keeps the newest", []step{
			{0, "a", 5, true, 4, 0},
			{s, "a", 5, true, 3, 0},
			{s, "a", 5, true, 2, 0},
			{s, "a", 1, false, 0, 59 * s}, // the newest (t=2) decides
			{58 * s, "a", 1, false, 0, s},
			{s, "a", 1, true, 0, 0},
		}},
		{"tenants are independent", []step{
			{0, "a", 1, true, 0, 0},
			{0, "b", 1, true, 0, 0},
			{0, "a", 1, false, 0, 60 * s},
			{0, "c", 2, true, 1, 0},
			{s, "b", 1, false, 0, 59 * s},
		}},
		{"zero limit denies", []step{
			{0, "a", 0, false, 0, 60 * s},
			{0, "a", -3, false, 0, 60 * s},
		}},
		{"sub-second retry", []step{
			{0, "a", 1, true, 0, 0},
			{59*s + 900*time.Millisecond, "a", 1, false, 0, 100 * time.Millisecond},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClock()
			l := New(time.Minute, c.now)
			for i, st := range tt.steps {
				c.advance(st.advance)
				ok, rem, retry := l.Allow(st.tenant, st.limit)
				if ok != st.ok || rem != st.remaining || retry != st.retry {
					t.Fatalf("step %d: Allow(%q, %d) = (%v, %d, %v), want (%v, %d, %v)",
						i, st.tenant, st.limit, ok, rem, retry, st.ok, st.remaining, st.retry)
				}
			}
		})
	}
}

func TestWindowConfigurable(t *testing.T) {
	c := newClock()
	l := New(10*time.Second, c.now)
	if l.Window() != 10*time.Second {
		t.Fatalf("Window() = %v", l.Window())
	}
	l.Allow("a", 1)
	if ok, _, retry := l.Allow("a", 1); ok || retry != 10*time.Second {
		t.Fatalf("second request: ok=%v retry=%v", ok, retry)
	}
	c.advance(10 * time.Second)
	if ok, _, _ := l.Allow("a", 1); !ok {
		t.Fatal("not allowed after the window")
	}
	if New(0, nil).Window() != time.Minute {
		t.Fatal("default window is not a minute")
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want int
	}{
		{0, 1},
		{time.Nanosecond, 1},
		{999 * time.Millisecond, 1},
		{time.Second, 1},
		{time.Second + 1, 2},
		{57 * time.Second, 57},
		{59*time.Second + 1, 60},
	}
	for _, tt := range tests {
		if got := RetryAfterSeconds(tt.d); got != tt.want {
			t.Errorf("RetryAfterSeconds(%v) = %d, want %d", tt.d, got, tt.want)
		}
	}
}

// TestIdleTenantsDropped checks memory stays bounded: tenants whose requests
// all left the window are swept.
func TestIdleTenantsDropped(t *testing.T) {
	c := newClock()
	l := New(time.Minute, c.now)
	for i := range 10000 {
		l.Allow(fmt.Sprint("t", i), 10)
	}
	c.advance(2 * time.Minute)
	for range 100000 {
		l.Allow("active", 1000000)
	}
	total := 0
	for i := range l.shards {
		total += len(l.shards[i].logs)
	}
	if total > 1+shardCount {
		t.Fatalf("%d tenant logs kept after all but one went idle", total)
	}
}

// TestConcurrent runs many tenants from many goroutines (run with -race) and
// checks that exactly limit requests per tenant are allowed in one window.
func TestConcurrent(t *testing.T) {
	c := newClock()
	l := New(time.Minute, c.now)
	const tenants, perTenant, limit = 20, 200, 50
	var allowed [tenants]atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range tenants * perTenant / 8 {
				k := (g + i) % tenants
				if ok, _, _ := l.Allow(fmt.Sprint("tenant-", k), limit); ok {
					allowed[k].Add(1)
				}
				if i%100 == 0 {
					c.advance(time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	for k := range allowed {
		if got := allowed[k].Load(); got != limit {
			t.Errorf("tenant %d: %d allowed, want %d", k, got, limit)
		}
	}
}

func BenchmarkAllow(b *testing.B) {
	l := New(time.Minute, nil)
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			l.Allow(fmt.Sprint("t", i%100), 1000)
			i++
		}
	})
}
