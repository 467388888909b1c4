package httpd

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loci-memory/loci/service"
)

const adminKey = "admin-secret-key-for-tests"

// register creates a tenant with the admin key and returns its id and key.
func register(t *testing.T, h *harness, email, plan string) (string, string) {
	t.Helper()
	m := h.do("POST", "/v1/register", adminKey, map[string]any{"email": email, "plan": plan}).must(t, 201)
	key := str(m, "api_key")
	if !strings.HasPrefix(key, "lk_") || len(key) != 46 || str(m, "plan") != plan || str(m, "message") == "" {
		t.Fatalf("register %v", m)
	}
	return str(m, "tenant_id"), key
}

func TestAuthenticationOff(t *testing.T) {
	h := newHarness(t, Config{})
	// No key needed; a key sent anyway is ignored.
	h.do("POST", "/v1/ingest", "", chatTurn("w", "hello")).must(t, 201)
	h.do("POST", "/v1/ingest", "whatever", chatTurn("w", "hello again")).must(t, 201)
	r := h.do("GET", "/v1/billing/plan", "", nil)
	if m := r.must(t, 200); str(m, "plan") != "enterprise" || str(m, "tenant_id") != DefaultTenant || r.header.Get("X-RateLimit-Limit") != "" {
		t.Fatalf("open mode plan %v %v", m, r.header)
	}
	// Keys belong to registered tenants.
	h.do("GET", "/v1/keys", "", nil).fails(t, 403, "tenant key")
}

func TestAuthenticationOn(t *testing.T) {
	h := newHarness(t, Config{}, service.Config{AdminKey: adminKey})
	h.do("POST", "/v1/ingest", "", chatTurn("w", "x")).fails(t, 401, "X-API-Key")
	h.do("POST", "/v1/ingest", "lk_wrong", chatTurn("w", "x")).fails(t, 401, "invalid API key")
	h.do("GET", "/health", "", nil).must(t, 200) // health needs no key
	h.do("POST", "/v1/register", "", map[string]any{"email": "a@example.com"}).fails(t, 401, "X-API-Key")

	tid, key := register(t, h, "a@example.com", "free")
	h.do("POST", "/v1/register", adminKey, map[string]any{"email": "A@example.com", "plan": "free"}).fails(t, 409, "already registered")
	h.do("POST", "/v1/register", adminKey, map[string]any{"email": "not-an-email", "plan": "free"}).fails(t, 400, "email")
	h.do("POST", "/v1/register", adminKey, map[string]any{"email": "b@example.com", "plan": "platinum"}).fails(t, 400, "plan")
	// A tenant key cannot register tenants.
	h.do("POST", "/v1/register", key, map[string]any{"email": "c@example.com"}).fails(t, 403, "admin key")

	r := h.do("POST", "/v1/ingest", key, chatTurn("ws-1", "tenant data"))
	r.must(t, 201)
	if r.header.Get("X-RateLimit-Limit") != "30" || r.header.Get("X-RateLimit-Remaining") == "" {
		t.Fatalf("rate limit headers %v", r.header)
	}
	// Free plan: one workspace, no v2.
	h.do("POST", "/v1/ingest", key, chatTurn("ws-2", "second workspace")).fails(t, 403, "workspace")
	h.do("POST", "/v2/context-pack", key, map[string]any{"workspace_id": "ws-1", "query": "x", "max_tokens": 10}).fails(t, 403, "plan free does not include the v2 API")
	h.do("GET", "/v2/jobs/x", key, nil).fails(t, 403, "plan free")

	// Plans: only the admin key changes them; then v2 and more workspaces work.
	h.do("PUT", "/v1/billing/plan", key, map[string]any{"plan": "pro"}).fails(t, 403, "admin key")
	h.do("PUT", "/v1/billing/plan", adminKey, map[string]any{"tenant_id": tid, "plan": "gold"}).fails(t, 400, "plan")
	h.do("PUT", "/v1/billing/plan", adminKey, map[string]any{"tenant_id": "0b6f3c1e-0000-4000-8000-000000000000", "plan": "pro"}).fails(t, 404, "not found")
	m := h.do("PUT", "/v1/billing/plan", adminKey, map[string]any{"tenant_id": tid, "plan": "pro"}).must(t, 200)
	if str(m, "plan") != "pro" || m["rpm"].(float64) != 120 || m["v2"] != true || m["workspaces"].(float64) != 5 || m["workspaces_used"].(float64) != 1 {
		t.Fatalf("plan after change %v", m)
	}
	h.do("POST", "/v1/ingest", key, chatTurn("ws-2", "second workspace")).must(t, 201)
	h.do("POST", "/v2/context-pack", key, map[string]any{"workspace_id": "ws-1", "query": "tenant data", "max_tokens": 100}).must(t, 200)
	plans := h.do("GET", "/v1/billing/plans", key, nil).must(t, 200)["plans"].([]any)
	if len(plans) != 4 || str(plans[0].(map[string]any), "name") != "free" || plans[3].(map[string]any)["workspaces"] != nil {
		t.Fatalf("plans %v", plans)
	}
	if p := h.do("GET", "/v1/billing/plan", key, nil).must(t, 200); str(p, "tenant_id") != tid || str(p, "plan") != "pro" {
		t.Fatalf("own plan %v", p)
	}
	h.do("GET", "/v1/billing/plan?tenant_id="+DefaultTenant, key, nil).fails(t, 403, "admin key")
	if p := h.do("GET", "/v1/billing/plan?tenant_id="+tid, adminKey, nil).must(t, 200); str(p, "plan") != "pro" {
		t.Fatalf("admin view of plan %v", p)
	}

	// Keys: create, list, revoke; the last key stays; revoked keys fail at once.
	k2 := h.do("POST", "/v1/keys", key, nil).must(t, 201)
	secret2 := str(k2, "api_key")
	if !strings.HasPrefix(secret2, "lk_") || str(k2, "prefix") != secret2[:8] {
		t.Fatalf("new key %v", k2)
	}
	keys := h.do("GET", "/v1/keys", secret2, nil).must(t, 200)["keys"].([]any)
	if len(keys) != 2 {
		t.Fatalf("keys %v", keys)
	}
	for _, k := range keys {
		km := k.(map[string]any)
		if _, ok := km["api_key"]; ok {
			t.Fatal("a listed key shows its secret")
		}
		if km["last_used_at"] == nil {
			t.Fatalf("used key without last_used_at: %v", km)
		}
	}
	first := str(keys[0].(map[string]any), "id")
	h.do("DELETE", "/v1/keys/"+first, secret2, nil).must(t, 200)
	h.do("POST", "/v1/ingest", key, chatTurn("ws-1", "x")).fails(t, 401, "invalid API key")
	h.do("DELETE", "/v1/keys/"+str(k2, "id"), secret2, nil).fails(t, 409, "last")
	h.do("DELETE", "/v1/keys/0b6f3c1e-0000-4000-8000-000000000000", secret2, nil).fails(t, 404, "not found")

	// Another tenant cannot touch these keys, nor learn they exist.
	_, other := register(t, h, "other@example.com", "pro")
	h.do("DELETE", "/v1/keys/"+str(k2, "id"), other, nil).fails(t, 404, "not found")

	// Usage is exact, per endpoint, and survives a restart.
	u := h.do("GET", "/v1/billing/usage", secret2, nil).must(t, 200)
	reqs := u["requests"].(map[string]any)
	// Every request counts, refused ones too (the one refused for the workspace quota).
	if reqs["POST /v1/ingest"].(float64) != 3 || u["artifacts_ingested"].(float64) != 2 || u["context_packs"].(float64) != 1 ||
		u["tokens_packed"].(float64) < 1 || u["raw_bytes_stored"].(float64) < 20 || str(u, "period") != time.Now().UTC().Format("2006-01") {
		t.Fatalf("usage %v", u)
	}
	h.restart()
	u2 := h.do("GET", "/v1/billing/usage", secret2, nil).must(t, 200)
	if u2["requests"].(map[string]any)["POST /v1/ingest"] != reqs["POST /v1/ingest"] || u2["artifacts_ingested"] != u["artifacts_ingested"] ||
		u2["requests"].(map[string]any)["GET /v1/billing/usage"] != 1.0 { // the request is counted once it is answered

		t.Fatalf("usage after restart %v, before %v", u2, u)
	}
	h.do("GET", "/v1/billing/usage?period=2024-13", secret2, nil).fails(t, 400, "period")
	if old := h.do("GET", "/v1/billing/usage?period=2020-01", secret2, nil).must(t, 200); old["artifacts_ingested"].(float64) != 0 {
		t.Fatalf("usage of an empty period %v", old)
	}
	// Keys and plans survive the restart too.
	h.do("POST", "/v2/context-pack", secret2, map[string]any{"workspace_id": "ws-1", "query": "tenant data", "max_tokens": 100}).must(t, 200)
	h.do("POST", "/v1/ingest", key, chatTurn("ws-1", "x")).fails(t, 401, "invalid API key")
}

