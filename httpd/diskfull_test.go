package httpd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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

// TestHealthStaysDegradedWhileWritesFail: after a write is refused for lack
// of space (507), /health said 200 "ok" as soon as the WAL's idle check
// could write a page, although the same write still did not fit. It stays
// 503 "degraded" while the refused write would not fit, and turns ok once
// space is freed.
func TestHealthStaysDegradedWhileWritesFail(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=2m"); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v): needs root or CAP_SYS_ADMIN", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	ballast := filepath.Join(dir, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 256<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, dir: filepath.Join(dir, "data"), opts: engine.Options{NoEmbedder: true, WALRetryInterval: 2 * time.Millisecond}}
	h.start()
	t.Cleanup(h.stop)
	note := map[string]any{"workspace_id": "w", "actor_id": "a", "artifact_type": "note",
		"raw_payload": map[string]any{"content": strings.Repeat("disk filling words ", 3000)}} // about 57 KB
	for i := 0; ; i++ {
		r := h.do("POST", "/v1/ingest", "", note)
		if r.status == 507 {
			break
		}
		if r.status != 201 || i > 200 {
			t.Fatalf("ingest %d: %d %s", i, r.status, r.body)
		}
	}
	// Leave 16 KiB free: room for the WAL's idle check, not for the note.
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, int64(st.Bavail)*st.Bsize-16<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	degraded := func(when string) {
		t.Helper()
		m := h.do("GET", "/health", "", nil).must(t, 503)
		if str(m, "status") != "degraded" || !strings.Contains(str(m, "reason"), "no space left on device") {
			t.Fatalf("%s: health %v", when, m)
		}
	}
	for i := range 2 {
		h.do("POST", "/v1/ingest", "", note).fails(t, 507, "no space left on device")
		time.Sleep(200 * time.Millisecond) // the idle check runs every 2 ms
		degraded(fmt.Sprintf("16 KiB free, refusal %d", i+1))
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for h.do("GET", "/health", "", nil).status != 200 {
		if time.Now().After(deadline) {
			t.Fatal("health never recovered after space was freed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.do("POST", "/v1/ingest", "", note).must(t, 201)
}
