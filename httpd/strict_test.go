package httpd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/service"
)

// TestUnknownFieldsAreRefused: a field the API does not know, at the top
// level or in a nested object (policy, permissions, v2 items), is a 400
// naming its full path, and nothing is stored; raw_payload stays free-form.
func TestUnknownFieldsAreRefused(t *testing.T) {
	h := newHarness(t, Config{}, service.Config{AdminKey: adminKey})
	_, key := register(t, h, "strict@example.com", "pro")
	note := func(extra map[string]any) map[string]any {
		m := map[string]any{"workspace_id": "ws", "actor_id": "a", "artifact_type": "note", "raw_payload": map[string]any{"content": "x"}}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	item := func(extra map[string]any) map[string]any {
		m := map[string]any{"artifact_type": "note", "raw_payload": "y"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	batch := func(top map[string]any, items ...map[string]any) map[string]any {
		m := map[string]any{"workspace_id": "ws", "actor_id": "a", "artifacts": items}
		for k, v := range top {
			m[k] = v
		}
		return m
	}
	pack := func(extra map[string]any) map[string]any {
		m := map[string]any{"workspace_id": "ws", "query": "x", "max_tokens": 100}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for _, c := range []struct {
		name, method, path, key string
		body                    any
		want                    string
	}{
		{"ingest top level", "POST", "/v1/ingest", key, note(map[string]any{"future_field": map[string]any{"x": 1}}), "future_field: unknown field; allowed fields here: workspace_id, actor_id, artifact_type"},
		{"ingest meta", "POST", "/v1/ingest", key, note(map[string]any{"meta": map[string]any{}}), "meta: unknown field"},
		{"ingest permissions", "POST", "/v1/ingest", key, note(map[string]any{"permissions": map[string]any{"visibilty": "private"}}), "permissions.visibilty: unknown field; allowed fields here: visibility, allowed_actors"},
		{"v2 top level", "POST", "/v2/ingest", key, batch(map[string]any{"asyncindex": true}, item(nil)), "asyncindex: unknown field"},
		{"v2 item", "POST", "/v2/ingest", key, batch(nil, item(nil), item(nil), item(nil), item(map[string]any{"metdata": 1})), "artifacts[3].metdata: unknown field"},
		{"v2 item permissions", "POST", "/v2/ingest", key, batch(nil, item(map[string]any{"permissions": map[string]any{"rbac_tag": []string{"a"}}})), "artifacts[0].permissions.rbac_tag: unknown field"},
		{"v2 item other workspace", "POST", "/v2/ingest", key, batch(nil, item(map[string]any{"workspace_id": "other"})), "artifacts[0].workspace_id: \"other\" differs from the top-level workspace_id"},
		{"v2 item other actor", "POST", "/v2/ingest", key, batch(nil, item(nil), item(map[string]any{"actor_id": "b"})), "artifacts[1].actor_id"},
		{"v2 async item", "POST", "/v2/ingest", key, batch(map[string]any{"async_index": true}, item(map[string]any{"tags": []string{}})), "artifacts[0].tags: unknown field"},
		{"pack v1 max_token", "POST", "/v1/context-pack", key, pack(map[string]any{"max_token": 10}), "max_token: unknown field"},
		{"pack v2 max_token", "POST", "/v2/context-pack", key, pack(map[string]any{"max_token": 10}), "max_token: unknown field"},
		{"pack policy", "POST", "/v1/context-pack", key, pack(map[string]any{"policy": map[string]any{"rbac_requird": []string{"a"}}}), "policy.rbac_requird: unknown field"},
		{"pack v2 policy", "POST", "/v2/context-pack", key, pack(map[string]any{"policy": map[string]any{"privacy": "strict"}}), "policy.privacy: unknown field"},
		{"pack v1 profile", "POST", "/v1/context-pack", key, pack(map[string]any{"profile": "high_recall"}), "profile: unknown field; allowed fields here: query, max_tokens"},
		{"pack v2 lists profile", "POST", "/v2/context-pack", key, pack(map[string]any{"profiles": "x"}), "temporal_half_life_hours, min_relevance, metadata, rerank_depth, late_depth, since, until, profile"},
		{"feedback", "POST", "/v1/feedback", key, map[string]any{"workspace_id": "ws", "action": "pin", "artifactid": "x"}, "artifactid: unknown field"},
		{"register", "POST", "/v1/register", adminKey, map[string]any{"email": "n@example.com", "plna": "pro"}, "plna: unknown field; allowed fields here: email, plan"},
		{"set plan", "PUT", "/v1/billing/plan", adminKey, map[string]any{"tenant_id": "t", "plan": "pro", "force": true}, "force: unknown field"},
		{"create key", "POST", "/v1/keys", key, map[string]any{"name": "ci"}, "name: unknown field; allowed fields here: none"},
		{"wrong type names the path", "POST", "/v2/ingest", key, batch(nil, item(map[string]any{"session_id": 7})), "artifacts[0].session_id: expected a string, got JSON number"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h.do(c.method, c.path, c.key, c.body).fails(t, 400, c.want)
		})
	}
	// Nothing of the refused requests was stored or registered.
	if p := h.do("POST", "/v1/context-pack", key, pack(nil)).must(t, 200); len(p["citations"].([]any)) != 0 {
		t.Fatalf("refused ingests stored data: %v", p)
	}
	if m := h.do("GET", "/v1/keys", key, nil).must(t, 200); len(m["keys"].([]any)) != 1 {
		t.Fatalf("a refused POST /v1/keys created a key: %v", m)
	}
	h.do("POST", "/v1/register", adminKey, map[string]any{"email": "n@example.com"}).must(t, 201)

	// What the contract allows: raw_payload is free-form at any depth, a v2
	// item may repeat the top-level workspace and actor, an empty body
	// creates a key, v2 takes profile.
	free := note(map[string]any{"raw_payload": map[string]any{"content": "free form", "anything": map[string]any{"nested": []any{1, map[string]any{"k": true}}}}})
	h.do("POST", "/v1/ingest", key, free).must(t, 201)
	h.do("POST", "/v2/ingest", key, batch(nil, item(map[string]any{"workspace_id": "ws", "actor_id": "a", "raw_payload": map[string]any{"x": map[string]any{"y": 1}}}))).must(t, 201)
	h.do("POST", "/v1/keys", key, nil).must(t, 201)
	h.do("POST", "/v2/context-pack", key, pack(map[string]any{"profile": "high_recall", "policy": map[string]any{"privacy_level": "strict"}})).must(t, 200)
}

// TestIdempotencyKeyConflict: a key reused with another artifact is a 409
// naming the stored artifact, and nothing is stored; a true retry is a
// replay. "Another artifact" means another artifact_type, raw_payload
// (content hash), actor, session, thread or permissions; the timestamp is
// not compared.
func TestIdempotencyKeyConflict(t *testing.T) {
	h := newHarness(t, Config{})
	base := func() map[string]any {
		return map[string]any{"workspace_id": "ws", "actor_id": "a", "artifact_type": "note", "idempotency_key": "k1",
			"raw_payload": map[string]any{"content": "the original"}, "timestamp": "2024-05-01T10:00:00Z"}
	}
	first := h.do("POST", "/v1/ingest", "", base()).must(t, 201)
	id := str(first, "artifact_id")
	for _, c := range []struct {
		name   string
		change map[string]any
		status int
		differ string
	}{
		{"same request", nil, 200, ""},
		{"other timestamp", map[string]any{"timestamp": "2025-01-01T00:00:00Z"}, 200, ""},
		{"no timestamp", map[string]any{"timestamp": nil}, 200, ""},
		{"explicit public", map[string]any{"permissions": map[string]any{"visibility": "public"}}, 200, ""},
		{"other payload", map[string]any{"raw_payload": map[string]any{"content": "something else"}}, 409, "raw_payload"},
		{"other type", map[string]any{"artifact_type": "document"}, 409, "artifact_type"},
		{"other actor", map[string]any{"actor_id": "b"}, 409, "actor_id"},
		{"other session", map[string]any{"session_id": "s"}, 409, "session_id"},
		{"other permissions", map[string]any{"permissions": map[string]any{"visibility": "private"}}, 409, "permissions"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := base()
			for k, v := range c.change {
				if v == nil {
					delete(body, k)
				} else {
					body[k] = v
				}
			}
			r := h.do("POST", "/v1/ingest", "", body)
			if c.status == 200 {
				if m := r.must(t, 200); str(m, "artifact_id") != id || r.header.Get("Idempotent-Replay") != "true" {
					t.Fatalf("replay %s %v", r.body, r.header)
				}
				return
			}
			r.fails(t, 409, "idempotency_key: \"k1\" is already the key of artifact "+id)
			r.fails(t, 409, "differs from this request in "+c.differ)
		})
	}
	// The payload is compared by its exact bytes: the same JSON value
	// written differently is another payload.
	respaced := `{"workspace_id":"ws","actor_id":"a","artifact_type":"note","idempotency_key":"k1","raw_payload":{"content" : "the original"}}`
	h.do("POST", "/v1/ingest", "", respaced).fails(t, 409, "differs from this request in raw_payload")

	// v2: an item whose key holds another artifact fails the whole batch.
	v2 := func(items ...map[string]any) map[string]any {
		return map[string]any{"workspace_id": "ws", "actor_id": "a", "artifacts": items}
	}
	fresh := map[string]any{"artifact_type": "note", "raw_payload": "a new note", "idempotency_key": "k-new"}
	clash := map[string]any{"artifact_type": "note", "raw_payload": "not the original", "idempotency_key": "k1"}
	h.do("POST", "/v2/ingest", "", v2(fresh, clash)).fails(t, 409, "artifacts[1].idempotency_key: \"k1\" is already the key of artifact "+id)
	// Two items of one batch with one key and different artifacts: 400.
	twin := map[string]any{"artifact_type": "note", "raw_payload": "another new note", "idempotency_key": "k-new"}
	h.do("POST", "/v2/ingest", "", v2(fresh, twin)).fails(t, 400, "artifacts[1].idempotency_key: \"k-new\" is also the key of artifacts[0]")
	arts, _, err := h.db.WorkspaceContent(DefaultTenant, "ws")
	if err != nil || len(arts) != 1 {
		t.Fatalf("ws holds %d artifacts (%v) after refused batches, want 1", len(arts), err)
	}
	// The same item twice in a batch, and the original again: fine.
	m := h.do("POST", "/v2/ingest", "", v2(fresh, fresh, map[string]any{"artifact_type": "note", "raw_payload": map[string]any{"content": "the original"}, "idempotency_key": "k1"})).must(t, 201)
	got := m["ingested"].([]any)
	if str(got[0].(map[string]any), "artifact_id") != str(got[1].(map[string]any), "artifact_id") || str(got[2].(map[string]any), "artifact_id") != id {
		t.Fatalf("batch replay %v", got)
	}
}

// TestIdempotencyKeyConflictAsync: the same rule for asynchronous ingest,
// against a pending job's artifact and a stored one; nothing is queued.
func TestIdempotencyKeyConflictAsync(t *testing.T) {
	// Without workers, accepted jobs stay pending.
	h := newHarness(t, Config{}, service.Config{AsyncIndexing: true, IndexWorkers: -1})
	in := chatTurn("ws", "pending original")
	in["idempotency_key"] = "p1"
	first := h.do("POST", "/v1/ingest", "", in).must(t, 201)
	id := str(first, "artifact_id")
	h.do("POST", "/v1/ingest", "", in).must(t, 200)
	other := chatTurn("ws", "pending other")
	other["idempotency_key"] = "p1"
	h.do("POST", "/v1/ingest", "", other).fails(t, 409, "idempotency_key: \"p1\" is already the key of artifact "+id)
	batch := map[string]any{"workspace_id": "ws", "actor_id": "agent-1", "async_index": true, "artifacts": []any{
		map[string]any{"artifact_type": "note", "raw_payload": "new"},
		map[string]any{"artifact_type": "chat_turn", "raw_payload": map[string]any{"role": "user", "content": "pending other"}, "idempotency_key": "p1"},
	}}
	h.do("POST", "/v2/ingest", "", batch).fails(t, 409, "artifacts[1].idempotency_key: \"p1\" is already the key of artifact "+id)
	if n := len(h.ctl.Unfinished()); n != 1 {
		t.Fatalf("%d jobs queued after refused requests, want 1", n)
	}

	// Stored artifacts: the same through a server that indexes at once.
	h2 := newHarness(t, Config{}, service.Config{AsyncIndexing: true})
	stored, err := h2.db.Ingest(DefaultTenant, engine.IngestInput{Workspace: "ws", ActorID: "agent-1", Type: "note",
		Payload: []byte(`"stored original"`), IdempotencyKey: "s1", Timestamp: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	note := map[string]any{"workspace_id": "ws", "actor_id": "agent-1", "artifact_type": "note", "raw_payload": "stored original", "idempotency_key": "s1"}
	h2.do("POST", "/v1/ingest", "", note).must(t, 200)
	note["raw_payload"] = "stored other"
	h2.do("POST", "/v1/ingest", "", note).fails(t, 409, stored.ArtifactID.String())
	batch = map[string]any{"workspace_id": "ws", "actor_id": "agent-1", "async_index": true, "artifacts": []any{
		map[string]any{"artifact_type": "note", "raw_payload": "stored other", "idempotency_key": "s1"}}}
	h2.do("POST", "/v2/ingest", "", batch).fails(t, 409, "artifacts[0].idempotency_key: \"s1\" is already the key of artifact "+stored.ArtifactID.String())
	batch["artifacts"] = []any{map[string]any{"artifact_type": "note", "raw_payload": "stored original", "idempotency_key": "s1"}}
	h2.do("POST", "/v2/ingest", "", batch).must(t, 202)
}

// rawPost sends a request with a Content-Length body the way Python's
// requests and Node's fetch do: the whole body first, then it reads the
// answer. A server that closes with the body unread makes the write fail,
// or resets the connection before the answer is read.
func rawPost(addr, path string, body []byte) (int, []byte, error) {
	status, b, _, err := rawPostClose(addr, path, body)
	return status, b, err
}

// rawPostClose is rawPost that also says whether the answer closes the
// connection (Connection: close).
func rawPostClose(addr, path string, body []byte) (int, []byte, bool, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, nil, false, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, len(body))
	if _, err := c.Write(append([]byte(head), body...)); err != nil {
		return 0, nil, false, fmt.Errorf("writing the body: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, nil, false, fmt.Errorf("reading the answer: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Close, err
}

// TestOversizedBodyIs413: a body over MaxRequestBytes is a readable 413
// {"detail": ...} for every kind of client (Go's, a send-everything-first
// client like Python's requests, a chunked upload), not a reset; the server
// keeps serving.
func TestOversizedBodyIs413(t *testing.T) {
	const limit = 64 << 10
	h := newHarness(t, Config{MaxRequestBytes: limit})
	addr := strings.TrimPrefix(h.base, "http://")
	big := func(n int) []byte {
		b, _ := json.Marshal(map[string]any{"workspace_id": "w", "actor_id": "a", "artifact_type": "note", "raw_payload": strings.Repeat("x", n)})
		return b
	}
	for _, n := range []int{limit, 1 << 20, 8 << 20} {
		t.Run(fmt.Sprintf("go client %d", n), func(t *testing.T) {
			r := h.do("POST", "/v1/ingest", "", big(n))
			r.fails(t, 413, fmt.Sprintf("request body exceeds the limit of %d bytes (MAX_REQUEST_SIZE_BYTES)", limit))
		})
		t.Run(fmt.Sprintf("body first %d", n), func(t *testing.T) {
			status, body, closed, err := rawPostClose(addr, "/v1/ingest", big(n))
			if err != nil {
				t.Fatal(err)
			}
			if status != 413 || !bytes.Contains(body, []byte(`"detail":"request body exceeds the limit`)) {
				t.Fatalf("status %d: %s", status, body)
			}
			if !closed {
				t.Error("413 without Connection: close")
			}
		})
	}
	t.Run("chunked", func(t *testing.T) {
		req, _ := http.NewRequest("POST", h.base+"/v1/ingest", io.MultiReader(bytes.NewReader(big(1<<20))))
		req.ContentLength = -1 // unknown: sent chunked
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 413 || !bytes.Contains(b, []byte("exceeds the limit")) {
			t.Fatalf("chunked: %d %s", resp.StatusCode, b)
		}
	})
	h.do("POST", "/v1/ingest", "", chatTurn("w", "small")).must(t, 201)
	if status, _, err := rawPost(addr, "/v1/ingest", big(100)); err != nil || status != 201 {
		t.Fatalf("a body under the limit: %d %v", status, err)
	}
}

// TestWorkspaceIDsEverywhere: an id that ingest accepts can be packed,
// given feedback, have its receipts listed and be erased (percent-encoded
// in the path); an id outside the rule is a 400 on every route, unless the
// tenant holds data under it from before the rule.
func TestWorkspaceIDsEverywhere(t *testing.T) {
	h := newHarness(t, Config{})
	for _, ws := range []string{"w", "team.prod", "org:team@example.com", "A-Z_09", "...", ".x", strings.Repeat("x", 128)} {
		t.Run(ws, func(t *testing.T) {
			id := str(h.do("POST", "/v1/ingest", "", chatTurn(ws, "the deploy window is Tuesday")).must(t, 201), "artifact_id")
			p := h.do("POST", "/v1/context-pack", "", map[string]any{"workspace_id": ws, "query": "deploy window"}).must(t, 200)
			if len(p["citations"].([]any)) != 1 {
				t.Fatalf("pack of %q: %v", ws, p)
			}
			h.do("POST", "/v2/context-pack", "", map[string]any{"workspace_id": ws, "query": "deploy window", "max_tokens": 200}).must(t, 200)
			h.do("POST", "/v1/feedback", "", map[string]any{"workspace_id": ws, "action": "pin", "artifact_id": id}).must(t, 201)
			if l := h.do("GET", "/v1/receipts?workspace_id="+url.QueryEscape(ws), "", nil).must(t, 200); l["total"] != float64(2) {
				t.Fatalf("receipts of %q: %v", ws, l)
			}
			e := h.do("DELETE", "/v1/workspaces/"+url.PathEscape(ws), "", nil).must(t, 200)
			if e["workspace_id"] != ws || e["artifacts_erased"] != float64(1) {
				t.Fatalf("erase of %q: %v", ws, e)
			}
			h.do("GET", "/v1/artifacts/"+id, "", nil).must(t, 404)
		})
	}

	// A workspace written before the rule (the engine stores any id).
	if _, err := h.db.Ingest(DefaultTenant, engine.IngestInput{Workspace: "team/legacy", ActorID: "a", Type: "note",
		Payload: []byte(`{"content":"legacy deploy window"}`), Timestamp: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, ws := range []string{".", "..", "team/prod", "a b", "a%2Fb", "caf\u00e9", "a?b", strings.Repeat("x", 129)} {
		t.Run("bad "+ws, func(t *testing.T) {
			for _, r := range []reply{
				h.do("POST", "/v1/ingest", "", chatTurn(ws, "x")),
				h.do("POST", "/v1/context-pack", "", map[string]any{"workspace_id": ws, "query": "x"}),
				h.do("POST", "/v2/context-pack", "", map[string]any{"workspace_id": ws, "query": "x", "max_tokens": 10}),
				h.do("POST", "/v1/feedback", "", map[string]any{"workspace_id": ws, "action": "pin", "artifact_id": "0b6f3c1e-0000-4000-8000-000000000000"}),
				h.do("GET", "/v1/receipts?workspace_id="+url.QueryEscape(ws), "", nil),
				h.rawDo("DELETE", "/v1/workspaces/"+url.PathEscape(ws)),
			} {
				r.fails(t, 400, "workspace_id")
			}
		})
	}
	p := h.do("POST", "/v1/context-pack", "", map[string]any{"workspace_id": "team/legacy", "query": "legacy deploy"}).must(t, 200)
	if len(p["citations"].([]any)) != 1 {
		t.Fatalf("legacy workspace pack: %v", p)
	}
	h.do("GET", "/v1/receipts?workspace_id=team%2Flegacy", "", nil).must(t, 200)
	h.do("POST", "/v1/ingest", "", chatTurn("team/legacy", "x")).fails(t, 400, "workspace_id")
	if e := h.rawDo("DELETE", "/v1/workspaces/team%2Flegacy").must(t, 200); e["artifacts_erased"] != float64(1) {
		t.Fatalf("legacy erase: %v", e)
	}
}

// TestFeedbackActorIsOptional: the contract does not require actor_id on
// feedback. Without one, private hides the span from every actor.
func TestFeedbackActorIsOptional(t *testing.T) {
	h := newHarness(t, Config{})
	ids := seed(t, h, "", "ws")
	cites := func(actor string) bool {
		body := map[string]any{"workspace_id": "ws", "query": "on-call engineer payments", "max_tokens": 400}
		if actor != "" {
			body["actor_id"] = actor
		}
		for _, c := range h.do("POST", "/v1/context-pack", "", body).must(t, 200)["citations"].([]any) {
			if str(c.(map[string]any), "artifact_id") == ids[3] {
				return true
			}
		}
		return false
	}
	if !cites("agent-1") {
		t.Fatal("the on-call note is not cited before feedback")
	}
	fb := h.do("POST", "/v1/feedback", "", map[string]any{"workspace_id": "ws", "action": "private", "artifact_id": ids[3]}).must(t, 201)
	if fb["applied"] != float64(1) {
		t.Fatalf("feedback %v", fb)
	}
	for _, actor := range []string{"", "agent-1", "u"} {
		if cites(actor) {
			t.Fatalf("a span made private anonymously is cited for actor %q", actor)
		}
	}
	for _, c := range []struct{ body map[string]any }{
		{map[string]any{"action": "pin", "artifact_id": ids[1]}},
		{map[string]any{"workspace_id": "ws", "artifact_id": ids[1]}},
	} {
		want := "workspace_id"
		if c.body["workspace_id"] != nil {
			want = "action"
		}
		h.do("POST", "/v1/feedback", "", c.body).fails(t, 400, want)
	}
}

// BenchmarkDecodePackRequest measures the cost of refusing unknown fields
// in the one decoding pass (strict) against the lenient decoder it
// replaced, on a typical context pack request.
func BenchmarkDecodePackRequest(b *testing.B) {
	body := []byte(`{"workspace_id":"ws-1","actor_id":"agent-1","query":"when is the deploy window for the payments service?",` +
		`"max_tokens":2048,"session_id":"s-1","mode":"relevance","policy":{"allowed_sources":["note","document"],"rbac_required":["eng"]},` +
		`"min_confidence":0.1,"max_spans_per_artifact":3}`)
	b.Run("strict", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r service.PackV2Request
			if err := decodeBody(body, &r); err != nil {
				b.Fatal(err)
			}
			var p service.PolicyJSON
			if err := service.DecodeOptionalJSON(r.Policy, "policy", &p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lenient", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			// decodeBody as it was: UTF-8 check, lenient decode, trailing data check.
			var r service.PackV2Request
			if !utf8.Valid(body) {
				b.Fatal("invalid UTF-8")
			}
			dec := json.NewDecoder(bytes.NewReader(body))
			if err := dec.Decode(&r); err != nil {
				b.Fatal(err)
			}
			if _, err := dec.Token(); err != io.EOF {
				b.Fatal(err)
			}
			var p service.PolicyJSON
			dec = json.NewDecoder(bytes.NewReader(r.Policy))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestDuplicateKeysAndZonelessTimes: a body with a key twice in one object
// (at the top, in a batch item, inside raw_payload) is refused 400 naming
// the key's path and stores nothing; a timestamp without a zone is read as
// UTC, answered with its Z (docs/api.md § Request bodies).
func TestDuplicateKeysAndZonelessTimes(t *testing.T) {
	h := newHarness(t, Config{})
	for _, c := range []struct{ path, body, detail string }{
		{"/v1/ingest", `{"workspace_id":"w","workspace_id":"x","actor_id":"a","artifact_type":"note","raw_payload":"hi"}`, "workspace_id: duplicate key"},
		{"/v1/ingest", `{"workspace_id":"w","actor_id":"a","artifact_type":"chat_turn","raw_payload":{"role":"user","content":"a","content":"b"}}`, "raw_payload.content: duplicate key"},
		{"/v2/ingest", `{"workspace_id":"w","actor_id":"a","artifacts":[{"artifact_type":"note","raw_payload":"x"},{"artifact_type":"note","artifact_type":"note","raw_payload":"y"}]}`, "artifacts[1].artifact_type: duplicate key"},
		{"/v1/context-pack", `{"workspace_id":"w","query":"q","query":"r","max_tokens":100}`, "query: duplicate key"},
	} {
		h.do("POST", c.path, "", c.body).fails(t, 400, c.detail)
	}
	if ws := h.do("GET", "/v1/workspaces", "", nil).must(t, 200)["workspaces"].([]any); len(ws) != 0 {
		t.Fatalf("refused bodies stored something: %v", ws)
	}
	for _, c := range []struct{ sent, stored string }{
		{"2024-05-01T12:00:00", "2024-05-01T12:00:00Z"},
		{"2024-05-01", "2024-05-01T00:00:00Z"},
		{"2024-05-01T12:00:00+02:00", "2024-05-01T10:00:00Z"},
	} {
		m := h.do("POST", "/v1/ingest", "", map[string]any{"workspace_id": "w", "actor_id": "a", "artifact_type": "note",
			"raw_payload": "at " + c.sent, "timestamp": c.sent}).must(t, 201)
		if a := h.do("GET", "/v1/artifacts/"+str(m, "artifact_id"), "", nil).must(t, 200); str(a, "timestamp") != c.stored {
			t.Errorf("timestamp %s stored as %s, want %s", c.sent, a["timestamp"], c.stored)
		}
	}
}
