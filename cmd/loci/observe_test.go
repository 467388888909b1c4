package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/loci-memory/loci/internal/proctest"
)

// TestServeAdminListener runs `loci serve --admin-addr` with JSON logs and
// checks that the admin listener serves pprof and metrics, that /metrics is
// not on the public listener, and that every log line is JSON, with access
// lines for the requests made.
func TestServeAdminListener(t *testing.T) {
	bin := proctest.Loci(t)
	admin := proctest.FreeAddr(t)
	p := startServeWith(t, bin, t.TempDir(), serveOptions{
		args: []string{"--admin-addr", admin, "--embedder", "none"},
		env:  []string{"LOG_FORMAT=json", "LOG_LEVEL=info"},
	})
	get := func(url string) (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		url, want string
		status    int
	}{
		{"http://" + admin + "/debug/pprof/", "goroutine", 200},
		{"http://" + admin + "/debug/pprof/cmdline", "serve", 200},
		{"http://" + admin + "/metrics", `loci_http_requests_total{method="GET",route="/health",status="200"}`, 200},
		{"http://" + admin + "/metrics", "go_goroutines", 200},
		{"http://" + p.addr + "/metrics", "no route", 404},
		{"http://" + p.addr + "/debug/pprof/", "no route", 404},
	} {
		if status, body := get(c.url); status != c.status || !strings.Contains(body, c.want) {
			t.Errorf("GET %s: %d, want %d with %q:\n%.300s", c.url, status, c.status, c.want, body)
		}
	}
	p.stop(t)
	access := 0
	for _, line := range strings.Split(strings.TrimSpace(p.logs()), "\n") {
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("LOG_FORMAT=json wrote a line that is not JSON: %q", line)
		}
		if e["msg"] == "http request" {
			access++
		}
	}
	if access < 3 { // /health at start, the two public 404s
		t.Errorf("%d access log lines:\n%s", access, p.logs())
	}
}

func TestNewLogger(t *testing.T) {
	for _, c := range []struct {
		format, level string
		ok            bool
		debug, json   bool
	}{
		{"text", "info", true, false, false},
		{"json", "debug", true, true, true},
		{"JSON", "warn", true, false, true},
		{"text", "error", true, false, false},
		{"xml", "info", false, false, false},
		{"text", "loud", false, false, false},
	} {
		var buf bytes.Buffer
		log, err := newLogger(&buf, c.format, c.level)
		if (err == nil) != c.ok {
			t.Errorf("newLogger(%q, %q): err %v", c.format, c.level, err)
			continue
		}
		if err != nil {
			continue
		}
		log.Debug("d")
		log.Error("e")
		if got := strings.Contains(buf.String(), `"msg":"d"`) || strings.Contains(buf.String(), "msg=d"); got != c.debug {
			t.Errorf("%s/%s: debug logged %v\n%s", c.format, c.level, got, buf.String())
		}
		if got := strings.HasPrefix(buf.String(), "{"); got != c.json {
			t.Errorf("%s/%s: JSON %v", c.format, c.level, got)
		}
	}
}
