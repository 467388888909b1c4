// Package e2e drives Loci's cluster mode end to end: real nats-server
// processes (cluster/natstest) and real `loci serve` processes on loopback,
// killed, paused and restarted while clients write and pack. It holds tests
// and benchmarks only; nothing here is imported by the product.
//
// The harness builds cmd/loci once per test binary, gives each node its own
// data directory, port and log file, and kills every process it started when
// the test ends (t.Cleanup), or when the test binary dies (PR_SET_PDEATHSIG).
// Without nats-server on PATH the cluster tests skip (fail with CI=true).
//
// Environment:
//
//	LOCI_CLUSTER_ROUNDS=20   kill rounds of TestClusterKillRounds (default 2)
//	LOCI_CLUSTER_NODES=2     Loci nodes of TestClusterKillRounds (default 3)
//	LOCI_FAILOVER_KILLS=20   runs TestClusterFailoverTime (skipped without it)
//	E2E_LOG_DIR=dir          keep the nodes' logs in dir/<test name>/
//	E2E_LOG_LEVEL=info       the nodes' --log-level (default info, warn for load tests)
//	E2E_DIAG=file            sample stream leaders and node data versions every second into file
//	E2E_DIAG_SIGQUIT=1       with E2E_DIAG: SIGQUIT (goroutine dump) a node stuck behind the streams for 6 s
//
// Figures: go test ./cluster/e2e -run XXX -bench . -benchtime 2000x
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/loci-memory/loci/cluster/natstest"
	"github.com/loci-memory/loci/internal/proctest"
)

const (
	// defaultShards is --cluster-shards of the tests: small, so that a few
	// workspaces cover every shard.
	defaultShards = 4
	// readyTimeout bounds a node's wait for /health 200: start, stream
	// replay and catch-up.
	readyTimeout = 60 * time.Second
	// exitTimeout bounds the wait for a signalled node to exit.
	exitTimeout = 10 * time.Second
	// pollInterval is how often wait loops look again.
	pollInterval = 20 * time.Millisecond
	// logTail is how much of a node's log a failure quotes.
	logTail = 6000
	// defaultTenant is the tenant every request acts as with authentication
	// off (control.DefaultTenant); it is part of a workspace's shard.
	defaultTenant = "default"
)

// Header names of the cluster's read-your-writes contract.
const (
	hdrDataVersion    = "X-Loci-Data-Version"
	hdrMinDataVersion = "X-Loci-Min-Data-Version"
)

func TestMain(m *testing.M) { proctest.Main(m) }

// options says what startHarness runs.
type options struct {
	nats     int      // nats-server processes; 0: no NATS, single-node `loci serve`
	nodes    int      // Loci nodes started at once
	spare    int      // further nodes configured but not started (StartNode starts them)
	together bool     // start every node at once, also on a new cluster (else the first one first)
	shards   int      // --cluster-shards; 0: defaultShards
	logLevel string   // --log-level; "" : info (one access line per request)
	args     []string // added to every node's command line
}

// harness is a NATS cluster (or none) and Loci node processes. Its methods
// that change processes are for the test goroutine; URL, Running and the
// HTTP helpers are safe from any goroutine.
type harness struct {
	t      testing.TB
	bin    string
	dir    string
	nats   *natstest.Cluster
	shards int
	client *http.Client

	mu    sync.Mutex // guards each node's cmd, exited, paused and addr
	nodes []*lociNode
}

// lociNode is one `loci serve` process and what stays across its restarts:
// name, data directory, log file and (while free) port.
type lociNode struct {
	name    string
	addr    string
	data    string
	logPath string
	args    []string

	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd has been waited for
	paused bool
}

