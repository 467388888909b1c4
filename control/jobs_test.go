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

	if batch1[0].Seq == 0 || batch1[0].Seq != batch1[2].Seq || batch2[0].Seq <= batch1[0].Seq {
		t.Fatalf("creation seqs %d, %d, %d", batch1[0].Seq, batch1[2].Seq, batch2[0].Seq)
	}

	// Erasure ends the workspace's unfinished jobs created before the fence
	// (the erase record's seq), and only those: a job created after it and
	// other workspaces' jobs go on; finished jobs keep their status.
	fence := e.seq + 1
	late, err := s.CreateJobs(tn.ID, "ws-1", []JobInput{{ArtifactID: newUUID(t), Input: []byte("late")}})
	if err != nil || late[0].Seq != fence {
		t.Fatalf("late job: %+v, %v", late, err)
	}
	if err := s.EraseWorkspaceJobs(tn.ID, "ws-1", fence); err != nil {
		t.Fatal(err)
	}
	n = len(e.records())
	if err := s.EraseWorkspaceJobs(tn.ID, "ws-1", fence); err != nil || len(e.records()) != n {
		t.Fatalf("erasing a workspace without unfinished jobs: %v, %d records", err, len(e.records())-n)
	}
	if err := s.EraseWorkspaceJobs(tn.ID, "ws-1", 0); err == nil {
		t.Fatal("fence 0 accepted")
	}
	wantStatus := map[string]string{batch1[0].ID: "done ", batch1[1].ID: "failed " + ErasedMessage, batch1[2].ID: "failed bad payload"}
	for name, st := range map[string]*Store{"live": s, "replayed": replay(t, e.records())} {
		for id, want := range wantStatus {
			j, ok := st.Job(tn.ID, id)
			if got := string(j.Status) + " " + j.ErrorMessage; !ok || got != want || j.Input != nil {
				t.Fatalf("%s: job %s after erasure: %q (found %v, input %q), want %q", name, id, got, ok, j.Input, want)
			}
		}
		if got := jobIDs(st.Unfinished()); !slices.Equal(got, []string{batch2[0].ID, late[0].ID}) {
			t.Fatalf("%s: Unfinished after erasure = %v", name, got)
		}
	}
	if err := s.SetJobStatus(batch1[1].ID, StatusDone, ""); !errors.Is(err, ErrJobFinished) {
		t.Fatalf("status of a cancelled job: %v", err)
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
// error, and the job stays cancelled.
func TestRaceWithErasure(t *testing.T) {
	s, e := newTestStore(t)
	jobs, err := s.CreateJobs(DefaultTenant, "ws", []JobInput{{ArtifactID: newUUID(t)}})
	if err != nil {
		t.Fatal(err)
	}
	id := uuid.MustParse(jobs[0].ID)
	if err := s.EraseWorkspaceJobs(DefaultTenant, "ws", jobs[0].Seq+1); err != nil {
		t.Fatal(err)
	}
	if err := e.append(kindJob, encodeStatus(statusRec{jobID: id, status: StatusDone, at: 1})); err != nil {
		t.Fatalf("status after erasure: %v", err)
	}
	if j, ok := s.Job(DefaultTenant, jobs[0].ID); !ok || j.Status != StatusFailed || j.ErrorMessage != ErasedMessage {
		t.Fatalf("cancelled job after a late status: %+v, %v", j, ok)
	}
}
