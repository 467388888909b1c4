package httpd

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/internal/enginetest"
	"github.com/loci-memory/loci/service"
)

// harness runs the real server on a loopback port over a real engine and
// control state in a temporary data directory, and can restart it there.
// It wires them as cmd/loci does (newService).
type harness struct {
	t    *testing.T
	dir  string
	cfg  Config
	scfg service.Config
	opts engine.Options
	db   *engine.DB
	ctl  *control.Store
	srv  *Server
	base string
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newHarness starts a server with cfg over a service with scfg (at most
// one; default: authentication off).
func newHarness(t *testing.T, cfg Config, scfg ...service.Config) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), cfg: cfg, opts: engine.Options{NoEmbedder: true}}
	if len(scfg) > 0 {
		h.scfg = scfg[0]
	}
	h.start()
	t.Cleanup(h.stop)
	return h
}

func (h *harness) start() {
	h.t.Helper()
	now := h.scfg.Now
	if now == nil {
		now = time.Now
	}
	h.ctl = control.New(now)
	opts := h.opts
	opts.Logger = quiet
	db := enginetest.OpenControlled(h.t, h.dir, opts, h.ctl)
	h.db = db
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		h.t.Fatal(err)
	}
	cfg := h.cfg
	cfg.Version, cfg.Logger = "test", quiet
	h.srv = New(newService(db, h.ctl, cfg, h.scfg), cfg)
	go h.srv.Serve(ln)
	h.base = "http://" + ln.Addr().String()
}

// newService is the service a server with cfg serves over db and its
// control state ctl, as cmd/loci builds it: scfg, logging to the server's
// logger unless it has its own.
func newService(db *engine.DB, ctl *control.Store, cfg Config, scfg service.Config) *service.Service {
	if scfg.Logger == nil {
		scfg.Logger = cfg.Logger
	}
	return service.New(db, ctl, scfg)
}

func (h *harness) stop() {
	if h.srv == nil {
		return
	}
	h.srv.Shutdown()
	h.db.Close()
	h.srv = nil
}

func (h *harness) restart() {
	h.t.Helper()
	h.stop()
	h.start()
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request: body is nil, a string sent as is, or a value sent as JSON.
func (h *harness) do(method, path, key string, body any) reply {
	h.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			h.t.Fatal(err)
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, h.base+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return h.roundTrip(req)
}

// roundTrip sends req and reads the whole answer, which must carry an
// X-Request-ID.
func (h *harness) roundTrip(req *http.Request) reply {
	h.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	if resp.Header.Get("X-Request-ID") == "" {
		h.t.Errorf("%s %s: no X-Request-ID", req.Method, req.URL.Path)
	}
	return reply{resp.StatusCode, resp.Header, b}
}

// must checks the status and decodes the body into a generic object.
func (r reply) must(t *testing.T, status int) map[string]any {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, r.body)
	}
	return m
}

// fails checks an error reply: status, {"detail": ...} only, and that the
// detail mentions want.
func (r reply) fails(t *testing.T, status int, want string) {
	t.Helper()
	m := r.must(t, status)
	d, ok := m["detail"].(string)
	if !ok || len(m) != 1 && m["request_id"] == nil {
		t.Fatalf("error body %s is not {\"detail\": ...}", r.body)
	}
	if !bytes.Contains([]byte(d), []byte(want)) {
		t.Fatalf("detail %q does not mention %q", d, want)
	}
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }
