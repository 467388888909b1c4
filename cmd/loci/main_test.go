package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildLoci compiles the binary once per test run.
func buildLoci(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "loci")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// serveProcess is `loci serve` running as a real process on a loopback port.
type serveProcess struct {
	cmd  *exec.Cmd
	addr string
	logs chan string
}

// startServe starts `loci serve` on data and waits until /health answers 200.
func startServe(t *testing.T, bin, data string) *serveProcess {
	t.Helper()
	p := &serveProcess{addr: freePort(t), logs: make(chan string, 1000)}
	p.cmd = exec.Command(bin, "serve", "--addr", p.addr, "--data", data)
	stderr, _ := p.cmd.StderrPipe()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			select {
			case p.logs <- sc.Text():
			default: // keep the process from blocking on a full pipe
			}
		}
		close(p.logs)
	}()
	// The server listens before the engine has recovered: /health answers
	// 503 "starting" until then.
	var code int
	var h map[string]any
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var resp *http.Response
		if resp, err = http.Get("http://" + p.addr + "/health"); err != nil {
			continue
		}
		h = nil
		json.NewDecoder(resp.Body).Decode(&h)
		resp.Body.Close()
		if code = resp.StatusCode; code != 503 || h["status"] != "starting" {
			break
		}
	}
	if err != nil {
		p.cmd.Process.Kill()
		t.Fatalf("server never answered: %v", err)
	}
	if code != 200 || h["status"] != "ok" {
		p.cmd.Process.Kill()
		t.Fatalf("health: %d %v", code, h)
	}
	return p
}

// stop sends SIGTERM and expects a clean exit (status 0, "stopped" logged).
func (p *serveProcess) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve exited with %v", err)
		}
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		t.Fatal("serve did not stop on SIGTERM")
	}
	var all []string
	for l := range p.logs {
		all = append(all, l)
	}
	if !strings.Contains(strings.Join(all, "\n"), "stopped") {
		t.Fatalf("no clean stop in logs:\n%s", strings.Join(all, "\n"))
	}
}

// TestServeGracefulShutdownLosesNothing runs `loci serve` as a real process,
// ingests from several clients while SIGTERM arrives, expects exit status 0,
// checks the data directory with `loci verify`, and finds every
// acknowledged artifact after a restart.
func TestServeGracefulShutdownLosesNothing(t *testing.T) {
	bin := buildLoci(t)
	data := filepath.Join(t.TempDir(), "data")
	p := startServe(t, bin, data)

	var mu sync.Mutex
	var acked []string
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second}
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				body := fmt.Sprintf(`{"workspace_id":"ws","actor_id":"w%d","artifact_type":"note","raw_payload":{"content":"note %d of writer %d"}}`, w, i, w)
				resp, err := client.Post("http://"+p.addr+"/v1/ingest", "application/json", strings.NewReader(body))
				if err != nil {
					return // the server stopped accepting
				}
				var m map[string]any
				json.NewDecoder(resp.Body).Decode(&m)
				resp.Body.Close()
				if resp.StatusCode != 201 {
					return
				}
				mu.Lock()
				acked = append(acked, m["artifact_id"].(string))
				mu.Unlock()
			}
		}(w)
	}
	time.Sleep(300 * time.Millisecond)
	p.stop(t)
	wg.Wait()
	if len(acked) == 0 {
		t.Fatal("no ingest was acknowledged before the shutdown")
	}
	out, err := exec.Command(bin, "verify", "--data", data).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok: no faults") {
		t.Fatalf("verify: %v\n%s", err, out)
	}

	p = startServe(t, bin, data)
	defer p.stop(t)
	for _, id := range acked {
		resp, err := http.Get("http://" + p.addr + "/v1/artifacts/" + id)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("acknowledged artifact %s lost: %d (of %d acknowledged)", id, resp.StatusCode, len(acked))
		}
	}
	t.Logf("%d acknowledged artifacts all present after the restart", len(acked))
}

func TestVerifyExitCodeOnFault(t *testing.T) {
	bin := buildLoci(t)
	data := t.TempDir()
	os.WriteFile(filepath.Join(data, "MANIFEST"), []byte("garbage that is not a manifest"), 0o644)
	out, err := exec.Command(bin, "verify", "--data", data).CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "FAULT") {
		t.Fatalf("verify of a damaged directory: %v\n%s", err, out)
	}
}
