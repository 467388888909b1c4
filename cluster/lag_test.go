package cluster

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loci-memory/loci/cluster/natstest"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/httpd"
	"github.com/loci-memory/loci/service"
	"github.com/loci-memory/loci/telemetry"
)

// healthOf is one GET /health: status code, "status", and the cluster
// section's behind and lag.
type healthOf struct {
	code   int
	status string
	reason string
	behind uint64
	lag    []StreamLag
}

func getHealth(t *testing.T, base string) healthOf {
	t.Helper()
	resp, body := plainCall(t, "GET", base+"/health", "")
	var h struct {
		Status  string `json:"status"`
		Reason  string `json:"reason"`
		Cluster struct {
			Behind uint64      `json:"behind"`
			Lag    []StreamLag `json:"lag"`
		} `json:"cluster"`
	}
	if err := json.Unmarshal([]byte(body), &h); err != nil {
		t.Fatalf("/health: %d %s: %v", resp.StatusCode, body, err)
	}
	return healthOf{resp.StatusCode, h.Status, h.Reason, h.Cluster.Behind, h.Cluster.Lag}
}

// scrape reads one series of a metrics handler: the value of name with
// label stream="stream".
func scrape(t *testing.T, m *telemetry.Metrics, name, stream string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	re := regexp.MustCompile(`(?m)^` + name + `\{stream="` + stream + `"\} (\S+)$`)
	sub := re.FindSubmatch(body)
	if sub == nil {
		t.Fatalf("/metrics has no %s{stream=%q}:\n%s", name, stream, body)
	}
	v, err := strconv.ParseFloat(string(sub[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestLaggingApplierReportedAndCaughtUp: an applier that stops applying
// while the other node goes on writing (held here at its next apply) is
// reported by /health (the messages behind, per stream; 503 "lagging" once
// it has applied nothing for longer than a read waits for its data
// version) and by /metrics; once it can apply again, it catches up by
// itself, with nobody waiting for a data version (its consumer, stalled
// behind the stream, is re-created by the watchdog), and /health says 200
// "ok" with nothing behind.
func TestLaggingApplierReportedAndCaughtUp(t *testing.T) {
	nc := natstest.Start(t, 3)
	nodes := openNodes(t, nc, 2, 2)
	a, b := nodes[0], nodes[1]
	metrics := telemetry.New("test")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := testLogger(t)
	srv := httpd.NewStarting(httpd.Config{Cluster: b, Metrics: metrics, Logger: log})
	go srv.Serve(ln)
	startService(srv, b, b.cfg.Control, service.Config{Logger: log}, metrics)
	t.Cleanup(func() { srv.Shutdown() })
	base := "http://" + ln.Addr().String()

	ingest := func(i int) {
		t.Helper()
		if _, err := mustEngine(t, a, "t", "w").Ingest("t", engine.IngestInput{Workspace: "w", ActorID: "a", Type: "note",
			Payload: []byte(fmt.Sprintf(`{"text":"note %d"}`, i))}); err != nil {
			t.Fatal(err)
		}
	}
	ingest(0)
	if err := b.WaitDataVersion(t.Context(), a.DataVersion()); err != nil {
		t.Fatal(err)
	}
	if h := getHealth(t, base); h.code != 200 || h.status != "ok" || h.behind != 0 || len(h.lag) != 0 {
		t.Fatalf("caught-up node: /health %+v, want 200 ok, nothing behind", h)
	}
	s := b.shards[ShardOf("t", "w", 2)]
	restarts := s.restarts.Load()

	// Hold b's applier of the shard at its next apply; a writes on.
	s.mu.Lock()
	held := true
	release := func() {
		if held {
			held = false
			s.mu.Unlock()
		}
	}
	defer release()
	const writes = 5
	for i := 1; i <= writes; i++ {
		ingest(i)
	}
	last := a.shards[s.index].Applied()
	deadline := time.Now().Add(MaxVersionWait + 5*time.Second)
	var h healthOf
	for {
		h = getHealth(t, base)
		if h.code == 503 && h.status == "lagging" {
			break
		}
		if h.code != 200 && h.code != 503 || time.Now().After(deadline) {
			t.Fatalf("node behind by %d messages for %v: /health %+v, want 503 lagging", writes, MaxVersionWait+5*time.Second, h)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(h.reason, s.stream) || h.behind < writes || len(h.lag) != 1 || h.lag[0].Stream != s.stream ||
		h.lag[0].Last != last || h.lag[0].Behind < writes || h.lag[0].StalledMS < (MaxVersionWait-time.Second).Milliseconds() {
		// (The cluster section is read a moment before the stall is
		// judged: stalled_ms may be a little under the 5 s.)
		t.Fatalf("lagging node's /health: %+v; want %s behind by at least %d (last %d), stalled about %v", h, s.stream, writes, last, MaxVersionWait)
	}
	if lag := scrape(t, metrics, "loci_cluster_apply_lag_messages", s.stream); lag < writes {
		t.Fatalf("loci_cluster_apply_lag_messages{stream=%q} = %v, want at least %d", s.stream, lag, writes)
	}
	if st := scrape(t, metrics, "loci_cluster_apply_stalled_seconds", s.stream); st < MaxVersionWait.Seconds() {
		t.Fatalf("loci_cluster_apply_stalled_seconds{stream=%q} = %v, want over %v", s.stream, st, MaxVersionWait.Seconds())
	}
	if got := scrape(t, metrics, "loci_cluster_stream_last_seq", s.stream); got != float64(last) {
		t.Fatalf("loci_cluster_stream_last_seq{stream=%q} = %v, want %d", s.stream, got, last)
	}

	// Free to apply again, with nobody waiting for a data version: it
	// catches up by itself.
	release()
	deadline = time.Now().Add(10 * time.Second)
	for {
		h = getHealth(t, base)
		if h.code == 200 && h.status == "ok" && h.behind == 0 && s.Applied() == last {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after its applier could go on, the node is still behind: /health %+v, applied %d of %d", h, s.Applied(), last)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if lag := scrape(t, metrics, "loci_cluster_apply_lag_messages", s.stream); lag != 0 {
		t.Fatalf("caught up, loci_cluster_apply_lag_messages{stream=%q} = %v", s.stream, lag)
	}
	// The watchdog re-created the consumer that had stalled behind the
	// stream although no reader or writer waited on this node.
	if s.restarts.Load() == restarts {
		t.Fatalf("the stalled applier's consumer was never re-created (restarts %d)", restarts)
	}
	if got := scrape(t, metrics, "loci_cluster_applier_restarts_total", s.stream); got < 1 {
		t.Fatalf("loci_cluster_applier_restarts_total{stream=%q} = %v", s.stream, got)
	}
}

// TestLeaseMissingDuringBucketTrouble: a member whose lease has been
// missing for longer than a lease lasts leaves the view, unless this node
// itself could not renew its lease or read the leases meanwhile (the
// bucket electing a leader after a NATS server died, when every lease
// expires alike): then its absence counts from LeaseTTL after the trouble.
// (Kill rounds with --cluster-replicas 2 saw nodes answer 503 "no live
// node serves shard" for shards served by a live node, right after a NATS
// server was killed and restarted.)
func TestLeaseMissingDuringBucketTrouble(t *testing.T) {
	nc := natstest.Start(t, 3)
	n := openNodes(t, nc, 1, 2)[0]
	now := time.Now()
	for _, c := range []struct {
		name    string
		trouble time.Time // zero: none
		kept    bool
	}{
		{"no trouble", time.Time{}, false},
		{"trouble a second ago", now.Add(-time.Second), true},
		{"trouble just under a lease ago", now.Add(-LeaseTTL + 100*time.Millisecond), true},
		{"trouble over a lease ago", now.Add(-LeaseTTL - time.Second), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			n.leaseTrouble.Store(0)
			if !c.trouble.IsZero() {
				n.leaseTrouble.Store(c.trouble.UnixNano())
			}
			// "ghost" was last seen renewed 10 s ago; its lease is gone.
			seen := map[string]*sighting{"ghost": {member: Member{NodeID: "ghost", Addr: "127.0.0.1:1", Shards: []int{0}}, rev: 1, at: now.Add(-10 * time.Second)}}
			members, err := n.pollMembers(seen, now)
			if err != nil {
				t.Fatal(err)
			}
			kept := slices.ContainsFunc(members, func(m Member) bool { return m.NodeID == "ghost" })
			if kept != c.kept {
				t.Fatalf("members %+v: ghost kept %v, want %v", members, kept, c.kept)
			}
		})
	}
}