// startHarness starts the NATS servers (skipping the test without
// nats-server, failing it under CI=true; see natstest.Start) and the first
// o.nodes Loci nodes, and returns once every node answers /health 200.
func startHarness(t testing.TB, o options) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), shards: o.shards}
	// E2E_LOG_DIR keeps the nodes' logs after the test (in a directory
	// named after it) for a closer look; by default they go with TempDir.
	logDir := h.dir
	if d := os.Getenv("E2E_LOG_DIR"); d != "" {
		logDir = filepath.Join(d, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
		if err := os.MkdirAll(logDir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Logf("e2e: node logs in %s", logDir)
	}
	if h.shards == 0 {
		h.shards = defaultShards
	}
	if o.nats > 0 {
		h.nats = natstest.Start(t, o.nats)
	}
	h.bin = proctest.Loci(t)
	h.client = &http.Client{Transport: &http.Transport{
		MaxIdleConns:        512,
		MaxIdleConnsPerHost: 128,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
	}}
	// Registered after TempDir and natstest's own cleanup: runs before both.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("e2e: node logs at failure:%s", h.logs())
		}
		h.killAll()
		h.client.CloseIdleConnections()
	})
	level := o.logLevel
	if v := os.Getenv("E2E_LOG_LEVEL"); v != "" {
		level = v
	}
	if level == "" {
		level = "info"
	}
	for i := range o.nodes + o.spare {
		n := &lociNode{
			name:    fmt.Sprintf("loci%d", i+1),
			data:    filepath.Join(h.dir, fmt.Sprintf("loci%d", i+1)),
			logPath: filepath.Join(logDir, fmt.Sprintf("loci%d.log", i+1)),
		}
		// Light models (GloVe, no late interaction): three nodes share the
		// machine's cores, and these tests measure the cluster's failover
		// and consistency, not the models' cost.
		n.args = []string{"--data", n.data, "--embedder", "glove", "--late-interaction", "none", "--log-level", level}
		if h.nats != nil {
			n.args = append(n.args, "--cluster-nats", strings.Join(h.nats.URLs(), ","),
				"--cluster-node", n.name, "--cluster-shards", strconv.Itoa(h.shards))
		}
		n.args = append(n.args, o.args...)
		h.nodes = append(h.nodes, n)
	}
	// The first node creates the cluster's streams and buckets alone,
	// unless o.together: then all race to create them (see
	// TestClusterConcurrentFirstStart); the others start together.
	first := 0
	if !o.together && o.nodes > 0 {
		h.spawn(0, proctest.FreeAddr(t))
		h.waitHealthy(0, readyTimeout)
		first = 1
	}
	for i := first; i < o.nodes; i++ {
		h.spawn(i, proctest.FreeAddr(t))
	}
	for i := first; i < o.nodes; i++ {
		h.waitHealthy(i, readyTimeout)
	}
	h.startDiag()
	return h
}

// stamp is the wall-clock time for logs that are read beside node logs.
func stamp() string { return time.Now().UTC().Format("15:04:05.000") }

// N is the number of configured Loci nodes (running or not).
func (h *harness) N() int { return len(h.nodes) }

func (h *harness) node(i int) *lociNode {
	if i < 0 || i >= len(h.nodes) {
		h.t.Fatalf("e2e: no node %d (the harness has %d)", i, len(h.nodes))
	}
	return h.nodes[i]
}

// URL is node i's base URL, "http://127.0.0.1:PORT".
func (h *harness) URL(i int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return "http://" + h.node(i).addr
}

// Name is node i's --cluster-node name.
func (h *harness) Name(i int) string { return h.node(i).name }

// Running reports whether node i's process exists (paused or not).
func (h *harness) Running(i int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.node(i).runningLocked()
}

