package httpd

import (
	"net/http"
	"strings"
	"testing"
)

// send sends a request with exactly the given headers ("Host" sets the Host
// header) and body.
func (h *harness) send(method, path string, headers map[string]string, body string) reply {
	h.t.Helper()
	req, err := http.NewRequest(method, h.base+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if body == "" {
		req.Body, req.ContentLength = nil, 0
	}
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	return h.roundTrip(req)
}

const browserNote = `{"workspace_id":"ws","actor_id":"a","artifact_type":"note","raw_payload":{"content":"written by a web page"}}`

const mcpInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"page","version":"1"}}}`

// TestBrowserRequestsAreRefused serves with the defaults (loopback,
// authentication off), where any web page could write with a CORS "simple
// request" (text/plain, no preflight) and a DNS-rebinding page could read:
// a body not declared JSON is 415, a foreign Origin and a foreign Host 403
// (on /mcp too), each naming the header, and nothing is stored; the
// server's own origin and loopback names are served.
func TestBrowserRequestsAreRefused(t *testing.T) {
	h := newHarness(t, Config{})
	own := h.base // http://127.0.0.1:PORT
	port := own[strings.LastIndex(own, ":"):]
	json := map[string]string{"Content-Type": "application/json"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{"Content-Type": "application/json"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for _, c := range []struct {
		name, method, path string
		headers            map[string]string
		body               string
		status             int
		detail             string
	}{
		{"text/plain simple request", "POST", "/v1/ingest", map[string]string{"Content-Type": "text/plain;charset=UTF-8"}, browserNote, 415, `Content-Type "text/plain;charset=UTF-8" is not accepted`},
		{"form simple request", "POST", "/v1/ingest", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, browserNote, 415, "Content-Type: application/json"},
		{"no content type", "POST", "/v1/ingest", nil, browserNote, 415, "Content-Type header is missing"},
		{"foreign origin", "POST", "/v1/ingest", with(map[string]string{"Origin": "http://evil.example"}), browserNote, 403, `Origin "http://evil.example" is not this server's origin`},
		{"other loopback port", "POST", "/v1/ingest", with(map[string]string{"Origin": "http://127.0.0.1:1"}), browserNote, 403, "LOCI_ALLOWED_ORIGINS"},
		{"null origin", "POST", "/v1/ingest", with(map[string]string{"Origin": "null"}), browserNote, 403, "Origin"},
		{"rebinding write", "POST", "/v1/ingest", with(map[string]string{"Host": "evil.example" + port, "Origin": "http://evil.example" + port}), browserNote, 403, `Host "evil.example` + port + `" refused`},
		{"rebinding read", "GET", "/v1/workspaces/ws/artifacts", map[string]string{"Host": "evil.example" + port}, "", 403, "LOCI_ALLOWED_HOSTS"},
		{"rebinding health", "GET", "/health", map[string]string{"Host": "evil.example"}, "", 403, "DNS rebinding"},
		{"rebinding console", "GET", "/ui/api/metrics", map[string]string{"Host": "evil.example"}, "", 403, "Host"},
		{"mcp foreign origin", "POST", "/mcp", with(map[string]string{"Origin": "http://evil.example", "Accept": "application/json, text/event-stream"}), mcpInitialize, 403, "Origin"},
		{"mcp text/plain", "POST", "/mcp", map[string]string{"Content-Type": "text/plain", "Accept": "application/json, text/event-stream"}, mcpInitialize, 415, "Content-Type"},
		{"mcp foreign host", "POST", "/mcp", with(map[string]string{"Host": "evil.example", "Accept": "application/json, text/event-stream"}), mcpInitialize, 403, "Host"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h.send(c.method, c.path, c.headers, c.body).fails(t, c.status, c.detail)
		})
	}
	if m := h.do("GET", "/v1/workspaces/ws/artifacts", "", nil).must(t, 200); len(m["artifacts"].([]any)) != 0 {
		t.Fatalf("a refused request stored something: %v", m)
	}

	// Served: no Origin (not a browser), the server's own origin, loopback
	// names, a JSON type with parameters, and /mcp from the own origin.
	for _, c := range []struct {
		name    string
		headers map[string]string
	}{
		{"no origin", json},
		{"own origin", with(map[string]string{"Origin": own})},
		{"localhost", with(map[string]string{"Host": "localhost" + port, "Origin": "http://localhost" + port})},
		{"ipv6 loopback name", with(map[string]string{"Host": "[::1]" + port})},
		{"charset", map[string]string{"Content-Type": "application/json; charset=utf-8"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if r := h.send("POST", "/v1/ingest", c.headers, browserNote); r.status != 201 {
				t.Fatalf("%d %s", r.status, r.body)
			}
		})
	}
	if r := h.send("POST", "/mcp", with(map[string]string{"Origin": own, "Accept": "application/json, text/event-stream"}), mcpInitialize); r.status != 200 {
		t.Fatalf("mcp from the own origin: %d %s", r.status, r.body)
	}
}

// TestAllowedOriginsAndHosts: the allow-lists let real cross-origin pages
// (with CORS headers and preflights) and other host names in.
func TestAllowedOriginsAndHosts(t *testing.T) {
	origins, err := ParseAllowedOrigins(" https://App.example.com , http://localhost:5173")
	if err != nil {
		t.Fatal(err)
	}
	hosts, err := ParseAllowedHosts("loci.internal, [fd00::0:1]")
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Config{AllowedOrigins: origins, AllowedHosts: hosts})
	pre := h.send("OPTIONS", "/v1/ingest", map[string]string{"Origin": "https://app.example.com",
		"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type,x-api-key"}, "")
	if pre.status != 204 || pre.header.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		!strings.Contains(pre.header.Get("Access-Control-Allow-Headers"), "X-API-Key") {
		t.Fatalf("preflight: %d %v %s", pre.status, pre.header, pre.body)
	}
	r := h.send("POST", "/v1/ingest", map[string]string{"Origin": "http://localhost:5173", "Content-Type": "application/json"}, browserNote)
	if r.status != 201 || r.header.Get("Access-Control-Allow-Origin") != "http://localhost:5173" ||
		!strings.Contains(r.header.Get("Access-Control-Expose-Headers"), "X-Request-ID") {
		t.Fatalf("allowed origin: %d %v %s", r.status, r.header, r.body)
	}
	h.send("POST", "/v1/ingest", map[string]string{"Origin": "http://evil.example", "Content-Type": "application/json"}, browserNote).
		fails(t, 403, "Origin")
	h.send("OPTIONS", "/v1/ingest", map[string]string{"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"}, "").
		fails(t, 403, "Origin")
	if r := h.send("GET", "/health", map[string]string{"Host": "LOCI.internal:443"}, ""); r.status != 200 {
		t.Fatalf("allowed host: %d %s", r.status, r.body)
	}
	if r := h.send("GET", "/health", map[string]string{"Host": "[fd00::1]:3000"}, ""); r.status != 200 {
		t.Fatalf("allowed address: %d %s", r.status, r.body)
	}
	h.send("GET", "/health", map[string]string{"Host": "other.internal"}, "").fails(t, 403, "Host")

	for _, bad := range []string{"app.example.com", "https://app.example.com/path", "ftp://x", "https://"} {
		if _, err := ParseAllowedOrigins(bad); err == nil {
			t.Errorf("origin %q accepted", bad)
		}
	}
	for _, bad := range []string{"https://x", "x:80", "."} {
		if _, err := ParseAllowedHosts(bad); err == nil {
			t.Errorf("host %q accepted", bad)
		}
	}
}
