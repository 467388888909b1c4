package httpd

import (
	"testing"
	"time"

	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/service"
)

// TestIngestBeforeRetentionCutoff: with retention set, an artifact
// timestamped before the workspace's cutoff is refused with a 400 naming
// its timestamp (v1, v2 items, an asynchronous v2 batch) and nothing is
// stored. Before, the engine stored it and erased it as it was applied: v1
// answered 201 for an artifact that then answered 404, and v2 answered 404
// "not found" to the ingest itself (found by schemathesis).
func TestIngestBeforeRetentionCutoff(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	h, a := retentionHarness(t, now)
	note := func(ts, content string) map[string]any {
		return map[string]any{"artifact_type": "note", "raw_payload": map[string]any{"content": content}, "timestamp": ts}
	}
	v1 := func(ts, content string) map[string]any {
		m := note(ts, content)
		m["workspace_id"], m["actor_id"] = "w", "agent-1"
		return m
	}
	recent := str(h.do("POST", "/v1/ingest", a, v1(now.Add(-time.Hour).Format(time.RFC3339), "the kestrel runbook")).must(t, 201), "artifact_id")
	old := "0372-06-03T00:58:48Z"
	h.do("POST", "/v1/ingest", a, v1(old, "an old note")).fails(t, 400, "timestamp: 0372-06-03")
	h.do("POST", "/v2/ingest", a, map[string]any{"workspace_id": "w", "actor_id": "agent-1",
		"artifacts": []any{note(now.Format(time.RFC3339), "fine"), note(old, "an old note")}}).fails(t, 400, "artifacts[1].timestamp: ")
	h.do("POST", "/v2/ingest", a, map[string]any{"workspace_id": "w", "actor_id": "agent-1", "async_index": true,
		"artifacts": []any{note(old, "an old note")}}).fails(t, 400, "artifacts[0].timestamp: ")
	// Nothing of the refused writes is stored; the recent artifact stays.
	h.do("GET", "/v1/artifacts/"+recent, a, nil).must(t, 200)
	list := h.do("GET", "/v1/workspaces/w/artifacts", a, nil).must(t, 200)
	if items, _ := list["artifacts"].([]any); len(items) != 1 {
		t.Fatalf("the workspace lists %d artifacts, want the one accepted: %v", len(items), list)
	}
	// Inside the retention window: accepted.
	h.do("POST", "/v2/ingest", a, map[string]any{"workspace_id": "w", "actor_id": "agent-1",
		"artifacts": []any{note(now.Add(-20*time.Hour).Format(time.RFC3339), "yesterday's note")}}).must(t, 201)
}

// retentionHarness starts a server whose clock stands at now, with a pro
// tenant (its key returned) whose workspace "w" keeps one day.
func retentionHarness(t *testing.T, now time.Time) (*harness, string) {
	clock := func() time.Time { return now }
	h := &harness{t: t, dir: t.TempDir(), scfg: service.Config{AdminKey: adminKey, Now: clock},
		opts: engine.Options{NoEmbedder: true, Now: clock}}
	h.start()
	t.Cleanup(h.stop)
	_, a := register(t, h, "a@example.com", "pro")
	h.do("PUT", "/v1/workspaces/w/settings", a, `{"retention_days": 1}`).must(t, 200)
	return h, a
}
