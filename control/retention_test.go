package control

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"
)

// TestJobRetention expires finished jobs by age and by count per tenant,
// never unfinished ones, and replay removes exactly the same jobs.
func TestJobRetention(t *testing.T) {
	tests := []struct {
		name      string
		retention JobRetention
		keep      []int // indexes of the jobs below still present after expiry
	}{
		// Jobs 0-5: 0, 1, 2, 4 finished in that order (one clock second
		// apart), 3 processing, 5 pending; job 4 is another tenant's.
		{"defaults keep everything", JobRetention{}, []int{0, 1, 2, 3, 4, 5}},
		{"count keeps the newest per tenant", JobRetention{MaxFinished: 2}, []int{1, 2, 3, 4, 5}},
		{"count of one", JobRetention{MaxFinished: 1}, []int{2, 3, 4, 5}},
		{"age", JobRetention{Age: 3 * time.Second}, []int{2, 3, 4, 5}},
		{"age drops every finished job", JobRetention{Age: time.Microsecond}, []int{3, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, e := newTestStore(t)
			tn, _ := mustRegister(t, s, "ann@example.com", "pro")
			a, err := s.CreateJobs(DefaultTenant, "ws", []JobInput{{ArtifactID: newUUID(t)}, {ArtifactID: newUUID(t)}, {ArtifactID: newUUID(t)},
				{ArtifactID: newUUID(t), Input: []byte("in flight")}})
			if err != nil {
				t.Fatal(err)
			}
			b, err := s.CreateJobs(tn.ID, "ws", []JobInput{{ArtifactID: newUUID(t)}, {ArtifactID: newUUID(t), Input: []byte("pending")}})
			if err != nil {
				t.Fatal(err)
			}
			jobs := append(a, b...)
			for _, step := range []struct {
				i  int
				st JobStatus
			}{{0, StatusDone}, {1, StatusFailed}, {2, StatusDone}, {3, StatusProcessing}, {4, StatusDone}} {
				if err := s.SetJobStatus(jobs[step.i].ID, step.st, "x"); err != nil {
					t.Fatal(err)
				}
			}
			// Job i finished at clock second i (3: processing); expiry reads second 5.
			s.SetJobRetention(tt.retention)
			n := len(e.records())
			removed, err := s.ExpireJobs()
			if err != nil || removed != len(jobs)-len(tt.keep) {
				t.Fatalf("ExpireJobs = %d, %v; want %d", removed, err, len(jobs)-len(tt.keep))
			}
			if want := min(removed, 1); len(e.records())-n != want {
				t.Fatalf("%d records written, want %d", len(e.records())-n, want)
			}
			for name, st := range map[string]*Store{"live": s, "replayed": replay(t, e.records())} {
				var kept []int
				for i, j := range jobs {
					if _, ok := st.Job(j.TenantID, j.ID); ok {
						kept = append(kept, i)
					}
				}
				if !slices.Equal(kept, tt.keep) {
					t.Fatalf("%s: kept %v, want %v", name, kept, tt.keep)
				}
			}
			if !bytes.Equal(s.SnapshotControl(), replay(t, e.records()).SnapshotControl()) {
				t.Fatal("replayed state differs")
			}
		})
	}
}

// TestJobBacklog refuses jobs beyond a tenant's backlog bounds, whole
// batches at a time, and admits them again once jobs finish.
func TestJobBacklog(t *testing.T) {
	s, e := newTestStore(t)
	tn, _ := mustRegister(t, s, "ann@example.com", "pro")
	s.SetJobRetention(JobRetention{MaxUnfinished: 3, MaxUnfinishedBytes: 100})
	in := func(n, size int) []JobInput {
		var out []JobInput
		for range n {
			out = append(out, JobInput{ArtifactID: newUUID(t), Input: bytes.Repeat([]byte("x"), size)})
		}
		return out
	}
	first, err := s.CreateJobs(DefaultTenant, "ws", in(2, 10))
	if err != nil {
		t.Fatal(err)
	}
	n := len(e.records())
	tests := []struct {
		name   string
		tenant string
		in     []JobInput
		ok     bool
	}{
		{"over the count", DefaultTenant, in(2, 1), false},
		{"over the bytes", DefaultTenant, in(1, 81), false},
		{"another tenant's backlog is its own", tn.ID, in(3, 10), true},
		{"up to the bounds", DefaultTenant, in(1, 80), true},
		{"full", DefaultTenant, in(1, 0), false},
	}
	for _, tt := range tests {
		_, err := s.CreateJobs(tt.tenant, "ws", tt.in)
		if tt.ok != (err == nil) || !tt.ok && !errors.Is(err, ErrJobBacklog) {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !tt.ok && len(e.records()) != n {
			t.Fatalf("%s: a refused batch wrote a record", tt.name)
		}
		n = len(e.records())
	}
	if err := s.SetJobStatus(first[0].ID, StatusDone, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateJobs(DefaultTenant, "ws", in(1, 10)); err != nil {
		t.Fatalf("after a job finished: %v", err)
	}
	// The backlog is rebuilt at restore: the payloads hold the inputs.
	r := New(nil)
	r.SetJobRetention(JobRetention{MaxUnfinished: 3, MaxUnfinishedBytes: 100})
	if err := r.RestoreControl(s.SnapshotControl()); err != nil {
		t.Fatal(err)
	}
	p, _, _ := s.SnapshotPayloads()
	if err := r.RestorePayloads(p); err != nil {
		t.Fatal(err)
	}
	if err := r.checkBacklog(DefaultTenant, in(1, 0)); !errors.Is(err, ErrJobBacklog) {
		t.Fatalf("restored backlog admits more: %v", err)
	}
	if err := r.checkBacklog(DefaultTenant, nil); err != nil {
		t.Fatal(err)
	}
	s.mu.RLock()
	want := s.st.backlog[DefaultTenant]
	s.mu.RUnlock()
	if got := r.st.backlog[DefaultTenant]; got != want {
		t.Fatalf("restored backlog %+v, live %+v", got, want)
	}
}
