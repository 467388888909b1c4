package httpd

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/loci-memory/loci/control"
)

// TestEraseFencesInFlightJobs erases a workspace while asynchronous jobs of
// it are in flight: some held by workers just before their ingest, the rest
// queued. None of their artifacts may be readable or packed afterwards, nor
// after a restart, and every job ends failed with "workspace erased".
func TestEraseFencesInFlightJobs(t *testing.T) {
	const workers, jobs = 3, 24
	h := newHarness(t, Config{IndexWorkers: workers})
	entered := make(chan string, jobs)
	gate := make(chan struct{})
	h.srv.jobs.mu.Lock()
	h.srv.jobs.beforeIngest = func(j control.Job) {
		entered <- j.ID
		<-gate
	}
	h.srv.jobs.mu.Unlock()

	var arts []map[string]any
	for i := range jobs {
		arts = append(arts, map[string]any{"artifact_type": "note", "raw_payload": map[string]any{"content": fmt.Sprintf("zebracorn sighting number %d", i)}})
	}
	m := h.do("POST", "/v2/ingest", "", map[string]any{"workspace_id": "ws", "actor_id": "a", "async_index": true, "artifacts": arts}).must(t, 202)
	var ids []string
	for _, j := range m["queued_jobs"].([]any) {
		ids = append(ids, str(j.(map[string]any), "job_id"))
	}
	for range workers { // every worker holds a job that is already processing
		select {
		case <-entered:
		case <-time.After(20 * time.Second):
			t.Fatal("workers did not take jobs")
		}
	}
	h.do("DELETE", "/v1/workspaces/ws", "", nil).must(t, 200)
	close(gate)

	check := func(when string) {
		t.Helper()
		for _, id := range ids {
			j := waitJob(t, h, "", id)
			if str(j, "status") != "failed" || j["error_message"] != control.ErasedMessage {
				t.Fatalf("%s: job %s: %v", when, id, j)
			}
			cj, ok := h.ctl.Job(control.DefaultTenant, id)
			if !ok {
				t.Fatalf("%s: job %s gone", when, id)
			}
			if r := h.do("GET", "/v1/artifacts/"+cj.ArtifactID.String(), "", nil); r.status != 404 {
				t.Fatalf("%s: artifact of cancelled job %s: %d %s", when, id, r.status, r.body)
			}
		}
		p := h.do("POST", "/v1/context-pack", "", map[string]any{"workspace_id": "ws", "query": "zebracorn sighting"}).must(t, 200)
		if strings.Contains(str(p, "context_text"), "zebracorn") || len(p["citations"].([]any)) != 0 {
			t.Fatalf("%s: erased workspace packs job artifacts: %v", when, p["context_text"])
		}
	}
	check("after erasure")
	h.restart()
	check("after restart")
	// The workspace takes new artifacts afterwards.
	m = h.do("POST", "/v2/ingest", "", map[string]any{"workspace_id": "ws", "actor_id": "a", "async_index": true,
		"artifacts": []map[string]any{{"artifact_type": "note", "raw_payload": "zebracorn after the erasure"}}}).must(t, 202)
	if j := waitJob(t, h, "", str(m["queued_jobs"].([]any)[0].(map[string]any), "job_id")); str(j, "status") != "done" {
		t.Fatalf("job after erasure: %v", j)
	}
}

// TestJobBacklogRefused answers 429 with Retry-After, queuing nothing, when
// a tenant's unfinished jobs reach the backlog bound.
func TestJobBacklogRefused(t *testing.T) {
	h := newHarness(t, Config{IndexWorkers: -1}) // no workers: jobs stay pending
	h.ctl.SetJobRetention(control.JobRetention{MaxUnfinished: 2})
	batch := func(n int) map[string]any {
		var arts []map[string]any
		for i := range n {
			arts = append(arts, map[string]any{"artifact_type": "note", "raw_payload": fmt.Sprint("note ", i)})
		}
		return map[string]any{"workspace_id": "ws", "actor_id": "a", "async_index": true, "artifacts": arts}
	}
	h.do("POST", "/v2/ingest", "", batch(2)).must(t, 202)
	r := h.do("POST", "/v2/ingest", "", batch(1))
	if m := r.must(t, 429); r.header.Get("Retry-After") == "" || !strings.Contains(str(m, "detail"), "unfinished indexing jobs") {
		t.Fatalf("backlog refusal: %v %v", r.header, m)
	}
	if un, _ := h.ctl.JobCounts(); un != 2 {
		t.Fatalf("%d unfinished jobs after a refusal, want 2", un)
	}
}

// TestEraseArtifactWaitsForItsJob holds an asynchronous job between the
// ingest of its artifact and its durable "done": the artifact is readable
// there, but erasing it must be refused (409), since a crash at that point
// resumes the job, which would store the erased artifact again. Once the
// job is done the erase goes through and the artifact stays gone across a
// restart.
func TestEraseArtifactWaitsForItsJob(t *testing.T) {
	h := newHarness(t, Config{IndexWorkers: 1})
	stored := make(chan control.Job, 1)
	gate := make(chan struct{})
	h.srv.jobs.mu.Lock()
	h.srv.jobs.afterIngest = func(j control.Job) {
		stored <- j
		<-gate
	}
	h.srv.jobs.mu.Unlock()

	m := h.do("POST", "/v2/ingest", "", map[string]any{"workspace_id": "ws", "actor_id": "a", "async_index": true,
		"artifacts": []map[string]any{{"artifact_type": "note", "raw_payload": map[string]any{"content": "the heron count was 12"}}}}).must(t, 202)
	jobID := str(m["queued_jobs"].([]any)[0].(map[string]any), "job_id")
	var j control.Job
	select {
	case j = <-stored:
	case <-time.After(20 * time.Second):
		t.Fatal("the job's artifact was not stored")
	}
	art := "/v1/artifacts/" + j.ArtifactID.String()
	h.do("GET", art, "", nil).must(t, 200) // readable while the job is not done
	if r := h.do("DELETE", art, "", nil); r.status != 409 || !strings.Contains(string(r.body), jobID) {
		t.Fatalf("erase while the job is processing: %d %s, want 409 naming the job", r.status, r.body)
	}
	close(gate)
	if st := str(waitJob(t, h, "", jobID), "status"); st != "done" {
		t.Fatalf("job status %q, want done", st)
	}
	h.do("DELETE", art, "", nil).must(t, 200)
	h.do("GET", art, "", nil).must(t, 404)
	h.restart()
	h.do("GET", art, "", nil).must(t, 404)
}