func (n *lociNode) runningLocked() bool {
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// spawn starts node i on addr, its output appended to its log. The process
// gets SIGKILL when the thread that started it dies (the test binary exits
// or is killed before any cleanup runs).
func (h *harness) spawn(i int, addr string) {
	h.t.Helper()
	n := h.node(i)
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		h.t.Fatal(err)
	}
	fmt.Fprintf(logf, "=== e2e: starting %s on %s at %s\n", n.name, addr, time.Now().UTC().Format(time.RFC3339Nano))
	cmd := exec.Command(h.bin, append([]string{"serve", "--addr", addr}, n.args...)...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	proctest.DieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		logf.Close()
		h.t.Fatalf("e2e: starting %s: %v", n.name, err)
	}
	exited := make(chan struct{})
	h.mu.Lock()
	n.addr, n.cmd, n.exited, n.paused = addr, cmd, exited, false
	h.mu.Unlock()
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(logf, "=== e2e: %s exited at %s: %v\n", n.name, time.Now().UTC().Format(time.RFC3339Nano), err)
		logf.Close()
		close(exited)
	}()
}

// health is one GET /health of node i: its status code and "status" field.
func (h *harness) health(ctx context.Context, i int) (int, string, error) {
	r := h.do(ctx, i, "GET", "/health", nil, nil)
	if r.err != nil {
		return 0, "", r.err
	}
	var body struct {
		Status string `json:"status"`
	}
	json.Unmarshal(r.body, &body)
	return r.status, body.Status, nil
}

