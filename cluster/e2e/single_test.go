package e2e

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// TestHarnessSingleNode checks the harness itself on one `loci serve` without
// a cluster: a paused node answers nothing and answers again once resumed,
// and a node killed with SIGKILL restarts on its port and data directory with
// every acknowledged artifact.
func TestHarnessSingleNode(t *testing.T) {
	h := startHarness(t, options{nodes: 1})
	c := newCorpus(1)
	type sent struct {
		id, ws  string
		payload []byte
	}
	var acked []sent
	for k := range 5 {
		a := c.artifact("solo", "agent-1", "")
		r := h.doTimeout(10*time.Second, 0, "POST", "/v1/ingest", mustJSON(a), nil)
		if r.err != nil || r.status != http.StatusCreated {
			t.Fatalf("ingest %d: %s", k, r)
		}
		var out struct {
			ArtifactID string `json:"artifact_id"`
		}
		if err := json.Unmarshal(r.body, &out); err != nil || out.ArtifactID == "" {
			t.Fatalf("ingest %d: %s (%v)", k, r, err)
		}
		acked = append(acked, sent{out.ArtifactID, "solo", a.RawPayload})
	}
	batch := batchIn{WorkspaceID: "solo", ActorID: "agent-2"}
	for range 3 {
		a := c.artifact("", "", "")
		batch.Artifacts = append(batch.Artifacts, a)
	}
	r := h.doTimeout(10*time.Second, 0, "POST", "/v2/ingest", mustJSON(batch), nil)
	if r.err != nil || r.status != http.StatusCreated {
		t.Fatalf("batch: %s", r)
	}
	var out struct {
		Ingested []struct {
			ArtifactID string `json:"artifact_id"`
		} `json:"ingested"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil || len(out.Ingested) != 3 {
		t.Fatalf("batch: %s (%v)", r, err)
	}
	for k, it := range out.Ingested {
		acked = append(acked, sent{it.ArtifactID, "solo", batch.Artifacts[k].RawPayload})
	}

	h.Pause(0)
	if r := h.doTimeout(300*time.Millisecond, 0, "GET", "/health", nil, nil); r.err == nil {
		t.Fatalf("paused node answered: %s", r)
	}
	h.Resume(0)
	if r := h.doTimeout(5*time.Second, 0, "GET", "/health", nil, nil); r.err != nil || r.status != http.StatusOK {
		t.Fatalf("resumed node: %s", r)
	}

	url := h.URL(0)
	h.Kill(0)
	if h.Running(0) {
		t.Fatal("killed node still running")
	}
	if r := h.doTimeout(time.Second, 0, "GET", "/health", nil, nil); r.err == nil {
		t.Fatalf("killed node answered: %s", r)
	}
	took := h.Restart(0)
	if h.URL(0) != url {
		t.Fatalf("restarted on %s, was %s", h.URL(0), url)
	}
	t.Logf("restart after SIGKILL took %v", took)
	for _, a := range acked {
		r := h.doTimeout(5*time.Second, 0, "GET", "/v1/artifacts/"+a.id, nil, nil)
		if r.err != nil || r.status != http.StatusOK {
			t.Fatalf("acknowledged artifact %s after SIGKILL: %s", a.id, r)
		}
		if err := checkStored(r.body, a.id, a.ws, a.payload); err != nil {
			t.Fatal(err)
		}
	}
}
