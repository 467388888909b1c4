package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestClusterIdenticalPacks: three NATS servers and three Loci nodes. 200
// artifacts in six workspaces (every shard) are ingested through all three
// nodes, 60 of them in v2 batches, then feedback and an erasure through
// several nodes. Read at the data version of the last write, every node
// returns byte-identical packs (v1 and every v2 profile), receipts,
// artifacts, statuses and listings, and every artifact's raw_payload as sent;
// with full replication and with --cluster-replicas 2 (forwarding).
func TestClusterIdenticalPacks(t *testing.T) {
	t.Run("full", func(t *testing.T) { identicalPacks(t, nil) })
	// Partial replication: each shard served by two of the three nodes, the
	// third forwarding its requests.
	t.Run("replicas=2", func(t *testing.T) { identicalPacks(t, []string{"--cluster-replicas", "2"}) })
}

func identicalPacks(t *testing.T, args []string) {
	h := startHarness(t, options{nats: 3, nodes: 3, args: args})
	nodes := []int{0, 1, 2}
	book := newVersionBook()
	c := newCorpus(7)
	wss := workspaces("team", 6, h.shards)

	// 140 single ingests: three clients, one per node, in parallel; each
	// workspace gets artifacts through every node.
	const singles = 140
	items := make([]artifactIn, singles)
	for k := range items {
		key := ""
		if k%3 == 0 {
			key = fmt.Sprintf("single-%d", k)
		}
		items[k] = c.artifact(wss[k%len(wss)], fmt.Sprintf("agent-%d", k%2), key)
	}
	var mu sync.Mutex
	var all []written
	var wg sync.WaitGroup
	for _, i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := i; k < singles; k += len(nodes) {
				w, err := h.ingestOne(i, items[k], http.StatusCreated, book)
				if err != nil {
					t.Errorf("item %d through node %d: %v", k, i, err)
					return
				}
				mu.Lock()
				all = append(all, w)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// Six batches of ten, one per workspace, through the nodes in turn.
	for b, ws := range wss {
		batch := batchIn{WorkspaceID: ws, ActorID: "agent-batch"}
		for k := range 10 {
			key := ""
			if k%2 == 0 {
				key = fmt.Sprintf("batch-%d-%d", b, k)
			}
			a := c.artifact("", "", key)
			batch.Artifacts = append(batch.Artifacts, a)
		}
		got, err := h.ingestBatch(nodes[b%len(nodes)], batch, book)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, got...)
	}
	if len(all) != 200 {
		t.Fatalf("%d artifacts acknowledged, want 200", len(all))
	}
	// A replay through another node returns the artifact first stored.
	replay, err := h.ingestOne(2, items[0], http.StatusOK, book)
	if err != nil {
		t.Fatalf("replaying item 0 (first stored through node 0) through node 2: %v", err)
	}
	for _, w := range all {
		if w.key == items[0].IdempotencyKey && w.ws == items[0].WorkspaceID && w.id != replay.id {
			t.Fatalf("replay through node 2 answered artifact %s, the key names %s", replay.id, w.id)
		}
	}

	// Vectors are published by the shard leaders behind the ingests: wait
	// until every node has them, so the writes below are the last ones.
	h.waitEmbedded(t, nodes, all, book, 90*time.Second)

	byWS := map[string][]written{}
	for _, w := range all {
		byWS[w.ws] = append(byWS[w.ws], w)
	}
	feedback := func(i int, body map[string]any, ws string) {
		t.Helper()
		r := h.doTimeout(20*time.Second, i, "POST", "/v1/feedback", mustJSON(body), book.min())
		v, err := h.ackedWrite(r, http.StatusCreated, ws)
		if err != nil {
			t.Fatalf("feedback %s through node %d: %v", mustJSON(body), i, err)
		}
		book.observe(v)
	}
	for k, ws := range wss {
		arts := byWS[ws]
		feedback(nodes[k%3], map[string]any{"workspace_id": ws, "action": "pin", "artifact_id": arts[0].id, "actor_id": "agent-0"}, ws)
		feedback(nodes[(k+1)%3], map[string]any{"workspace_id": ws, "action": "mark_wrong", "artifact_id": arts[1].id, "reason": "superseded"}, ws)
		feedback(nodes[(k+2)%3], map[string]any{"workspace_id": ws, "action": "private", "artifact_id": arts[2].id, "actor_id": "agent-1"}, ws)
	}
	erased := byWS[wss[0]][3]
	r := h.doTimeout(20*time.Second, 1, "DELETE", "/v1/artifacts/"+erased.id, nil, book.min())
	if v, err := h.ackedWrite(r, http.StatusOK, erased.ws); err != nil {
		t.Fatalf("erasing %s through node 1: %v", erased.id, err)
	} else {
		book.observe(v)
	}

	// Packs: 20 requests, each through every node at its shard's last
	// data version.
	var receipts []string
	cited := 0
	for k := range 20 {
		ws := wss[k%len(wss)]
		p := c.packFor(ws, k)
		rs := h.allNodes(nodes, 20*time.Second, "POST", p.path(), mustJSON(p.body), book.min())
		if d := identical(rs); d != "" {
			t.Fatalf("pack %d (%s) at %v: %s", k, p, book.min(), d)
		}
		if packCites(rs[0].body) {
			cited++
		}
		id := receiptID(rs[0].body)
		if id == "" {
			t.Fatalf("pack %d without receipt_id: %s", k, rs[0].body)
		}
		receipts = append(receipts, id)
		// The same request again through node 0: the same pack.
		again := h.doTimeout(20*time.Second, 0, "POST", p.path(), mustJSON(p.body), nil)
		if again.status != http.StatusOK || !bytes.Equal(again.body, rs[0].body) {
			t.Fatalf("pack %d again through node 0: %s; first: %s", k, again, rs[0].body)
		}
	}
	if cited < 10 {
		t.Fatalf("only %d of 20 packs cite evidence: the comparison would prove little", cited)
	}
	// Each receipt is stored once through the receipt stream; every node
	// applies it (no data version to wait for, so read until it arrives).
	for _, id := range receipts {
		rs := make([]reply, len(nodes))
		for k, i := range nodes {
			rs[k] = h.getEventually(i, "/v1/receipts/"+id, nil, 10*time.Second)
		}
		if d := identical(rs); d != "" {
			t.Fatalf("receipt %s: %s", id, d)
		}
	}

	// Artifacts, statuses and listings.
	for _, w := range all {
		hdr := book.min()
		rs := h.allNodes(nodes, 10*time.Second, "GET", "/v1/artifacts/"+w.id, nil, hdr)
		if w.id == erased.id {
			for _, r := range rs {
				if r.err != nil || r.status != http.StatusNotFound {
					t.Fatalf("erased artifact %s: %s, want 404", w.id, r)
				}
			}
			continue
		}
		if d := identical(rs); d != "" {
			t.Fatalf("artifact %s (acknowledged by node %d at %s): %s", w.id, w.node, w.version, d)
		}
		if err := checkStored(rs[0].body, w.id, w.ws, w.payload); err != nil {
			t.Fatal(err)
		}
		if d := identical(h.allNodes(nodes, 10*time.Second, "GET", "/v1/artifacts/"+w.id+"/status", nil, hdr)); d != "" {
			t.Fatalf("status of %s: %s", w.id, d)
		}
	}
	for _, ws := range wss {
		var bodies [][]byte
		for _, i := range nodes {
			b, keys, err := h.listing(i, ws, book.min())
			if err != nil {
				t.Fatalf("node %d: %v", i, err)
			}
			want := len(byWS[ws])
			if ws == erased.ws {
				want--
			}
			if len(keys) != want {
				t.Fatalf("node %d lists %d artifacts in %s, want %d", i, len(keys), ws, want)
			}
			bodies = append(bodies, b)
		}
		for k := 1; k < len(bodies); k++ {
			if !bytes.Equal(bodies[0], bodies[k]) {
				t.Fatalf("listing of %s, node %d and node %d: %s", ws, nodes[0], nodes[k], firstDiff(bodies[0], bodies[k]))
			}
		}
	}
	t.Logf("200 artifacts in %d workspaces, 20 packs (%d citing) and their receipts identical on %d nodes", len(wss), cited, len(nodes))
}

// TestClusterConcurrentFirstStart: three nodes started at the same moment
// against a new NATS cluster (none of the streams and buckets exists yet), as
// an orchestrator starts them, all become healthy.
func TestClusterConcurrentFirstStart(t *testing.T) {
	h := startHarness(t, options{nats: 3, nodes: 3, together: true})
	for i := range h.N() {
		if r := h.doTimeout(5*time.Second, i, "GET", "/health", nil, nil); r.err != nil || r.status != http.StatusOK {
			t.Fatalf("%s: %s", h.Name(i), r)
		}
	}
}
