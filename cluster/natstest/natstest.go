// Package natstest runs real nats-server processes as a JetStream cluster on
// loopback for tests: the cluster tests start, kill, stop, pause and restart
// them to check what Loci does when its log misbehaves. It is imported only by
// tests (never by the product), and Linux only (processes die with the test
// binary through PR_SET_PDEATHSIG).
//
// Servers are numbered from 0; server i is named "n<i+1>". Each has its own
// client, cluster-route and monitoring port on 127.0.0.1 and its own store
// directory under the test's temporary directory, all kept across Restart.
package natstest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const (
	// DefaultSize is the number of servers Start runs when asked for n <= 0.
	DefaultSize = 3
	// startTimeout bounds Start: processes up, a meta leader elected and a
	// replicated stream created and removed.
	startTimeout = 30 * time.Second
	// readyTimeout bounds Restart's wait for the server to be healthy.
	readyTimeout = 20 * time.Second
	// exitTimeout bounds the wait for a signalled process to exit.
	exitTimeout = 10 * time.Second
	// portAttempts is how often Start picks fresh ports after a server lost
	// one of its ports to another process between picking and binding.
	portAttempts = 5
	// pollInterval is how often wait loops look at a condition again.
	pollInterval = 20 * time.Millisecond
	// logTail is how much of each server's log an error quotes.
	logTail = 4096
)

// errPortRace marks a server that could not bind a port picked for it.
var errPortRace = errors.New("port taken between picking and binding")

// Cluster is a running set of nats-server processes routed to each other
// with JetStream enabled. Its methods are safe for one test goroutine at a
// time, like testing.TB's Fatal.
type Cluster struct {
	t       testing.TB
	bin     string
	dir     string
	servers []*server
}

type server struct {
	name        string
	dir         string // store directory
	conf        string // configuration file
	logPath     string // stdout and stderr, appended across restarts
	clientPort  int
	clusterPort int
	httpPort    int

	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd has been waited for
	paused bool
}

func (s *server) running() bool {
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// pickPorts returns n distinct free TCP ports on 127.0.0.1. They are free when
// it returns; another process may take one before a server binds it, which
// Start detects and answers with fresh ports. Tests replace it to force that.
var pickPorts = func(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// installHint says how to get a nats-server the tests accept.
const installHint = "install one: go install github.com/nats-io/nats-server/v2@v2.15.2, then put $(go env GOPATH)/bin on PATH"

// minMajor.minMinor is the oldest nats-server the tests run: 2.9.10
// (Debian's package) lets stream replicas diverge after a quorum loss
// (docs/cluster.md, "NATS version"), and the fault tests then fail at random.
const minMajor, minMinor = 2, 10

// checkVersion runs bin --version ("nats-server: v2.15.2") and refuses a
// server older than minMajor.minMinor.
func checkVersion(bin string) error {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return fmt.Errorf("%s --version: %v", bin, err)
	}
	v := strings.TrimSpace(string(out))
	var major, minor int
	if _, err := fmt.Sscanf(v[strings.LastIndex(v, " ")+1:], "v%d.%d", &major, &minor); err != nil {
		return fmt.Errorf("%s --version printed %q, not a version", bin, v)
	}
	if major < minMajor || major == minMajor && minor < minMinor {
		return fmt.Errorf("%s is %s, older than v%d.%d", bin, v, minMajor, minMinor)
	}
	return nil
}

// Start runs n nats-server processes (DefaultSize when n <= 0) clustered with
// JetStream, and returns once every server is healthy, all agree on a meta
// leader and a stream replicated min(n, 3) times could be created (it is
// deleted again). t.Cleanup kills every process, also when the test fails or
// panics. Without nats-server on PATH the test is skipped, or fails when the
// environment has CI=true: CI must not skip silently.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	if n <= 0 {
		n = DefaultSize
	}
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		err = fmt.Errorf("nats-server is not on PATH: %w", err)
	} else {
		err = checkVersion(bin)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("natstest: %v, and CI=true (%s)", err, installHint)
		}
		t.Skipf("natstest: %v (%s)", err, installHint)
	}
	c := &Cluster{t: t, bin: bin, dir: t.TempDir()}
	// Registered after TempDir, so it runs before the directory is removed.
	t.Cleanup(c.killAll)
	for attempt := 1; ; attempt++ {
		err := c.start(n)
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
			err = c.waitJetStream(ctx)
			cancel()
		}
		if err == nil {
			break
		}
		if !errors.Is(err, errPortRace) || attempt == portAttempts {
			logs := c.logs()
			c.killAll()
			t.Fatalf("natstest: starting %d servers (attempt %d), JetStream not ready: %v%s", n, attempt, err, logs)
		}
		c.killAll()
		t.Logf("natstest: %v; picking other ports", err)
	}
	return c
}

