package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loci-memory/loci/internal/proctest"
)

// postJSON posts body and returns the status and response body.
func postJSON(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// runLoci runs the binary and returns its combined output and error.
func runLoci(bin string, args ...string) (string, error) {
	out, err := exec.Command(bin, args...).CombinedOutput()
	return string(out), err
}

// Backups of a running server under ingest load, with a 1 MiB flush
// threshold so flushes and compactions run while they copy, restore into
// directories that verify clean and serve every artifact acknowledged
// before each backup began, and packs over them.
func TestBackupRunningServerUnderLoad(t *testing.T) {
	bin := proctest.Loci(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	p := startServeWith(t, bin, data, serveOptions{args: []string{"--embedder", "glove", "--flush-threshold-mb", "1"}})
	var mu sync.Mutex
	var acked []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	filler := strings.Repeat("the quarterly deploy window moved after the incident review ", 15)
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var items []string
				for j := 0; j < 10; j++ {
					items = append(items, fmt.Sprintf(`{"artifact_type":"note","raw_payload":{"content":"writer %d batch %d item %d: %s"}}`, w, i, j, filler))
				}
				resp, err := http.Post("http://"+p.addr+"/v2/ingest", "application/json",
					strings.NewReader(`{"workspace_id":"w","actor_id":"a","artifacts":[`+strings.Join(items, ",")+`]}`))
				if err != nil {
					t.Error(err)
					return
				}
				var ing struct {
					Ingested []struct {
						ArtifactID string `json:"artifact_id"`
					} `json:"ingested"`
				}
				json.NewDecoder(resp.Body).Decode(&ing)
				resp.Body.Close()
				if resp.StatusCode != 201 {
					t.Errorf("ingest: %d", resp.StatusCode)
					return
				}
				mu.Lock()
				for _, it := range ing.Ingested {
					acked = append(acked, it.ArtifactID)
				}
				mu.Unlock()
			}
		}(w)
	}
	type backup struct {
		out    string
		before []string
	}
	var backups []backup
	for round := 0; round < 3; round++ {
		time.Sleep(1500 * time.Millisecond)
		mu.Lock()
		before := slices.Clone(acked)
		mu.Unlock()
		out := filepath.Join(dir, fmt.Sprintf("backup%d", round))
		args := []string{"backup", "--data", data, "--out", out}
		if round == 1 {
			args = append(args, "--link")
		}
		msg, err := runLoci(bin, args...)
		if err != nil || !strings.Contains(msg, "backup of "+data) {
			t.Fatalf("backup: %v\n%s", err, msg)
		}
		t.Logf("round %d: %d acknowledged before; %s", round, len(before), strings.TrimSpace(msg))
		backups = append(backups, backup{out, before})
	}
	close(stop)
	wg.Wait()
	p.stop(t)
	if n := strings.Count(p.logs(), "engine: flushed head"); n < 3 {
		t.Fatalf("only %d flushes while the backups ran; the test is meant to race them", n)
	}

	for i, b := range backups {
		restored := filepath.Join(dir, fmt.Sprintf("restored%d", i))
		if msg, err := runLoci(bin, "restore", "--from", b.out, "--data", restored); err != nil || !strings.Contains(msg, "verify: no faults") {
			t.Fatalf("restore: %v\n%s", err, msg)
		}
		if msg, err := runLoci(bin, "verify", "--data", restored); err != nil {
			t.Fatalf("verify: %v\n%s", err, msg)
		}
		q := startServeWith(t, bin, restored, serveOptions{args: []string{"--embedder", "glove"}})
		q.expectArtifacts(t, b.before)
		code, body := postJSON(t, "http://"+q.addr+"/v1/context-pack", `{"workspace_id":"w","query":"when is the deploy window?","max_tokens":300}`)
		if code != 200 || !bytes.Contains(body, []byte(`"citations":[{`)) {
			t.Fatalf("pack on restored backup %d: %d %s", i, code, body)
		}
		q.stop(t)
	}
}

// The commands refuse what they cannot do, with a message saying why.
func TestBackupRestoreRefusals(t *testing.T) {
	bin := proctest.Loci(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	p := startServeWith(t, bin, data, serveOptions{args: []string{"--embedder", "none"}})
	if code, body := postJSON(t, "http://"+p.addr+"/v1/ingest", `{"workspace_id":"w","actor_id":"a","artifact_type":"note","raw_payload":"x"}`); code != 201 {
		t.Fatalf("ingest: %d %s", code, body)
	}
	good := filepath.Join(dir, "good")
	if msg, err := runLoci(bin, "backup", "--data", data, "--out", good); err != nil {
		t.Fatalf("backup: %v\n%s", err, msg)
	}
	nonEmpty := filepath.Join(dir, "nonempty")
	os.MkdirAll(nonEmpty, 0o755)
	os.WriteFile(filepath.Join(nonEmpty, "notes.txt"), []byte("x"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"restore into a non-empty directory", []string{"restore", "--from", good, "--data", nonEmpty}, "is not empty"},
		{"restore into a running server's directory", []string{"restore", "--from", good, "--data", data}, "is not empty"},
		{"restore from a missing directory", []string{"restore", "--from", filepath.Join(dir, "missing"), "--data", filepath.Join(dir, "r")}, "no such file"},
		{"restore from a data directory", []string{"restore", "--from", data, "--data", filepath.Join(dir, "r")}, "not a complete Loci backup"},
		{"backup of a missing directory", []string{"backup", "--data", filepath.Join(dir, "missing"), "--out", filepath.Join(dir, "b")}, "no such file"},
		{"backup into a non-empty directory", []string{"backup", "--data", data, "--out", nonEmpty}, "is not empty"},
		{"export of a running server's directory", []string{"export", "--data", data, "--workspace", "w", "--out", filepath.Join(dir, "w.jsonl")}, "in use by pid"},
		{"export of an unknown workspace", []string{"export", "--data", good, "--workspace", "nope", "--out", filepath.Join(dir, "n.jsonl")}, "has no data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, err := runLoci(bin, tc.args...)
			if err == nil || !strings.Contains(msg, tc.want) {
				t.Fatalf("got %v\n%s\nwant a failure saying %q", err, msg, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "n.jsonl")); err == nil {
		t.Fatal("a failed export left its file behind")
	}
	p.stop(t)
}
