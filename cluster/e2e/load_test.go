package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// loadGen is a steady mixed load of clients that know every node and move
// to another one when theirs does not answer or answers 503: ingests (v1 and
// v2 batches, all with idempotency keys so that a retry cannot store twice),
// feedback and erasures, and packs. It records every acknowledged write.
type loadGen struct {
	h    *harness
	wss  []string
	book *versionBook

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	acked     map[string]written // by artifact id
	ids       []string           // acknowledged ids, for random picks
	erased    map[string]bool    // erasure acknowledged
	uncertain map[string]bool    // erasure sent, not acknowledged: either state
	anomalies []string           // answers the contract rules out
	counts    map[string]int
	last      map[string]time.Time     // last success of each kind ("write", "pack")
	gap       map[string]time.Duration // longest time between two successes of a kind
}

func newLoadGen(h *harness, wss []string, book *versionBook) *loadGen {
	ctx, cancel := context.WithCancel(context.Background())
	return &loadGen{h: h, wss: wss, book: book, ctx: ctx, cancel: cancel,
		acked: map[string]written{}, erased: map[string]bool{}, uncertain: map[string]bool{}, counts: map[string]int{},
		last: map[string]time.Time{}, gap: map[string]time.Duration{}}
}

func (g *loadGen) count(what string) {
	g.mu.Lock()
	g.counts[what]++
	g.mu.Unlock()
}

// succeeded notes a success of kind ("write" or "pack") for the longest
// stretch without one.
func (g *loadGen) succeeded(kind string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	if l, ok := g.last[kind]; ok && now.Sub(l) > g.gap[kind] {
		g.gap[kind] = now.Sub(l)
	}
	g.last[kind] = now
}

func (g *loadGen) anomaly(format string, args ...any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.anomalies) < 50 {
		g.anomalies = append(g.anomalies, time.Now().UTC().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
	}
}

func (g *loadGen) record(ws []written) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, w := range ws {
		if prev, ok := g.acked[w.id]; ok {
			if prev.ws != w.ws || string(prev.payload) != string(w.payload) {
				g.anomalies = append(g.anomalies, fmt.Sprintf("artifact %s acknowledged twice with different content", w.id))
			}
			continue
		}
		g.acked[w.id] = w
		g.ids = append(g.ids, w.id)
	}
}

// start runs ingesters, one feedback client and packers until stop.
func (g *loadGen) start(ingesters, packers int) {
	for k := range ingesters {
		g.wg.Add(1)
		go g.ingester(k)
	}
	g.wg.Add(1)
	go g.feedbacker()
	for k := range packers {
		g.wg.Add(1)
		go g.packer(k)
	}
}

// stop ends the load and waits for every client.
func (g *loadGen) stop() {
	g.cancel()
	g.wg.Wait()
}

func (g *loadGen) stopped() bool { return g.ctx.Err() != nil }

// send is one client request with failover over every node, starting at a
// random one; per bounds each attempt, 30 s the whole.
func (g *loadGen) send(r *rand.Rand, per time.Duration, method, path string, body []byte, hdr map[string]string) reply {
	ctx, cancel := context.WithTimeout(g.ctx, 30*time.Second)
	defer cancel()
	rep, _ := g.h.try(ctx, rotation(r.IntN(g.h.N()), g.h.N()), per, method, path, body, hdr)
	return rep
}

