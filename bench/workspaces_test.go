package bench

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/embed/glove"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/httpd"
	"github.com/loci-memory/loci/wal"
	"github.com/valyala/fasthttp"
)

// writeTinyLoCoMo writes a file in LoCoMo's layout under dir/locomo: two
// conversations of turns, each text said once, with a question each.
func writeTinyLoCoMo(t *testing.T, dir string, turns int) {
	t.Helper()
	var convs []map[string]any
	for c := range 2 {
		var session []map[string]string
		for i := range turns {
			speaker := []string{"Ann", "Bob"}[i%2]
			session = append(session, map[string]string{"speaker": speaker, "dia_id": fmt.Sprintf("D1:%d", i+1),
				"text": fmt.Sprintf("conversation %d turn %d: %s went hiking near lake number %d", c, i, speaker, i*7+c)})
		}
		convs = append(convs, map[string]any{
			"qa": []map[string]any{{"question": fmt.Sprintf("Where did Ann go hiking in conversation %d?", c), "evidence": []string{"D1:1"}, "category": 4}},
			"conversation": map[string]any{"speaker_a": "Ann", "speaker_b": "Bob",
				"session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": session},
		})
	}
	b, err := json.Marshal(convs)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "locomo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "locomo", "locomo-dev.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWorkspaces runs `loci bench workspaces` at a tiny scale and checks
// that every workspace holds the seeded run of turns the benchmark says
// it sent, that each distinct text was embedded once while building, and
// that every phase reported its figures.
func TestWorkspaces(t *testing.T) {
	data, dir := t.TempDir(), filepath.Join(t.TempDir(), "db")
	const turns = 6
	writeTinyLoCoMo(t, data, turns)
	prof := filepath.Join(t.TempDir(), "heap.pb.gz")
	cfg := WorkspacesConfig{Workspaces: 3, MinArtifacts: 2, MaxArtifacts: 5, Writers: 2, Packs: 4, MaxTokens: 256, Seed: 9,
		Data: data, Sync: wal.SyncOff, Embedding: Embedding{Embedder: glove.New()}, Dir: dir, MemProfile: prof}
	res, err := Workspaces(cfg)
	if err != nil {
		t.Fatal(err)
	}
	convs, err := readLoCoMo(filepath.Join(data, "locomo", "locomo-dev.json"))
	if err != nil {
		t.Fatal(err)
	}
	pool := &wsTurns{convs: convs}
	db, err := engine.Open(dir, engine.Options{Embedder: glove.New(), DisableBackground: true, Control: control.New(time.Now)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	total := 0
	for w := range cfg.Workspaces {
		_, want := pool.content(cfg.Seed, w, cfg.MinArtifacts, cfg.MaxArtifacts)
		if len(want) < cfg.MinArtifacts || len(want) > cfg.MaxArtifacts {
			t.Fatalf("workspace %d: %d turns, outside %d-%d", w, len(want), cfg.MinArtifacts, cfg.MaxArtifacts)
		}
		arts, _, err := db.WorkspaceContent(httpd.DefaultTenant, wsName(w))
		if err != nil {
			t.Fatal(err)
		}
		if len(arts) != len(want) {
			t.Fatalf("workspace %d holds %d artifacts, want %d", w, len(arts), len(want))
		}
		total += len(want)
	}
	if res.Artifacts != total {
		t.Errorf("reported %d artifacts, the workspaces hold %d", res.Artifacts, total)
	}
	if res.TextsServed != total || res.TextsEmbedded > 2*turns || res.TextsEmbedded == 0 {
		t.Errorf("texts served %d (want %d), embedded %d (want 1-%d: each distinct text once)", res.TextsServed, total, res.TextsEmbedded, 2*turns)
	}
	if res.Packs != cfg.Packs || res.PackP99ms <= 0 || res.WorkspacesRd == 0 || res.WorkspacesRd > cfg.Workspaces {
		t.Errorf("packs %d, p99 %.2f ms, workspaces read %d", res.Packs, res.PackP99ms, res.WorkspacesRd)
	}
	for name, m := range map[string]Memory{"ingest": res.AfterIngest, "compaction": res.AfterCompact, "restart": res.AfterRestart, "packs": res.AfterPacks} {
		if m.RSSMiB <= 0 || m.HWMMiB < m.RSSMiB || m.HeapMiB <= 0 {
			t.Errorf("memory after %s: %+v", name, m)
		}
	}
	if res.IngestPerS <= 0 || res.OpenSeconds <= 0 || res.DiskBytes <= 0 || res.Segments == 0 {
		t.Errorf("ingest %.0f/s, reopen %.3fs, disk %d B, %d segments", res.IngestPerS, res.OpenSeconds, res.DiskBytes, res.Segments)
	}
	if fi, err := os.Stat(prof); err != nil || fi.Size() == 0 {
		t.Errorf("heap profile: %v", err)
	}
	if _, err := Workspaces(cfg); err == nil {
		t.Error("a second run in the same directory was not refused")
	}
}

// TestLoadFromRetriesBusy checks that loadFrom with retryBusy sends a
// request the server refused with 503 again after its Retry-After, counts
// it, and that without retryBusy a 503 is an error.
func TestLoadFromRetriesBusy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if calls.Add(1) == 1 { // the first request is refused once
			ctx.Response.Header.Set("Retry-After", "1")
			ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
			return
		}
		ctx.SetStatusCode(fasthttp.StatusCreated)
	}}
	go srv.Serve(ln)
	defer srv.Shutdown()
	body := func(int) []byte { return []byte("{}") }
	lv, err := loadFrom(ln.Addr().String(), "/v2/ingest", 3, body, 1, 201, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lv.Refused != 1 || lv.Requests != 3 || calls.Load() != 4 || lv.MaxMs < 1000 {
		t.Errorf("refused %d, requests %d, calls %d, max %.0f ms; want 1 refusal retried after 1 s, 3 requests, 4 calls", lv.Refused, lv.Requests, calls.Load(), lv.MaxMs)
	}
	calls.Store(0)
	if _, err := loadFrom(ln.Addr().String(), "/v2/ingest", 3, body, 1, 201, false, nil); err == nil {
		t.Error("a 503 without retryBusy was not an error")
	}
}
