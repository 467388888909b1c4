package httpd

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/loci-memory/loci/service"
)

func metaNote(ws, content string, md any) map[string]any {
	in := map[string]any{"workspace_id": ws, "actor_id": "agent-1", "artifact_type": "note",
		"raw_payload": map[string]any{"content": content}, "timestamp": "2026-01-01T09:00:00Z"}
	if md != nil {
		in["metadata"] = md
	}
	return in
}

// packArtifacts returns the artifact ids a v1 pack cites, sorted.
func packArtifacts(t *testing.T, h *harness, key string, req map[string]any) []string {
	t.Helper()
	m := h.do("POST", "/v1/context-pack", key, req).must(t, 200)
	seen := map[string]bool{}
	for _, c := range m["citations"].([]any) {
		seen[str(c.(map[string]any), "artifact_id")] = true
	}
	var ids []string
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func sorted(ids ...string) []string {
	out := append([]string(nil), ids...)
	sort.Strings(out)
	return out
}

func TestMetadataOverHTTP(t *testing.T) {
	h := newHarness(t, Config{})
	pay := str(h.do("POST", "/v1/ingest", "", metaNote("ws", "The payments deploy window is Tuesday.",
		map[string]any{"team": "payments", "env": "prod"})).must(t, 201), "artifact_id")
	search := str(h.do("POST", "/v1/ingest", "", metaNote("ws", "The search deploy window is Thursday.",
		map[string]any{"team": "search", "env": "prod"})).must(t, 201), "artifact_id")
	plain := str(h.do("POST", "/v1/ingest", "", metaNote("ws", "The wiki deploy window is whenever.", nil)).must(t, 201), "artifact_id")
	m := h.do("POST", "/v2/ingest", "", map[string]any{"workspace_id": "ws", "actor_id": "agent-1", "artifacts": []any{
		map[string]any{"artifact_type": "note", "raw_payload": map[string]any{"content": "The billing deploy window is Friday."},
			"metadata": map[string]any{"team": "payments", "env": "staging"}},
	}}).must(t, 201)
	billing := str(m["ingested"].([]any)[0].(map[string]any), "artifact_id")

	// GET returns it; none is {}.
	got := h.do("GET", "/v1/artifacts/"+pay, "", nil).must(t, 200)
	if !reflect.DeepEqual(got["metadata"], map[string]any{"team": "payments", "env": "prod"}) {
		t.Fatalf("GET metadata %v", got["metadata"])
	}
	if got := h.do("GET", "/v1/artifacts/"+plain, "", nil).must(t, 200); !reflect.DeepEqual(got["metadata"], map[string]any{}) {
		t.Fatalf("GET metadata of an artifact without: %v", got["metadata"])
	}
	// The listing shows it.
	list := h.do("GET", "/v1/workspaces/ws/artifacts", "", nil).must(t, 200)
	byID := map[string]any{}
	for _, a := range list["artifacts"].([]any) {
		byID[str(a.(map[string]any), "artifact_id")] = a.(map[string]any)["metadata"]
	}
	if !reflect.DeepEqual(byID[billing], map[string]any{"team": "payments", "env": "staging"}) || !reflect.DeepEqual(byID[plain], map[string]any{}) {
		t.Fatalf("listing metadata %v", byID)
	}

	// Pack filters, v1 and v2.
	q := func(md any) map[string]any {
		r := map[string]any{"workspace_id": "ws", "query": "when is the deploy window", "max_tokens": 2000}
		if md != nil {
			r["metadata"] = md
		}
		return r
	}
	for _, c := range []struct {
		md   any
		want []string
	}{
		{nil, sorted(pay, search, plain, billing)},
		{map[string]any{"team": "payments"}, sorted(pay, billing)},
		{map[string]any{"env": "prod", "team": "payments"}, sorted(pay)},
		{map[string]any{"team": "nobody"}, nil},
	} {
		if got := packArtifacts(t, h, "", q(c.md)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("filter %v: artifacts %v, want %v", c.md, got, c.want)
		}
	}
	v2 := q(map[string]any{"team": "search"})
	v2["profile"] = "balanced"
	for _, s := range h.do("POST", "/v2/context-pack", "", v2).must(t, 200)["snippets"].([]any) {
		if id := str(s.(map[string]any), "artifact_id"); id != search {
			t.Fatalf("v2 filtered pack holds artifact %s", id)
		}
	}
	// Same filter in another key order: the same body, receipt id included.
	a := h.do("POST", "/v1/context-pack", "", []byte(`{"workspace_id":"ws","query":"deploy window","metadata":{"team":"payments","env":"prod"}}`))
	b := h.do("POST", "/v1/context-pack", "", []byte(`{"workspace_id":"ws","query":"deploy window","metadata":{"env":"prod","team":"payments"}}`))
	if a.status != 200 || string(a.body) != string(b.body) {
		t.Fatalf("key order changed the pack:\n%s\n%s", a.body, b.body)
	}
	h.do("POST", "/v1/context-pack", "", q(map[string]any{"team": 1})).fails(t, 400, "metadata.team: expected a string")
	h.do("POST", "/v1/context-pack", "", q([]any{"x"})).fails(t, 400, "metadata")

	// Survives a restart.
	h.restart()
	if got := h.do("GET", "/v1/artifacts/"+billing, "", nil).must(t, 200); !reflect.DeepEqual(got["metadata"], map[string]any{"team": "payments", "env": "staging"}) {
		t.Fatalf("after restart: %v", got["metadata"])
	}

	// Idempotency compares metadata.
	keyed := metaNote("ws", "keyed", map[string]any{"a": "1"})
	keyed["idempotency_key"] = "k1"
	h.do("POST", "/v1/ingest", "", keyed).must(t, 201)
	keyed["metadata"] = map[string]any{"a": "1"}
	if r := h.do("POST", "/v1/ingest", "", keyed); r.status != 200 || r.header.Get("Idempotent-Replay") != "true" {
		t.Fatalf("replay: %d %s", r.status, r.body)
	}
	keyed["metadata"] = map[string]any{"a": "2"}
	h.do("POST", "/v1/ingest", "", keyed).fails(t, 409, "metadata")
}

func TestMetadataBadInputOverHTTP(t *testing.T) {
	h := newHarness(t, Config{})
	many := map[string]any{}
	for i := range 33 {
		many[fmt.Sprintf("k%02d", i)] = "v"
	}
	for _, c := range []struct {
		md   any
		want string
	}{
		{map[string]any{"team": 7}, "metadata.team: expected a string, got JSON number"},
		{map[string]any{"team": map[string]any{"x": "y"}}, "metadata.team: expected a string, got JSON object"},
		{map[string]any{"team": nil}, "metadata.team: expected a string, got JSON null"},
		{"payments", "metadata: expected an object"},
		{many, "metadata: has 33 keys, more than the limit of 32"},
		{map[string]any{"k": strings.Repeat("v", 1025)}, "metadata.k: is 1025 bytes, longer than the limit of 1024"},
		{map[string]any{strings.Repeat("k", 65): "v"}, "metadata: key"},
		{map[string]any{"bad key": "v"}, `metadata: key "bad key": byte 3`},
	} {
		h.do("POST", "/v1/ingest", "", metaNote("ws", "x", c.md)).fails(t, 400, c.want)
		h.do("POST", "/v2/ingest", "", map[string]any{"workspace_id": "ws", "actor_id": "agent-1", "artifacts": []any{
			map[string]any{"artifact_type": "note", "raw_payload": "fine"},
			map[string]any{"artifact_type": "note", "raw_payload": "x", "metadata": c.md},
		}}).fails(t, 400, "artifacts[1]."+c.want)
	}
	// Nothing was stored.
	if m := h.do("GET", "/v1/workspaces/ws/artifacts", "", nil); m.status == 200 {
		if n := len(m.must(t, 200)["artifacts"].([]any)); n != 0 {
			t.Fatalf("%d artifacts stored by refused requests", n)
		}
	}
	// null and {} are none.
	id := str(h.do("POST", "/v1/ingest", "", metaNote("ws", "x", map[string]any{})).must(t, 201), "artifact_id")
	if got := h.do("GET", "/v1/artifacts/"+id, "", nil).must(t, 200); !reflect.DeepEqual(got["metadata"], map[string]any{}) {
		t.Fatalf("metadata {}: %v", got["metadata"])
	}
}

// Asynchronous ingest keeps metadata in its job, shows it while pending and
// stores it with the artifact.
func TestMetadataAsyncOverHTTP(t *testing.T) {
	h := newHarness(t, Config{}, service.Config{AsyncIndexing: true})
	id := str(h.do("POST", "/v1/ingest", "", metaNote("ws", "async note", map[string]any{"team": "jobs"})).must(t, 201), "artifact_id")
	got := h.do("GET", "/v1/artifacts/"+id, "", nil).must(t, 200)
	if !reflect.DeepEqual(got["metadata"], map[string]any{"team": "jobs"}) {
		t.Fatalf("metadata %v (status %v)", got["metadata"], got["status"])
	}
}

func TestMetadataTenantIsolationOverHTTP(t *testing.T) {
	h := newHarness(t, Config{}, service.Config{AdminKey: adminKey})
	_, k1 := register(t, h, "one@example.com", "pro")
	_, k2 := register(t, h, "two@example.com", "pro")
	a1 := str(h.do("POST", "/v1/ingest", k1, metaNote("ws", "The deploy window is Tuesday.", map[string]any{"team": "payments"})).must(t, 201), "artifact_id")
	a2 := str(h.do("POST", "/v1/ingest", k2, metaNote("ws", "The deploy window is Monday.", map[string]any{"team": "payments"})).must(t, 201), "artifact_id")
	req := map[string]any{"workspace_id": "ws", "query": "deploy window", "metadata": map[string]any{"team": "payments"}}
	if got := packArtifacts(t, h, k1, req); !reflect.DeepEqual(got, []string{a1}) {
		t.Fatalf("tenant one's filtered pack: %v", got)
	}
	if got := packArtifacts(t, h, k2, req); !reflect.DeepEqual(got, []string{a2}) {
		t.Fatalf("tenant two's filtered pack: %v", got)
	}
	h.do("GET", "/v1/artifacts/"+a1, k2, nil).fails(t, 404, "not found")
}