func (g *loadGen) ingester(k int) {
	defer g.wg.Done()
	r := rand.New(rand.NewPCG(uint64(k), 1))
	c := newCorpus(uint64(100 + k))
	for n := 0; !g.stopped(); n++ {
		ws := g.wss[r.IntN(len(g.wss))]
		if n%8 == 7 {
			b := batchIn{WorkspaceID: ws, ActorID: fmt.Sprintf("ingester-%d", k)}
			for j := range 4 {
				b.Artifacts = append(b.Artifacts, c.artifact("", "", fmt.Sprintf("b%d-%d-%d", k, n, j)))
			}
			rep := g.send(r, 5*time.Second, "POST", "/v2/ingest", mustJSON(b), nil)
			g.ingested(rep, ws, "batch", func(ids []string, v dataVersion) []written {
				out := make([]written, len(ids))
				for j, id := range ids {
					out[j] = written{id: id, ws: ws, key: b.Artifacts[j].IdempotencyKey, payload: b.Artifacts[j].RawPayload, version: v, node: rep.node}
				}
				return out
			}, len(b.Artifacts))
			continue
		}
		a := c.artifact(ws, fmt.Sprintf("ingester-%d", k), fmt.Sprintf("s%d-%d", k, n))
		rep := g.send(r, 5*time.Second, "POST", "/v1/ingest", mustJSON(a), nil)
		g.ingested(rep, ws, "ingest", func(ids []string, v dataVersion) []written {
			return []written{{id: ids[0], ws: ws, key: a.IdempotencyKey, payload: a.RawPayload, version: v, node: rep.node}}
		}, 1)
	}
}

// ingested records an ingest's answer: acknowledged (201, or 200 for a retry
// whose first attempt was stored), not acknowledged (no answer, 503), or an
// anomaly.
func (g *loadGen) ingested(rep reply, ws, what string, mk func([]string, dataVersion) []written, n int) {
	if rep.err != nil || retryable(rep) {
		if !g.stopped() {
			g.count(what + " unacknowledged")
		}
		return
	}
	if rep.status != http.StatusCreated && rep.status != http.StatusOK {
		g.anomaly("%s into %s: %s", what, ws, rep)
		return
	}
	v, err := g.h.ackedWrite(rep, rep.status, ws)
	if err != nil {
		g.anomaly("%s: %v", what, err)
		return
	}
	var ids []string
	if what == "batch" {
		ids, err = decodeBatch(rep.body, n)
	} else {
		var out struct {
			ArtifactID string `json:"artifact_id"`
		}
		err = json.Unmarshal(rep.body, &out)
		ids = []string{out.ArtifactID}
		if err == nil && out.ArtifactID == "" {
			err = fmt.Errorf("no artifact_id")
		}
	}
	if err != nil {
		g.anomaly("%s: %v: %s", what, err, rep)
		return
	}
	g.book.observe(v)
	g.record(mk(ids, v))
	g.count(what)
	g.succeeded("write")
	if rep.status == http.StatusOK {
		g.count(what + " replayed") // a retry whose first attempt was stored
	}
}

// pickArtifact draws an acknowledged artifact that is not erased and whose
// erasure is not in doubt.
func (g *loadGen) pickArtifact(r *rand.Rand) (written, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for range 10 {
		if len(g.ids) == 0 {
			return written{}, false
		}
		id := g.ids[r.IntN(len(g.ids))]
		if !g.erased[id] && !g.uncertain[id] {
			return g.acked[id], true
		}
	}
	return written{}, false
}

