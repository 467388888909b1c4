package httpd

import (
	"net/http"
	"strings"
	"testing"

	"github.com/loci-memory/loci/service"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// keyTransport adds an API key to every request, as an MCP client
// configured with a header does.
type keyTransport struct{ key string }

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-API-Key", k.key)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSession connects the SDK's client to POST /mcp with key.
func mcpSession(t *testing.T, h *harness, key string) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: h.base + "/mcp", HTTPClient: &http.Client{Transport: keyTransport{key}}, DisableStandaloneSSE: true}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), tr, nil)
	if err != nil {
		t.Fatalf("connect to /mcp: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func toolText(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// TestMCPOverHTTP: /mcp serves the tools over streamable HTTP with the API's
// keys: no key is 401, each tenant sees only its own memory, and tool calls
// count in the tenant's usage and rate limit.
func TestMCPOverHTTP(t *testing.T) {
	h := newHarness(t, Config{}, service.Config{AdminKey: adminKey})
	r := h.do("POST", "/mcp", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if r.status != http.StatusUnauthorized || !strings.Contains(string(r.body), "missing API key") {
		t.Fatalf("no key: %d %s", r.status, r.body)
	}
	if r := h.do("POST", "/mcp", "lk_wrong", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); r.status != http.StatusUnauthorized {
		t.Fatalf("bad key: %d %s", r.status, r.body)
	}
	_, keyA := register(t, h, "a@example.com", "pro")
	_, keyB := register(t, h, "b@example.com", "pro")
	a, b := mcpSession(t, h, keyA), mcpSession(t, h, keyB)

	if text, isErr := toolText(t, a, "remember", map[string]any{"workspace_id": "notes", "memories": []map[string]any{
		{"content": "The quokka ferry leaves pier 7 at 06:40 on weekdays."}}}); isErr {
		t.Fatalf("remember: %s", text)
	}
	text, isErr := toolText(t, a, "recall", map[string]any{"workspace_id": "notes", "query": "when does the quokka ferry leave?"})
	if isErr || !strings.Contains(text, "06:40") {
		t.Fatalf("recall of the owner: %v %s", isErr, text)
	}
	// Tenant B: the same workspace name is its own, empty; A's artifact is not found.
	text, isErr = toolText(t, b, "recall", map[string]any{"workspace_id": "notes", "query": "when does the quokka ferry leave?"})
	if isErr || strings.Contains(text, "quokka") || !strings.Contains(text, "No sufficient evidence") {
		t.Fatalf("recall of another tenant: %v %s", isErr, text)
	}
	list, _ := toolText(t, a, "list", map[string]any{"workspace_id": "notes"})
	id := list[strings.Index(list, `"artifact_id":"`)+len(`"artifact_id":"`):][:36]
	if text, isErr := toolText(t, b, "forget", map[string]any{"artifact_id": id}); !isErr || !strings.Contains(text, "not found") {
		t.Fatalf("another tenant's forget: %v %s", isErr, text)
	}
	if text, isErr := toolText(t, a, "forget", map[string]any{"artifact_id": id}); isErr {
		t.Fatalf("forget: %s", text)
	}
	u := h.do("GET", "/v1/billing/usage", keyA, nil).must(t, 200)
	byEndpoint, _ := u["requests"].(map[string]any)
	if byEndpoint["MCP remember"] != 1.0 || byEndpoint["MCP recall"] != 1.0 || byEndpoint["MCP forget"] != 1.0 || byEndpoint["MCP server/discover"] != 1.0 ||
		u["context_packs"] != 1.0 || u["artifacts_ingested"] != 1.0 {
		t.Fatalf("usage of tenant A: %v", u)
	}
	// A plan without the v2 API gets v1 packs and one memory per call, as over HTTP.
	_, keyC := register(t, h, "c@example.com", "free")
	c := mcpSession(t, h, keyC)
	if text, isErr := toolText(t, c, "recall", map[string]any{"workspace_id": "w", "query": "q", "profile": "high_recall"}); !isErr ||
		!strings.Contains(text, "profile: plan free has no serving profiles") {
		t.Fatalf("free plan, profile: %v %s", isErr, text)
	}
	two := []map[string]any{{"content": "one"}, {"content": "two"}}
	if text, isErr := toolText(t, c, "remember", map[string]any{"workspace_id": "w", "memories": two}); !isErr ||
		!strings.Contains(text, "plan free stores one memory per call") {
		t.Fatalf("free plan, two memories: %v %s", isErr, text)
	}
	if text, isErr := toolText(t, c, "remember", map[string]any{"workspace_id": "w", "memories": two[:1]}); isErr {
		t.Fatalf("free plan, one memory: %s", text)
	}
	if text, isErr := toolText(t, c, "recall", map[string]any{"workspace_id": "w", "query": "one"}); isErr || !strings.Contains(text, "[cite:1]") {
		t.Fatalf("free plan, v1 recall: %v %s", isErr, text)
	}
	// Every message is held to the plan's rate limit (free: 30 a minute):
	// the session's start (server/discover, or initialize and its notification with
	// an older protocol) and every call.
	for i := range 25 { // 5 above: server/discover and 4 calls
		if text, isErr := toolText(t, c, "list", map[string]any{}); isErr {
			t.Fatalf("call %d: %s", i, text)
		}
	}
	if text, isErr := toolText(t, c, "list", map[string]any{}); !isErr || !strings.Contains(text, "rate limit of 30 requests per minute exceeded") {
		t.Fatalf("call 31: %v %s", isErr, text)
	}
}
