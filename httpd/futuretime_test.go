package httpd

import (
	"slices"
	"testing"
	"time"
)

// TestFarFutureTimestamp: a timestamp more than a day after the server's
// clock is refused with a 400 naming the field (v1, v2 batches, the API's
// only ways to set one), and with retention set, no accepted write (the
// latest accepted time included) erases other artifacts, through
// compaction and a restart. Before, a single artifact stamped 2999 became
// the workspace's newest and its cutoff erased every other one.
func TestFarFutureTimestamp(t *testing.T) {
	now := time.Date(2026, 6, 1, 1, 0, 0, 0, time.UTC)
	h, a := retentionHarness(t, now)

	ingest := func(ts time.Time, content string) reply {
		return h.do("POST", "/v1/ingest", a, map[string]any{"workspace_id": "w", "actor_id": "agent-1", "artifact_type": "note",
			"raw_payload": map[string]any{"content": content}, "timestamp": ts.Format(time.RFC3339)})
	}
	// 90 and 30 minutes old: inside a one-day retention by any clock.
	var kept []string
	for i, ts := range []time.Time{now.Add(-90 * time.Minute), now.Add(-30 * time.Minute)} {
		kept = append(kept, str(ingest(ts, []string{"the kestrel runbook", "the kestrel rota"}[i]).must(t, 201), "artifact_id"))
	}
	for _, c := range []struct {
		name, ts string
	}{
		{"year 2999", "2999-01-01T00:00:00Z"},
		{"a second past a day", now.Add(24*time.Hour + time.Second).Format(time.RFC3339)},
	} {
		t.Run(c.name, func(t *testing.T) {
			h.do("POST", "/v1/ingest", a, map[string]any{"workspace_id": "w", "actor_id": "agent-1", "artifact_type": "note",
				"raw_payload": map[string]any{"content": "from the future"}, "timestamp": c.ts}).
				fails(t, 400, "timestamp: "+c.ts[:4])
			h.do("POST", "/v2/ingest", a, map[string]any{"workspace_id": "w", "actor_id": "agent-1", "artifacts": []any{
				map[string]any{"artifact_type": "note", "raw_payload": map[string]any{"content": "from the future"}, "timestamp": c.ts}}}).
				fails(t, 400, "artifacts[0].timestamp: ")
		})
	}
	// The latest time accepted: a day ahead. Taken from the timestamp, the
	// cutoff would be 2026-06-01T00:00Z and erase the first artifact.
	kept = append(kept, str(ingest(now.Add(24*time.Hour-time.Minute), "the kestrel plan for tomorrow").must(t, 201), "artifact_id"))
	check := func(when string) {
		t.Helper()
		for _, id := range kept {
			if r := h.do("GET", "/v1/artifacts/"+id, a, nil); r.status != 200 {
				t.Fatalf("%s: artifact %s answers %d: %s", when, id, r.status, r.body)
			}
		}
		got := listAll(t, h, a, "w", "", 10, nil)
		want := []string{kept[2], kept[1], kept[0]}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: listing %v, want %v", when, got, want)
		}
	}
	check("after the writes")
	if err := h.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := h.db.Compact(); err != nil {
		t.Fatal(err)
	}
	check("after compaction")
	h.restart()
	check("after a restart")
}
