package httpd

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/loci-memory/loci/service"
	"github.com/valyala/fasthttp"
)

func chatTurn(ws, content string) map[string]any {
	return map[string]any{"workspace_id": ws, "actor_id": "agent-1", "artifact_type": "chat_turn",
		"raw_payload": map[string]any{"role": "user", "content": content}}
}

func TestIngestV1(t *testing.T) {
	h := newHarness(t, Config{})
	// The payload's exact bytes (odd spacing, key order) are kept and hashed.
	raw := `{"content":  "The quarterly budget for project Atlas is 42000 dollars.",  "role":"user"}`
	body := `{"workspace_id":"ws-1","actor_id":"agent-1","artifact_type":"chat_turn","raw_payload":` + raw +
		`,"timestamp":"2024-05-01T10:00:00Z","session_id":"s1"}`
	m := h.do("POST", "/v1/ingest", "", body).must(t, 201)
	id := str(m, "artifact_id")
	if want := fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(raw))); str(m, "content_hash") != want {
		t.Fatalf("content_hash %q, want %q", m["content_hash"], want)
	}
	if m["indexed"] != true || len(m["span_ids"].([]any)) == 0 || str(m, "created") == "" {
		t.Fatalf("ingest response %v", m)
	}

	r := h.do("GET", "/v1/artifacts/"+id, "", nil)
	a := r.must(t, 200)
	if !bytes.Contains(r.body, []byte(`"raw_payload":`+raw)) {
		t.Fatalf("raw_payload not byte-identical: %s", r.body)
	}
	if str(a, "workspace_id") != "ws-1" || str(a, "timestamp") != "2024-05-01T10:00:00Z" || str(a, "session_id") != "s1" ||
		str(a, "status") != "indexed" || len(a["spans"].([]any)) == 0 || str(a, "content_hash") != str(m, "content_hash") {
		t.Fatalf("artifact %s", r.body)
	}
	st := h.do("GET", "/v1/artifacts/"+id+"/status", "", nil).must(t, 200)
	if str(st, "status") != "indexed" || st["indexed"] != true || st["span_count"].(float64) < 1 || st["total_tokens"].(float64) < 5 ||
		st["error_message"] != nil || str(st, "artifact_type") != "chat_turn" {
		t.Fatalf("status %v", st)
	}

	// A JSON string payload is hashed as its decoded text.
	m = h.do("POST", "/v1/ingest", "", `{"workspace_id":"ws-1","actor_id":"a","artifact_type":"note","raw_payload":"caf\u00e9 notes"}`).must(t, 201)
	if want := fmt.Sprintf("sha256:%x", sha256.Sum256([]byte("café notes"))); str(m, "content_hash") != want {
		t.Fatalf("string payload hash %q, want %q", m["content_hash"], want)
	}

	// Idempotency: the same key returns the same artifact, 200 and the replay header.
	in := chatTurn("ws-1", "remember the milk")
	in["idempotency_key"] = "k-1"
	first := h.do("POST", "/v1/ingest", "", in).must(t, 201)
	again := h.do("POST", "/v1/ingest", "", in)
	if m := again.must(t, 200); str(m, "artifact_id") != str(first, "artifact_id") || again.header.Get("Idempotent-Replay") != "true" {
		t.Fatalf("replay: %s %v", again.body, again.header)
	}

	for _, c := range []struct {
		name, body, want string
	}{
		{"malformed", `{"workspace_id": "ws-1",`, "malformed JSON"},
		{"not an object", `[1,2]`, "expected"},
		{"empty", ``, "empty"},
		{"no workspace", `{"actor_id":"a","artifact_type":"note","raw_payload":{"content":"x"}}`, "workspace_id"},
		{"no actor", `{"workspace_id":"w","artifact_type":"note","raw_payload":{"content":"x"}}`, "actor_id"},
		{"no type", `{"workspace_id":"w","actor_id":"a","raw_payload":{"content":"x"}}`, "artifact_type"},
		{"bad type", `{"workspace_id":"w","actor_id":"a","artifact_type":"tweet"}`, "chat_turn"},
		{"wrong field type", `{"workspace_id":7,"actor_id":"a","artifact_type":"note"}`, "workspace_id"},
		{"bad timestamp", `{"workspace_id":"w","actor_id":"a","artifact_type":"note","timestamp":"yesterday"}`, "timestamp"},
		{"unknown permission", `{"workspace_id":"w","actor_id":"a","artifact_type":"note","permissions":{"visibilty":"private"}}`, "permissions.visibilty: unknown field"},
		{"bad visibility", `{"workspace_id":"w","actor_id":"a","artifact_type":"note","permissions":{"visibility":"secret"}}`, "permissions.visibility"},
		{"number payload", `{"workspace_id":"w","actor_id":"a","artifact_type":"note","raw_payload":12}`, "raw_payload"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h.do("POST", "/v1/ingest", "", c.body).fails(t, 400, c.want)
		})
	}
	// Nothing of the bad requests was stored: the workspace holds 3 artifacts.
	arts, _, err := h.db.WorkspaceContent(DefaultTenant, "ws-1")
	if err != nil || len(arts) != 3 {
		t.Fatalf("ws-1 holds %d artifacts (%v), want 3", len(arts), err)
	}
	h.do("GET", "/v1/artifacts/00000000-0000-0000-0000-000000000001", "", nil).fails(t, 404, "not found")
	h.do("GET", "/v1/artifacts/not-a-uuid/status", "", nil).fails(t, 404, "not found")
}

