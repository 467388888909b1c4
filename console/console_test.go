package console

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/loci-memory/loci/telemetry"
	"github.com/valyala/fasthttp"
)

// serve starts the console on a loopback port and returns its base URL.
func serve(t *testing.T, cfg Config) string {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: c.Serve, NoDefaultContentType: true}
	go srv.Serve(ln) //nolint:errcheck // ends with Shutdown
	t.Cleanup(func() { _ = srv.Shutdown() })
	return "http://" + ln.Addr().String()
}

type reply struct {
	status int
	h      http.Header
	body   string
}

func do(t *testing.T, method, url string, hdr map[string]string) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{res.StatusCode, res.Header, string(b)}
}

func detail(t *testing.T, r reply) string {
	t.Helper()
	var e struct{ Detail string }
	if err := json.Unmarshal([]byte(r.body), &e); err != nil || e.Detail == "" {
		t.Fatalf("body %q is not an error with a detail", r.body)
	}
	return e.Detail
}

func TestPageAndAssets(t *testing.T) {
	base := serve(t, Config{})
	page := do(t, "GET", base+"/ui", nil)
	if page.status != 200 || page.h.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET /ui: %d %q", page.status, page.h.Get("Content-Type"))
	}
	if page.h.Get("Cache-Control") != "no-cache" {
		t.Errorf("index.html Cache-Control %q, want no-cache", page.h.Get("Cache-Control"))
	}
	csp := page.h.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe") {
		t.Errorf("CSP %q allows something unsafe", csp)
	}
	if page.h.Get("X-Content-Type-Options") != "nosniff" {
		t.Error("no X-Content-Type-Options: nosniff")
	}

	// Client routes get the same page (SPA fallback), any depth.
	for _, p := range []string{"/ui/", "/ui/workspaces/team-a", "/ui/receipts/0b7e4d9c-0000-4000-8000-000000000000", "/ui/server?x=1"} {
		r := do(t, "GET", base+p, nil)
		if r.status != 200 || r.body != page.body {
			t.Errorf("GET %s: %d, page served: %v", p, r.status, r.body == page.body)
		}
	}

	// The page's script and stylesheet are served, immutable, with their types.
	refs := regexp.MustCompile(`/ui/assets/[A-Za-z0-9._-]+`).FindAllString(page.body, -1)
	if len(refs) != 2 {
		t.Fatalf("page references %v, want a script and a stylesheet", refs)
	}
	types := map[string]string{}
	for _, ref := range refs {
		r := do(t, "GET", base+ref, nil)
		if r.status != 200 || len(r.body) < 100 {
			t.Fatalf("GET %s: %d, %d bytes", ref, r.status, len(r.body))
		}
		if r.h.Get("Cache-Control") != "public, max-age=31536000, immutable" {
			t.Errorf("%s Cache-Control %q", ref, r.h.Get("Cache-Control"))
		}
		types[ref[strings.LastIndex(ref, "."):]] = r.h.Get("Content-Type")
		// Revalidation with the ETag answers 304 without a body.
		nm := do(t, "GET", base+ref, map[string]string{"If-None-Match": r.h.Get("ETag")})
		if nm.status != 304 || nm.body != "" {
			t.Errorf("conditional GET %s: %d with %d bytes", ref, nm.status, len(nm.body))
		}
	}
	if types[".js"] != "text/javascript; charset=utf-8" || types[".css"] != "text/css; charset=utf-8" {
		t.Errorf("asset types %v", types)
	}

	// An unknown asset is a 404, never the page (a stale reference fails loudly).
	r := do(t, "GET", base+"/ui/assets/app-STALE.js", nil)
	if r.status != 404 || !strings.Contains(detail(t, r), "app-STALE.js") {
		t.Errorf("unknown asset: %d %s", r.status, r.body)
	}
	// HEAD is served without a body; other methods are refused.
	if r := do(t, "HEAD", base+"/ui/", nil); r.status != 200 || r.body != "" {
		t.Errorf("HEAD /ui/: %d, %d bytes", r.status, len(r.body))
	}
	r = do(t, "POST", base+"/ui/workspaces", nil)
	if r.status != 405 || r.h.Get("Allow") != "GET, HEAD" || !strings.Contains(detail(t, r), "POST") {
		t.Errorf("POST: %d Allow %q %s", r.status, r.h.Get("Allow"), r.body)
	}
}

func TestOwns(t *testing.T) {
	for p, want := range map[string]bool{"/ui": true, "/ui/": true, "/ui/assets/a.js": true, "/uix": false, "/v1/ui": false, "/": false, "/UI": false} {
		if Owns(p) != want {
			t.Errorf("Owns(%q) = %v", p, !want)
		}
	}
}

func TestMetricsNeedTheAdminKey(t *testing.T) {
	m := telemetry.New("test-version")
	m.Ingested(3, 120)

	open := serve(t, Config{Metrics: m})
	r := do(t, "GET", open+MetricsPath, nil)
	if r.status != 200 || !strings.Contains(r.body, "loci_ingested_artifacts_total 3") || !strings.Contains(r.body, `version="test-version"`) {
		t.Fatalf("authentication off: %d %.200s", r.status, r.body)
	}
	if r.h.Get("Cache-Control") != "no-store" {
		t.Errorf("metrics Cache-Control %q", r.h.Get("Cache-Control"))
	}

	locked := serve(t, Config{AdminKey: "admin-secret", Metrics: m, KeyValid: func(k string) bool { return k == "a-tenant-key" }})
	if r := do(t, "GET", locked+MetricsPath, nil); r.status != 401 || detail(t, r) != "missing API key: send X-API-Key or Authorization: Bearer" {
		t.Errorf("no key: %d %s", r.status, r.body)
	}
	if r := do(t, "GET", locked+MetricsPath, map[string]string{"X-API-Key": "a-tenant-key"}); r.status != 403 || strings.Contains(r.body, "loci_") {
		t.Errorf("tenant key: %d %s", r.status, r.body)
	}
	if r := do(t, "GET", locked+MetricsPath, map[string]string{"X-API-Key": "not-a-key"}); r.status != 401 || detail(t, r) != "invalid API key" {
		t.Errorf("invalid key: %d %s", r.status, r.body)
	}
	if r := do(t, "GET", locked+MetricsPath, map[string]string{"X-API-Key": "admin-secret"}); r.status != 200 || !strings.Contains(r.body, "loci_ingested_artifacts_total 3") {
		t.Errorf("admin key: %d %.200s", r.status, r.body)
	}
	if r := do(t, "GET", locked+MetricsPath, map[string]string{"Authorization": "Bearer admin-secret"}); r.status != 200 || !strings.Contains(r.body, "loci_ingested_artifacts_total 3") {
		t.Errorf("admin key as a bearer token: %d", r.status)
	}
	if r := do(t, "GET", locked+MetricsPath, map[string]string{"Authorization": "Bearer a-tenant-key"}); r.status != 403 {
		t.Errorf("tenant key as a bearer token: %d", r.status)
	}
	if r := do(t, "POST", locked+MetricsPath, map[string]string{"X-API-Key": "admin-secret"}); r.status != 405 {
		t.Errorf("POST metrics: %d", r.status)
	}

	none := serve(t, Config{})
	if r := do(t, "GET", none+MetricsPath, nil); r.status != 404 {
		t.Errorf("no registry: %d", r.status)
	}
}