func TestOpenRegistration(t *testing.T) {
	h := newHarness(t, Config{}, service.Config{AdminKey: adminKey, OpenRegistration: true})
	m := h.do("POST", "/v1/register", "", map[string]any{"email": "self@example.com"}).must(t, 201)
	if str(m, "plan") != "free" {
		t.Fatalf("open registration plan %v", m)
	}
	h.do("POST", "/v1/register", "", map[string]any{"email": "rich@example.com", "plan": "enterprise"}).fails(t, 403, "free")
	h.do("POST", "/v1/ingest", str(m, "api_key"), chatTurn("w", "hi")).must(t, 201)
}

func TestTenantIsolation(t *testing.T) {
	h := newHarness(t, Config{}, service.Config{AdminKey: adminKey})
	tidA, a := register(t, h, "a@example.com", "pro")
	_, b := register(t, h, "b@example.com", "pro")
	// Both use workspace "shared".
	idsA := seed(t, h, a, "shared")
	h.do("POST", "/v1/ingest", b, chatTurn("shared", "tenant B only talks about gardening and tomatoes")).must(t, 201)
	pa := h.do("POST", "/v1/context-pack", a, map[string]any{"workspace_id": "shared", "query": "Atlas budget"}).must(t, 200)
	jobs := h.do("POST", "/v2/ingest", a, map[string]any{"workspace_id": "shared", "actor_id": "x", "async_index": true,
		"artifacts": []map[string]any{{"artifact_type": "note", "raw_payload": "job of A"}}}).must(t, 202)
	jobA := str(jobs["queued_jobs"].([]any)[0].(map[string]any), "job_id")

	h.do("GET", "/v1/artifacts/"+idsA[0], b, nil).fails(t, 404, "not found")
	h.do("GET", "/v1/artifacts/"+idsA[0]+"/status", b, nil).fails(t, 404, "not found")
	h.do("GET", "/v1/receipts/"+str(pa, "receipt_id"), b, nil).fails(t, 404, "not found")
	h.do("GET", "/v2/jobs/"+jobA, b, nil).fails(t, 404, "not found")
	h.do("POST", "/v1/feedback", b, map[string]any{"workspace_id": "shared", "actor_id": "u", "action": "pin", "artifact_id": idsA[0]}).fails(t, 404, "not found")
	if l := h.do("GET", "/v1/receipts?workspace_id=shared", b, nil).must(t, 200); l["total"].(float64) != 0 {
		t.Fatalf("B sees A's receipts: %v", l)
	}
	pb := h.do("POST", "/v1/context-pack", b, map[string]any{"workspace_id": "shared", "query": "Atlas budget deploy on-call lunch"})
	for _, id := range idsA {
		if strings.Contains(string(pb.body), id) {
			t.Fatalf("B's pack mentions A's artifact %s", id)
		}
	}
	if strings.Contains(string(pb.body), "42000") {
		t.Fatal("B's pack holds A's text")
	}
	rb := h.do("GET", "/v1/receipts/"+str(pb.must(t, 200), "receipt_id"), b, nil)
	if strings.Contains(string(rb.body), "42000") || strings.Contains(string(rb.body), idsA[0]) {
		t.Fatal("B's receipt mentions A's data")
	}
	// B erasing "shared" leaves A's workspace alone.
	h.do("DELETE", "/v1/workspaces/shared", b, nil).must(t, 200)
	h.do("GET", "/v1/artifacts/"+idsA[0], a, nil).must(t, 200)
	// Usage of A is A's alone; the admin can read it.
	if u := h.do("GET", "/v1/billing/usage?tenant_id="+tidA, adminKey, nil).must(t, 200); u["artifacts_ingested"].(float64) != 6 {
		t.Fatalf("A's usage %v", u)
	}
}

