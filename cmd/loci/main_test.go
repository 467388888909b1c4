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

	"github.com/loci-memory/loci/internal/proctest"
)

func TestMain(m *testing.M) { proctest.Main(m) }

// serveProcess is `loci serve` running as a real process on a loopback port.
type serveProcess struct {
	cmd    *exec.Cmd
	addr   string
	exited chan error // receives the exit status once every log line is read

	mu    sync.Mutex
	lines []string // stderr, as read so far
}

// serveOptions changes how startServeWith runs the server.
type serveOptions struct {
	env       []string // added to the environment
	args      []string // added to the command line
	fileLimit int      // when > 0, the soft and hard limit on open files
}

// startServe starts `loci serve` on data and waits until /health answers 200.
func startServe(t *testing.T, bin, data string) *serveProcess {
	t.Helper()
	return startServeWith(t, bin, data, serveOptions{})
}

func startServeWith(t *testing.T, bin, data string, o serveOptions) *serveProcess {
	t.Helper()
	p := &serveProcess{addr: proctest.FreeAddr(t), exited: make(chan error, 1)}
	args := append([]string{"serve", "--addr", p.addr, "--data", data}, o.args...)
	if o.fileLimit > 0 {
		// ulimit in the shell that execs the server: the limit is set
		// before the server starts, as an operator's would be.
		p.cmd = exec.Command("sh", append([]string{"-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, o.fileLimit), bin}, args...)...)
	} else {
		p.cmd = exec.Command(bin, args...)
	}
	p.cmd.Env = append(os.Environ(), o.env...)
	stderr, _ := p.cmd.StderrPipe()
	// A test that fails midway must not leave its server running.
	proctest.Start(t, p.cmd)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
		}
		// Wait closes the pipe: call it only once everything is read, or
		// the last lines ("stopped") can be lost.
		p.exited <- p.cmd.Wait()
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
		t.Fatalf("server never answered: %v\n%s", err, p.logs())
	}
	if code != 200 || h["status"] != "ok" {
		p.cmd.Process.Kill()
		t.Fatalf("health: %d %v", code, h)
	}
	return p
}

// logs returns the server's log so far.
func (p *serveProcess) logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// stop sends SIGTERM and expects a clean exit (status 0, "stopped" logged).
func (p *serveProcess) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		if err != nil {
			t.Fatalf("serve exited with %v\n%s", err, p.logs())
		}
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		t.Fatal("serve did not stop on SIGTERM")
	}
	if !strings.Contains(p.logs(), "loci: stopped") {
		t.Fatalf("no clean stop in logs:\n%s", p.logs())
	}
}

// expectArtifacts fails the test unless every id in acked reads back.
func (p *serveProcess) expectArtifacts(t *testing.T, acked []string) {
	t.Helper()
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
}

// TestServeGracefulShutdownLosesNothing runs `loci serve` as a real process,
// ingests from several clients while SIGTERM arrives, expects exit status 0,
// checks the data directory with `loci verify`, and finds every
// acknowledged artifact after a restart.
func TestServeGracefulShutdownLosesNothing(t *testing.T) {
	bin := proctest.Loci(t)
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
	p.expectArtifacts(t, acked)
	t.Logf("%d acknowledged artifacts all present after the restart", len(acked))
}

func TestVerifyExitCodeOnFault(t *testing.T) {
	bin := proctest.Loci(t)
	data := t.TempDir()
	os.WriteFile(filepath.Join(data, "MANIFEST"), []byte("garbage that is not a manifest"), 0o644)
	out, err := exec.Command(bin, "verify", "--data", data).CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "FAULT") {
		t.Fatalf("verify of a damaged directory: %v\n%s", err, out)
	}
}

// TestServeSurvivesConnectionExhaustion runs `loci serve` with a limit of 256
// open files and no connection caps, and opens idle connections until its
// descriptors run out. The server must keep running (it used to log "too
// many open files" and exit 1), and once the connections close it must serve
// /health and an ingest again.
func TestServeSurvivesConnectionExhaustion(t *testing.T) {
	bin := proctest.Loci(t)
	data := filepath.Join(t.TempDir(), "data")
	// Caps off, so that the descriptors, not the caps, run out.
	p := startServeWith(t, bin, data, serveOptions{fileLimit: 256,
		env: []string{"LOCI_MAX_CONNS_PER_IP=0", "LOCI_MAX_CONNS=100000"}})
	defer func() {
		select {
		case <-p.exited:
		default:
			p.stop(t)
		}
	}()

	var conns []net.Conn
	closeAll := func() {
		for _, c := range conns {
			c.Close()
		}
		conns = nil
	}
	defer closeAll()
	for i := 0; i < 2000; i++ {
		c, err := net.DialTimeout("tcp", p.addr, 500*time.Millisecond)
		if err != nil {
			break // the backlog is full too: refused
		}
		conns = append(conns, c)
	}
	// The server has run out of descriptors: it says so, and keeps running.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(p.logs(), "too many open files") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(p.logs(), "too many open files") {
		t.Fatalf("%d connections never exhausted the server's descriptors:\n%s", len(conns), p.logs())
	}
	time.Sleep(300 * time.Millisecond) // time to exit, if it were going to
	select {
	case err := <-p.exited:
		t.Fatalf("serve exited under connection load (%d connections): %v\n%s", len(conns), err, p.logs())
	default:
	}
	t.Logf("%d connections open; the server is out of descriptors and still running", len(conns))

	closeAll()
	client := &http.Client{Timeout: 5 * time.Second}
	var code int
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := client.Get("http://" + p.addr + "/health")
		if err != nil {
			continue
		}
		resp.Body.Close()
		if code = resp.StatusCode; code == 200 {
			break
		}
	}
	if code != 200 {
		t.Fatalf("health after the connections closed: %d\n%s", code, p.logs())
	}
	body := `{"workspace_id":"ws","actor_id":"a","artifact_type":"note","raw_payload":{"content":"after the flood"}}`
	resp, err := client.Post("http://"+p.addr+"/v1/ingest", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("ingest after the connections closed: %d", resp.StatusCode)
	}
}

