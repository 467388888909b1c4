package httpd

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/loci-memory/loci/console"
	"github.com/loci-memory/loci/service"
	"github.com/loci-memory/loci/telemetry"
	"github.com/valyala/fasthttp"
)

// TestConsoleMount checks that Config.Console takes exactly /ui and the
// paths under it, before authentication (the console's page must load for
// signing in), and that its requests are counted under one route.
func TestConsoleMount(t *testing.T) {
	m := telemetry.New("test")
	ui := func(ctx *fasthttp.RequestCtx) {
		ctx.SetStatusCode(fasthttp.StatusOK)
		ctx.SetBodyString("console " + string(ctx.Method()) + " " + string(ctx.Request.URI().PathOriginal()))
	}
	h := newHarness(t, Config{Console: ui, Metrics: m}, service.Config{AdminKey: "admin-key"})
	for _, c := range []struct{ method, path string }{
		{"GET", "/ui"}, {"GET", "/ui/"}, {"GET", "/ui/workspaces/a%2Fb"}, {"GET", "/ui/assets/app-X.js"}, {"POST", "/ui/api/metrics"},
	} {
		r := h.do(c.method, c.path, "", nil)
		if r.status != 200 || string(r.body) != "console "+c.method+" "+c.path {
			t.Errorf("%s %s: %d %q", c.method, c.path, r.status, r.body)
		}
	}
	// Neighbours stay with the API router.
	h.do("GET", "/uix", "admin-key", nil).fails(t, 404, "no route for /uix")
	h.do("GET", "/v1/ui", "admin-key", nil).fails(t, 404, "no route for /v1/ui")

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{`loci_http_requests_total{method="GET",route="/ui/*",status="200"} 4`,
		`loci_http_requests_total{method="OTHER",route="/ui/*",status="200"} 1`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %s", want)
		}
	}

	// Without a console, /ui is an ordinary unknown path.
	bare := newHarness(t, Config{})
	bare.do("GET", "/ui", "", nil).fails(t, 404, "no route for /ui")
}

// TestConsoleMetricsKeys serves the real console through the real server:
// its metrics endpoint answers an invalid key 401, as the API does (it was
// 403), a tenant's valid key 403 (it lacks the right), the admin key 200.
func TestConsoleMetricsKeys(t *testing.T) {
	m := telemetry.New("test")
	var h *harness
	ui, err := console.New(console.Config{AdminKey: adminKey, Metrics: m,
		KeyValid: func(k string) bool { return h.srv.KeyValid(k) }})
	if err != nil {
		t.Fatal(err)
	}
	h = newHarness(t, Config{Console: ui.Serve, Metrics: m}, service.Config{AdminKey: adminKey})
	_, tenant := register(t, h, "metrics@example.com", "pro")
	for _, c := range []struct {
		name, key string
		status    int
		detail    string
	}{
		{"no key", "", 401, "missing API key: send X-API-Key or Authorization: Bearer"},
		{"invalid key", "not-a-key", 401, "invalid API key"},
		{"tenant key", tenant, 403, "admin key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h.do("GET", console.MetricsPath, c.key, nil).fails(t, c.status, c.detail)
		})
	}
	if r := h.do("GET", console.MetricsPath, adminKey, nil); r.status != 200 || !strings.Contains(string(r.body), "loci_") {
		t.Fatalf("admin key: %d %.200s", r.status, r.body)
	}
}

// TestRootRedirect: GET / (and HEAD) on a server with the console answers
// 302 to /ui, which serves the page; other methods are refused; without a
// console, / is an ordinary unknown path.
func TestRootRedirect(t *testing.T) {
	ui, err := console.New(console.Config{AdminKey: adminKey})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Config{Console: ui.Serve}, service.Config{AdminKey: adminKey})
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, c := range []struct {
		method   string
		status   int
		location string
	}{{"GET", 302, "/ui"}, {"HEAD", 302, "/ui"}, {"POST", 405, ""}} {
		req, _ := http.NewRequest(c.method, h.base+"/", nil)
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status || resp.Header.Get("Location") != c.location {
			t.Errorf("%s /: %d Location %q, want %d %q", c.method, resp.StatusCode, resp.Header.Get("Location"), c.status, c.location)
		}
	}
	// Followed, it lands on the console's page.
	if r := h.do("GET", "/", "", nil); r.status != 200 || !strings.Contains(string(r.body), "<div id=\"app\">") {
		t.Errorf("GET / followed: %d %.200s", r.status, r.body)
	}
	newHarness(t, Config{}).do("GET", "/", "", nil).fails(t, 404, "no route for /")
}
