package httpd

import (
	"encoding/json"
	"fmt"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loci-memory/loci/service"
)

// TestInvalidUTF8IsRefused: invalid UTF-8 anywhere in a JSON body is a 400
// naming the field, and nothing is stored. It used to be stored inside
// raw_payload and echoed back as invalid JSON.
func TestInvalidUTF8IsRefused(t *testing.T) {
	h := newHarness(t, Config{})
	cases := []struct {
		method, path, body, field string
	}{
		{"POST", "/v1/ingest", `{"workspace_id":"w","actor_id":"a","artifact_type":"note","raw_payload":{"content":"bad \xff byte"}}`, "raw_payload.content:"},
		{"POST", "/v1/ingest", `{"workspace_id":"w","actor_id":"a","artifact_type":"note","raw_payload":"\xc3\x28"}`, "raw_payload:"},
		{"POST", "/v1/ingest", `{"workspace_id":"w","actor_id":"a","artifact_type":"note","raw_payload":{"list":["ok",{"deep":"\xed\xa0\x80"}]}}`, "raw_payload.list[1].deep:"},
		{"POST", "/v1/ingest", `{"workspace_id":"w","actor_id":"a","artifact_type":"note","raw_payload":{"k\xfe":"v"}}`, "raw_payload.k\ufffd:"},
		{"POST", "/v1/ingest", `{"workspace_id":"w","actor_id":"a\x80","artifact_type":"note","raw_payload":"x"}`, "actor_id:"},
		{"POST", "/v2/ingest", `{"workspace_id":"w","actor_id":"a","artifacts":[{"artifact_type":"note","raw_payload":"fine"},{"artifact_type":"note","raw_payload":{"content":"\xff"}}]}`, "artifacts[1].raw_payload.content:"},
		{"POST", "/v1/context-pack", `{"workspace_id":"w","query":"caf\xe9"}`, "query:"},
		{"POST", "/v1/feedback", `{"workspace_id":"w","actor_id":"a","action":"pin","reason":"\xff"}`, "reason:"},
	}
	// The bodies spell raw bytes as \xNN; send them as those bytes.
	rawBytes := regexp.MustCompile(`\\x[0-9a-f]{2}`)
	for _, c := range cases {
		body := rawBytes.ReplaceAllStringFunc(c.body, func(e string) string {
			b, _ := strconv.ParseUint(e[2:], 16, 8)
			return string([]byte{byte(b)})
		})
		h.do(c.method, c.path, "", []byte(body)).fails(t, 400, c.field+" is not valid UTF-8")
	}
	// Nothing was stored in w.
	m := h.do("POST", "/v1/context-pack", "", map[string]any{"workspace_id": "w", "query": "bad byte"}).must(t, 200)
	if len(m["citations"].([]any)) != 0 {
		t.Fatalf("refused ingests left data: %v", m)
	}
	// Valid multi-byte UTF-8 is stored and echoed byte for byte.
	raw := `{"content":"café ☕ 𝄞"}`
	id := str(h.do("POST", "/v1/ingest", "", `{"workspace_id":"w","actor_id":"a","artifact_type":"note","raw_payload":`+raw+`}`).must(t, 201), "artifact_id")
	r := h.do("GET", "/v1/artifacts/"+id, "", nil)
	r.must(t, 200)
	if !json.Valid(r.body) || !strings.Contains(string(r.body), raw) {
		t.Fatalf("artifact body %s", r.body)
	}
}

// TestHealthCountersNeedAKey: with authentication on, /health shows status
// and version to anyone, the engine's counters only with a valid key.
func TestHealthCountersNeedAKey(t *testing.T) {
	h := newHarness(t, Config{}, service.Config{AdminKey: adminKey})
	_, tenantKey := register(t, h, "health@example.com", "free")
	for _, c := range []struct {
		key      string
		counters bool
	}{{"", false}, {"wrong-key", false}, {"lk_" + strings.Repeat("x", 43), false}, {adminKey, true}, {tenantKey, true}} {
		m := h.do("GET", "/health", c.key, nil).must(t, 200)
		if str(m, "status") != "ok" || str(m, "version") != "test" {
			t.Fatalf("health with key %q: %v", c.key, m)
		}
		if _, ok := m["storage"]; ok != c.counters {
			t.Fatalf("health with key %q: storage shown %v, want %v: %v", c.key, ok, c.counters, m)
		}
	}
	open := newHarness(t, Config{})
	if m := open.do("GET", "/health", "", nil).must(t, 200); m["storage"] == nil {
		t.Fatalf("health without authentication hides the counters: %v", m)
	}
}