// feedbacker marks acknowledged artifacts and now and then erases one. It
// reads the artifact on the node first, at the data version that
// acknowledged it (a client's read-your-writes barrier), then writes there.
func (g *loadGen) feedbacker() {
	defer g.wg.Done()
	r := rand.New(rand.NewPCG(99, 2))
	actions := []string{"pin", "unpin", "mark_wrong", "outdated", "clear", "private"}
	for n := 0; !g.stopped(); n++ {
		w, ok := g.pickArtifact(r)
		if !ok {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		erase := n%10 == 9
		hdr := map[string]string{hdrMinDataVersion: w.version.String()}
		first := r.IntN(g.h.N())
		for k := 0; k < g.h.N() && !g.stopped(); k++ {
			i := (first + k) % g.h.N()
			read := g.h.doTimeout(6*time.Second, i, "GET", "/v1/artifacts/"+w.id, nil, hdr)
			if retryable(read) {
				continue
			}
			if read.status != http.StatusOK {
				g.anomaly("read barrier for %s (acknowledged by node %d at %s): %s", w.id, w.node, w.version, read)
				break
			}
			if erase {
				// In doubt from the moment it is sent (readBack may read it
				// meanwhile); erased once acknowledged.
				g.mu.Lock()
				g.uncertain[w.id] = true
				g.mu.Unlock()
				rep := g.h.doTimeout(5*time.Second, i, "DELETE", "/v1/artifacts/"+w.id, nil, hdr)
				g.mu.Lock()
				switch {
				case rep.err == nil && rep.status == http.StatusOK:
					g.erased[w.id] = true
					delete(g.uncertain, w.id)
					g.counts["erase"]++
				case retryable(rep):
					// Stays in doubt, never retried: it may have been applied.
				default:
					g.anomalies = append(g.anomalies, fmt.Sprintf("erase %s: %s", w.id, rep))
				}
				g.mu.Unlock()
				if rep.err == nil && rep.status == http.StatusOK {
					if v, err := g.h.ackedWrite(rep, http.StatusOK, w.ws); err != nil {
						g.anomaly("erase: %v", err)
					} else {
						g.book.observe(v)
					}
				}
				break
			}
			body := map[string]any{"workspace_id": w.ws, "action": actions[r.IntN(len(actions))], "artifact_id": w.id, "actor_id": "reviewer"}
			rep := g.h.doTimeout(5*time.Second, i, "POST", "/v1/feedback", mustJSON(body), hdr)
			if retryable(rep) {
				g.count("feedback unacknowledged")
				continue
			}
			if v, err := g.h.ackedWrite(rep, http.StatusCreated, w.ws); err != nil {
				g.anomaly("feedback %s: %v", mustJSON(body), err)
			} else {
				g.book.observe(v)
				g.count("feedback")
				g.succeeded("write")
			}
			break
		}
	}
}

// packer packs random requests at the shard's last acknowledged version.
func (g *loadGen) packer(k int) {
	defer g.wg.Done()
	r := rand.New(rand.NewPCG(uint64(k), 3))
	c := newCorpus(uint64(200 + k))
	for n := 0; !g.stopped(); n++ {
		ws := g.wss[r.IntN(len(g.wss))]
		p := c.packFor(ws, n)
		rep := g.send(r, 8*time.Second, "POST", p.path(), mustJSON(p.body), g.book.min())
		switch {
		case g.stopped():
		case rep.err != nil || retryable(rep):
			g.count("pack failed")
		case rep.status != http.StatusOK:
			g.anomaly("%s: %s", p, rep)
		default:
			g.count("pack")
			g.succeeded("pack")
		}
	}
}

// failover measures, for every workspace at once, the time from since to
// the first successful pack of a client whose first choice is node first
// (the node that died, for a Loci kill) and that moves on to the next node
// when a node does not answer within 2 s or answers 503.
func (g *loadGen) failover(since time.Time, first int) []time.Duration {
	out := make([]time.Duration, len(g.wss))
	var wg sync.WaitGroup
	for k, ws := range g.wss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := mustJSON(map[string]any{"query": "what happened to the billing service", "workspace_id": ws, "max_tokens": 400})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for {
				rep, _ := g.h.try(ctx, rotation(first, g.h.N()), 2*time.Second, "POST", "/v1/context-pack", body, g.book.min())
				if rep.err == nil && rep.status == http.StatusOK {
					out[k] = time.Since(since)
					return
				}
				if ctx.Err() != nil {
					out[k] = time.Since(since)
					g.anomaly("failover probe on %s: no pack within 60 s: %s", ws, rep)
					return
				}
				if !retryable(rep) {
					g.anomaly("failover probe on %s: %s", ws, rep)
				}
			}
		}()
	}
	wg.Wait()
	return out
}

