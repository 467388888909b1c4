package httpd

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/loci-memory/loci/service"
)

// startServer runs a real server with authentication off.
func startServer(t *testing.T) string {
	t.Helper()
	return newHarness(t, Config{}).base
}

func TestHealth(t *testing.T) {
	base := startServer(t)
	resp, err := http.Get(base + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status  string         `json:"status"`
		Version string         `json:"version"`
		Storage map[string]any `json:"storage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || body.Status != "ok" || body.Version != "test" || body.Storage == nil {
		t.Fatalf("health: %d %+v", resp.StatusCode, body)
	}
	if resp.Header.Get("X-Request-ID") == "" || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("headers: %v", resp.Header)
	}
}

func TestErrorsAreJSON(t *testing.T) {
	base := startServer(t)
	cases := []struct {
		method, path string
		status       int
		allow        string
	}{
		{"GET", "/nope", 404, ""},
		{"POST", "/health", 405, "GET"},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, base+c.path, strings.NewReader("{}"))
		req.Header.Set("X-Request-ID", "client-id-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]string
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != c.status || body["detail"] == "" {
			t.Fatalf("%s %s: %d %v", c.method, c.path, resp.StatusCode, body)
		}
		if resp.Header.Get("Allow") != c.allow {
			t.Fatalf("%s %s: Allow %q", c.method, c.path, resp.Header.Get("Allow"))
		}
		if resp.Header.Get("X-Request-ID") != "client-id-1" {
			t.Fatalf("a sane client request id must be echoed, got %q", resp.Header.Get("X-Request-ID"))
		}
	}
	req, _ := http.NewRequest("GET", base+"/health", nil)
	req.Header.Set("X-Request-ID", "bad id with spaces")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if id := resp.Header.Get("X-Request-ID"); len(id) != 36 {
		t.Fatalf("an insane request id must be replaced by a UUID, got %q", id)
	}
}

// Before Start (the engine is still recovering) the server answers, but
// only to say it is starting.
func TestStartingState(t *testing.T) {
	h := newHarness(t, Config{})
	db, ctl := h.db, h.ctl
	srv := NewStarting(Config{Version: "test", Logger: quiet})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Shutdown()
	base := "http://" + ln.Addr().String()
	get := func(path string) (int, map[string]any, http.Header) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m, resp.Header
	}
	if code, m, hdr := get("/health"); code != 503 || m["status"] != "starting" || hdr.Get("X-Request-ID") == "" {
		t.Fatalf("health while starting: %d %v", code, m)
	}
	if code, m, hdr := get("/v1/receipts?workspace_id=w"); code != 503 || m["detail"] == nil || hdr.Get("Retry-After") != "1" {
		t.Fatalf("route while starting: %d %v %v", code, m, hdr)
	}
	h.srv.Shutdown() // the harness's own server lets go of the engine's workers
	h.srv = nil
	srv.Start(newService(db, ctl, Config{Logger: quiet}, service.Config{}))
	if code, m, _ := get("/health"); code != 200 || m["status"] != "ok" {
		t.Fatalf("health after start: %d %v", code, m)
	}
	t.Cleanup(func() { db.Close() })
}
