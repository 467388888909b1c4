package telemetry

import (
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/internal/enginetest"
	"github.com/loci-memory/loci/retrieval"
)

// TestScrapeLints pipes real scrapes through `promtool check metrics`: before
// the engine is attached (the server is recovering) and after every kind of
// series has moved. Without promtool on PATH it is skipped, unless CI=true.
func TestScrapeLints(t *testing.T) {
	for _, withEngine := range []bool{false, true} {
		m := New("test")
		if withEngine {
			db := enginetest.Open(t, t.TempDir(), engine.Options{NoEmbedder: true})
			defer db.Close()
			m.WatchEngine(db)
			m.WatchPacks(retrieval.New(db))
			m.WatchJobs(func() int { return 2 })
			if _, err := db.Ingest("t", engine.IngestInput{Workspace: "w", ActorID: "a", Type: "note", Payload: []byte(`"hello"`)}); err != nil {
				t.Fatal(err)
			}
			r := m.Route("POST", "/v1/artifacts/{artifact_id}")
			r.Observe(201, 2*time.Millisecond)
			r.Observe(404, time.Millisecond)
			r.Observe(999, time.Millisecond) // outside 100..599: still counted
			m.PackServed(3*time.Millisecond, 120)
			m.Ingested(1, 7)
			m.RateLimited(RateConnections)
		}
		w := httptest.NewRecorder()
		AdminHandler(m).ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		text := w.Body.String()
		for _, want := range []string{"loci_build_info", "go_goroutines", "process_cpu_seconds_total"} {
			if !strings.Contains(text, want) {
				t.Errorf("engine %v: no %s", withEngine, want)
			}
		}
		if withEngine {
			for _, want := range []string{`loci_http_requests_total{method="POST",route="/v1/artifacts/{artifact_id}",status="999"} 1`,
				"loci_index_jobs_queued 2", "loci_head_artifacts 1", "loci_rate_limited_total{reason=\"connections_per_ip\"} 1",
				"loci_context_pack_tokens_total 120", "loci_context_packs_waiting 0", "loci_context_packs_cancelled_total 0"} {
				if !strings.Contains(text, want) {
					t.Errorf("no %s in:\n%s", want, text)
				}
			}
		}
		promtool, err := exec.LookPath("promtool")
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatal("promtool not on PATH (Debian: apt-get install prometheus)")
			}
			t.Skip("promtool not on PATH; skipping the lint (CI=true makes this a failure)")
		}
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(text)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("engine %v: promtool check metrics: %v\n%s", withEngine, err, out)
		}
	}
}

// TestAdminHandlerServesPprof checks the admin mux's pprof routes.
func TestAdminHandlerServesPprof(t *testing.T) {
	h := AdminHandler(New("test"))
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap?debug=1", "/debug/pprof/cmdline", "/metrics"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		if w.Code != 200 {
			t.Errorf("GET %s: %d", path, w.Code)
		}
	}
}
