package httpd

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/loci-memory/loci/service"
)

// mcpPost posts body to /mcp with key as an MCP client of protocol
// 2025-03-26 does (no Mcp-Protocol-Version header: batches allowed), with
// the header pairs kv added.
func mcpPost(t *testing.T, h *harness, key string, body []byte, kv ...string) reply {
	t.Helper()
	req, err := http.NewRequest("POST", h.base+"/mcp", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-API-Key", key)
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{resp.StatusCode, resp.Header, b}
}

// rpcAnswer is a JSON-RPC answer.
type rpcAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Detail string `json:"detail"`
}

// batchOf is a batch of n calls of method, ids 1..n.
func batchOf(n int, method string) []byte {
	var b strings.Builder
	b.WriteByte('[')
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":%q}`, i, method)
	}
	b.WriteByte(']')
	return []byte(b.String())
}

// TestMCPBatchesAreCappedAndCounted: a batch of more messages than
// mcpd.MaxBatch is refused whole at once (it used to be run, each of 10,000
// tools/list calls building its answer), counting as one request; each
// message of an accepted batch counts against the rate limit, in the
// batch's order, and the answer carries the rate-limit headers.
func TestMCPBatchesAreCappedAndCounted(t *testing.T) {
	h := newHarness(t, Config{}, service.Config{AdminKey: adminKey})
	tenantID, key := register(t, h, "batch@example.com", "free") // 30 requests a minute

	r := mcpPost(t, h, key, batchOf(1000, "tools/list"))
	var refused rpcAnswer
	if err := json.Unmarshal(r.body, &refused); err != nil || r.status != http.StatusBadRequest || refused.Error == nil ||
		refused.Error.Code != -32600 || !strings.Contains(refused.Error.Message, "a batch of 1000 messages exceeds the limit of 32") ||
		refused.Detail != refused.Error.Message || string(refused.ID) != "null" {
		t.Fatalf("batch of 1000: %d %.300s", r.status, r.body)
	}
	if r.header.Get("X-RateLimit-Limit") != "30" || r.header.Get("X-RateLimit-Remaining") != "29" {
		t.Fatalf("batch of 1000: rate-limit headers %v", r.header)
	}

	// 29 requests left: the first 29 of a batch of 32 are answered, the last 3 refused.
	r = mcpPost(t, h, key, batchOf(32, "tools/list"))
	var answers []rpcAnswer
	if err := json.Unmarshal(r.body, &answers); err != nil || r.status != http.StatusOK || len(answers) != 32 {
		t.Fatalf("batch of 32: %d %v %.300s", r.status, err, r.body)
	}
	for i, a := range answers {
		if string(a.ID) != fmt.Sprint(i+1) {
			t.Fatalf("answer %d has id %s", i, a.ID)
		}
		switch limited := a.Error != nil && a.Error.Code == -32029; {
		case i < 29 && (a.Error != nil || !bytes.Contains(a.Result, []byte(`"name":"remember"`))):
			t.Fatalf("answer %d: %s %+v", i, a.Result, a.Error)
		case i >= 29 && (!limited || !strings.Contains(a.Error.Message, "rate limit of 30 requests per minute exceeded")):
			t.Fatalf("answer %d was not refused by the rate limit: %+v", i, a.Error)
		}
	}
	if r.header.Get("X-RateLimit-Remaining") != "0" || r.header.Get("Retry-After") == "" {
		t.Fatalf("batch of 32: headers %v", r.header)
	}
	tenant := h.do("GET", "/v1/billing/usage?tenant_id="+tenantID, adminKey, nil).must(t, 200)
	byEndpoint := tenant["requests"].(map[string]any)
	if byEndpoint["POST /mcp"] != 1.0 || byEndpoint["MCP tools/list"] != 32.0 || tenant["rate_limited"] != 3.0 {
		t.Fatalf("usage of the tenant: %v", tenant)
	}

	// A message the SDK refuses (an unknown method) counts as one request too.
	_, proKey := register(t, h, "pro@example.com", "pro")
	r = mcpPost(t, h, proKey, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/lisst"}`))
	if r.status != http.StatusBadRequest || r.header.Get("X-RateLimit-Limit") != "120" || r.header.Get("X-RateLimit-Remaining") != "119" {
		t.Fatalf("unknown method: %d %v %s", r.status, r.header, r.body)
	}

	// A client of a protocol without batches gets none.
	r = mcpPost(t, h, adminKey, batchOf(2, "ping"), "Mcp-Protocol-Version", "2025-06-18")
	if r.status != http.StatusBadRequest || !bytes.Contains(r.body, []byte("protocol 2025-06-18 has no JSON-RPC batches")) {
		t.Fatalf("batch at 2025-06-18: %d %s", r.status, r.body)
	}
}

// TestMCPRateLimitsEveryMethod: every message counts against the tenant's
// rate limit, not only tool calls: tools/list, ping and resources/list are
// refused past it (they used to be served without limit), and every answer
// carries X-RateLimit-Limit and X-RateLimit-Remaining as the REST API's do.
func TestMCPRateLimitsEveryMethod(t *testing.T) {
	h := newHarness(t, Config{}, service.Config{AdminKey: adminKey})
	_, key := register(t, h, "methods@example.com", "free")
	methods := []string{"tools/list", "ping", "resources/list", "resources/templates/list"}
	for i := range 30 {
		m := methods[i%len(methods)]
		r := mcpPost(t, h, key, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":%q}`, i, m))
		var a rpcAnswer
		if err := json.Unmarshal(r.body, &a); err != nil || r.status != 200 || a.Error != nil {
			t.Fatalf("%s %d: %d %s", m, i, r.status, r.body)
		}
		if r.header.Get("X-RateLimit-Limit") != "30" || r.header.Get("X-RateLimit-Remaining") != fmt.Sprint(29-i) {
			t.Fatalf("%s %d: rate-limit headers %v", m, i, r.header)
		}
	}
	for _, m := range methods {
		r := mcpPost(t, h, key, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":"x","method":%q}`, m))
		var a rpcAnswer
		if err := json.Unmarshal(r.body, &a); err != nil || a.Error == nil || a.Error.Code != -32029 ||
			!strings.Contains(a.Error.Message, "rate limit of 30 requests per minute exceeded") {
			t.Fatalf("%s past the limit: %d %s", m, r.status, r.body)
		}
		if r.header.Get("X-RateLimit-Remaining") != "0" || r.header.Get("Retry-After") == "" {
			t.Fatalf("%s past the limit: headers %v", m, r.header)
		}
	}
	// A tool call past the limit is a tool error, which the model reads.
	r := mcpPost(t, h, key, []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list","arguments":{}}}`))
	if !bytes.Contains(r.body, []byte(`"isError":true`)) || !bytes.Contains(r.body, []byte("rate limit of 30 requests per minute exceeded")) {
		t.Fatalf("tool call past the limit: %d %s", r.status, r.body)
	}
	// A notification past the limit: 429 (it has no answer to say so).
	r = mcpPost(t, h, key, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" || r.header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("notification past the limit: %d %v %s", r.status, r.header, r.body)
	}
}

// TestMCPRememberKeepsRawPayloadBytes: remember stores raw_payload byte for
// byte as sent (big integers, 1.0, key order, escapes and spacing kept),
// so its content_hash is the one the REST API gives for the same bytes;
// it used to be decoded and encoded again. Invalid UTF-8 is refused, as
// over REST, and nothing is stored.
func TestMCPRememberKeepsRawPayloadBytes(t *testing.T) {
	h := newHarness(t, Config{})
	payload := `{"z": 12345678901234567891, "a":1.0,"s":"caf\u00e9 \/ <b>&amp;</b>","n":[1e2, -0.0]}`
	r := mcpPost(t, h, "", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"remember","arguments":`+
		`{"workspace_id":"raw","memories":[{"artifact_type":"tool_result","raw_payload": `+payload+` }]}}}`))
	var a struct {
		Result struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				Stored []struct {
					ArtifactID string `json:"artifact_id"`
				} `json:"stored"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(r.body, &a); err != nil || a.Result.IsError || len(a.Result.StructuredContent.Stored) != 1 {
		t.Fatalf("remember: %d %s", r.status, r.body)
	}
	sum := sha256.Sum256([]byte(payload))
	want := "sha256:" + hex.EncodeToString(sum[:])
	got := h.do("GET", "/v1/artifacts/"+a.Result.StructuredContent.Stored[0].ArtifactID, "", nil)
	var art struct {
		RawPayload  json.RawMessage `json:"raw_payload"`
		ContentHash string          `json:"content_hash"`
	}
	if err := json.Unmarshal(got.body, &art); err != nil || string(art.RawPayload) != payload || art.ContentHash != want {
		t.Fatalf("stored %s (%s), want %s (%s)", art.RawPayload, art.ContentHash, payload, want)
	}
	rest := h.do("POST", "/v1/ingest", "", `{"workspace_id":"raw2","actor_id":"a","artifact_type":"tool_result","raw_payload":`+payload+`}`).must(t, 201)
	if rest["content_hash"] != art.ContentHash {
		t.Fatalf("REST content_hash %v, MCP %s", rest["content_hash"], art.ContentHash)
	}

	bad := []byte("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"remember\",\"arguments\":" +
		"{\"workspace_id\":\"utf\",\"memories\":[{\"raw_payload\":{\"t\":\"caf\xe9\"}}]}}}")
	r = mcpPost(t, h, "", bad)
	var refused rpcAnswer
	if err := json.Unmarshal(r.body, &refused); err != nil || r.status != http.StatusBadRequest || refused.Error == nil ||
		refused.Error.Code != -32700 || !strings.Contains(refused.Detail, "not valid UTF-8 at byte") {
		t.Fatalf("invalid UTF-8: %d %s", r.status, r.body)
	}
	if ws := h.do("GET", "/v1/workspaces", "", nil).must(t, 200); strings.Contains(fmt.Sprint(ws), "utf") {
		t.Fatalf("invalid UTF-8 stored something: %v", ws)
	}
}

// TestMCPResourcesArePrivate: a resource read (the caller's own memory)
// is labelled cacheScope "private"; it used to be the protocol's default,
// "public", which lets intermediaries serve it to others.
func TestMCPResourcesArePrivate(t *testing.T) {
	h := newHarness(t, Config{})
	for _, uri := range []string{"loci://workspaces", "loci://workspaces/w"} {
		r := mcpPost(t, h, "", fmt.Appendf(nil, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":%q}}`, uri))
		var a struct {
			Result struct {
				CacheScope string `json:"cacheScope"`
				Contents   []any  `json:"contents"`
			} `json:"result"`
		}
		if err := json.Unmarshal(r.body, &a); err != nil || len(a.Result.Contents) != 1 || a.Result.CacheScope != "private" {
			t.Fatalf("read %s: %d %s", uri, r.status, r.body)
		}
	}
}
