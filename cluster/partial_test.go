package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/cluster/natstest"
	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/httpd"
	"github.com/loci-memory/loci/service"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const partialKey = "partial-admin-key"

// quiet discards the nodes' logs; LOCI_TEST_LOG=1 shows them.
var quiet = func() *slog.Logger {
	if os.Getenv("LOCI_TEST_LOG") == "1" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}()

// apiNode is a cluster node serving the HTTP API on loopback.
type apiNode struct {
	node *Node
	ctl  *control.Store
	srv  *httpd.Server
	base string
	once sync.Once
}

func (a *apiNode) close() {
	a.once.Do(func() {
		a.srv.Shutdown()
		a.node.Close()
	})
}

func (a *apiNode) crashed() {
	a.once.Do(func() {
		a.srv.Shutdown()
		a.node.crash()
	})
}

// openAPINodes opens n nodes with partial replication (replicas per shard)
// together, as nodes started at the same time, each serving the API.
func openAPINodes(t *testing.T, nc *natstest.Cluster, n, shards, replicas int) []*apiNode {
	t.Helper()
	dir := t.TempDir()
	out := make([]*apiNode, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = startAPINode(nc, filepath.Join(dir, fmt.Sprint(i)), fmt.Sprintf("node%d", i+1), "127.0.0.1:0", shards, replicas)
		}()
	}
	wg.Wait()
	for _, a := range out {
		if a != nil {
			t.Cleanup(a.close)
		}
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// startAPINode opens node id over dir and serves its API at addr.
func startAPINode(nc *natstest.Cluster, dir, id, addr string, shards, replicas int) (*apiNode, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	ctl := control.New(time.Now)
	cfg := Config{URLs: nc.URLs(), NodeID: id, Addr: ln.Addr().String(),
		Shards: shards, Replicas: replicas, StreamReplicas: 1, Dir: dir, Control: ctl,
		Engine: engine.Options{NoEmbedder: true, DisableBackground: true, Logger: quiet}, Logger: quiet}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node, err := Open(ctx, cfg)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("open %s: %w", id, err)
	}
	ctl.Attach(node.ControlEngine().AppendControl)
	srv := httpd.NewStarting(httpd.Config{Cluster: node, Version: "test", Logger: quiet})
	startService(srv, node, ctl, service.Config{AdminKey: partialKey, Logger: quiet}, nil)
	go srv.Serve(ln)
	return &apiNode{node: node, ctl: ctl, srv: srv, base: "http://" + ln.Addr().String()}, nil
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func call(t *testing.T, method, url, body string, header ...string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-Key", partialKey)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, b}
}

// servers lists, for each shard, the nodes (indexes) that serve it now.
func servers(nodes []*apiNode, shards int) [][]int {
	out := make([][]int, shards)
	for i, a := range nodes {
		if a == nil {
			continue
		}
		for _, k := range a.node.readyShards() {
			out[k] = append(out[k], i)
		}
	}
	return out
}

// waitServed waits until every shard is served by exactly want of the
// nodes not in dead, and returns who serves what.
func waitServed(t *testing.T, nodes []*apiNode, shards, want int, within time.Duration, dead ...int) [][]int {
	t.Helper()
	live := slices.Clone(nodes)
	for _, d := range dead {
		live[d] = nil
	}
	deadline := time.Now().Add(within)
	for {
		s := servers(live, shards)
		ok := true
		for _, ns := range s {
			ok = ok && len(ns) == want
		}
		// Every live node routes every shard to the live nodes serving it
		// (its view of the leases is at most a poll old).
		for i, a := range live {
			for k := 0; ok && a != nil && k < shards; k++ {
				var ns *service.NotServedError
				if _, err := a.node.ShardEngine(k); errors.As(err, &ns) {
					var to []int
					for j, b := range live {
						if b != nil && (b.node.NodeID() == ns.NodeID || slices.ContainsFunc(ns.Alternates, func(x service.NodeAddr) bool { return x.NodeID == b.node.NodeID() })) {
							to = append(to, j)
						}
					}
					ok = slices.Equal(to, s[k]) && !slices.Contains(to, i)
				}
			}
		}
		if ok {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("shards not served by %d nodes each within %s: %v", want, within, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPartialReplication: 3 nodes, 4 shards, 2 replicas. Each shard is
// served by exactly 2 nodes; writes, packs and reads by id through the node
// that does not serve a workspace are forwarded and answer byte for byte
// what the serving nodes answer; the workspace listing is the same from
// every node; MCP calls are forwarded whole; every request is metered
// once. When a serving node stops, requests go on succeeding through every
// live node, and its shards are served by the others (the third node
// catches up) within seconds.
func TestPartialReplication(t *testing.T) {
	nc := natstest.Start(t, 1)
	const shards, replicas = 4, 2
	nodes := openAPINodes(t, nc, 3, shards, replicas)
	start := time.Now()
	served := waitServed(t, nodes, shards, replicas, 10*time.Second)
	t.Logf("served %v (stable %s after open)", served, time.Since(start).Round(time.Millisecond))

	// The assignment is rendezvous hashing over the three members.
	ids := []string{"node1", "node2", "node3"}
	for k := range shards {
		var want []int
		for _, id := range assigned(k, replicas, ids) {
			want = append(want, int(id[4]-'1'))
		}
		slices.Sort(want)
		if !slices.Equal(served[k], want) {
			t.Fatalf("shard %d served by %v, rendezvous assigns %v", k, served[k], want)
		}
	}

	// One workspace per shard, and the node that does not serve it.
	wsOf := map[int]string{}
	for i := 0; len(wsOf) < shards; i++ {
		ws := fmt.Sprintf("ws%d", i)
		if k := ShardOf(service.DefaultTenant, ws, shards); wsOf[k] == "" {
			wsOf[k] = ws
		}
	}
	outsider := func(k int) int {
		for i := range nodes {
			if !slices.Contains(served[k], i) {
				return i
			}
		}
		t.Fatalf("shard %d served by every node", k)
		return -1
	}

	// The node outside each shard refuses to route a bogus forwarding mark.
	if r := call(t, "GET", nodes[0].base+"/v1/workspaces", "", "X-Loci-Forwarded", "guess"); r.status != http.StatusForbidden {
		t.Fatalf("a forged forwarding mark: %d %s", r.status, r.body)
	}

	var version string
	artifacts := map[int]string{}
	for k := range shards {
		ws, out := wsOf[k], nodes[outsider(k)]
		for j := range 3 {
			r := call(t, "POST", out.base+"/v1/ingest", fmt.Sprintf(`{"workspace_id":%q,"actor_id":"agent","artifact_type":"note","raw_payload":{"text":"note %d of shard %d: the forwarded write is replicated to the serving nodes"}}`, ws, j, k))
			if r.status != http.StatusCreated {
				t.Fatalf("ingest into %s (shard %d) through node %d: %d %s", ws, k, outsider(k)+1, r.status, r.body)
			}
			var res struct {
				ArtifactID uuid.UUID `json:"artifact_id"`
			}
			if err := json.Unmarshal(r.body, &res); err != nil {
				t.Fatal(err)
			}
			if got := service.IDShard(res.ArtifactID); got != k || res.ArtifactID.Version() != 4 || res.ArtifactID.Variant() != uuid.RFC4122 {
				t.Fatalf("artifact id %s: tagged with shard %d (want %d), version %d", res.ArtifactID, got, k, res.ArtifactID.Version())
			}
			artifacts[k] = res.ArtifactID.String()
			version = r.header.Get("X-Loci-Data-Version")
		}
	}
	if version == "" {
		t.Fatal("a forwarded answer carries no X-Loci-Data-Version")
	}

	// Packs through every node, at the data version of the last write:
	// byte-identical, with a receipt id tagged with the shard.
	receipts := map[int]string{}
	for k := range shards {
		var want []byte
		for i, a := range nodes {
			r := call(t, "POST", a.base+"/v1/context-pack", fmt.Sprintf(`{"workspace_id":%q,"query":"forwarded write replicated","max_tokens":500}`, wsOf[k]),
				"X-Loci-Min-Data-Version", version)
			if r.status != http.StatusOK {
				t.Fatalf("pack of shard %d through node %d: %d %s", k, i+1, r.status, r.body)
			}
			if want == nil {
				want = r.body
				var p struct {
					ReceiptID uuid.UUID `json:"receipt_id"`
				}
				if err := json.Unmarshal(r.body, &p); err != nil || service.IDShard(p.ReceiptID) != k {
					t.Fatalf("pack of shard %d: receipt id %s not tagged with it (%v): %s", k, p.ReceiptID, err, r.body)
				}
				receipts[k] = p.ReceiptID.String()
			} else if !bytes.Equal(r.body, want) {
				t.Fatalf("pack of shard %d through node %d differs:\n%s\nnode 1:\n%s", k, i+1, r.body, want)
			}
		}
	}

	// Reads by id route to the shard the id names, from every node.
	for k := range shards {
		for _, path := range []string{"/v1/artifacts/" + artifacts[k], "/v1/artifacts/" + artifacts[k] + "/status", "/v1/receipts/" + receipts[k]} {
			var want []byte
			for i, a := range nodes {
				r := call(t, "GET", a.base+path, "", "X-Loci-Min-Data-Version", version)
				if r.status != http.StatusOK {
					t.Fatalf("GET %s through node %d: %d %s", path, i+1, r.status, r.body)
				}
				if want == nil {
					want = r.body
				} else if !bytes.Equal(r.body, want) {
					t.Fatalf("GET %s through node %d differs:\n%s\n%s", path, i+1, r.body, want)
				}
			}
		}
	}

	// The tenant-wide listing is gathered: the same from every node, with
	// every workspace, sorted.
	listing := func(i int) []byte {
		r := call(t, "GET", nodes[i].base+"/v1/workspaces", "", "X-Loci-Min-Data-Version", version)
		if r.status != http.StatusOK {
			t.Fatalf("list workspaces through node %d: %d %s", i+1, r.status, r.body)
		}
		return r.body
	}
	want := listing(0)
	var list service.WorkspacesResult
	if err := json.Unmarshal(want, &list); err != nil || len(list.Workspaces) != shards {
		t.Fatalf("listing %s: %v", want, err)
	}
	if !slices.IsSortedFunc(list.Workspaces, func(a, b service.WorkspaceJSON) int { return strings.Compare(a.WorkspaceID, b.WorkspaceID) }) {
		t.Fatalf("listing not sorted: %s", want)
	}
	for i := 1; i < len(nodes); i++ {
		if got := listing(i); !bytes.Equal(got, want) {
			t.Fatalf("node %d lists differently:\n%s\nnode 1:\n%s", i+1, got, want)
		}
	}

	// MCP through a node that does not serve the workspace: the call is
	// forwarded whole and answers as the serving node does.
	k0 := 0
	mcpText := func(i int, name string, args map[string]any) string {
		return mcpTool(t, nodes[i].base, keyTransport{partialKey}, name, args)
	}
	out := outsider(k0)
	mcpText(out, "remember", map[string]any{"workspace_id": wsOf[k0], "memories": []map[string]any{{"content": "remembered over MCP through a node that does not serve the workspace", "idempotency_key": "mcp-1"}}})
	// The serving nodes apply the write before answering the pack
	// (the forwarded answer is acknowledged once the serving node applied
	// it; the other serving node is waited for by data version).
	for _, i := range served[k0] {
		if err := nodes[i].node.WaitDataVersion(t.Context(), nodes[served[k0][0]].node.DataVersion()); err != nil {
			t.Fatal(err)
		}
	}
	recallArgs := map[string]any{"workspace_id": wsOf[k0], "query": "remembered over MCP", "max_tokens": 300}
	viaOutsider := mcpText(out, "recall", recallArgs)
	if !strings.Contains(viaOutsider, "remembered over MCP") {
		t.Fatalf("recall through node %d misses the memory: %s", out+1, viaOutsider)
	}
	if direct := mcpText(served[k0][0], "recall", recallArgs); direct != viaOutsider {
		t.Fatalf("recall through node %d differs from the serving node's:\n%s\n%s", out+1, viaOutsider, direct)
	}
	if l := mcpText(out, "list", map[string]any{}); !strings.Contains(l, `"workspace_id":"`+wsOf[(k0+1)%shards]+`"`) || !strings.Contains(l, wsOf[k0]) {
		t.Fatalf("MCP list through node %d is not gathered: %s", out+1, l)
	}

	// Every request was metered once, by the node that served it (the
	// usage records of all nodes sum up on every node).
	wantUsage := func(u control.Usage) bool {
		return u.ArtifactsIngested == shards*3+1 && u.Requests["POST /v1/ingest"] == shards*3 &&
			u.Requests["POST /v1/context-pack"] == shards*3 && u.Requests["GET /v1/workspaces"] == 3 &&
			u.Requests["MCP remember"] == 1 && u.Requests["MCP recall"] == 2 && u.Requests["MCP list"] == 1 &&
			u.Requests["GET /v1/receipts/{receipt_id}"] == shards*3
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		ok := true
		for _, a := range nodes {
			ok = ok && wantUsage(a.ctl.Usage(service.DefaultTenant, control.Period(time.Now())))
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage, as node 1 sees it: %+v", nodes[0].ctl.Usage(service.DefaultTenant, control.Period(time.Now())))
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(3 * control.UsageFlushInterval)
	if u := nodes[0].ctl.Usage(service.DefaultTenant, control.Period(time.Now())); !wantUsage(u) {
		t.Fatalf("usage grew after it was complete: %+v", u)
	}

	// A serving node stops (the others' views keep it until its lease
	// would have expired): requests go on succeeding through every live
	// node at once (forwarding skips a node it cannot reach), and within
	// seconds its shards are served by the two others (the third node
	// catches up). TestPartialForwardingDecisions kills one instead.
	victim := served[k0][0]
	nodes[victim].close()
	crashed := time.Now()
	everyShard := func(when string) {
		for k := range shards {
			for i, a := range nodes {
				if i == victim {
					continue
				}
				r := call(t, "POST", a.base+"/v1/ingest", fmt.Sprintf(`{"workspace_id":%q,"actor_id":"agent","artifact_type":"note","raw_payload":{"text":"after the node died"}}`, wsOf[k]))
				if r.status != http.StatusCreated {
					t.Fatalf("%s: ingest into shard %d through node %d: %d %s", when, k, i+1, r.status, r.body)
				}
				if r := call(t, "GET", a.base+"/v1/artifacts/"+artifacts[k], ""); r.status != http.StatusOK {
					t.Fatalf("%s: read shard %d through node %d: %d %s", when, k, i+1, r.status, r.body)
				}
			}
		}
	}
	everyShard(fmt.Sprintf("node %d just stopped", victim+1))
	after := waitServed(t, nodes, shards, 2, 15*time.Second, victim)
	t.Logf("after node %d stopped: served %v within %s", victim+1, after, time.Since(crashed).Round(time.Millisecond))
	everyShard(fmt.Sprintf("node %d's shards taken over", victim+1))
}

// TestPartialForwardingDecisions: a node routes a shard it does not serve
// to the first ready member in rendezvous order; with no ready member it
// says so (503 for the transport).
func TestPartialForwardingDecisions(t *testing.T) {
	nc := natstest.Start(t, 1)
	nodes := openAPINodes(t, nc, 2, 3, 1)
	served := waitServed(t, nodes, 3, 1, 10*time.Second)
	for k, who := range served {
		other := nodes[1-who[0]].node
		_, err := other.ShardEngine(k)
		var ns *service.NotServedError
		if !errors.As(err, &ns) || ns.NodeID != nodes[who[0]].node.NodeID() || ns.Addr != nodes[who[0]].node.cfg.Addr {
			t.Fatalf("shard %d on node %s: %v, want it served by %s", k, other.NodeID(), err, nodes[who[0]].node.NodeID())
		}
	}
	// A request marked as forwarded by a node is not forwarded again.
	secret := nodes[0].node.ForwardSecret()
	for k, who := range served {
		other := 1 - who[0]
		ws := ""
		for i := 0; ws == ""; i++ {
			if w := fmt.Sprintf("w%d", i); ShardOf(service.DefaultTenant, w, 3) == k {
				ws = w
			}
		}
		r := call(t, "GET", nodes[other].base+"/v1/workspaces/"+ws+"/settings", "", "X-Loci-Forwarded", secret)
		if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
			t.Fatalf("a forwarded request for shard %d at node %d that does not serve it: %d %s", k, other+1, r.status, r.body)
		}
		if r := call(t, "GET", nodes[other].base+"/v1/workspaces/"+ws+"/settings", ""); r.status != http.StatusOK {
			t.Fatalf("settings of %s through node %d: %d %s", ws, other+1, r.status, r.body)
		}
	}

	// A node dies without leaving (its lease expires): the survivor takes
	// its shards over and serves them, with what was written through them.
	victim := served[0][0]
	survivor := nodes[1-victim]
	ws := ""
	for i := 0; ws == ""; i++ {
		if w := fmt.Sprintf("w%d", i); ShardOf(service.DefaultTenant, w, 3) == 0 {
			ws = w
		}
	}
	r := call(t, "POST", survivor.base+"/v1/ingest", fmt.Sprintf(`{"workspace_id":%q,"actor_id":"agent","artifact_type":"note","raw_payload":{"text":"written before the crash"}}`, ws))
	if r.status != http.StatusCreated {
		t.Fatalf("ingest through node %d: %d %s", 2-victim, r.status, r.body)
	}
	var res struct {
		ArtifactID string `json:"artifact_id"`
	}
	json.Unmarshal(r.body, &res)
	nodes[victim].crashed()
	crashed := time.Now()
	waitServed(t, nodes, 3, 1, 10*time.Second, victim)
	t.Logf("node %d crashed; node %d serves every shard after %s", victim+1, 2-victim, time.Since(crashed).Round(time.Millisecond))
	if r := call(t, "GET", survivor.base+"/v1/artifacts/"+res.ArtifactID, ""); r.status != http.StatusOK {
		t.Fatalf("read after the crash: %d %s", r.status, r.body)
	}
	r = call(t, "POST", survivor.base+"/v1/ingest", fmt.Sprintf(`{"workspace_id":%q,"actor_id":"agent","artifact_type":"note","raw_payload":{"text":"written while the node was down"}}`, ws))
	if r.status != http.StatusCreated {
		t.Fatalf("ingest after the crash: %d %s", r.status, r.body)
	}
	var later struct {
		ArtifactID string `json:"artifact_id"`
	}
	json.Unmarshal(r.body, &later)

	// The node comes back on its data directory: it takes its shards back
	// (resuming from its disk, catching up with what it missed), and the
	// survivor stops serving them once the node serves them.
	back, err := startAPINode(nc, nodes[victim].node.cfg.Dir, nodes[victim].node.NodeID(), strings.TrimPrefix(nodes[victim].base, "http://"), 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(back.close)
	nodes[victim] = back
	rejoined := time.Now()
	again := waitServed(t, nodes, 3, 1, 15*time.Second)
	t.Logf("node %d back; served %v after %s", victim+1, again, time.Since(rejoined).Round(time.Millisecond))
	if fmt.Sprint(again) != fmt.Sprint(served) {
		t.Fatalf("after the node came back: served %v, before it died %v", again, served)
	}
	for i, a := range nodes {
		for _, id := range []string{res.ArtifactID, later.ArtifactID} {
			if r := call(t, "GET", a.base+"/v1/artifacts/"+id, ""); r.status != http.StatusOK {
				t.Fatalf("read %s through node %d after the node came back: %d %s", id, i+1, r.status, r.body)
			}
		}
	}
}

// crash stops a node as a process kill would: no lease deleted, no flush.
func (n *Node) crash() {
	n.cancel()
	n.wg.Wait()
	for _, s := range n.all() {
		if db := s.engine(); db != nil {
			db.Close()
		}
	}
	n.nc.Close()
}

// TestRendezvous: each shard goes to the R highest-scoring members; a
// member's leaving moves only the shards it held.
func TestRendezvous(t *testing.T) {
	ids := []string{"a", "b", "c", "d", "e"}
	fewer := []string{"a", "b", "d", "e"}
	for k := range 64 {
		got := assigned(k, 2, ids)
		if len(got) != 2 || got[0] == got[1] {
			t.Fatalf("shard %d: %v", k, got)
		}
		if !slices.Contains(got, "c") {
			if again := assigned(k, 2, fewer); !slices.Equal(again, got) {
				t.Fatalf("shard %d moved from %v to %v when c, which did not hold it, left", k, got, again)
			}
		}
		if all := assigned(k, 9, ids); len(all) != len(ids) {
			t.Fatalf("shard %d with more replicas than members: %v", k, all)
		}
	}
}

// keyTransport adds the API key to every request of the MCP client.
// mcpTool calls tool name with args over base's /mcp, each HTTP request
// through rt, and returns the text of its answer; an error fails t.
func mcpTool(t *testing.T, base string, rt http.RoundTripper, name string, args map[string]any) string {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: rt}, DisableStandaloneSSE: true}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), tr, nil)
	if err != nil {
		t.Fatalf("connect to %s/mcp: %v", base, err)
	}
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s through %s: %v", name, base, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		t.Fatalf("%s through %s: tool error %s", name, base, b.String())
	}
	return b.String()
}

type keyTransport struct{ key string }

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-API-Key", k.key)
	return http.DefaultTransport.RoundTrip(r)
}