// summary is the load's counts, for logs.
func (g *loadGen) summary() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	keys := make([]string, 0, len(g.counts))
	for k := range g.counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, g.counts[k]))
	}
	return fmt.Sprintf("%d artifacts acknowledged, %d erased, %d erasures in doubt; %s; longest stretch without an acknowledged write %v, without a pack %v",
		len(g.acked), len(g.erased), len(g.uncertain), strings.Join(parts, ", "), g.gap["write"].Round(time.Millisecond), g.gap["pack"].Round(time.Millisecond))
}

// verify checks, on every node in idx, every acknowledged artifact at the
// last acknowledged data version of its shard: readable (404 once its
// erasure was acknowledged), byte-identical across nodes and holding the
// payload sent; and every workspace's listing (first page) and two packs
// identical across nodes, compared where the nodes answer from the same
// position of the shard's stream (atOneVersion).
func (g *loadGen) verify(t *testing.T, idx []int) {
	t.Helper()
	g.mu.Lock()
	ids := slices.Clone(g.ids)
	g.mu.Unlock()
	// Every node first applies every acknowledged write: a node that lags
	// is a liveness fault (reported), not a reason to skip the checks.
	for _, i := range idx {
		start := time.Now()
		for _, ws := range g.wss {
			hdr := g.book.min()
			for {
				r := g.h.doTimeout(10*time.Second, i, "GET", "/v1/workspaces/"+ws+"/artifacts?limit=1", nil, hdr)
				if r.err == nil && r.status == http.StatusOK {
					break
				}
				if time.Since(start) > 60*time.Second {
					t.Fatalf("%s has not applied the acknowledged writes 60 s after the load stopped: %s%s", g.h.Name(i), r, g.h.logOf(i))
				}
			}
		}
		if d := time.Since(start); d > failoverBound {
			t.Errorf("%s applied every acknowledged write only %v after the load stopped (reads wait at most %v)", g.h.Name(i), d.Round(time.Millisecond), failoverBound)
		}
	}
	errs := make(chan string, 20)
	work := make(chan string)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				w := g.acked[id]
				rs, err := g.h.atOneVersion(idx, w.version.shard, "GET", "/v1/artifacts/"+id, nil, g.book.min())
				var problem string
				if err != nil {
					problem = err.Error()
				}
				switch {
				case problem != "":
				case g.erased[id]:
					for _, r := range rs {
						if r.err != nil || r.status != http.StatusNotFound {
							problem = fmt.Sprintf("erased artifact %s: %s, want 404", id, r)
						}
					}
				case g.uncertain[id]:
					for _, r := range rs {
						if r.err != nil || r.status != rs[0].status || (r.status != http.StatusOK && r.status != http.StatusNotFound) {
							problem = fmt.Sprintf("artifact %s, erasure unacknowledged: %s; node %d: %d", id, r, rs[0].node, rs[0].status)
						}
					}
					if problem == "" && rs[0].status == http.StatusOK {
						problem = identical(rs)
					}
				default:
					if d := identical(rs); d != "" {
						problem = fmt.Sprintf("acknowledged artifact %s (%s, node %d at %s): %s", id, w.ws, w.node, w.version, d)
					} else if err := checkStored(rs[0].body, id, w.ws, w.payload); err != nil {
						problem = err.Error()
					}
				}
				if problem != "" {
					select {
					case errs <- problem:
					default:
					}
				}
			}
		}()
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	close(errs)
	n := 0
	for e := range errs {
		t.Error(e)
		n++
	}
	if n > 0 {
		t.FailNow()
	}
	// Listings (first page) and packs, each compared at one position of the
	// workspace's shard.
	c := newCorpus(77)
	for k, ws := range g.wss {
		shard := shardOf(ws, g.h.shards)
		rs, err := g.h.atOneVersion(idx, shard, "GET", "/v1/workspaces/"+ws+"/artifacts?limit=500", nil, g.book.min())
		if err != nil {
			t.Fatal(err)
		}
		if d := identical(rs); d != "" {
			t.Fatalf("listing of %s at %s: %s", ws, rs[0].header.Get(hdrDataVersion), d)
		}
		for j := range 2 {
			p := c.packFor(ws, 2*k+j)
			rs, err := g.h.atOneVersion(idx, shard, "POST", p.path(), mustJSON(p.body), g.book.min())
			if err != nil {
				t.Fatal(err)
			}
			if d := identical(rs); d != "" {
				t.Fatalf("after the kills, pack %s at %s: %s", p, rs[0].header.Get(hdrDataVersion), d)
			}
		}
	}
	t.Logf("verified %d acknowledged artifacts, the listings of %d workspaces and %d packs on %d nodes", len(ids), len(g.wss), 2*len(g.wss), len(idx))
}