// TestServeWarnsAboutAPIKeyFlag: --api-key is visible to every user in ps,
// so the server warns when it is used, and never logs the key itself.
func TestServeWarnsAboutAPIKeyFlag(t *testing.T) {
	bin := proctest.Loci(t)
	const key = "flag-admin-key-that-must-not-be-logged"
	data := filepath.Join(t.TempDir(), "data")
	for _, c := range []struct {
		args []string
		env  []string
		warn bool
	}{
		{[]string{"--api-key", key}, nil, true},
		{nil, []string{"API_KEY=" + key}, false},
	} {
		p := startServeWith(t, bin, data, serveOptions{args: c.args, env: c.env})
		resp, err := http.Get("http://" + p.addr + "/v1/billing/plan")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Fatalf("without a key: %d, want 401 (authentication on)", resp.StatusCode)
		}
		p.stop(t)
		logs := p.logs()
		if strings.Contains(logs, key) {
			t.Fatalf("the admin key is in the log:\n%s", logs)
		}
		if got := strings.Contains(logs, "--api-key on the command line is visible"); got != c.warn {
			t.Fatalf("args %v env %v: warning logged %v, want %v:\n%s", c.args, c.env, got, c.warn, logs)
		}
	}
}

// TestServeStopsCleanlyOnAFullDisk fills a small tmpfs through the API
// (507), then sends SIGTERM: the final flush cannot be written, and the
// server must still exit 0, saying why, and restart with every
// acknowledged artifact once space is freed.
func TestServeStopsCleanlyOnAFullDisk(t *testing.T) {
	bin := proctest.Loci(t)
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=2m"); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v): needs root or CAP_SYS_ADMIN", err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	data := filepath.Join(mnt, "data")
	p := startServe(t, bin, data)
	payload := strings.Repeat("disk filling words ", 3000)
	var acked []string
	status := 0
	for i := 0; i < 200; i++ {
		body, _ := json.Marshal(map[string]any{"workspace_id": "w", "actor_id": "a", "artifact_type": "note",
			"raw_payload": map[string]any{"content": fmt.Sprintf("%d %s", i, payload)}})
		resp, err := http.Post("http://"+p.addr+"/v1/ingest", "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		if status = resp.StatusCode; status != 201 {
			break
		}
		acked = append(acked, m["artifact_id"].(string))
	}
	if status != 507 || len(acked) == 0 {
		t.Fatalf("filling the disk: last status %d after %d acknowledged, want 507", status, len(acked))
	}
	p.stop(t) // exit status 0 and "stopped"
	t.Logf("%d acknowledged before the disk filled; log:\n%s", len(acked), p.logs())

	// Free space by moving the data directory to a roomy disk, then restart.
	roomy := filepath.Join(t.TempDir(), "data")
	if out, err := exec.Command("cp", "-a", data, roomy).CombinedOutput(); err != nil {
		t.Fatalf("copy: %v %s", err, out)
	}
	p = startServe(t, bin, roomy)
	defer p.stop(t)
	p.expectArtifacts(t, acked)
}

// TestServeRetentionSettings checks that bad retention settings are refused
// naming the variable, and that a receipt retention set in the environment
// reaches the engine: with LOCI_RECEIPTS_PER_WORKSPACE=2, three distinct
// packs leave two receipts listed.
// expectRefusal checks that serve refuses to start with env set to value,
// naming the variable.
func expectRefusal(t *testing.T, bin, env, value string) {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--addr", proctest.FreeAddr(t), "--data", t.TempDir())
	cmd.Env = append(os.Environ(), env+"="+value)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), env) {
		t.Errorf("%s=%s: want a refusal naming the variable, got %v\n%s", env, value, err, out)
	}
}

func TestServeRetentionSettings(t *testing.T) {
	bin := proctest.Loci(t)
	for _, tc := range []struct{ env, value string }{
		{"LOCI_RECEIPTS_PER_WORKSPACE", "0"},
		{"LOCI_JOB_RETENTION", "-1h"},
		{"LOCI_MAX_FINISHED_JOBS", "many"},
		{"LOCI_MAX_UNFINISHED_JOBS", "0"},
		{"LOCI_MAX_UNFINISHED_JOB_BYTES", "1.5"},
		{"LOCI_SYNC_RECEIPTS", "maybe"},
	} {
		expectRefusal(t, bin, tc.env, tc.value)
	}

	t.Setenv("LOCI_RECEIPTS_PER_WORKSPACE", "2")
	p := startServe(t, bin, filepath.Join(t.TempDir(), "data"))
	defer p.stop(t)
	post := func(path, body string) {
		resp, err := http.Post("http://"+p.addr+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
	}
	post("/v1/ingest", `{"workspace_id":"ws","actor_id":"a","artifact_type":"note","raw_payload":{"content":"The deploy window is Tuesday."}}`)
	for _, q := range []string{"deploy window", "when is the deploy", "Tuesday"} {
		post("/v1/context-pack", `{"workspace_id":"ws","query":"`+q+`","max_tokens":256}`)
	}
	resp, err := http.Get("http://" + p.addr + "/v1/receipts?workspace_id=ws")
	if err != nil {
		t.Fatal(err)
	}
	var page struct{ Total int }
	json.NewDecoder(resp.Body).Decode(&page)
	resp.Body.Close()
	if page.Total != 2 {
		t.Fatalf("receipts listed with a retention of 2: %d", page.Total)
	}
}