func TestRateLimit(t *testing.T) {
	h := newHarness(t, Config{}, service.Config{AdminKey: adminKey, RateWindow: 2 * time.Second})
	tid, key := register(t, h, "r@example.com", "free")
	for i := 0; i < 30; i++ {
		r := h.do("GET", "/v1/billing/plan", key, nil)
		r.must(t, 200)
		if got := r.header.Get("X-RateLimit-Remaining"); got != strconv.Itoa(29-i) {
			t.Fatalf("request %d: remaining %q", i, got)
		}
	}
	r := h.do("GET", "/v1/billing/plan", key, nil)
	r.fails(t, 429, "rate limit")
	ra, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || ra < 1 || ra > 2 {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	// Other tenants are not affected, nor is /health.
	h.do("GET", "/health", "", nil).must(t, 200)
	_, other := register(t, h, "o@example.com", "free")
	h.do("GET", "/v1/billing/plan", other, nil).must(t, 200)
	// After the window the tenant is served again.
	time.Sleep(time.Duration(ra)*time.Second + 100*time.Millisecond)
	h.do("GET", "/v1/billing/plan", key, nil).must(t, 200)
	u := h.do("GET", "/v1/billing/usage?tenant_id="+tid, adminKey, nil).must(t, 200)
	if u["rate_limited"].(float64) != 1 || u["requests"].(map[string]any)["GET /v1/billing/plan"].(float64) != 32 {
		t.Fatalf("usage after limiting %v", u)
	}
}

// Usage counts are exact under concurrent requests and across a restart.
func TestUsageExactUnderConcurrency(t *testing.T) {
	h := newHarness(t, Config{}, service.Config{AdminKey: adminKey})
	tid, key := register(t, h, "busy@example.com", "enterprise")
	const workers, each = 8, 15
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				h.do("POST", "/v1/ingest", key, chatTurn("ws", fmt.Sprintf("writer %d note %d", w, i))).must(t, 201)
			}
		}(w)
	}
	wg.Wait()
	check := func(when string) {
		u := h.do("GET", "/v1/billing/usage?tenant_id="+tid, adminKey, nil).must(t, 200)
		if u["requests"].(map[string]any)["POST /v1/ingest"] != float64(workers*each) || u["artifacts_ingested"] != float64(workers*each) {
			t.Fatalf("%s: usage %v, want %d ingests", when, u, workers*each)
		}
	}
	check("live")
	h.restart()
	check("after restart")
}

// TestBearerKey: every route takes the key from X-API-Key or from
// Authorization: Bearer (as /mcp does); X-API-Key wins when both are sent, and
// an Authorization of another scheme is no key at all.
func TestBearerKey(t *testing.T) {
	h := newHarness(t, Config{}, service.Config{AdminKey: adminKey})
	_, key := register(t, h, "bearer@example.com", "pro")
	send := func(method, path string, headers map[string]string, body string) reply {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, h.base+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		return h.roundTrip(req)
	}
	ingest := `{"workspace_id":"ws-b","actor_id":"a","artifact_type":"chat_turn","raw_payload":{"role":"user","content":"bearer keys work"}}`
	for _, c := range []struct {
		name    string
		headers map[string]string
		status  int
		detail  string
	}{
		{"bearer", map[string]string{"Authorization": "Bearer " + key}, 201, ""},
		{"bearer lower case", map[string]string{"Authorization": "bearer " + key}, 201, ""},
		{"both, X-API-Key wins", map[string]string{"X-API-Key": key, "Authorization": "Bearer lk_wrong"}, 201, ""},
		{"invalid bearer", map[string]string{"Authorization": "Bearer lk_wrong"}, 401, "invalid API key"},
		{"basic is no key", map[string]string{"Authorization": "Basic " + key}, 401, "send X-API-Key or Authorization: Bearer"},
		{"none", nil, 401, "send X-API-Key or Authorization: Bearer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			hd := map[string]string{"Content-Type": "application/json"}
			for k, v := range c.headers {
				hd[k] = v
			}
			r := send("POST", "/v1/ingest", hd, ingest)
			if c.status != 201 {
				r.fails(t, c.status, c.detail)
				return
			}
			r.must(t, 201)
			send("GET", "/v1/workspaces", hd, "").must(t, 200)
		})
	}
	// /health shows its counters to a valid bearer key as to X-API-Key.
	if m := send("GET", "/health", map[string]string{"Authorization": "Bearer " + key}, "").must(t, 200); m["storage"] == nil {
		t.Fatalf("/health with a bearer key hides the counters: %v", m)
	}
}