// start writes fresh configurations with fresh ports and starts every server,
// returning once all accept client connections.
func (c *Cluster) start(n int) error {
	ports, err := pickPorts(3 * n)
	if err != nil {
		return err
	}
	c.servers = make([]*server, n)
	for i := range n {
		name := fmt.Sprintf("n%d", i+1)
		s := &server{
			name:        name,
			dir:         filepath.Join(c.dir, name),
			conf:        filepath.Join(c.dir, name+".conf"),
			logPath:     filepath.Join(c.dir, name+".log"),
			clientPort:  ports[3*i],
			clusterPort: ports[3*i+1],
			httpPort:    ports[3*i+2],
		}
		// A previous attempt's store and log belong to other ports.
		if err := os.RemoveAll(s.dir); err != nil {
			return err
		}
		if err := os.Remove(s.logPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		c.servers[i] = s
	}
	for _, s := range c.servers {
		if err := os.WriteFile(s.conf, c.config(s), 0o644); err != nil {
			return err
		}
	}
	for _, s := range c.servers {
		if err := c.spawn(s); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(startTimeout)
	for _, s := range c.servers {
		if err := c.waitListening(s, deadline); err != nil {
			return err
		}
	}
	return nil
}

// config is server s's configuration: its ports on 127.0.0.1, its store, and
// routes to every other server (no cluster block for a single server, which
// then runs JetStream standalone).
func (c *Cluster) config(s *server) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "server_name: %q\n", s.name)
	fmt.Fprintf(&b, "listen: \"127.0.0.1:%d\"\n", s.clientPort)
	fmt.Fprintf(&b, "http: \"127.0.0.1:%d\"\n", s.httpPort)
	fmt.Fprintf(&b, "jetstream {\n  store_dir: %q\n  max_memory_store: 64MB\n  max_file_store: 1GB\n}\n", s.dir)
	if len(c.servers) > 1 {
		fmt.Fprintf(&b, "cluster {\n  name: \"natstest\"\n  listen: \"127.0.0.1:%d\"\n  routes: [\n", s.clusterPort)
		for _, o := range c.servers {
			if o != s {
				fmt.Fprintf(&b, "    \"nats-route://127.0.0.1:%d\"\n", o.clusterPort)
			}
		}
		b.WriteString("  ]\n}\n")
	}
	return b.Bytes()
}

// spawn starts s's process. Its output is appended to s's log; it gets
// SIGKILL when the thread that started it dies: the test binary exiting or
// being killed, where no cleanup runs (Go keeps its threads alive, except one
// locked by a goroutine that exits locked: do not Start or Restart from one).
func (c *Cluster) spawn(s *server) error {
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "=== natstest: starting %s (client %d, cluster %d, http %d)\n", s.name, s.clientPort, s.clusterPort, s.httpPort)
	cmd := exec.Command(c.bin, "-c", s.conf)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("%s: %w", s.name, err)
	}
	s.cmd, s.exited, s.paused = cmd, make(chan struct{}), false
	go func(exited chan struct{}) {
		cmd.Wait()
		logf.Close()
		close(exited)
	}(s.exited)
	return nil
}

// waitListening waits until s answers on its client port with its own
// INFO (another process may hold the port). A server that exits first
// failed: errPortRace if its log says a port was taken.
func (c *Cluster) waitListening(s *server, deadline time.Time) error {
	addr := fmt.Sprintf("127.0.0.1:%d", s.clientPort)
	var last error
	for {
		select {
		case <-s.exited:
			return c.exitError(s)
		default:
		}
		if last = serverInfo(addr, s.name); last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not answer on %s: %v", s.name, addr, last)
		}
		time.Sleep(pollInterval)
	}
}

