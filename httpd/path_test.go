package httpd

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/service"
)

// rawDo sends a request whose path is written exactly as given (Go's HTTP
// client would refuse or re-encode malformed escapes) and reads the reply.
func (h *harness) rawDo(method, rawPath string) reply {
	h.t.Helper()
	return h.rawDoKey(method, rawPath, "")
}

// rawDoKey is rawDo with an X-API-Key.
func (h *harness) rawDoKey(method, rawPath, key string) reply {
	h.t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(h.base, "http://"))
	if err != nil {
		h.t.Fatal(err)
	}
	defer c.Close()
	auth := ""
	if key != "" {
		auth = "X-API-Key: " + key + "\r\n"
	}
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n%s\r\n", method, rawPath, auth)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, rawPath, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return reply{resp.StatusCode, resp.Header, b}
}

// TestPathParametersActOnlyOnTheIDSent sends every route that takes a path
// parameter with encoded '/', dot segments, NUL, malformed escapes and long
// ids. None may act on another id than the one sent: DELETE
// /v1/workspaces/team%2F..%2Fprod used to erase "prod", because routing
// used the decoded, normalised path.
func TestPathParametersActOnlyOnTheIDSent(t *testing.T) {
	h := newHarness(t, Config{})
	prod := seed(t, h, "", "prod")
	team := seed(t, h, "", "team")
	// A workspace written before the id rule, with a '/' in its id: the
	// engine still stores such ids, and they stay readable and erasable.
	legacy, err := h.db.Ingest(DefaultTenant, engine.IngestInput{Workspace: "team/legacy", ActorID: "a", Type: "note",
		Payload: []byte(`{"content":"legacy workspace id"}`), Timestamp: time.Now()})
	if err != nil {
		t.Fatal(err)
	}

	long := strings.Repeat("w", 300)
	hostile := []struct {
		path   string
		status int // 0: any 2xx or 4xx that is not about another id
		detail string
	}{
		{"/v1/workspaces/team%2F..%2Fprod", 400, "workspace_id"},
		{"/v1/workspaces/team%2f..%2fprod", 400, "workspace_id"},
		{"/v1/workspaces/..%2Fprod", 400, "workspace_id"},
		{"/v1/workspaces/%2E%2E%2Fprod", 400, "workspace_id"},
		{"/v1/workspaces/team/../prod", 404, "no route"},
		{"/v1/workspaces/./prod", 404, "no route"},
		{"/v1/workspaces/team%2F..", 400, "workspace_id"},
		{"/v1/workspaces/prod%00", 400, "workspace_id"},
		{"/v1/workspaces/%00", 400, "workspace_id"},
		{"/v1/workspaces/prod%zz", 400, "malformed percent-escape"},
		{"/v1/workspaces/prod%2", 400, "malformed percent-escape"},
		{"/v1/workspaces/%", 400, "malformed percent-escape"},
		{"/v1/workspaces/" + long, 400, "longer than the limit"},
		{"/v1/workspaces/%2Fprod", 400, "workspace_id"},
		{"/v1/workspaces//prod", 404, "no route"},
		{"/v1/workspaces/prod%2F", 400, "workspace_id"},
		{"/v1//workspaces/prod", 404, "no route"},
	}
	for _, c := range hostile {
		r := h.rawDo("DELETE", c.path)
		if r.status != c.status {
			t.Fatalf("DELETE %s: status %d, want %d: %s", c.path, r.status, c.status, r.body)
		}
		if c.detail != "" && !strings.Contains(string(r.body), c.detail) {
			t.Fatalf("DELETE %s: %s does not mention %q", c.path, r.body, c.detail)
		}
		if r.status == 200 && !strings.Contains(string(r.body), `"artifacts_erased":0`) {
			t.Fatalf("DELETE %s erased something: %s", c.path, r.body)
		}
	}
	for _, id := range append(append([]string{}, prod...), team...) {
		h.do("GET", "/v1/artifacts/"+id, "", nil).must(t, 200)
	}
	h.do("GET", "/v1/artifacts/"+legacy.ArtifactID.String(), "", nil).must(t, 200)

	// The other routes with a path parameter: an encoded id that normalises
	// to a real one must not reach it.
	a := prod[0]
	for _, p := range []string{
		"/v1/artifacts/x%2F..%2F" + a, "/v1/artifacts/" + a + "%2F..%2F" + a, "/v1/artifacts/x%2F..%2F" + a + "/status",
		"/v1/artifacts/%2E%2E%2F" + a + "/status", "/v2/jobs/x%2F..%2Fj", "/v1/receipts/x%2F..%2Fr",
		"/v1/artifacts/" + a + "%00", "/v1/artifacts/x/../" + a, "/v1/artifacts/" + long, "/v1/artifacts/" + long + "/status",
		"/v2/jobs/%00", "/v2/jobs/" + long, "/v1/receipts/%00", "/v1/receipts/" + long, "/v1/receipts/..%2F..%2Fv1%2Fartifacts%2F" + a,
		"DELETE /v1/keys/x%2F..%2Fk", "DELETE /v1/keys/%00", "DELETE /v1/keys/" + long,
	} {
		method := "GET"
		if m, rest, ok := strings.Cut(p, " "); ok {
			method, p = m, rest
		}
		r := h.rawDo(method, p)
		if r.status != 404 && r.status != 400 && r.status != 403 {
			t.Fatalf("GET %s: status %d: %s", p, r.status, r.body)
		}
	}
	for _, p := range []string{"/v1/artifacts/%zz", "/v1/artifacts/a%2/status", "/v2/jobs/%g0", "/v1/receipts/%", "/v1/keys/%1"} {
		method := "GET"
		if strings.HasPrefix(p, "/v1/keys/") {
			method = "DELETE"
		}
		h.rawDo(method, p).fails(t, 400, "malformed percent-escape")
	}
	// The id as sent, decoded once, still reaches its own resource.
	h.do("GET", "/v1/artifacts/"+strings.Replace(a, "-", "%2D", 1), "", nil).must(t, 200)

	// The legacy workspace is erased through its encoded id, and only it.
	m := h.rawDo("DELETE", "/v1/workspaces/team%2Flegacy").must(t, 200)
	if m["workspace_id"] != "team/legacy" || m["artifacts_erased"] != float64(1) {
		t.Fatalf("erase of team/legacy: %v", m)
	}
	h.do("GET", "/v1/artifacts/"+legacy.ArtifactID.String(), "", nil).must(t, 404)
	for _, id := range append(append([]string{}, prod...), team...) {
		h.do("GET", "/v1/artifacts/"+id, "", nil).must(t, 200)
	}
}