// abandonPack sends a context pack request and closes the connection at
// once, as a client that timed out would.
func abandonPack(t *testing.T, h *harness, query string) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(h.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"workspace_id":"ws","query":%q}`, query)
	fmt.Fprintf(c, "POST /v1/context-pack HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	c.Close()
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestAbandonedPacksAreNotComputed: packs whose clients have gone give up
// their place at admission, so a fresh pack is served without computing
// any of them. It used to wait behind every abandoned pack (1.96 s behind
// 40). The slots are held so the abandoned packs are sure to queue; the
// proof is the count of packs computed, not a time.
func TestAbandonedPacksAreNotComputed(t *testing.T) {
	h := newHarness(t, Config{})
	seed(t, h, "", "ws")
	release := h.srv.svc.Packer().ReservePackSlots(1 << 20)
	defer release()
	before := h.srv.svc.Packer().PackCounts()
	const abandoned = 48
	for i := 0; i < abandoned; i++ {
		abandonPack(t, h, fmt.Sprintf("Atlas budget question %d", i))
	}
	waitFor(t, "every abandoned pack to give up", func() bool {
		pc := h.srv.svc.Packer().PackCounts()
		return pc.Cancelled-before.Cancelled == abandoned && pc.Waiting == 0
	})
	release()
	m := h.do("POST", "/v1/context-pack", "", map[string]any{"workspace_id": "ws", "query": "Atlas budget"}).must(t, 200)
	if len(m["citations"].([]any)) == 0 {
		t.Fatalf("fresh pack: %v", m)
	}
	after := h.srv.svc.Packer().PackCounts()
	if started := after.Started - before.Started; started != 1 {
		t.Fatalf("%d packs computed, want only the fresh one (counts %+v)", started, after)
	}
	// No receipt was stored for an abandoned pack either.
	rs := h.do("GET", "/v1/receipts?workspace_id=ws&limit=100", "", nil).must(t, 200)
	if n := len(rs["receipts"].([]any)); n != 1 {
		t.Fatalf("%d receipts, want 1", n)
	}
}

// TestShutdownCancelsWaitingPacks: a pack waiting for admission when the
// server stops gets 503 instead of holding the shutdown up.
func TestShutdownCancelsWaitingPacks(t *testing.T) {
	h := newHarness(t, Config{})
	seed(t, h, "", "ws")
	release := h.srv.svc.Packer().ReservePackSlots(1 << 20)
	defer release()
	got := make(chan reply, 1)
	go func() {
		got <- h.do("POST", "/v1/context-pack", "", map[string]any{"workspace_id": "ws", "query": "Atlas"})
	}()
	waitFor(t, "the pack to queue", func() bool { return h.srv.svc.Packer().PackCounts().Waiting == 1 })
	stopped := make(chan struct{})
	go func() { h.srv.Shutdown(); close(stopped) }()
	select {
	case r := <-got:
		r.fails(t, 503, "shutting down")
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting pack held the shutdown up")
	}
	<-stopped
}

// TestOpenRegistrationLimitAndNoEmailOracle: open registration is limited
// per client address (429 with Retry-After, the window then admits again),
// and a taken email is answered exactly like a new one (201, a working key
// of a new tenant), so it cannot be used to find out who is a customer. The
// admin key still gets 409 for a taken email, as decisions.md says.
func TestOpenRegistrationLimitAndNoEmailOracle(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h := newHarness(t, Config{}, service.Config{AdminKey: adminKey, OpenRegistration: true, RegisterLimit: 3, RegisterWindow: time.Hour, Now: clock})
	existingID, existingKey := register(t, h, "taken@example.com", "pro")

	fresh := h.do("POST", "/v1/register", "", map[string]any{"email": "new@example.com"})
	dup := h.do("POST", "/v1/register", "", map[string]any{"email": "Taken@Example.com"})
	for _, r := range []reply{fresh, dup} {
		m := r.must(t, 201)
		if str(m, "plan") != "free" || !strings.HasPrefix(str(m, "api_key"), "lk_") || str(m, "tenant_id") == existingID {
			t.Fatalf("open registration reply %v", m)
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if strings.Join(keys, ",") != "api_key,message,plan,tenant_id" {
			t.Fatalf("reply fields %v differ from a new registration's", keys)
		}
		h.do("POST", "/v1/ingest", str(m, "api_key"), chatTurn("w", "hello")).must(t, 201)
	}
	if len(fresh.body) != len(dup.body) {
		t.Fatalf("a taken email's reply differs in length: %d vs %d bytes", len(dup.body), len(fresh.body))
	}
	// The existing tenant is untouched: same plan, its key still works.
	if m := h.do("GET", "/v1/billing/plan", existingKey, nil).must(t, 200); str(m, "plan") != "pro" || str(m, "tenant_id") != existingID {
		t.Fatalf("existing tenant after a duplicate open registration: %v", m)
	}

	// The third registration from this address is the last in the window.
	h.do("POST", "/v1/register", "", map[string]any{"email": "third@example.com"}).must(t, 201)
	r := h.do("POST", "/v1/register", "", map[string]any{"email": "fourth@example.com"})
	r.fails(t, 429, "open registration is limited to 3")
	if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 || ra > 3600 {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	// Bad requests count too, so the limit also bounds probing.
	h.do("POST", "/v1/register", "", map[string]any{"email": "not an email"}).fails(t, 429, "retry after")
	// The admin key is not limited, and keeps 409 for a taken email.
	h.do("POST", "/v1/register", adminKey, map[string]any{"email": "taken@example.com"}).fails(t, 409, "already registered")
	register(t, h, "admin-made@example.com", "free")

	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	h.do("POST", "/v1/register", "", map[string]any{"email": "fourth@example.com"}).must(t, 201)
}
