package natstest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// connect opens a client to urls (reconnecting among them) and its
// JetStream context, closed when the test ends.
func connect(t *testing.T, urls ...string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(strings.Join(urls, ","), nats.ReconnectWait(50*time.Millisecond), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func createStream(t *testing.T, js jetstream.JetStream, name string, subjects ...string) jetstream.Stream {
	t.Helper()
	// Generous: on two loaded cores nats-server 2.15.2 once took over 10 s to
	// create a replicated stream while other packages' tests ran, and once a
	// request right after the cluster started got no answer in 30 s (CI,
	// TestNoQuorumNoAck). So each request has 10 s, and one that got no
	// answer is sent again: creating a stream with the same config twice
	// gives the stream.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := jetstream.StreamConfig{Name: name, Subjects: subjects, Replicas: 3, Storage: jetstream.FileStorage, Duplicates: time.Minute}
	for {
		try, cancelTry := context.WithTimeout(ctx, 10*time.Second)
		s, err := js.CreateStream(try, cfg)
		cancelTry()
		if err == nil {
			return s
		}
		if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			t.Fatalf("create stream %s: %v", name, err)
		}
	}
}

// publish publishes data with message id id and fails the test unless
// JetStream acknowledges it within 5 s. A publish that found no stream
// listening (ErrNoStreamResponse: a stream just created, whose interest has
// not reached the server the client is connected to yet) stored nothing,
// and is sent again within the 5 s.
func publish(t *testing.T, js jetstream.JetStream, subject, id, data string) *jetstream.PubAck {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		ack, err := js.Publish(ctx, subject, []byte(data), jetstream.WithMsgID(id))
		if err == nil {
			return ack
		}
		if !errors.Is(err, jetstream.ErrNoStreamResponse) || ctx.Err() != nil {
			t.Fatalf("publish %s (%s): %v", id, subject, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// publishUntilAcked publishes data with message id id, again with the same
// id after each attempt that saw no acknowledgement within 2 s (a client
// cut off by its server's death loses what it had in flight; the id makes
// the retry safe), and fails the test unless one is acknowledged within 15 s.
// It returns the acknowledgement and how many attempts went unanswered.
func publishUntilAcked(t *testing.T, js jetstream.JetStream, subject, id, data string) (*jetstream.PubAck, int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for missed := 0; ; missed++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		ack, err := js.Publish(ctx, subject, []byte(data), jetstream.WithMsgID(id))
		cancel()
		if err == nil {
			return ack, missed
		}
		if time.Now().After(deadline) {
			t.Fatalf("publish %s (%s): no acknowledgement after %d attempts: %v", id, subject, missed+1, err)
		}
	}
}

// waitLocalState waits until every running server in idx holds stream
// locally with exactly want's messages and sequences.
func waitLocalState(t *testing.T, c *Cluster, stream string, want StreamState, idx ...int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, i := range idx {
		var got StreamState
		var ok bool
		var err error
		for {
			got, ok, err = c.LocalStreamState(ctx, i, stream)
			if err == nil && ok && got.Msgs == want.Msgs && got.FirstSeq == want.FirstSeq && got.LastSeq == want.LastSeq {
				break
			}
			if c.sleep(ctx) != nil {
				t.Fatalf("%s holds %s as %+v (present %v, err %v), want %d messages, sequences %d..%d",
					c.Name(i), stream, got, ok, err, want.Msgs, want.FirstSeq, want.LastSeq)
			}
		}
	}
}

func all(c *Cluster) []int {
	idx := make([]int, c.N())
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// TestReplicatedStreamDeduplicates: an R3 stream over several subjects
// stores each message id once; a repeated id is acknowledged as a duplicate
// with the original's sequence and leaves the original in place, on every
// server.
func TestReplicatedStreamDeduplicates(t *testing.T) {
	c := Start(t, 3)
	if c.N() != 3 || c.Name(0) != "n1" || c.Name(2) != "n3" || len(c.URLs()) != 3 {
		t.Fatalf("cluster of %d: %v, names %s..%s", c.N(), c.URLs(), c.Name(0), c.Name(c.N()-1))
	}
	js := connect(t, c.URLs()...)
	s := createStream(t, js, "ORDERS", "orders.>")

	subjects := []string{"orders.new", "orders.paid", "orders.shipped"}
	for k := 1; k <= 6; k++ {
		ack := publish(t, js, subjects[k%3], fmt.Sprintf("m%d", k), fmt.Sprintf("order %d", k))
		if ack.Stream != "ORDERS" || ack.Sequence != uint64(k) || ack.Duplicate {
			t.Fatalf("publish m%d: ack %+v, want ORDERS seq %d, not a duplicate", k, ack, k)
		}
	}
	dup := publish(t, js, "orders.new", "m3", "a retry with other bytes")
	if !dup.Duplicate || dup.Sequence != 3 {
		t.Fatalf("repeated id m3: ack %+v, want a duplicate of seq 3", dup)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := s.Info(ctx, jetstream.WithSubjectFilter("orders.>"))
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 6 || info.State.LastSeq != 6 {
		t.Fatalf("stream state %+v, want 6 messages", info.State)
	}
	for _, subj := range subjects {
		if n := info.State.Subjects[subj]; n != 2 {
			t.Errorf("%s holds %d messages, want 2 (%v)", subj, n, info.State.Subjects)
		}
	}
	if info.Cluster == nil || info.Cluster.Leader == "" || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("stream cluster %+v, want a leader and 2 replicas", info.Cluster)
	}
	m, err := s.GetMsg(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Data) != "order 3" || m.Subject != subjects[0] || m.Header.Get(jetstream.MsgIDHeader) != "m3" {
		t.Fatalf("seq 3: %s %q id %q, want the original", m.Subject, m.Data, m.Header.Get(jetstream.MsgIDHeader))
	}
	waitLocalState(t, c, "ORDERS", StreamState{Msgs: 6, FirstSeq: 1, LastSeq: 6}, all(c)...)
}

// TestQuorumSurvivesKill: with one of three servers SIGKILLed, publishes are
// still acknowledged (two of three are a quorum), a consumer reads every
// message once and in order, and the restarted server catches up to the same
// stream state as the others.
func TestQuorumSurvivesKill(t *testing.T) {
	c := Start(t, 3)
	js := connect(t, c.URLs()...)
	s := createStream(t, js, "EVENTS", "events.>")
	const n = 40
	payload := func(k int) string { return fmt.Sprintf("event %d", k) }
	subject := func(k int) string { return fmt.Sprintf("events.%d", k%4) }
	for k := 1; k <= n/2; k++ {
		publish(t, js, subject(k), "e"+strconv.Itoa(k), payload(k))
	}

	// Kill a server that leads neither the stream nor the meta group: what
	// is tested is quorum, not the 4-9 s of an election.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := c.MetaLeader(ctx, 0)
	if err != nil || meta == "" {
		t.Fatalf("meta leader %q: %v", meta, err)
	}
	victim := -1
	for i := range c.N() {
		if name := c.Name(i); name != info.Cluster.Leader && name != meta {
			victim = i
			break
		}
	}
	c.Kill(victim)
	t.Logf("killed %s (stream leader %s, meta leader %s)", c.Name(victim), info.Cluster.Leader, meta)

	for k := n/2 + 1; k <= n; k++ {
		ack, missed := publishUntilAcked(t, js, subject(k), "e"+strconv.Itoa(k), payload(k))
		if ack.Sequence != uint64(k) {
			t.Fatalf("publish e%d with %s down: ack %+v, want seq %d", k, c.Name(victim), ack, k)
		}
		if missed > 0 {
			t.Logf("e%d: acknowledged after %d unanswered attempts (duplicate %v)", k, missed, ack.Duplicate)
		}
	}
	info, err = s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != n {
		t.Fatalf("stream holds %d messages with %s down, want %d", info.State.Msgs, c.Name(victim), n)
	}
	for _, p := range info.Cluster.Replicas {
		if p.Name == c.Name(victim) && p.Current {
			t.Fatalf("killed %s reported current: %+v", p.Name, p)
		}
	}

	cons, err := js.CreateOrUpdateConsumer(ctx, "EVENTS", jetstream.ConsumerConfig{
		Durable: "reader", AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		t.Fatalf("consumer with %s down: %v", c.Name(victim), err)
	}
	for next := 1; next <= n; {
		batch, err := cons.Fetch(n-next+1, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for m := range batch.Messages() {
			md, err := m.Metadata()
			if err != nil {
				t.Fatal(err)
			}
			if md.Sequence.Stream != uint64(next) || m.Subject() != subject(next) || string(m.Data()) != payload(next) {
				t.Fatalf("read seq %d %s %q, want seq %d %s %q", md.Sequence.Stream, m.Subject(), m.Data(), next, subject(next), payload(next))
			}
			if err := m.Ack(); err != nil {
				t.Fatal(err)
			}
			next++
			got++
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			t.Fatalf("fetch at %d: %v", next, err)
		}
		if got == 0 && ctx.Err() != nil {
			t.Fatalf("fetch at %d returned nothing", next)
		}
	}
	ci, err := cons.Info(ctx)
	if err != nil || ci.NumPending != 0 {
		t.Fatalf("after reading %d messages the consumer has %+v pending (%v), want none", n, ci, err)
	}

	c.Restart(victim)
	want := StreamState{Msgs: n, FirstSeq: 1, LastSeq: n}
	waitLocalState(t, c, "EVENTS", want, all(c)...)
	// Back in the replication path: the next message reaches it as well.
	publish(t, js, subject(n+1), "e"+strconv.Itoa(n+1), payload(n+1))
	want = StreamState{Msgs: n + 1, FirstSeq: 1, LastSeq: n + 1}
	waitLocalState(t, c, "EVENTS", want, all(c)...)
	for {
		info, err = s.Info(ctx)
		if err == nil && len(info.Cluster.Replicas) == 2 && info.Cluster.Replicas[0].Current && info.Cluster.Replicas[1].Current {
			break
		}
		if c.sleep(ctx) != nil {
			t.Fatalf("replicas not current after restarting %s: %+v, %v", c.Name(victim), info.Cluster, err)
		}
	}
}

// TestNoQuorumNoAck: with two of three servers paused (SIGSTOP), a publish
// through the third is not acknowledged; after they resume, the same
// message id published again is acknowledged and stored exactly once.
func TestNoQuorumNoAck(t *testing.T) {
	c := Start(t, 3)
	js := connect(t, c.URL(0))
	s := createStream(t, js, "WRITES", "writes")
	publish(t, js, "writes", "w1", "first")

	c.Pause(1)
	c.Pause(2)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	ack, err := js.Publish(ctx, "writes", []byte("second"), jetstream.WithMsgID("w2"))
	cancel()
	if err == nil {
		t.Fatalf("publish with two of three servers paused was acknowledged: %+v", ack)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("publish with two of three servers paused: %v, want no answer (deadline exceeded)", err)
	}
	c.Resume(1)
	c.Resume(2)

	// A client that saw no acknowledgement retries with the same id: the
	// message is stored once, whether or not the first attempt was.
	ack, _ = publishUntilAcked(t, js, "writes", "w2", "second")
	if ack.Sequence != 2 {
		t.Fatalf("retried w2: ack %+v, want seq 2", ack)
	}
	t.Logf("retried w2: duplicate %v", ack.Duplicate)
	waitLocalState(t, c, "WRITES", StreamState{Msgs: 2, FirstSeq: 1, LastSeq: 2}, all(c)...)
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := s.GetMsg(ctx, 2)
	if err != nil || string(m.Data) != "second" {
		t.Fatalf("seq 2: %v %v", m, err)
	}
}

// TestStartRetriesPortRace: a port taken between picking and binding makes
// Start pick again; Stop and Restart keep the ports and the store.
func TestStartRetriesPortRace(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port
	real, calls := pickPorts, 0
	pickPorts = func(n int) ([]int, error) {
		calls++
		ports, err := real(n)
		if calls == 1 && err == nil {
			ports[0] = takenPort // the client port
		}
		return ports, err
	}
	defer func() { pickPorts = real }()

	c := Start(t, 1)
	if calls != 2 {
		t.Fatalf("picked ports %d times, want 2", calls)
	}
	if c.URL(0) == fmt.Sprintf("nats://127.0.0.1:%d", takenPort) {
		t.Fatalf("server on the taken port %d", takenPort)
	}

	js := connect(t, c.URL(0))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "KEEP", Subjects: []string{"keep"}}); err != nil {
		t.Fatal(err)
	}
	publish(t, js, "keep", "k1", "kept")
	url := c.URL(0)
	c.Stop(0)
	c.Restart(0)
	if c.URL(0) != url {
		t.Fatalf("restarted on %s, was %s", c.URL(0), url)
	}
	waitLocalState(t, c, "KEEP", StreamState{Msgs: 1, FirstSeq: 1, LastSeq: 1}, 0)
}

// childEnv selects what TestCleanupChild does when the test binary runs as a
// child of TestCleanup*.
const childEnv = "NATSTEST_CHILD"

// TestCleanupChild is not a test of its own: run as a child process by the
// tests below, it starts a cluster, writes the servers' pids to the file
// named by NATSTEST_PIDS, pauses one, and ends as its mode says. A cleanup
// registered before Start runs after the cluster's and prints whether any
// server is still alive.
func TestCleanupChild(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		t.Skip("runs only as a child of the cleanup tests")
	}
	var pids []int
	t.Cleanup(func() {
		for _, pid := range pids {
			if alive(pid) {
				fmt.Printf("natstest-child: server %d alive after cleanup\n", pid)
			}
		}
		fmt.Printf("natstest-child: checked %d servers after cleanup\n", len(pids))
	})
	c := Start(t, 3)
	var list []string
	for _, s := range c.servers {
		pids = append(pids, s.cmd.Process.Pid)
		list = append(list, strconv.Itoa(s.cmd.Process.Pid))
	}
	if err := os.WriteFile(os.Getenv("NATSTEST_PIDS"), []byte(strings.Join(list, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	c.Pause(1) // a stopped process must be killed as well
	switch mode {
	case "fail":
		t.Fatal("failing on purpose")
	case "panic":
		panic("panicking on purpose")
	case "exit":
		os.Exit(3) // no cleanup runs: the processes die with the binary
	}
}

// runChild runs TestCleanupChild in mode and returns its output; the child
// must fail.
func runChild(t *testing.T, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCleanupChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestCleanupKillsServers: whether the test using the cluster fails, panics
// or exits without running cleanups, no server process outlives it.
func TestCleanupKillsServers(t *testing.T) {
	if _, err := exec.LookPath("nats-server"); err != nil {
		Start(t, 1) // skips, or fails under CI
	}
	for _, mode := range []string{"fail", "panic", "exit"} {
		t.Run(mode, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pids")
			out, err := runChild(t, childEnv+"="+mode, "NATSTEST_PIDS="+pidFile)
			if err == nil {
				t.Fatalf("child in mode %s passed:\n%s", mode, out)
			}
			b, rerr := os.ReadFile(pidFile)
			if rerr != nil {
				t.Fatalf("child wrote no pids (%v):\n%s", rerr, out)
			}
			pids := strings.Fields(string(b))
			if len(pids) != 3 {
				t.Fatalf("pids %q", pids)
			}
			// Failing and panicking tests run cleanups, which kill the
			// servers; an exiting one leaves that to the kernel.
			ranCleanup := strings.Contains(out, "natstest-child: checked 3 servers after cleanup")
			if ranCleanup != (mode != "exit") || strings.Contains(out, "alive after cleanup") {
				t.Fatalf("child in mode %s, cleanup ran %v:\n%s", mode, ranCleanup, out)
			}
			deadline := time.Now().Add(5 * time.Second)
			for _, p := range pids {
				pid, _ := strconv.Atoi(p)
				for alive(pid) {
					if time.Now().After(deadline) {
						// Leave nothing behind: kill every server still there.
						for _, p := range pids {
							if pid, _ := strconv.Atoi(p); alive(pid) {
								syscall.Kill(pid, syscall.SIGKILL)
							}
						}
						t.Fatalf("nats-server %d outlived the child in mode %s:\n%s", pid, mode, out)
					}
					time.Sleep(pollInterval)
				}
			}
		})
	}
}

// alive reports whether pid is a nats-server process that has not exited (a
// zombie waiting for a parent that does not reap counts as exited).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...
	open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || end < open || end+2 >= len(stat) {
		return false
	}
	return string(stat[open+1:end]) == "nats-server" && stat[end+2] != 'Z'
}

// TestMissingServer: without nats-server on PATH, Start skips the test, and
// fails it when CI=true.
func TestMissingServer(t *testing.T) {
	empty := t.TempDir()
	out, err := runChild(t, childEnv+"=pass", "PATH="+empty, "CI=")
	if err != nil || !strings.Contains(out, "--- SKIP: TestCleanupChild") || !strings.Contains(out, "nats-server is not on PATH") {
		t.Fatalf("without nats-server and CI: %v\n%s", err, out)
	}
	out, err = runChild(t, childEnv+"=pass", "PATH="+empty, "CI=true")
	if err == nil || !strings.Contains(out, "--- FAIL: TestCleanupChild") || !strings.Contains(out, "CI=true") {
		t.Fatalf("without nats-server, CI=true: %v\n%s", err, out)
	}
}

// TestCheckVersion: the tests refuse a nats-server older than 2.10 and one
// whose --version they cannot read, naming it.
func TestCheckVersion(t *testing.T) {
	dir := t.TempDir()
	for i, c := range []struct {
		out  string
		fail string // "" : accepted
	}{
		{"nats-server: v2.15.2", ""},
		{"nats-server: v2.10.0", ""},
		{"nats-server: v3.0.1", ""},
		{"nats-server: v2.9.10", "older than v2.10"},
		{"nats-server: v1.4.1", "older than v2.10"},
		{"something else", "not a version"},
	} {
		bin := filepath.Join(dir, fmt.Sprint("nats-server-", i))
		if err := os.WriteFile(bin, []byte("#!/bin/sh\necho '"+c.out+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		err := checkVersion(bin)
		switch {
		case c.fail == "" && err != nil:
			t.Errorf("%q: %v, want accepted", c.out, err)
		case c.fail != "" && (err == nil || !strings.Contains(err.Error(), c.fail)):
			t.Errorf("%q: %v, want an error saying %q", c.out, err, c.fail)
		}
	}
}
