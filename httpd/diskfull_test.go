package httpd

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/loci-memory/loci/engine"
)

// TestDiskFullIs507 fills a small tmpfs under a real server: a write that
// finds no space is 507 with a detail naming the cause and Retry-After
// (it used to be 500 "internal error"), and /health, while the engine
// reports the failure, is 503 "degraded" naming it.
func TestDiskFullIs507(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=2m"); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v): needs root or CAP_SYS_ADMIN", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	h := &harness{t: t, dir: filepath.Join(dir, "data"), opts: engine.Options{NoEmbedder: true}}
	h.start()
	t.Cleanup(h.stop)

	payload := strings.Repeat("disk filling words ", 3000) // about 57 KB
	var last reply
	acked := 0
	for i := 0; i < 200; i++ {
		last = h.do("POST", "/v1/ingest", "", map[string]any{"workspace_id": "w", "actor_id": "a", "artifact_type": "note",
			"raw_payload": map[string]any{"content": payload}})
		if last.status != 201 {
			break
		}
		acked++
	}
	if acked == 0 {
		t.Fatalf("no ingest fitted: %d %s", last.status, last.body)
	}
	last.fails(t, 507, "no space left on device: write refused, nothing stored; retry when space is freed")
	if last.header.Get("Retry-After") == "" {
		t.Fatal("507 without Retry-After")
	}
	hr := h.do("GET", "/health", "", nil)
	if hr.status == 503 {
		m := hr.must(t, 503)
		if str(m, "status") != "degraded" || !strings.Contains(str(m, "reason"), "no space left on device") || hr.header.Get("Retry-After") == "" {
			t.Fatalf("health on a full disk: %s %v", hr.body, hr.header)
		}
	} else {
		hr.must(t, 200) // the engine refused the write and stayed healthy
	}
	t.Logf("%d ingests acknowledged before the disk filled; health %d %s", acked, hr.status, hr.body)
}
