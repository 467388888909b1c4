package httpd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/internal/enginetest"
	"github.com/loci-memory/loci/service"
	"github.com/loci-memory/loci/telemetry"
	"github.com/valyala/fasthttp"
)

// startObserved is newHarness with the caller's logger and metrics kept
// (newHarness silences the log).
func startObserved(t *testing.T, cfg Config, scfg service.Config) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), cfg: cfg, scfg: scfg, opts: engine.Options{NoEmbedder: true, Logger: quiet}}
	h.ctl = control.New(time.Now)
	db := enginetest.OpenControlled(t, h.dir, h.opts, h.ctl)
	h.db = db
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	cfg.Version = "test"
	h.srv = New(newService(db, h.ctl, cfg, scfg), cfg)
	go h.srv.Serve(ln)
	h.base = "http://" + ln.Addr().String()
	t.Cleanup(h.stop)
	return h
}

// scrape reads the metrics as series (name with its labels, as printed) to
// values, and returns the text too.
func scrape(t *testing.T, url string) (map[string]float64, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("scrape: %d %s", resp.StatusCode, body)
	}
	series := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("scrape: bad line %q", line)
		}
		series[line[:i]] = v
	}
	return series, string(body)
}

// promtoolCheck lints a scrape with `promtool check metrics`. Without
// promtool the test is skipped, unless CI=true, where it fails.
func promtoolCheck(t *testing.T, text string) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool not on PATH (Debian: apt-get install prometheus)")
		}
		t.Skip("promtool not on PATH; skipping the lint (CI=true makes this a failure)")
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestMetricsEndToEnd makes requests over loopback, scrapes the admin
// handler, and checks that each series moved by exactly what was done.
func TestMetricsEndToEnd(t *testing.T) {
	m := telemetry.New("test")
	h := startObserved(t, Config{Metrics: m}, service.Config{AdminKey: adminKey})
	admin := httptest.NewServer(telemetry.AdminHandler(m))
	defer admin.Close()

	_, key := register(t, h, "ops@example.com", "free") // 30 requests a minute
	for i := 0; i < 3; i++ {
		h.do("POST", "/v1/ingest", key, chatTurn("ws", "The deploy window is Tuesday "+strconv.Itoa(i))).must(t, 201)
	}
	for i := 0; i < 2; i++ {
		h.do("POST", "/v1/context-pack", key, map[string]any{"workspace_id": "ws", "query": "deploy window", "max_tokens": 300}).must(t, 200)
	}
	missing := uuid.NewString()
	h.do("GET", "/v1/artifacts/"+missing, key, nil).must(t, 404)
	h.do("GET", "/no/such/"+missing, key, nil).must(t, 404)
	h.do("GET", "/metrics", key, nil).must(t, 404) // never on the public listener
	ok := 0
	for ; ok < 100; ok++ { // 6 metered requests so far; the 25th from here is refused
		if r := h.do("GET", "/v1/billing/plan", key, nil); r.status == 429 {
			break
		} else if r.status != 200 {
			t.Fatalf("billing/plan: %d", r.status)
		}
	}

	got, text := scrape(t, admin.URL+"/metrics")
	want := map[string]float64{
		`loci_http_requests_total{method="POST",route="/v1/register",status="201"}`:               1,
		`loci_http_requests_total{method="POST",route="/v1/ingest",status="201"}`:                 3,
		`loci_http_requests_total{method="POST",route="/v1/context-pack",status="200"}`:           2,
		`loci_http_requests_total{method="GET",route="/v1/artifacts/{artifact_id}",status="404"}`: 1,
		`loci_http_requests_total{method="GET",route="unmatched",status="404"}`:                   2,
		`loci_http_requests_total{method="GET",route="/v1/billing/plan",status="200"}`:            float64(ok),
		`loci_http_requests_total{method="GET",route="/v1/billing/plan",status="429"}`:            1,
		`loci_http_request_duration_seconds_count{method="GET",route="/v1/billing/plan"}`:         float64(ok + 1),
		`loci_http_request_duration_seconds_count{method="POST",route="/v1/ingest"}`:              3,
		`loci_http_request_duration_seconds_bucket{method="POST",route="/v1/ingest",le="+Inf"}`:   3,
		`loci_context_pack_duration_seconds_count`:                                                2,
		`loci_ingested_artifacts_total`:                                                           3,
		`loci_rate_limited_total{reason="plan"}`:                                                  1,
		`loci_rate_limited_total{reason="registration"}`:                                          0,
		`loci_index_jobs_queued`:          0,
		`loci_segments`:                   0,
		`loci_compactions_total`:          0,
		`loci_storage_healthy`:            1,
		`loci_embedder_unavailable`:       0,
		`loci_ingest_backpressure`:        0,
		`loci_build_info{version="test"}`: 1,
	}
	if ok != 24 {
		t.Errorf("429 after %d plan reads, want 24 (30 per minute, 6 before)", ok)
	}
	for series, v := range want {
		if g, found := got[series]; !found || g != v {
			t.Errorf("%s = %v (found %v), want %v", series, g, found, v)
		}
	}
	for _, series := range []string{"loci_head_bytes", "loci_ingested_bytes_total", "loci_wal_fsync_duration_seconds_count",
		"loci_wal_group_commit_records_count", "loci_wal_records_total", "loci_context_pack_tokens_total"} {
		if got[series] <= 0 {
			t.Errorf("%s = %v, want > 0", series, got[series])
		}
	}
	if got["loci_wal_group_commit_records_sum"] < 3 {
		t.Errorf("group commits made %v records durable, want at least the 3 ingests", got["loci_wal_group_commit_records_sum"])
	}
	if strings.Contains(text, missing) {
		t.Error("a raw path's id became a label value")
	}
	promtoolCheck(t, text)

	if err := h.db.Flush(); err != nil {
		t.Fatal(err)
	}
	got, _ = scrape(t, admin.URL+"/metrics")
	if got["loci_segments"] != 1 || got["loci_segment_bytes"] <= 0 {
		t.Errorf("after a flush: segments %v, bytes %v", got["loci_segments"], got["loci_segment_bytes"])
	}
}