// seed ingests a small workspace of notes with a contradiction.
func seed(t *testing.T, h *harness, key, ws string) []string {
	t.Helper()
	notes := []string{
		"The production deploy window is Tuesday at 14:00 UTC, approved by the release board.",
		"Atlas project budget is 42000 dollars for the third quarter.",
		"Atlas project budget is 55000 dollars for the third quarter.",
		"The on-call engineer for the payments service this week is Priya.",
		"Lunch menu: soup, salad and bread rolls.",
	}
	var ids []string
	for i, n := range notes {
		m := h.do("POST", "/v1/ingest", key, map[string]any{"workspace_id": ws, "actor_id": "agent-1", "artifact_type": "note",
			"raw_payload": map[string]any{"content": n}, "timestamp": fmt.Sprintf("2024-05-0%dT10:00:00Z", i+1)}).must(t, 201)
		ids = append(ids, str(m, "artifact_id"))
	}
	return ids
}

func TestContextPackV1AndReceipts(t *testing.T) {
	h := newHarness(t, Config{})
	seed(t, h, "", "ws")
	req := map[string]any{"workspace_id": "ws", "query": "What is the Atlas project budget?", "max_tokens": 300, "actor_id": "agent-1"}
	r1 := h.do("POST", "/v1/context-pack", "", req)
	p := r1.must(t, 200)
	for _, k := range []string{"context_text", "prefix_text", "working_set_text", "citations", "confidence", "abstain_flag",
		"abstain_reason", "receipt_id", "total_tokens", "pack_hash", "conflicts"} {
		if _, ok := p[k]; !ok {
			t.Fatalf("pack lacks %q: %s", k, r1.body)
		}
	}
	ctxText := str(p, "context_text")
	if !strings.Contains(ctxText, "[cite:1] ") || !strings.Contains(ctxText, "=== TOP EVIDENCE (Most Relevant to Query) ===") ||
		!strings.HasSuffix(strings.TrimSpace(ctxText), "=== END CONTEXT ===") || p["total_tokens"].(float64) > 300 {
		t.Fatalf("context text:\n%s", ctxText)
	}
	cit := p["citations"].([]any)[0].(map[string]any)
	for _, k := range []string{"index", "artifact_id", "span_id", "start_offset", "end_offset", "content_hash", "source_type", "relevance_score", "content_preview", "pinned"} {
		if _, ok := cit[k]; !ok {
			t.Fatalf("citation lacks %q: %v", k, cit)
		}
	}
	if len(p["conflicts"].([]any)) == 0 || !strings.Contains(ctxText, "=== CONFLICTS ===") {
		t.Fatalf("the two budgets should conflict: %s", r1.body)
	}
	// Determinism: the same request on the same data, byte for byte.
	if r2 := h.do("POST", "/v1/context-pack", "", req); r2.status != 200 || !bytes.Equal(r1.body, r2.body) {
		t.Fatalf("pack bodies differ:\n%s\n%s", r1.body, r2.body)
	}

	// The receipt: listed newest first, fetched whole, filtered by pack hash.
	rid := str(p, "receipt_id")
	rc := h.do("GET", "/v1/receipts/"+rid, "", nil).must(t, 200)
	for _, k := range []string{"id", "query", "timestamp", "workspace_id", "actor_id", "evidence", "channel_contributions",
		"exclusions", "conflicts", "token_accounting", "confidence", "abstain_flag", "abstain_reason", "assumptions", "policy_summary", "pack_hash"} {
		if _, ok := rc[k]; !ok {
			t.Fatalf("receipt lacks %q: %v", k, rc)
		}
	}
	ta := rc["token_accounting"].(map[string]any)
	if ta["budget"].(float64) != 300 || ta["total_used"] != p["total_tokens"] || ta["remaining"].(float64) != 300-ta["total_used"].(float64) {
		t.Fatalf("token accounting %v", ta)
	}
	h.do("POST", "/v1/context-pack", "", map[string]any{"workspace_id": "ws", "query": "who is on call?"}).must(t, 200)
	list := h.do("GET", "/v1/receipts?workspace_id=ws&limit=1", "", nil).must(t, 200)
	if list["total"].(float64) != 2 || len(list["receipts"].([]any)) != 1 || list["limit"].(float64) != 1 ||
		str(list["receipts"].([]any)[0].(map[string]any), "query") != "who is on call?" {
		t.Fatalf("list %v", list)
	}
	byHash := h.do("GET", "/v1/receipts?workspace_id=ws&pack_hash="+str(p, "pack_hash"), "", nil).must(t, 200)
	if byHash["total"].(float64) != 1 || str(byHash["receipts"].([]any)[0].(map[string]any), "id") != rid {
		t.Fatalf("filtered list %v", byHash)
	}

	for _, c := range []struct {
		name string
		body any
		want string
	}{
		{"empty query", map[string]any{"workspace_id": "ws", "query": ""}, "query"},
		{"no query", map[string]any{"workspace_id": "ws"}, "query"},
		{"budget 0", map[string]any{"workspace_id": "ws", "query": "x", "max_tokens": 0}, "max_tokens"},
		{"budget too big", map[string]any{"workspace_id": "ws", "query": "x", "max_tokens": 128001}, "max_tokens"},
		{"no workspace", map[string]any{"query": "x"}, "workspace_id"},
		{"unknown policy field", map[string]any{"workspace_id": "ws", "query": "x", "policy": map[string]any{"rbac_requird": []string{"a"}}}, "policy.rbac_requird: unknown field"},
		{"bad privacy", map[string]any{"workspace_id": "ws", "query": "x", "policy": map[string]any{"privacy_level": "paranoid"}}, "privacy_level"},
		{"bad mode", map[string]any{"workspace_id": "ws", "query": "x", "mode": "fast"}, "mode"},
		{"bad tuning", map[string]any{"workspace_id": "ws", "query": "x", "diversity_decay": 3}, "diversity_decay"},
		{"bad as_of", map[string]any{"workspace_id": "ws", "query": "x", "as_of": "soon"}, "as_of"},
	} {
		t.Run(c.name, func(t *testing.T) { h.do("POST", "/v1/context-pack", "", c.body).fails(t, 400, c.want) })
	}
	h.do("GET", "/v1/receipts", "", nil).fails(t, 400, "workspace_id")
	h.do("GET", "/v1/receipts?workspace_id=ws&limit=501", "", nil).fails(t, 400, "limit")
	h.do("GET", "/v1/receipts?workspace_id=ws&offset=-1", "", nil).fails(t, 400, "offset")
	h.do("GET", "/v1/receipts/9b2f3c1e-0000-4000-8000-000000000000", "", nil).fails(t, 404, "not found")
}