// serverInfo reads the INFO line a NATS server sends first and checks that
// it comes from the server named name.
func serverInfo(addr, name string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	var info struct {
		Name string `json:"server_name"`
	}
	body, ok := strings.CutPrefix(strings.TrimSpace(line), "INFO ")
	if !ok {
		return fmt.Errorf("%s sent %q, not INFO", addr, line)
	}
	if err := json.Unmarshal([]byte(body), &info); err != nil {
		return fmt.Errorf("%s INFO: %w", addr, err)
	}
	if info.Name != name {
		return fmt.Errorf("%s is server %q, not %s", addr, info.Name, name)
	}
	return nil
}

func (c *Cluster) exitError(s *server) error {
	log, _ := os.ReadFile(s.logPath)
	err := fmt.Errorf("%s exited: %v", s.name, s.cmd.ProcessState)
	if bytes.Contains(log, []byte("address already in use")) {
		return fmt.Errorf("%w: %v", errPortRace, err)
	}
	return err
}

// waitJetStream waits until every server is healthy and names the same meta
// leader, then creates a stream with min(n, 3) replicas through a client,
// waits for its replicas to be current, and deletes it.
func (c *Cluster) waitJetStream(ctx context.Context) error {
	var last error
	for {
		if last = c.metaAgreed(ctx); last == nil {
			break
		}
		if errors.Is(last, errPortRace) {
			return last
		}
		if err := c.sleep(ctx); err != nil {
			return fmt.Errorf("%w (last: %v)", err, last)
		}
	}
	nc, err := nats.Connect(strings.Join(c.URLs(), ","), nats.Timeout(2*time.Second))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	const probe = "NATSTEST_READY"
	replicas := min(len(c.servers), 3)
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, last = js.CreateOrUpdateStream(cctx, jetstream.StreamConfig{
			Name: probe, Subjects: []string{"natstest.ready"}, Replicas: replicas, Storage: jetstream.FileStorage,
		})
		cancel()
		if last == nil {
			break
		}
		if err := c.exited(); err != nil {
			return err
		}
		if err := c.sleep(ctx); err != nil {
			return fmt.Errorf("creating an R%d stream: %w (last: %v)", replicas, err, last)
		}
	}
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		last = js.DeleteStream(cctx, probe)
		cancel()
		if last == nil || errors.Is(last, jetstream.ErrStreamNotFound) {
			return nil
		}
		if err := c.sleep(ctx); err != nil {
			return fmt.Errorf("deleting the R%d stream: %w (last: %v)", replicas, err, last)
		}
	}
}

// exited is the exit error of the first server that is no longer running.
func (c *Cluster) exited() error {
	for _, s := range c.servers {
		if !s.running() {
			return c.exitError(s)
		}
	}
	return nil
}

// metaAgreed reports nil when every server answers /healthz with ok and, in
// a cluster, all name the same meta leader.
func (c *Cluster) metaAgreed(ctx context.Context) error {
	leader := ""
	for i, s := range c.servers {
		if !s.running() {
			return c.exitError(s)
		}
		if err := c.healthy(ctx, i); err != nil {
			return err
		}
		if len(c.servers) == 1 {
			return nil
		}
		l, err := c.MetaLeader(ctx, i)
		if err != nil {
			return err
		}
		if l == "" {
			return fmt.Errorf("%s knows no meta leader", s.name)
		}
		if leader != "" && l != leader {
			return fmt.Errorf("%s names meta leader %s, %s names %s", c.servers[0].name, leader, s.name, l)
		}
		leader = l
	}
	return nil
}

func (c *Cluster) healthy(ctx context.Context, i int) error {
	body, status, err := c.get(ctx, i, "/healthz")
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("%s /healthz: %d %s", c.servers[i].name, status, bytes.TrimSpace(body))
	}
	return nil
}

func (c *Cluster) sleep(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(pollInterval):
		return nil
	}
}

// get fetches a monitoring endpoint of server i.
func (c *Cluster) get(ctx context.Context, i int, path string) ([]byte, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", c.servers[i].httpPort, path), nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", c.servers[i].name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return body, resp.StatusCode, err
}

// jsz is the part of a server's /jsz monitoring answer that this package
// reads.
type jsz struct {
	Meta *struct {
		Leader string `json:"leader"`
	} `json:"meta_cluster"`
	Accounts []struct {
		Name    string `json:"name"`
		Streams []struct {
			Name  string      `json:"name"`
			State StreamState `json:"state"`
		} `json:"stream_detail"`
	} `json:"account_details"`
}

func (c *Cluster) jsz(ctx context.Context, i int, query string) (*jsz, error) {
	body, status, err := c.get(ctx, i, "/jsz"+query)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("%s /jsz: %d %s", c.servers[i].name, status, bytes.TrimSpace(body))
	}
	var z jsz
	if err := json.Unmarshal(body, &z); err != nil {
		return nil, fmt.Errorf("%s /jsz: %w", c.servers[i].name, err)
	}
	return &z, nil
}

// MetaLeader is the name of the JetStream meta leader as server i sees it
// ("" while it knows none).
func (c *Cluster) MetaLeader(ctx context.Context, i int) (string, error) {
	z, err := c.jsz(ctx, i, "")
	if err != nil {
		return "", err
	}
	if z.Meta == nil {
		return "", nil
	}
	return z.Meta.Leader, nil
}

// StreamState is a stream's state as one server holds it locally.
type StreamState struct {
	Msgs     uint64 `json:"messages"`
	Bytes    uint64 `json:"bytes"`
	FirstSeq uint64 `json:"first_seq"`
	LastSeq  uint64 `json:"last_seq"`
}

// LocalStreamState is the state of stream (in the default account) in server
// i's own store, read from its monitoring endpoint: unlike the JetStream
// API's stream info, which the stream leader answers, it shows what this
// replica holds. ok is false while the server holds no such stream.
func (c *Cluster) LocalStreamState(ctx context.Context, i int, stream string) (state StreamState, ok bool, err error) {
	z, err := c.jsz(ctx, i, "?accounts=true&streams=true")
	if err != nil {
		return StreamState{}, false, err
	}
	for _, a := range z.Accounts {
		for _, s := range a.Streams {
			if s.Name == stream {
				return s.State, true, nil
			}
		}
	}
	return StreamState{}, false, nil
}

// N is the number of servers.
func (c *Cluster) N() int { return len(c.servers) }

// Name is server i's name, "n<i+1>".
func (c *Cluster) Name(i int) string { return c.server(i).name }

// URL is server i's client URL.
func (c *Cluster) URL(i int) string {
	return fmt.Sprintf("nats://127.0.0.1:%d", c.server(i).clientPort)
}

// URLs are the client URLs of all servers, in server order (running or not).
func (c *Cluster) URLs() []string {
	urls := make([]string, len(c.servers))
	for i := range c.servers {
		urls[i] = c.URL(i)
	}
	return urls
}

func (c *Cluster) server(i int) *server {
	if i < 0 || i >= len(c.servers) {
		c.t.Fatalf("natstest: no server %d (the cluster has %d)", i, len(c.servers))
	}
	return c.servers[i]
}

// Kill sends SIGKILL to server i and waits for it to exit.
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	s := c.server(i)
	c.mustRun(s, "Kill")
	s.cmd.Process.Signal(syscall.SIGKILL)
	c.waitExit(s, "SIGKILL")
}

// Stop sends SIGTERM to server i (which shuts down cleanly) and waits for it
// to exit; a paused server is resumed so it can. A server that has not
// exited after 10 s fails the test (and is killed).
func (c *Cluster) Stop(i int) {
	c.t.Helper()
	s := c.server(i)
	c.mustRun(s, "Stop")
	s.cmd.Process.Signal(syscall.SIGTERM)
	if s.paused {
		s.cmd.Process.Signal(syscall.SIGCONT)
	}
	c.waitExit(s, "SIGTERM")
}