// lockedBuffer collects log output from any goroutine.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestAccessLog checks the access log's JSON lines: one per request, with
// request id, tenant, route pattern, status, duration and sizes, and never a
// key or a request body.
func TestAccessLog(t *testing.T) {
	var logs lockedBuffer
	h := startObserved(t, Config{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}, service.Config{AdminKey: adminKey})
	tenant, key := register(t, h, "logs@example.com", "pro")
	const secret = "the-body-must-not-be-logged"
	ingest := chatTurn("ws", secret)
	body, _ := json.Marshal(ingest)
	missing := uuid.NewString()

	cases := []struct {
		method, path, key string
		body              any
		route, tenant     string
		status            int
	}{
		{"POST", "/v1/ingest", key, ingest, "/v1/ingest", tenant, 201},
		{"GET", "/v1/artifacts/" + missing, key, nil, "/v1/artifacts/{artifact_id}", tenant, 404},
		{"GET", "/v1/keys", "lk_wrong", nil, "/v1/keys", "", 401},
		{"GET", "/health", "", nil, "/health", "", 200},
		{"DELETE", "/nowhere", key, nil, "unmatched", "", 404},
	}
	ids := map[string]int{} // request id -> case
	for i, c := range cases {
		r := h.do(c.method, c.path, c.key, c.body)
		if r.status != c.status {
			t.Fatalf("%s %s: %d, want %d", c.method, c.path, r.status, c.status)
		}
		ids[r.header.Get("X-Request-ID")] = i
	}
	h.stop() // every line written

	out := logs.String()
	for _, s := range []string{adminKey, key, secret} {
		if strings.Contains(out, s) {
			t.Errorf("the log holds %q", s)
		}
	}
	seen := map[int]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e struct {
			RequestID, Tenant, Method, Route string
			Status, BytesIn, BytesOut        int
		}
		var raw map[string]any
		if err := json.Unmarshal([]byte(line), &raw); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		if raw["msg"] != "http request" {
			continue
		}
		e.RequestID, e.Tenant, e.Method, e.Route = raw["request_id"].(string), raw["tenant"].(string), raw["method"].(string), raw["route"].(string)
		e.Status, e.BytesIn, e.BytesOut = int(raw["status"].(float64)), int(raw["bytes_in"].(float64)), int(raw["bytes_out"].(float64))
		i, ok := ids[e.RequestID]
		if !ok {
			continue // the registration
		}
		c := cases[i]
		seen[i] = true
		if e.Route != c.route || e.Tenant != c.tenant || e.Status != c.status || e.Method != c.method || e.BytesOut <= 0 {
			t.Errorf("%s %s: logged %+v", c.method, c.path, e)
		}
		if d, ok := raw["duration_ms"].(float64); !ok || d < 0 {
			t.Errorf("%s %s: duration_ms %v", c.method, c.path, raw["duration_ms"])
		}
		if c.body != nil && e.BytesIn != len(body) {
			t.Errorf("%s %s: bytes_in %d, want %d", c.method, c.path, e.BytesIn, len(body))
		}
	}
	if len(seen) != len(cases) {
		t.Errorf("access lines for %d of %d requests:\n%s", len(seen), len(cases), out)
	}
}

