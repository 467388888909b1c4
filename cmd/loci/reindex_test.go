package main

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loci-memory/loci/internal/proctest"
)

// A data directory keeps its embedder: serve refuses another, naming both
// and the way out, and loci reindex switches it with nothing lost.
func TestServeRefusesAnotherEmbedderAndReindexSwitches(t *testing.T) {
	bin := proctest.Loci(t)
	data := filepath.Join(t.TempDir(), "data")
	p := startServeWith(t, bin, data, serveOptions{args: []string{"--embedder", "glove"}})
	body := `{"workspace_id":"w","actor_id":"a","wait_for_embedding":true,"artifacts":[` +
		`{"artifact_type":"note","raw_payload":"the deploy moved to Friday"},` +
		`{"artifact_type":"note","raw_payload":"the budget is four thousand dollars"}]}`
	resp, err := http.Post("http://"+p.addr+"/v2/ingest", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var ing struct {
		Ingested []struct {
			ArtifactID string `json:"artifact_id"`
			Embedding  string `json:"embedding"`
		} `json:"ingested"`
	}
	json.NewDecoder(resp.Body).Decode(&ing)
	resp.Body.Close()
	if resp.StatusCode != 201 || len(ing.Ingested) != 2 || ing.Ingested[0].Embedding != "embedded" {
		t.Fatalf("ingest: %d %+v", resp.StatusCode, ing)
	}
	p.stop(t)

	cmd := exec.Command(bin, "serve", "--addr", proctest.FreeAddr(t), "--data", data, "--embedder", "minilm")
	done := make(chan []byte, 1)
	go func() { out, _ := cmd.CombinedOutput(); done <- out }()
	select {
	case out := <-done:
		if cmd.ProcessState.ExitCode() == 0 || !strings.Contains(string(out), `"glove-6b-100d-sif"`) ||
			!strings.Contains(string(out), "all-minilm") || !strings.Contains(string(out), "loci reindex --embedder") {
			t.Fatalf("serve with another embedder: exit %d\n%s", cmd.ProcessState.ExitCode(), out)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("serve with another embedder did not exit")
	}

	out, err := exec.Command(bin, "reindex", "--data", data, "--embedder", "minilm").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "start the server with --embedder minilm") {
		t.Fatalf("reindex: %v\n%s", err, out)
	}
	p = startServeWith(t, bin, data, serveOptions{args: []string{"--embedder", "minilm"}})
	defer p.stop(t)
	p.expectArtifacts(t, []string{ing.Ingested[0].ArtifactID, ing.Ingested[1].ArtifactID})
	resp, err = http.Post("http://"+p.addr+"/v1/context-pack", "application/json",
		strings.NewReader(`{"workspace_id":"w","query":"when is the deploy?","max_tokens":200}`))
	if err != nil {
		t.Fatal(err)
	}
	var pack struct {
		Citations []struct {
			ArtifactID string `json:"artifact_id"`
		} `json:"citations"`
	}
	json.NewDecoder(resp.Body).Decode(&pack)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(pack.Citations) == 0 || pack.Citations[0].ArtifactID != ing.Ingested[0].ArtifactID {
		t.Fatalf("pack after reindex: %d %+v", resp.StatusCode, pack)
	}
}