func TestFeedbackOverHTTP(t *testing.T) {
	h := newHarness(t, Config{})
	ids := seed(t, h, "", "ws")
	pack := func(q string) map[string]any {
		return h.do("POST", "/v1/context-pack", "", map[string]any{"workspace_id": "ws", "query": q, "max_tokens": 400, "actor_id": "agent-1"}).must(t, 200)
	}
	cited := func(p map[string]any, artifact string) bool {
		for _, c := range p["citations"].([]any) {
			if str(c.(map[string]any), "artifact_id") == artifact {
				return true
			}
		}
		return false
	}
	// pin: the lunch menu enters every pack's prefix.
	fb := h.do("POST", "/v1/feedback", "", map[string]any{"workspace_id": "ws", "actor_id": "u", "action": "pin", "artifact_id": ids[4], "reason": "always show"}).must(t, 201)
	if str(fb, "action") != "pin" || fb["applied"].(float64) != 1 || str(fb, "feedback_id") == "" || str(fb, "created_at") == "" {
		t.Fatalf("feedback response %v", fb)
	}
	p := pack("deploy window")
	if !strings.Contains(str(p, "prefix_text"), "Lunch menu") || !cited(p, ids[4]) {
		t.Fatalf("pinned span not in the prefix: %v", p["prefix_text"])
	}
	// mark_wrong on the whole artifact: never cited again.
	h.do("POST", "/v1/feedback", "", map[string]any{"workspace_id": "ws", "actor_id": "u", "action": "mark_wrong", "artifact_id": ids[0]}).must(t, 201)
	if p := pack("deploy window Tuesday"); cited(p, ids[0]) {
		t.Fatal("a span marked wrong was cited")
	}
	// resolve_conflict by id alone: the other claim becomes outdated.
	p = pack("Atlas project budget")
	conflicts := p["conflicts"].([]any)
	if len(conflicts) == 0 {
		t.Fatalf("no conflict found: %v", p)
	}
	c := conflicts[0].(map[string]any)
	keep := str(c["claim_b"].(map[string]any), "span_id")
	drop := str(c["claim_a"].(map[string]any), "artifact_id")
	h.do("POST", "/v1/feedback", "", map[string]any{"workspace_id": "ws", "actor_id": "u", "action": "resolve_conflict",
		"conflict_id": str(c, "id"), "preferred_span_id": keep}).must(t, 201)
	if p := pack("Atlas project budget"); cited(p, drop) || len(p["conflicts"].([]any)) != 0 {
		t.Fatalf("resolved conflict: the other claim is still cited: %v", p["citations"])
	}

	for _, c := range []struct {
		name   string
		body   map[string]any
		status int
		want   string
	}{
		{"unknown action", map[string]any{"workspace_id": "ws", "actor_id": "u", "action": "like", "artifact_id": ids[1]}, 400, "action"},
		{"no artifact", map[string]any{"workspace_id": "ws", "actor_id": "u", "action": "pin"}, 400, "artifact_id"},
		{"bad artifact id", map[string]any{"workspace_id": "ws", "actor_id": "u", "action": "pin", "artifact_id": "x"}, 400, "artifact_id"},
		{"unknown artifact", map[string]any{"workspace_id": "ws", "actor_id": "u", "action": "pin", "artifact_id": "0b6f3c1e-0000-4000-8000-000000000000"}, 404, "not found"},
		{"other workspace", map[string]any{"workspace_id": "other", "actor_id": "u", "action": "pin", "artifact_id": ids[1]}, 404, "not found"},
		{"unknown conflict", map[string]any{"workspace_id": "ws", "actor_id": "u", "action": "resolve_conflict", "conflict_id": "0b6f3c1e-0000-4000-8000-000000000000"}, 404, "conflict"},
		{"no workspace", map[string]any{"actor_id": "u", "action": "pin", "artifact_id": ids[1]}, 400, "workspace_id"},
	} {
		t.Run(c.name, func(t *testing.T) { h.do("POST", "/v1/feedback", "", c.body).fails(t, c.status, c.want) })
	}
}

func TestV2IngestAndPack(t *testing.T) {
	h := newHarness(t, Config{})
	batch := map[string]any{"workspace_id": "ws", "actor_id": "agent", "artifacts": []map[string]any{
		{"artifact_type": "note", "raw_payload": map[string]any{"content": "Kubernetes upgrade scheduled for Friday."}, "idempotency_key": "a"},
		{"artifact_type": "document", "raw_payload": map[string]any{"title": "Runbook", "content": "Restart the ingest workers with systemctl."}, "idempotency_key": "b"},
		{"artifact_type": "email", "raw_payload": map[string]any{"subject": "Friday", "body": "The upgrade moved to Monday."}},
	}}
	r := h.do("POST", "/v2/ingest", "", batch)
	m := r.must(t, 201)
	ing := m["ingested"].([]any)
	if len(ing) != 3 || str(m, "workspace_id") != "ws" {
		t.Fatalf("v2 ingest %s", r.body)
	}
	first := ing[0].(map[string]any)
	if len(first["span_ids"].([]any)) == 0 || str(first, "created") == "" || first["idempotent_replay"] != false {
		t.Fatalf("ingested entry %v", first)
	}
	// Retrying the batch with keys creates no duplicates.
	retry := map[string]any{"workspace_id": "ws", "actor_id": "agent", "artifacts": batch["artifacts"].([]map[string]any)[:2]}
	m2 := h.do("POST", "/v2/ingest", "", retry).must(t, 200)
	for i, e := range m2["ingested"].([]any) {
		if str(e.(map[string]any), "artifact_id") != str(ing[i].(map[string]any), "artifact_id") || e.(map[string]any)["idempotent_replay"] != true {
			t.Fatalf("retry %d: %v", i, e)
		}
	}
	arts, _, _ := h.db.WorkspaceContent(DefaultTenant, "ws")
	if len(arts) != 3 {
		t.Fatalf("%d artifacts after retry, want 3", len(arts))
	}
	// A bad item names its index and stores nothing.
	bad := map[string]any{"workspace_id": "ws", "actor_id": "agent", "artifacts": []map[string]any{
		{"artifact_type": "note", "raw_payload": map[string]any{"content": "fine"}},
		{"artifact_type": "fax", "raw_payload": map[string]any{"content": "bad"}},
	}}
	h.do("POST", "/v2/ingest", "", bad).fails(t, 400, "artifacts[1].artifact_type")
	if arts, _, _ := h.db.WorkspaceContent(DefaultTenant, "ws"); len(arts) != 3 {
		t.Fatalf("a rejected batch stored %d artifacts", len(arts)-3)
	}
	h.do("POST", "/v2/ingest", "", map[string]any{"workspace_id": "ws", "actor_id": "agent"}).fails(t, 400, "artifacts")
	h.do("POST", "/v2/ingest", "", map[string]any{"workspace_id": "ws", "actor_id": "agent", "artifacts": []any{}}).fails(t, 400, "artifacts")
	big := make([]map[string]any, MaxBatch+1)
	for i := range big {
		big[i] = map[string]any{"artifact_type": "note", "raw_payload": "x"}
	}
	h.do("POST", "/v2/ingest", "", map[string]any{"workspace_id": "ws", "actor_id": "agent", "artifacts": big}).fails(t, 400, "1000")

	pr := map[string]any{"workspace_id": "ws", "query": "when is the kubernetes upgrade", "max_tokens": 500, "profile": "low_latency"}
	r1 := h.do("POST", "/v2/context-pack", "", pr)
	p := r1.must(t, 200)
	sn := p["snippets"].([]any)
	if len(sn) == 0 || str(p, "serving_profile") != "low_latency" || p["citation_count"].(float64) < 1 || str(p, "receipt_id") == "" {
		t.Fatalf("v2 pack %s", r1.body)
	}
	for _, k := range []string{"content", "artifact_id", "span_id", "score", "artifact_type", "start_offset", "end_offset", "citation"} {
		if _, ok := sn[0].(map[string]any)[k]; !ok {
			t.Fatalf("snippet lacks %q", k)
		}
	}
	ta := p["token_accounting"].(map[string]any)
	if ta["used"].(float64) > 500 || ta["snippets"].(float64) != float64(len(sn)) {
		t.Fatalf("token accounting %v", ta)
	}
	if r2 := h.do("POST", "/v2/context-pack", "", pr); !bytes.Equal(r1.body, r2.body) {
		t.Fatal("v2 pack bodies differ for identical requests")
	}
	// balanced (the default) escalates to high_recall on sparse evidence.
	p = h.do("POST", "/v2/context-pack", "", map[string]any{"workspace_id": "ws", "query": "zebra migration patterns", "max_tokens": 300}).must(t, 200)
	if sp := str(p, "serving_profile"); sp != "high_recall" && sp != "balanced" {
		t.Fatalf("serving profile %q", sp)
	}
	h.do("POST", "/v2/context-pack", "", map[string]any{"workspace_id": "ws", "query": "x"}).fails(t, 400, "max_tokens")
	h.do("POST", "/v2/context-pack", "", map[string]any{"workspace_id": "ws", "query": "x", "max_tokens": 10, "profile": "turbo"}).fails(t, 400, "profile")
	h.do("GET", "/v2/jobs/nope", "", nil).fails(t, 404, "not found")
}