// waitHealthy waits until node i answers /health 200 {"status":"ok"}. Until
// then a starting node answers 503 "starting" (or "lagging") or not at all; any other answer,
// an exit or the timeout fails the test.
func (h *harness) waitHealthy(i int, timeout time.Duration) time.Duration {
	h.t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	n := h.node(i)
	var last string
	for {
		h.mu.Lock()
		exited := n.exited
		h.mu.Unlock()
		select {
		case <-exited:
			h.t.Fatalf("e2e: %s exited while starting%s", n.name, h.logOf(i))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		code, status, err := h.health(ctx, i)
		cancel()
		switch {
		case err != nil:
			last = err.Error()
		case code == http.StatusOK && status == "ok":
			return time.Since(start)
		case code == http.StatusServiceUnavailable && (status == "starting" || status == "lagging"):
			last = "503 " + status // lagging: behind the streams, catching up
		default:
			h.t.Fatalf("e2e: %s /health: %d %q while starting, want 503 starting or 200 ok%s", n.name, code, status, h.logOf(i))
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("e2e: %s not healthy after %v (last: %s)%s", n.name, timeout, last, h.logOf(i))
		}
		time.Sleep(pollInterval)
	}
}

// StartNode starts a configured node that is not running (a spare, or one
// killed or stopped) and waits until it is healthy; it returns how long that
// took. It keeps the node's port while the port is free.
func (h *harness) StartNode(i int) time.Duration {
	h.t.Helper()
	if h.Running(i) {
		h.t.Fatalf("e2e: StartNode(%s): already running", h.Name(i))
	}
	h.mu.Lock()
	addr := h.node(i).addr
	h.mu.Unlock()
	if addr == "" || !portFree(addr) {
		if addr != "" {
			h.t.Logf("e2e: %s's port %s is taken; restarting on another", h.Name(i), addr)
		}
		addr = proctest.FreeAddr(h.t)
	}
	start := time.Now()
	h.spawn(i, addr)
	h.waitHealthy(i, readyTimeout)
	return time.Since(start)
}

// Restart is StartNode after Kill or Stop: the same data directory and, if
// free, the same port.
func (h *harness) Restart(i int) time.Duration { return h.StartNode(i) }

// portFree reports whether addr can be listened on now. A port the node
// held a moment ago is free again at once (SO_REUSEADDR).
func portFree(addr string) bool {
	for range 25 {
		l, err := net.Listen("tcp", addr)
		if err == nil {
			l.Close()
			return true
		}
		time.Sleep(pollInterval)
	}
	return false
}

// Wipe removes the data directory of node i, which must not be running: the
// node lost its disk.
func (h *harness) Wipe(i int) {
	h.t.Helper()
	if h.Running(i) {
		h.t.Fatalf("e2e: Wipe(%s): the node is running", h.Name(i))
	}
	if err := os.RemoveAll(h.node(i).data); err != nil {
		h.t.Fatal(err)
	}
}

// Kill sends SIGKILL to node i (paused or not) and waits for it to exit.
func (h *harness) Kill(i int) {
	h.t.Helper()
	h.signal(i, syscall.SIGKILL, "Kill")
	h.waitExit(i, "SIGKILL")
}

// Stop sends SIGTERM (and SIGCONT to a paused node) and waits for a clean
// exit.
func (h *harness) Stop(i int) {
	h.t.Helper()
	h.signal(i, syscall.SIGTERM, "Stop")
	h.mu.Lock()
	paused := h.node(i).paused
	h.mu.Unlock()
	if paused {
		h.signal(i, syscall.SIGCONT, "Stop")
	}
	h.waitExit(i, "SIGTERM")
}

// Pause stops node i with SIGSTOP and returns once every thread has
// stopped: its sockets stay open and it answers nothing, as a hung machine.
func (h *harness) Pause(i int) {
	h.t.Helper()
	h.signal(i, syscall.SIGSTOP, "Pause")
	h.mu.Lock()
	n := h.node(i)
	n.paused = true
	pid := n.cmd.Process.Pid
	h.mu.Unlock()
	deadline := time.Now().Add(exitTimeout)
	for !natstest.Stopped(pid) {
		if time.Now().After(deadline) {
			h.t.Fatalf("e2e: %s not stopped %v after SIGSTOP", h.Name(i), exitTimeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// Resume continues a paused node with SIGCONT.
func (h *harness) Resume(i int) {
	h.t.Helper()
	h.signal(i, syscall.SIGCONT, "Resume")
	h.mu.Lock()
	h.node(i).paused = false
	h.mu.Unlock()
}

func (h *harness) signal(i int, sig syscall.Signal, op string) {
	h.t.Helper()
	h.mu.Lock()
	n := h.node(i)
	running := n.runningLocked()
	var p *os.Process
	if running {
		p = n.cmd.Process
	}
	h.mu.Unlock()
	if !running {
		h.t.Fatalf("e2e: %s(%s): the node is not running", op, n.name)
	}
	if err := p.Signal(sig); err != nil {
		h.t.Fatalf("e2e: %s(%s): %v", op, n.name, err)
	}
}

func (h *harness) waitExit(i int, sig string) {
	h.t.Helper()
	h.mu.Lock()
	n := h.node(i)
	exited, p := n.exited, n.cmd.Process
	h.mu.Unlock()
	select {
	case <-exited:
	case <-time.After(exitTimeout):
		p.Signal(syscall.SIGKILL)
		<-exited
		h.t.Fatalf("e2e: %s still running %v after %s (killed)%s", n.name, exitTimeout, sig, h.logOf(i))
	}
	h.mu.Lock()
	n.paused = false
	h.mu.Unlock()
}

// killAll SIGKILLs every running node, paused ones too, and reaps it.
func (h *harness) killAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range h.nodes {
		if n.runningLocked() {
			n.cmd.Process.Signal(syscall.SIGKILL)
			<-n.exited
		}
	}
}

// Log is everything node i has logged, across restarts.
func (h *harness) Log(i int) string {
	b, err := os.ReadFile(h.node(i).logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return string(b)
}

// logOf quotes the end of node i's log for a failure message.
func (h *harness) logOf(i int) string {
	return fmt.Sprintf("\n--- %s log (tail):\n%s", h.Name(i), proctest.Tail(h.Log(i), logTail))
}

// logs quotes the end of every node's log, access lines left out.
func (h *harness) logs() string {
	var b strings.Builder
	for i := range h.nodes {
		var keep []string
		for _, line := range strings.Split(h.Log(i), "\n") {
			if !strings.Contains(line, `msg="http request"`) && !strings.Contains(line, `"msg":"http request"`) {
				keep = append(keep, line)
			}
		}
		fmt.Fprintf(&b, "\n--- %s log (tail, without access lines):\n%s", h.Name(i), proctest.Tail(strings.Join(keep, "\n"), logTail))
	}
	return b.String()
}

// reply is one HTTP exchange with a node.
type reply struct {
	node   int
	status int
	header http.Header
	body   []byte
	err    error // transport error or timeout: no answer
}

func (r reply) String() string {
	if r.err != nil {
		return fmt.Sprintf("node %d: no answer: %v", r.node, r.err)
	}
	return fmt.Sprintf("node %d: %d %s", r.node, r.status, bytes.TrimSpace(r.body))
}

// do sends one request to node i; ctx bounds it. hdr adds headers.
func (h *harness) do(ctx context.Context, i int, method, path string, body []byte, hdr map[string]string) reply {
	r := reply{node: i}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.URL(i)+path, rd)
	if err != nil {
		r.err = err
		return r
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		r.err = err
		return r
	}
	defer resp.Body.Close()
	r.status, r.header = resp.StatusCode, resp.Header
	r.body, r.err = io.ReadAll(resp.Body)
	return r
}

// doTimeout is do with its own timeout.
func (h *harness) doTimeout(d time.Duration, i int, method, path string, body []byte, hdr map[string]string) reply {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return h.do(ctx, i, method, path, body, hdr)
}

// mustJSON marshals v or panics (test inputs are always encodable).
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// dataVersion is a data version a node reported (X-Loci-Data-Version):
// "<control>.<seq 0>. ... .<seq S-1>", what the answering node has applied of
// the control stream and of every shard stream. Sent back as
// X-Loci-Min-Data-Version, it makes a node wait until it has applied that
// much.
type dataVersion struct {
	raw   string
	shard int      // the shard of the workspace written
	vec   []uint64 // control, then shard 0..S-1
}

func (v dataVersion) String() string { return v.raw }

// parseDataVersion reads a data version of a write to workspace ws.
func (h *harness) parseDataVersion(s, ws string) (dataVersion, error) {
	parts := strings.Split(s, ".")
	if len(parts) != h.shards+1 {
		return dataVersion{}, fmt.Errorf("data version %q: want %d parts (the control stream and %d shards)", s, h.shards+1, h.shards)
	}
	v := dataVersion{raw: s, shard: shardOf(ws, h.shards), vec: make([]uint64, len(parts))}
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return dataVersion{}, fmt.Errorf("data version %q: part %d is not a number", s, i)
		}
		v.vec[i] = n
	}
	return v, nil
}

// writeVersion is the data version a write's answer carries; an answer
// without a well-formed one is an error.
func (h *harness) writeVersion(r reply, ws string) (dataVersion, error) {
	v := r.header.Get(hdrDataVersion)
	if v == "" {
		return dataVersion{}, fmt.Errorf("write answered %d without %s", r.status, hdrDataVersion)
	}
	return h.parseDataVersion(v, ws)
}

// shardOf is the shard of a workspace of the default tenant as
// docs/cluster.md fixes it: fnv1a64(tenant + "\x00" + workspace) mod S.
func shardOf(workspace string, shards int) int {
	f := fnv.New64a()
	f.Write([]byte(defaultTenant + "\x00" + workspace))
	return int(f.Sum64() % uint64(shards))
}

// versionBook keeps the element-wise maximum of the data versions
// acknowledged writes reported: a read asking for it sees every write
// acknowledged so far.
type versionBook struct {
	mu  sync.Mutex
	vec []uint64
}

func newVersionBook() *versionBook { return &versionBook{} }

func (b *versionBook) observe(v dataVersion) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.vec == nil {
		b.vec = make([]uint64, len(v.vec))
	}
	for i, n := range v.vec {
		b.vec[i] = max(b.vec[i], n)
	}
}

// min is the X-Loci-Min-Data-Version header that covers every acknowledged
// write, or nil before any.
func (b *versionBook) min() map[string]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.vec == nil {
		return nil
	}
	parts := make([]string, len(b.vec))
	for i, n := range b.vec {
		parts[i] = strconv.FormatUint(n, 10)
	}
	return map[string]string{hdrMinDataVersion: strings.Join(parts, ".")}
}
