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

	"github.com/loci-memory/loci/service"
)

// slowBody opens a connection and sends a request's headers declaring a
// body of declared bytes, then only the first sent bytes of it.
func slowBody(t *testing.T, addr, path string, headers map[string]string, declared, sent int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var b strings.Builder
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", path, declared)
	for k, v := range headers {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	b.WriteString("\r\n")
	b.WriteString(strings.Repeat(" ", sent))
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	return c
}

// answer reads the answer on c, failing after 5 s: a server still waiting
// for the body does not answer.
func answer(t *testing.T, c net.Conn) (*http.Response, string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer while the body is incomplete: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestBodyNotReadBeforeAuthentication: a request declaring a large body
// (under the limit) that it sends slowly is refused from its headers when
// its key is missing or invalid, without the server waiting for (and
// holding) the body; it used to be read whole first. /mcp too.
func TestBodyNotReadBeforeAuthentication(t *testing.T) {
	h := newHarness(t, Config{}, service.Config{AdminKey: adminKey})
	addr := strings.TrimPrefix(h.base, "http://")
	for _, c := range []struct {
		name, path string
		headers    map[string]string
		detail     string
	}{
		{"no key", "/v1/ingest", nil, "missing API key: send X-API-Key or Authorization: Bearer"},
		{"invalid key", "/v2/ingest", map[string]string{"X-API-Key": "lk_not-a-key"}, "invalid API key"},
		{"mcp invalid key", "/mcp", map[string]string{"Authorization": "Bearer lk_not-a-key", "Accept": "application/json, text/event-stream"}, "invalid API key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn := slowBody(t, addr, c.path, c.headers, 5<<20, 100)
			resp, body := answer(t, conn)
			if resp.StatusCode != 401 || !strings.Contains(body, c.detail) || !resp.Close {
				t.Fatalf("%d close=%v %s", resp.StatusCode, resp.Close, body)
			}
		})
	}
	// A valid key's body is read and served.
	h.do("POST", "/v1/ingest", adminKey, map[string]any{"workspace_id": "w", "actor_id": "a", "artifact_type": "note",
		"raw_payload": map[string]any{"content": strings.Repeat("long body words ", 4000)}}).must(t, 201)
}

// TestBodyBudget: request bodies held at once are bounded: past
// MaxBodyBytesInFlight a request is refused with 503, Retry-After and a
// detail naming the setting, before its body is read; small bodies (read
// with the headers) are still served, and the budget comes back when the
// held bodies are done.
func TestBodyBudget(t *testing.T) {
	const limit = 1 << 20
	h := newHarness(t, Config{MaxRequestBytes: limit, MaxBodyBytesInFlight: 2 * limit})
	addr := strings.TrimPrefix(h.base, "http://")
	body := func(n int) string { // an ingest of exactly n bytes
		head := `{"workspace_id":"w","actor_id":"a","artifact_type":"note","raw_payload":"`
		words := strings.Repeat("words ", n/6+1)
		return head + words[:n-len(head)-2] + `"}`
	}
	full := body(limit - 10) // after the 10 spaces slowBody sends
	var held []net.Conn
	for range 2 {
		held = append(held, slowBody(t, addr, "/v1/ingest", nil, limit, 10))
	}
	deadline := time.Now().Add(10 * time.Second)
	for h.srv.bodies.inUse() != 2*limit { // both are being read
		if time.Now().After(deadline) {
			t.Fatalf("the held bodies took %d bytes of the budget, want %d", h.srv.bodies.inUse(), 2*limit)
		}
		time.Sleep(time.Millisecond)
	}
	over := slowBody(t, addr, "/v1/ingest", nil, 64<<10, 10)
	resp, detail := answer(t, over)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(detail, "LOCI_MAX_BODY_BYTES_IN_FLIGHT") {
		t.Fatalf("over the budget: %d %v %s", resp.StatusCode, resp.Header, detail)
	}
	h.do("POST", "/v1/ingest", "", body(4<<10)).must(t, 201) // small: read with the headers

	// The held bodies complete and are served; the budget is back.
	for _, c := range held {
		io.WriteString(c, full)
		if resp, b := answer(t, c); resp.StatusCode != 201 {
			t.Fatalf("held body: %d %s", resp.StatusCode, b)
		}
	}
	if h.srv.bodies.inUse() != 0 {
		t.Fatalf("budget not given back: %d bytes still taken", h.srv.bodies.inUse())
	}
	h.do("POST", "/v1/ingest", "", body(limit)).must(t, 201)
}