// TestWorkspaceIDRule: new data only goes to workspaces whose ids follow
// the rule (1-128 bytes of A-Z a-z 0-9 . _ : @ -, not "." or ".."); the
// others get 400 naming workspace_id and nothing is stored.
func TestWorkspaceIDRule(t *testing.T) {
	h := newHarness(t, Config{})
	for _, ok := range []string{"w", "team.prod", "org:team@example.com", "A-Z_09", strings.Repeat("x", 128), "..."} {
		h.do("POST", "/v1/ingest", "", chatTurn(ok, "hello")).must(t, 201)
	}
	bad := []string{"", ".", "..", "team/../prod", "team/prod", "a b", "a%2Fb", "caf\u00e9", "a\x00b", "a\nb", "a?b", "a#b",
		"a\\b", strings.Repeat("x", 129)}
	for _, ws := range bad {
		h.do("POST", "/v1/ingest", "", chatTurn(ws, "hello")).fails(t, 400, "workspace_id")
		body := map[string]any{"workspace_id": ws, "actor_id": "a", "artifacts": []any{map[string]any{"artifact_type": "note", "raw_payload": "x"}}}
		h.do("POST", "/v2/ingest", "", body).fails(t, 400, "workspace_id")
		body["async_index"] = true
		h.do("POST", "/v2/ingest", "", body).fails(t, 400, "workspace_id")
	}
	// Nothing of the refused ingests was stored, so the refused ids are
	// not legacy workspaces: they are refused on reads too.
	for _, ws := range bad[1:4] {
		h.do("POST", "/v1/context-pack", "", map[string]any{"query": "hello", "workspace_id": ws}).fails(t, 400, "workspace_id")
	}
}

// TestWorkspaceIDRuleAsync: with asynchronous indexing, v1 ingest refuses a
// bad workspace id before accepting a job.
func TestWorkspaceIDRuleAsync(t *testing.T) {
	h := newHarness(t, Config{}, service.Config{AsyncIndexing: true})
	h.do("POST", "/v1/ingest", "", chatTurn("team/../prod", "hello")).fails(t, 400, "workspace_id")
	h.do("POST", "/v1/ingest", "", chatTurn("prod", "hello")).must(t, 201)
}

// TestKeyPathCannotReachAnotherKey: DELETE /v1/keys/{key_id} with an id
// that normalises to a real key's id revokes nothing.
func TestKeyPathCannotReachAnotherKey(t *testing.T) {
	h := newHarness(t, Config{}, service.Config{AdminKey: adminKey})
	_, key := register(t, h, "keys@example.com", "pro")
	k2 := str(h.do("POST", "/v1/keys", key, nil).must(t, 201), "id")
	for _, p := range []string{"/v1/keys/x%2F..%2F" + k2, "/v1/keys/%2E%2E%2F" + k2, "/v1/keys/" + k2 + "%2F", "/v1/keys/" + k2 + "%00"} {
		req := h.rawDoKey("DELETE", p, key)
		if req.status != 404 && req.status != 400 {
			t.Fatalf("DELETE %s: %d %s", p, req.status, req.body)
		}
	}
	for _, k := range h.do("GET", "/v1/keys", key, nil).must(t, 200)["keys"].([]any) {
		if km := k.(map[string]any); km["revoked"] != false {
			t.Fatalf("key revoked through an encoded path: %v", km)
		}
	}
}
