package e2e

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// benchClients is the number of concurrent clients of the benchmarks.
const benchClients = 8

// request is one benchmark request.
type request struct {
	method, path string
	body         []byte
}

// measure sends b.N requests from benchClients concurrent clients, request k
// to node nodes[k % len(nodes)], and reports requests per second (unit
// rate) and the p50 and p99 latency in milliseconds. Any answer but 2xx
// fails the benchmark.
func measure(b *testing.B, h *harness, nodes []int, rate string, req func(k int) request) {
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range benchClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1) - 1)
				if k >= b.N {
					return
				}
				q := req(k)
				t0 := time.Now()
				r := h.doTimeout(30*time.Second, nodes[k%len(nodes)], q.method, q.path, q.body, nil)
				lat[k] = time.Since(t0)
				if r.err != nil || r.status < 200 || r.status > 299 {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("%s %s: %s", q.method, q.path, r))
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d requests failed; first: %v", n, b.N, firstErr.Load())
	}
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), rate)
	b.ReportMetric(ms(lat[len(lat)*50/100]), "p50-ms")
	b.ReportMetric(ms(lat[min(len(lat)-1, len(lat)*99/100)]), "p99-ms")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// seedWorkspaces stores per artifacts in each workspace through node 0 in
// v2 batches and waits until node 0 has embedded them all.
func seedWorkspaces(b *testing.B, h *harness, wss []string, per int, book *versionBook) []written {
	c := newCorpus(3)
	var all []written
	for _, ws := range wss {
		batch := batchIn{WorkspaceID: ws, ActorID: "seed"}
		for range per {
			batch.Artifacts = append(batch.Artifacts, c.artifact("", "", ""))
		}
		got, err := h.ingestBatch(0, batch, book)
		if err != nil {
			b.Fatal(err)
		}
		all = append(all, got...)
	}
	h.waitEmbedded(b, []int{0}, all, book, 120*time.Second)
	return all
}

// BenchmarkClusterPack: pack throughput and latency at 1, 2 and 3 Loci
// nodes over the same three NATS servers and the same eight workspaces (400
// artifacts), on loopback, requests spread evenly over the running nodes.
// Every pack stores its receipt through JetStream (R3) before it answers.
func BenchmarkClusterPack(b *testing.B) {
	h := startHarness(b, options{nats: 3, nodes: 1, spare: 2, logLevel: "warn"})
	book := newVersionBook()
	wss := workspaces("bench", 8, h.shards)
	seedWorkspaces(b, h, wss, 50, book)
	// Every request is new (its own query draw and budget), across the
	// sub-benchmarks and their repeated runs too: each stores a new receipt,
	// as distinct questions do (the same request at the same data version
	// would find its receipt stored).
	var serial atomic.Int64
	pack := func(k int) request {
		n := serial.Add(1)
		p := newCorpus(uint64(n)).packFor(wss[int(n)%len(wss)], int(n))
		return request{"POST", p.path(), mustJSON(p.body)}
	}
	for n := 1; n <= 3; n++ {
		if n > 1 {
			took := h.StartNode(n - 1)
			b.Logf("%s started and caught up in %v", h.Name(n-1), took.Round(time.Millisecond))
		}
		nodes := make([]int, n)
		for i := range nodes {
			nodes[i] = i
		}
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			measure(b, h, nodes, "packs/s", pack)
		})
	}
}

// BenchmarkClusterIngest: v1 ingest rate and acknowledgement latency through
// a three-node cluster (each write stored by a JetStream quorum of three
// servers and applied by the answering node), requests spread over the
// nodes; beside it the same load against one `loci serve` without a cluster
// (its WAL fsynced before every acknowledgement, the default).
func BenchmarkClusterIngest(b *testing.B) {
	clustered := startHarness(b, options{nats: 3, nodes: 3, logLevel: "warn"})
	single := startHarness(b, options{nodes: 1, logLevel: "warn"})
	wss := workspaces("ingest", 8, clustered.shards)
	var serial atomic.Int64
	ingest := func(k int) request {
		// Every request a new artifact, built without shared state.
		c := newCorpus(uint64(serial.Add(1)))
		return request{"POST", "/v1/ingest", mustJSON(c.artifact(wss[k%len(wss)], "bench", ""))}
	}
	b.Run("cluster-R3-nodes=3", func(b *testing.B) {
		measure(b, clustered, []int{0, 1, 2}, "ingests/s", ingest)
	})
	b.Run("single-node", func(b *testing.B) {
		measure(b, single, []int{0}, "ingests/s", ingest)
	})
}

// TestClusterFailoverTime measures, over LOCI_FAILOVER_KILLS rounds (the
// test is skipped without it; use 20 or more), the time from a SIGKILL to
// the first successful pack on every workspace for a client whose node died
// (it moves on to the next node), and likewise after killing one NATS
// server, under a light mixed load. It prints min, median, p90 and max of
// the per-kill maximum over the workspaces, and fails if any exceeds 5 s.
func TestClusterFailoverTime(t *testing.T) {
	if testing.Short() {
		t.Skip("long measurement")
	}
	if os.Getenv("LOCI_FAILOVER_KILLS") == "" {
		t.Skip("set LOCI_FAILOVER_KILLS (20 or more) to measure failover times")
	}
	kills := envInt(t, "LOCI_FAILOVER_KILLS", 20)
	h := startHarness(t, options{nats: 3, nodes: 3, logLevel: "warn"})
	wss := workspaces("failover", 4, h.shards)
	book := newVersionBook()
	g := newLoadGen(h, wss, book)
	g.start(1, 1)
	defer g.stop()
	time.Sleep(2 * time.Second)
	var loci, nats []time.Duration
	for k := range kills {
		victim := k % h.N()
		h.Kill(victim)
		loci = append(loci, maxDuration(g.failover(time.Now(), victim)))
		time.Sleep(500 * time.Millisecond)
		h.Restart(victim)

		nv := k % h.nats.N()
		h.nats.Kill(nv)
		nats = append(nats, maxDuration(g.failover(time.Now(), (k+1)%h.N())))
		time.Sleep(500 * time.Millisecond)
		h.nats.Restart(nv)
		t.Logf("kill %d: loci %s %v, nats %s %v", k+1, h.Name(victim), loci[k].Round(time.Millisecond), h.nats.Name(nv), nats[k].Round(time.Millisecond))
	}
	g.stop()
	for _, a := range g.anomalies {
		t.Errorf("anomaly: %s", a)
	}
	for _, s := range []struct {
		what string
		ds   []time.Duration
	}{{"SIGKILL of a Loci node", loci}, {"SIGKILL of a NATS server", nats}} {
		sorted := slices.Clone(s.ds)
		slices.Sort(sorted)
		q := func(p int) time.Duration {
			return sorted[min(len(sorted)-1, len(sorted)*p/100)].Round(time.Millisecond)
		}
		t.Logf("failover after %s, %d kills, kill to first pack on every workspace: min %v median %v p90 %v max %v",
			s.what, len(sorted), sorted[0].Round(time.Millisecond), q(50), q(90), sorted[len(sorted)-1].Round(time.Millisecond))
		if sorted[len(sorted)-1] > failoverBound {
			t.Errorf("failover after %s took up to %v, bound %v", s.what, sorted[len(sorted)-1], failoverBound)
		}
	}
	t.Logf("load: %s", g.summary())
}