// BenchmarkObserve measures what each request pays for its metrics and its
// access log line (to io.Discard: the encoding, not the disk), per format,
// and with the access log off (LOG_LEVEL=warn).
func BenchmarkObserve(b *testing.B) {
	for _, bc := range []struct {
		name string
		h    slog.Handler
	}{
		{"json", slog.NewJSONHandler(io.Discard, nil)},
		{"text", slog.NewTextHandler(io.Discard, nil)},
		{"off", slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn})},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := NewStarting(Config{Logger: slog.New(bc.h)})
			var ctx fasthttp.RequestCtx
			ctx.Request.Header.SetMethod("POST")
			ctx.Request.SetBody(make([]byte, 512))
			ctx.Response.SetStatusCode(200)
			ctx.Response.SetBody(make([]byte, 2048))
			sv := served{route: s.router.routes[0], tenant: "tenant-1", call: &call{}}
			requestID(&ctx)
			b.ReportAllocs()
			for b.Loop() {
				s.observe(&ctx, &sv, 1500*time.Microsecond)
			}
		})
	}
}

// TestAccessLogOddRequests: requests refused before a handler runs are
// logged with the method the client sent, the route it matched and a true
// duration: a body over the limit by its Content-Length or as it streams
// (chunked), and requests fasthttp cannot read (method "-", duration 0,
// not fasthttp's default GET and the time since year 1). They are 4xx: at
// LOG_LEVEL=warn nothing of them is logged, fasthttp's own message included.
func TestAccessLogOddRequests(t *testing.T) {
	big := strings.Repeat(" ", 5000)
	cases := []struct {
		name, raw     string
		status        int
		method, route string
	}{
		{"content-length over the limit", "POST /v1/ingest HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n" + big,
			413, "POST", "/v1/ingest"},
		{"chunked over the limit", "POST /v1/ingest HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nX-API-Key: " + adminKey +
			"\r\nTransfer-Encoding: chunked\r\n\r\n" + fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(big), big),
			413, "POST", "/v1/ingest"},
		{"unreadable content-length", "POST /v1/ingest HTTP/1.1\r\nHost: localhost\r\nContent-Length: 99999999999999999999\r\n\r\n",
			400, "-", telemetry.UnmatchedRoute},
		{"unreadable request line", "POST\r\n\r\n", 400, "-", telemetry.UnmatchedRoute},
	}
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelWarn} {
		t.Run(level.String(), func(t *testing.T) {
			var logs lockedBuffer
			h := startObserved(t, Config{MaxRequestBytes: 1000, Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: level}))},
				service.Config{AdminKey: adminKey})
			addr := strings.TrimPrefix(h.base, "http://")
			ids := map[string]int{}
			for i, c := range cases {
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				io.WriteString(conn, c.raw)
				resp, _ := answer(t, conn)
				conn.Close()
				if resp.StatusCode != c.status {
					t.Fatalf("%s: status %d, want %d", c.name, resp.StatusCode, c.status)
				}
				ids[resp.Header.Get("X-Request-ID")] = i
			}
			h.stop()
			out := strings.TrimSpace(logs.String())
			if level == slog.LevelWarn {
				if out != "" {
					t.Fatalf("LOG_LEVEL=warn logged 4xx requests:\n%s", out)
				}
				return
			}
			seen := 0
			for _, line := range strings.Split(out, "\n") {
				var e struct {
					Msg, RequestID, Method, Route string
					Status                        int
					DurationMS                    float64
				}
				var raw map[string]any
				if err := json.Unmarshal([]byte(line), &raw); err != nil {
					t.Fatalf("not JSON: %q", line)
				}
				if raw["msg"] != "http request" {
					continue
				}
				i, ok := ids[raw["request_id"].(string)]
				if !ok {
					continue
				}
				seen++
				c := cases[i]
				e.Method, e.Route, e.Status, e.DurationMS = raw["method"].(string), raw["route"].(string), int(raw["status"].(float64)), raw["duration_ms"].(float64)
				if e.Method != c.method || e.Route != c.route || e.Status != c.status || e.DurationMS < 0 || e.DurationMS > 60_000 {
					t.Errorf("%s: logged method %s route %s status %d duration_ms %v", c.name, e.Method, e.Route, e.Status, e.DurationMS)
				}
			}
			if seen != len(cases) {
				t.Errorf("access lines for %d of %d requests:\n%s", seen, len(cases), out)
			}
		})
	}
}