// Pause stops server i with SIGSTOP and returns once all its threads have
// stopped: its sockets stay open but it answers nothing, as a hung or
// partitioned machine would.
func (c *Cluster) Pause(i int) {
	c.t.Helper()
	s := c.server(i)
	c.mustRun(s, "Pause")
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		c.t.Fatalf("natstest: SIGSTOP %s: %v", s.name, err)
	}
	s.paused = true
	// The signal is delivered asynchronously: until every thread has
	// stopped, the server may still answer.
	deadline := time.Now().Add(exitTimeout)
	for !Stopped(s.cmd.Process.Pid) {
		if time.Now().After(deadline) {
			c.t.Fatalf("natstest: %s not stopped %v after SIGSTOP", s.name, exitTimeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// Stopped reports whether every thread of process pid is stopped by a
// signal (state T in /proc/<pid>/task/<tid>/stat): a SIGSTOP has taken
// effect. The cluster tests pause their Loci processes with it too.
func Stopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			return false
		}
		// "tid (comm) state ...": comm may hold spaces and parentheses.
		end := bytes.LastIndexByte(stat, ')')
		if end < 0 || end+2 >= len(stat) || stat[end+2] != 'T' {
			return false
		}
	}
	return true
}

// Resume continues a paused server i with SIGCONT.
func (c *Cluster) Resume(i int) {
	c.t.Helper()
	s := c.server(i)
	c.mustRun(s, "Resume")
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		c.t.Fatalf("natstest: SIGCONT %s: %v", s.name, err)
	}
	s.paused = false
}

// Restart starts server i again with the same ports, configuration and store
// directory after Kill or Stop (a server still running is stopped first), and
// returns once it is healthy: /healthz answers ok, which for JetStream means
// its meta state and its streams are current with their leaders.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	s := c.server(i)
	if s.running() {
		c.Stop(i)
	}
	deadline := time.Now().Add(readyTimeout)
	for {
		if err := c.spawn(s); err != nil {
			c.t.Fatalf("natstest: restarting %s: %v%s", s.name, err, c.logs())
		}
		err := c.waitListening(s, deadline)
		if err == nil {
			break
		}
		// The ports are fixed now: a process that took one may still let it
		// go (a client's ephemeral port), so try again until the deadline.
		if !errors.Is(err, errPortRace) || time.Now().After(deadline) {
			c.t.Fatalf("natstest: restarting %s: %v%s", s.name, err, c.logs())
		}
		time.Sleep(pollInterval)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var last error
	for {
		if last = c.healthy(ctx, i); last == nil {
			return
		}
		if !s.running() {
			c.t.Fatalf("natstest: %s exited after restart: %v%s", s.name, s.cmd.ProcessState, c.logs())
		}
		if err := c.sleep(ctx); err != nil {
			c.t.Fatalf("natstest: %s not healthy %v after restart: %v%s", s.name, readyTimeout, last, c.logs())
		}
	}
}

func (c *Cluster) mustRun(s *server, op string) {
	c.t.Helper()
	if !s.running() {
		c.t.Fatalf("natstest: %s(%s): the server is not running", op, s.name)
	}
}

func (c *Cluster) waitExit(s *server, sig string) {
	c.t.Helper()
	select {
	case <-s.exited:
		s.paused = false
	case <-time.After(exitTimeout):
		s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.exited
		c.t.Fatalf("natstest: %s still running %v after %s (killed)%s", s.name, exitTimeout, sig, c.logs())
	}
}

// killAll SIGKILLs every running server (paused ones too) and reaps it.
func (c *Cluster) killAll() {
	for _, s := range c.servers {
		if s != nil && s.running() {
			s.cmd.Process.Signal(syscall.SIGKILL)
			<-s.exited
		}
	}
}

// logs quotes the end of every server's log, for error messages.
func (c *Cluster) logs() string {
	var b strings.Builder
	for _, s := range c.servers {
		if s == nil {
			continue
		}
		log, err := os.ReadFile(s.logPath)
		if err != nil {
			fmt.Fprintf(&b, "\n--- %s: no log: %v", s.name, err)
			continue
		}
		if len(log) > logTail {
			log = log[len(log)-logTail:]
			if k := bytes.IndexByte(log, '\n'); k >= 0 {
				log = log[k+1:]
			}
			fmt.Fprintf(&b, "\n--- %s log (last %d bytes):\n%s", s.name, len(log), log)
		} else {
			fmt.Fprintf(&b, "\n--- %s log:\n%s", s.name, log)
		}
	}
	return b.String()
}