// waitJob polls a job until it is done or failed.
func waitJob(t *testing.T, h *harness, key, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		j := h.do("GET", "/v2/jobs/"+id, key, nil).must(t, 200)
		if s := str(j, "status"); s == "done" || s == "failed" {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %s", id, j["status"])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestAsyncJobs(t *testing.T) {
	h := newHarness(t, Config{})
	batch := map[string]any{"workspace_id": "ws", "actor_id": "agent", "async_index": true, "artifacts": []map[string]any{
		{"artifact_type": "note", "raw_payload": map[string]any{"content": "async indexing works"}, "idempotency_key": "j1"},
		{"artifact_type": "note", "raw_payload": map[string]any{"content": "second async note"}},
	}}
	m := h.do("POST", "/v2/ingest", "", batch).must(t, 202)
	jobs := m["queued_jobs"].([]any)
	if len(jobs) != 2 || str(jobs[0].(map[string]any), "idempotency_key") != "j1" || str(jobs[0].(map[string]any), "status") == "" {
		t.Fatalf("queued jobs %v", m)
	}
	for _, j := range jobs {
		done := waitJob(t, h, "", str(j.(map[string]any), "job_id"))
		if str(done, "status") != "done" || str(done, "artifact_id") == "" || done["error_message"] != nil || str(done, "workspace_id") != "ws" {
			t.Fatalf("job %v", done)
		}
		st := h.do("GET", "/v1/artifacts/"+str(done, "artifact_id")+"/status", "", nil).must(t, 200)
		if str(st, "status") != "indexed" {
			t.Fatalf("artifact of a done job: %v", st)
		}
	}
	// The same key again while stored: no new artifact.
	m = h.do("POST", "/v2/ingest", "", batch).must(t, 202)
	again := waitJob(t, h, "", str(m["queued_jobs"].([]any)[0].(map[string]any), "job_id"))
	first := waitJob(t, h, "", str(jobs[0].(map[string]any), "job_id"))
	if str(again, "artifact_id") != str(first, "artifact_id") {
		t.Fatalf("keyed async retry made a new artifact: %v vs %v", again, first)
	}
}

// Jobs accepted by a server without workers are indexed after a restart.
func TestAsyncJobsResumeAfterRestart(t *testing.T) {
	h := newHarness(t, Config{}, service.Config{AsyncIndexing: true, IndexWorkers: -1})
	raw := `{"content":"resume me after the restart"}`
	m := h.do("POST", "/v1/ingest", "", `{"workspace_id":"ws","actor_id":"a","artifact_type":"note","raw_payload":`+raw+`}`).must(t, 201)
	id := str(m, "artifact_id")
	if m["indexed"] != false || len(m["span_ids"].([]any)) != 0 {
		t.Fatalf("async v1 ingest %v", m)
	}
	if st := h.do("GET", "/v1/artifacts/"+id+"/status", "", nil).must(t, 200); str(st, "status") != "pending" || st["indexed"] != false {
		t.Fatalf("status before indexing %v", st)
	}
	// The raw artifact is durable and readable before indexing.
	if r := h.do("GET", "/v1/artifacts/"+id, "", nil); r.status != 200 || !bytes.Contains(r.body, []byte(raw)) {
		t.Fatalf("pending artifact: %d %s", r.status, r.body)
	}
	// A key pending in a job replays that job's artifact; with another
	// payload it is a conflict.
	keyed := `{"workspace_id":"ws","actor_id":"a","artifact_type":"note","idempotency_key":"k1","raw_payload":`
	k1 := h.do("POST", "/v1/ingest", "", keyed+`{"content":"first"}}`).must(t, 201)
	h.do("POST", "/v1/ingest", "", keyed+`{"content":"second"}}`).fails(t, 409, str(k1, "artifact_id"))
	k1again := h.do("POST", "/v1/ingest", "", keyed+`{"content":"first"}}`)
	if m := k1again.must(t, 200); str(m, "artifact_id") != str(k1, "artifact_id") || str(m, "content_hash") != str(k1, "content_hash") ||
		k1again.header.Get("Idempotent-Replay") != "true" {
		t.Fatalf("pending key replay %s, first %v", k1again.body, k1)
	}
	bm := h.do("POST", "/v2/ingest", "", map[string]any{"workspace_id": "ws", "actor_id": "a", "async_index": true,
		"artifacts": []map[string]any{{"artifact_type": "note", "raw_payload": "a string payload"}}}).must(t, 202)
	job := str(bm["queued_jobs"].([]any)[0].(map[string]any), "job_id")
	if j := h.do("GET", "/v2/jobs/"+job, "", nil).must(t, 200); str(j, "status") != "pending" || j["artifact_id"] != nil {
		t.Fatalf("job before restart %v", j)
	}
	h.scfg.IndexWorkers = 0 // default workers
	h.restart()
	if j := waitJob(t, h, "", job); str(j, "status") != "done" {
		t.Fatalf("job after restart %v", j)
	}
	waitIndexed(t, h, id)
	p := h.do("POST", "/v1/context-pack", "", map[string]any{"workspace_id": "ws", "query": "resume restart"}).must(t, 200)
	if !strings.Contains(str(p, "context_text"), "resume me after the restart") {
		t.Fatalf("resumed artifact not retrievable: %v", p["context_text"])
	}
	// Once stored, the key replays the stored, indexed artifact.
	waitIndexed(t, h, str(k1, "artifact_id"))
	h.do("POST", "/v1/ingest", "", keyed+`{"content":"third"}}`).fails(t, 409, str(k1, "artifact_id"))
	m = h.do("POST", "/v1/ingest", "", keyed+`{"content":"first"}}`).must(t, 200)
	if str(m, "artifact_id") != str(k1, "artifact_id") || m["indexed"] != true || len(m["span_ids"].([]any)) == 0 {
		t.Fatalf("stored key replay %v", m)
	}
}

func waitIndexed(t *testing.T, h *harness, id string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := h.do("GET", "/v1/artifacts/"+id+"/status", "", nil).must(t, 200)
		if str(st, "status") == "indexed" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("artifact %s still %v", id, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestWorkspaceErase(t *testing.T) {
	h := newHarness(t, Config{})
	ids := seed(t, h, "", "ws")
	h.do("POST", "/v1/context-pack", "", map[string]any{"workspace_id": "ws", "query": "budget"}).must(t, 200)
	h.do("POST", "/v1/feedback", "", map[string]any{"workspace_id": "ws", "actor_id": "u", "action": "pin", "artifact_id": ids[0]}).must(t, 201)
	m := h.do("DELETE", "/v1/workspaces/ws", "", nil).must(t, 200)
	if str(m, "workspace_id") != "ws" || m["artifacts_erased"].(float64) != 5 || m["spans_erased"].(float64) < 5 ||
		m["receipts_erased"].(float64) != 1 || m["feedback_erased"].(float64) != 1 {
		t.Fatalf("erase %v", m)
	}
	h.do("GET", "/v1/artifacts/"+ids[0], "", nil).fails(t, 404, "not found")
	if l := h.do("GET", "/v1/receipts?workspace_id=ws", "", nil).must(t, 200); l["total"].(float64) != 0 {
		t.Fatalf("receipts survive erasure: %v", l)
	}
	p := h.do("POST", "/v1/context-pack", "", map[string]any{"workspace_id": "ws", "query": "budget"}).must(t, 200)
	if len(p["citations"].([]any)) != 0 {
		t.Fatalf("erased data packed: %v", p)
	}
}

func TestBodyLimitAndPanic(t *testing.T) {
	h := newHarness(t, Config{MaxRequestBytes: 2048})
	big := map[string]any{"workspace_id": "w", "actor_id": "a", "artifact_type": "note", "raw_payload": strings.Repeat("x", 4096)}
	h.do("POST", "/v1/ingest", "", big).fails(t, 413, "2048")
	h.do("POST", "/v1/ingest", "", chatTurn("w", "small")).must(t, 201)

	// A panicking handler becomes a 500 and the server keeps serving.
	h.srv.router.add("GET", "/v1/test-panic", func(*fasthttp.RequestCtx, *call) { panic("boom") }, public)
	r := h.do("GET", "/v1/test-panic", "", nil)
	m := r.must(t, 500)
	if str(m, "detail") != "internal error" || str(m, "request_id") != r.header.Get("X-Request-ID") {
		t.Fatalf("panic reply %s", r.body)
	}
	h.do("GET", "/health", "", nil).must(t, 200)
}

func TestOpenAPICoversRoutes(t *testing.T) {
	h := newHarness(t, Config{})
	r := h.do("GET", "/openapi.json", "", nil)
	doc := r.must(t, 200)
	if !strings.HasPrefix(str(doc, "openapi"), "3.1") {
		t.Fatalf("openapi version %v", doc["openapi"])
	}
	paths := doc["paths"].(map[string]any)
	documented := map[string]bool{}
	for p, ops := range paths {
		for m := range ops.(map[string]any) {
			switch m {
			case "get", "post", "put", "delete", "patch":
				documented[strings.ToUpper(m)+" "+p] = true
			}
		}
	}
	served := map[string]bool{}
	for _, rt := range h.srv.Routes() {
		served[rt[0]+" "+rt[1]] = true
		if !documented[rt[0]+" "+rt[1]] {
			t.Errorf("route %s %s is not in docs/openapi.yaml", rt[0], rt[1])
		}
	}
	for d := range documented {
		if !served[d] {
			t.Errorf("docs/openapi.yaml documents %s, which the server does not serve", d)
		}
	}
	var again any
	if err := json.Unmarshal(h.do("GET", "/openapi.json", "", nil).body, &again); err != nil {
		t.Fatal(err)
	}
}
