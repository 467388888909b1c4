package main

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// TestServeHealthAndGracefulShutdown runs `loci serve` as a real process,
// asks /health over loopback, sends SIGTERM and expects exit status 0, then
// checks the data directory with `loci verify`.
func TestServeHealthAndGracefulShutdown(t *testing.T) {
	bin := buildLoci(t)
	data := filepath.Join(t.TempDir(), "data")
	addr := freePort(t)
	cmd := exec.Command(bin, "serve", "--addr", addr, "--data", data)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs <- sc.Text()
		}
		close(logs)
	}()
	var resp *http.Response
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if resp, err = http.Get("http://" + addr + "/health"); err == nil {
			break
		}
	}
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("server never answered: %v", err)
	}
	var h map[string]any
	json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if resp.StatusCode != 200 || h["status"] != "ok" {
		t.Fatalf("health: %d %v", resp.StatusCode, h)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve exited with %v", err)
		}
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		t.Fatal("serve did not stop on SIGTERM")
	}
	var all []string
	for l := range logs {
		all = append(all, l)
	}
	if !strings.Contains(strings.Join(all, "\n"), "stopped") {
		t.Fatalf("no clean stop in logs:\n%s", strings.Join(all, "\n"))
	}
	out, err := exec.Command(bin, "verify", "--data", data).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok: no faults") {
		t.Fatalf("verify: %v\n%s", err, out)
	}
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
