package control

import (
	"errors"
	"slices"
	"testing"

	"github.com/google/uuid"
)

func newUUID(t testing.TB) uuid.UUID {
	t.Helper()
	id, err := uuid.NewRandom()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func jobIDs(jobs []Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

func TestJobsLifecycle(t *testing.T) {
	s, e := newTestStore(t)
	tn, _ := mustRegister(t, s, "ann@example.com", "pro")
	in := []JobInput{
		{ArtifactID: newUUID(t), IdempotencyKey: "k1", Input: []byte("one")},
		{ArtifactID: newUUID(t), Input: []byte("two")},
		{ArtifactID: newUUID(t), IdempotencyKey: "k3", Input: []byte("three")},
	}
	n := len(e.records())
	batch1, err := s.CreateJobs(tn.ID, "ws-1", in)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.records())-n != 1 {
		t.Fatalf("CreateJobs wrote %d records, want 1", len(e.records())-n)
	}
	for i, j := range batch1 {
		got, ok := s.Job(tn.ID, j.ID)
		if !ok || got.Status != StatusPending || got.ArtifactID != in[i].ArtifactID || string(got.Input) != string(in[i].Input) ||
			got.Workspace != "ws-1" || !got.CreatedAt.Equal(j.CreatedAt) || !got.UpdatedAt.Equal(j.CreatedAt) {
			t.Fatalf("job %d = %+v, %v; created %+v", i, got, ok, j)
		}
	}
	batch2, err := s.CreateJobs(DefaultTenant, "ws-9", []JobInput{{ArtifactID: newUUID(t)}})
	if err != nil {
		t.Fatal(err)
	}
	if j, ok := s.JobByIdempotencyKey(tn.ID, "ws-1", "k1"); !ok || j.ID != batch1[0].ID {
		t.Fatalf("JobByIdempotencyKey(k1) = %+v, %v", j, ok)
	}
	if _, ok := s.JobByIdempotencyKey(tn.ID, "ws-2", "k1"); ok {
		t.Fatal("idempotency key found in another workspace")
	}
	if j, ok := s.JobByArtifact(tn.ID, in[1].ArtifactID); !ok || j.ID != batch1[1].ID {
		t.Fatalf("JobByArtifact = %+v, %v", j, ok)
	}

	steps := []struct {
		job    string
		status JobStatus
		msg    string
		err    error
	}{
		{batch1[0].ID, StatusProcessing, "", nil},
		{batch1[0].ID, StatusProcessing, "", nil}, // resumed after a restart
		{batch1[0].ID, StatusDone, "ignored", nil},
		{batch1[0].ID, StatusFailed, "late", ErrJobFinished},
		{batch1[2].ID, StatusFailed, "bad payload", nil},
		{uuid.NewString(), StatusDone, "", ErrNotFound},
		{"junk", StatusDone, "", ErrNotFound},
	}
	for i, st := range steps {
		if err := s.SetJobStatus(st.job, st.status, st.msg); !errors.Is(err, st.err) {
			t.Fatalf("step %d: SetJobStatus(%s) = %v, want %v", i, st.status, err, st.err)
		}
	}
	var ie *InvalidError
	if err := s.SetJobStatus(batch1[1].ID, StatusPending, ""); !errors.As(err, &ie) {
		t.Fatalf("SetJobStatus(pending) = %v", err)
	}
	done, _ := s.Job(tn.ID, batch1[0].ID)
	failed, _ := s.Job(tn.ID, batch1[2].ID)
	if done.Status != StatusDone || done.Input != nil || done.ErrorMessage != "" || !done.UpdatedAt.After(done.CreatedAt) {
		t.Fatalf("done job = %+v", done)
	}
	if failed.Status != StatusFailed || failed.Input != nil || failed.ErrorMessage != "bad payload" {
		t.Fatalf("failed job = %+v", failed)
	}
	if _, ok := s.JobByIdempotencyKey(tn.ID, "ws-1", "k1"); ok {
		t.Fatal("finished job still found by idempotency key")
	}
	if j, ok := s.JobByArtifact(tn.ID, in[0].ArtifactID); !ok || j.Status != StatusDone {
		t.Fatal("finished job not found by artifact")
	}

	wantUnfinished := []string{batch1[1].ID, batch2[0].ID}
	for name, st := range map[string]*Store{"live": s, "replayed": replay(t, e.records())} {
		if got := jobIDs(st.Unfinished()); !slices.Equal(got, wantUnfinished) {
			t.Fatalf("%s: Unfinished = %v, want %v", name, got, wantUnfinished)
		}
		if j, _ := st.Job(tn.ID, batch1[1].ID); string(j.Input) != "two" {
			t.Fatalf("%s: pending job lost its input: %+v", name, j)
		}
	}

	// Erasure removes the workspace's jobs, and only those.
	if err := s.EraseWorkspaceJobs(tn.ID, "ws-1"); err != nil {
		t.Fatal(err)
	}
	n = len(e.records())
	if err := s.EraseWorkspaceJobs(tn.ID, "ws-1"); err != nil || len(e.records()) != n {
		t.Fatalf("erasing a workspace without jobs: %v, %d records", err, len(e.records())-n)
	}
	for _, j := range batch1 {
		if _, ok := s.Job(tn.ID, j.ID); ok {
			t.Fatalf("job %s survives erasure", j.ID)
		}
	}
	if _, ok := s.JobByArtifact(tn.ID, in[0].ArtifactID); ok {
		t.Fatal("erased job found by artifact")
	}
	if err := s.SetJobStatus(batch1[1].ID, StatusDone, ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("status of an erased job: %v", err)
	}
	if got := jobIDs(s.Unfinished()); !slices.Equal(got, []string{batch2[0].ID}) {
		t.Fatalf("Unfinished after erasure = %v", got)
	}
	if got := jobIDs(replay(t, e.records()).Unfinished()); !slices.Equal(got, []string{batch2[0].ID}) {
		t.Fatalf("replayed Unfinished after erasure = %v", got)
	}
}

func TestCreateJobsValidation(t *testing.T) {
	s, e := newTestStore(t)
	tn, _ := mustRegister(t, s, "ann@example.com", "pro")
	n := len(e.records())
	tests := []struct {
		tenant, ws string
		in         []JobInput
		ok         bool
	}{
		{tn.ID, "", []JobInput{{ArtifactID: newUUID(t)}}, false},
		{tn.ID, "ws", []JobInput{{}}, false},
		{"00000000-0000-0000-0000-000000000001", "ws", []JobInput{{ArtifactID: newUUID(t)}}, false},
		{tn.ID, "ws", nil, true},
	}
	for i, tt := range tests {
		jobs, err := s.CreateJobs(tt.tenant, tt.ws, tt.in)
		if (err == nil) != tt.ok || len(jobs) != 0 {
			t.Errorf("case %d: %v, %d jobs", i, err, len(jobs))
		}
	}
	if len(e.records()) != n {
		t.Fatal("invalid CreateJobs wrote a record")
	}
}

// TestRaceWithErasure applies a status change of a job whose workspace was
// erased in between, as a worker racing an erasure would: it is moot, not an
// error.
func TestRaceWithErasure(t *testing.T) {
	s, e := newTestStore(t)
	jobs, err := s.CreateJobs(DefaultTenant, "ws", []JobInput{{ArtifactID: newUUID(t)}})
	if err != nil {
		t.Fatal(err)
	}
	id := uuid.MustParse(jobs[0].ID)
	if err := s.EraseWorkspaceJobs(DefaultTenant, "ws"); err != nil {
		t.Fatal(err)
	}
	if err := e.append(kindJob, encodeStatus(statusRec{jobID: id, status: StatusDone, at: 1})); err != nil {
		t.Fatalf("status after erasure: %v", err)
	}
	if _, ok := s.Job(DefaultTenant, jobs[0].ID); ok {
		t.Fatal("erased job reappeared")
	}
}
