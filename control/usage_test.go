package control

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"
)

var march = time.Date(2025, 3, 31, 23, 59, 59, 0, time.UTC)

func TestPeriod(t *testing.T) {
	tests := []struct {
		at   time.Time
		want string
	}{
		{march, "2025-03"},
		{march.Add(time.Second), "2025-04"},
		{time.Date(2025, 4, 1, 1, 0, 0, 0, time.FixedZone("CEST", 2*3600)), "2025-03"}, // UTC decides
	}
	for _, tt := range tests {
		if got := Period(tt.at); got != tt.want {
			t.Errorf("Period(%v) = %q, want %q", tt.at, got, tt.want)
		}
	}
}

func TestCountAndFlush(t *testing.T) {
	s, e := newTestStore(t)
	deltas := []UsageDelta{
		{Endpoint: "POST /v1/ingest", Artifacts: 1, RawBytes: 100},
		{Endpoint: "POST /v1/ingest", Artifacts: 1, RawBytes: 50},
		{Endpoint: "POST /v1/context-pack", Packs: 1, Tokens: 900},
		{Endpoint: "GET /v1/receipts", RateLimited: true},
		{Artifacts: 3}, // no endpoint: no request counted
	}
	for _, d := range deltas {
		s.Count("t1", march, d)
	}
	s.Count("t1", march.Add(time.Second), UsageDelta{Endpoint: "POST /v1/ingest"})
	s.Count("t2", march, UsageDelta{Endpoint: "POST /v1/ingest"})
	s.Count("", march, UsageDelta{Endpoint: "POST /v1/ingest"})                                          // dropped
	s.Count("t1", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), UsageDelta{Endpoint: "POST /v1/ingest"}) // dropped
	want := Usage{TenantID: "t1", Period: "2025-03",
		Requests:          map[string]uint64{"POST /v1/ingest": 2, "POST /v1/context-pack": 1, "GET /v1/receipts": 1},
		ArtifactsIngested: 5, RawBytesStored: 150, ContextPacks: 1, TokensPacked: 900, RateLimited: 1}
	check := func(s *Store, when string) {
		t.Helper()
		if got := s.Usage("t1", "2025-03"); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: Usage = %+v, want %+v", when, got, want)
		}
		if got := s.Usage("t1", "2025-04"); got.Requests["POST /v1/ingest"] != 1 {
			t.Fatalf("%s: April usage = %+v", when, got)
		}
		if got := s.Usage("t9", "2025-03"); got.Requests == nil || got.TenantID != "t9" || len(got.Requests) != 0 {
			t.Fatalf("%s: empty usage = %+v", when, got)
		}
	}
	check(s, "pending")
	if err := s.FlushUsage(); err != nil {
		t.Fatal(err)
	}
	check(s, "flushed")
	if n := len(e.records()); n != 1 {
		t.Fatalf("%d records, want one usage record", n)
	}
	if err := s.FlushUsage(); err != nil || len(e.records()) != 1 {
		t.Fatalf("empty flush: %v, %d records", err, len(e.records()))
	}
	check(replay(t, e.records()), "replayed")

	// A failed append keeps the counts pending, exactly once.
	e.setFail(errors.New("disk full"))
	s.Count("t1", march, UsageDelta{Endpoint: "POST /v1/ingest"})
	if err := s.FlushUsage(); err == nil {
		t.Fatal("flush with failing appender succeeded")
	}
	want.Requests["POST /v1/ingest"]++
	check(s, "after failed flush")
	e.setFail(nil)
	if err := s.FlushUsage(); err != nil {
		t.Fatal(err)
	}
	check(s, "after retried flush")
	check(replay(t, e.records()), "replayed after retry")
}

func TestLastUsedPersisted(t *testing.T) {
	s, e := newTestStore(t)
	tn, secret := mustRegister(t, s, "ann@example.com", "free")
	_, k, _ := s.Authenticate(secret)
	if k.LastUsedAt == nil {
		t.Fatal("no last-used time")
	}
	if r := replay(t, e.records()); r.Keys(tn.ID)[0].LastUsedAt != nil {
		t.Fatal("last-used time durable before a flush")
	}
	if err := s.FlushUsage(); err != nil {
		t.Fatal(err)
	}
	got := replay(t, e.records()).Keys(tn.ID)[0].LastUsedAt
	if got == nil || !got.Equal(*k.LastUsedAt) {
		t.Fatalf("last used after replay %v, want %v", got, k.LastUsedAt)
	}
}

// TestUsageConcurrent counts from many goroutines while RunUsageWriter
// flushes, and checks totals are exact live, after stop and after replay.
func TestUsageConcurrent(t *testing.T) {
	s, e := newTestStore(t)
	stop := make(chan struct{})
	done := make(chan error)
	go func() { done <- s.RunUsageWriter(stop) }()

	const workers, perWorker = 16, 500
	endpoints := []string{"POST /v1/ingest", "POST /v1/context-pack", "GET /v1/receipts"}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tenant := fmt.Sprint("t", w%4)
			for i := range perWorker {
				s.Count(tenant, march, UsageDelta{Endpoint: endpoints[i%3], Artifacts: 1, RawBytes: uint64(i), Tokens: 2, RateLimited: i%10 == 0})
				if i%50 == 0 {
					s.Usage(tenant, "2025-03") // readers while writing
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	const perTenant = workers / 4 * perWorker
	want := Usage{Period: "2025-03", Requests: map[string]uint64{}}
	for i := range perWorker {
		want.Requests[endpoints[i%3]] += workers / 4
		want.RawBytesStored += uint64(i) * workers / 4
		if i%10 == 0 {
			want.RateLimited += workers / 4
		}
	}
	want.ArtifactsIngested, want.TokensPacked = perTenant, 2*perTenant
	r := replay(t, e.records())
	for k := range 4 {
		want.TenantID = fmt.Sprint("t", k)
		for name, st := range map[string]*Store{"live": s, "replayed": r} {
			if got := st.Usage(want.TenantID, "2025-03"); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: Usage(%s) = %+v, want %+v", name, want.TenantID, got, want)
			}
		}
	}
	s.mu.RLock()
	pending := len(s.pending) + len(s.pendingUsed)
	s.mu.RUnlock()
	if pending != 0 {
		t.Fatalf("%d entries still pending after stop", pending)
	}
	t.Logf("%d counts in %d usage records", workers*perWorker, len(e.records()))
}

func TestRunUsageWriterRetries(t *testing.T) {
	s, e := newTestStore(t)
	e.setFail(errors.New("disk full"))
	stop := make(chan struct{})
	done := make(chan error)
	go func() { done <- s.RunUsageWriter(stop) }()
	s.Count("t", march, UsageDelta{Endpoint: "x"})
	time.Sleep(50 * time.Millisecond) // let a flush fail
	e.setFail(nil)
	deadline := time.Now().Add(5 * time.Second)
	for len(e.records()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(e.records()) != 1 {
		t.Fatalf("%d records after recovery, want 1", len(e.records()))
	}
	if got := replay(t, e.records()).Usage("t", "2025-03"); got.Requests["x"] != 1 {
		t.Fatalf("usage after retry: %+v", got)
	}
}