// acknowledged is how many artifacts have been acknowledged so far.
func (g *loadGen) acknowledged() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.ids)
}

// readBackResult counts, for one node, the reads of acknowledged artifacts
// at their own data versions (readBack).
type readBackResult struct {
	node     int
	reads    int
	non200   int            // answers that were not what the write's acknowledgement promises
	byStatus map[string]int // those answers, by status ("no answer" for none)
	examples []string       // a few of them
}

func (r readBackResult) String() string {
	keys := make([]string, 0, len(r.byStatus))
	for k := range r.byStatus {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %d", k, r.byStatus[k]))
	}
	return fmt.Sprintf("node %d: %d reads, %d not 200 (%s)", r.node, r.reads, r.non200, strings.Join(parts, ", "))
}

// readBack reads every artifact acknowledged so far from every node in idx,
// once, with X-Loci-Min-Data-Version set to the data version its write was
// acknowledged with (what a client that wrote it sends to any node to read
// it back): the contract promises 200 with the payload sent (or 404 once an
// erasure of it was sent), within the server's own wait. Every other answer
// counts, a 503 after the wait included; nothing is retried. It reads the
// artifacts acknowledged from the from-th on, while the load goes on.
func (g *loadGen) readBack(idx []int, from int) []readBackResult {
	g.mu.Lock()
	ids := slices.Clone(g.ids[min(from, len(g.ids)):])
	g.mu.Unlock()
	out := make([]readBackResult, len(idx))
	for k, i := range idx {
		out[k] = readBackResult{node: i, byStatus: map[string]int{}}
	}
	type job struct{ k, i int }
	var mu sync.Mutex
	work := make(chan job)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				g.mu.Lock()
				w := g.acked[ids[j.k]]
				g.mu.Unlock()
				r := g.h.doTimeout(2*time.Minute, j.i, "GET", "/v1/artifacts/"+w.id, nil, map[string]string{hdrMinDataVersion: w.version.String()})
				g.mu.Lock()
				erased, uncertain := g.erased[w.id], g.uncertain[w.id]
				g.mu.Unlock()
				// At the ingest's version an erasure acknowledged since
				// may not be applied yet: either answer (verify checks
				// 404 at the last version).
				ok := r.err == nil && (r.status == http.StatusOK ||
					r.status == http.StatusNotFound && (erased || uncertain))
				if ok && r.status == http.StatusOK {
					if err := checkStored(r.body, w.id, w.ws, w.payload); err != nil {
						ok, r.err = false, err
					}
				}
				mu.Lock()
				res := &out[slices.Index(idx, j.i)]
				res.reads++
				if !ok {
					res.non200++
					what := "no answer"
					if r.err == nil {
						what = strconv.Itoa(r.status)
					}
					res.byStatus[what]++
					if len(res.examples) < 5 {
						res.examples = append(res.examples, fmt.Sprintf("%s (%s, acknowledged by node %d at %s): %s", w.id, w.ws, w.node, w.version, r))
					}
				}
				mu.Unlock()
			}
		}()
	}
	for k := range ids {
		for _, i := range idx {
			work <- job{k, i}
		}
	}
	close(work)
	wg.Wait()
	return out
}
