package httpd

import (
	"strings"
	"testing"
)

// TestResolveConflictRemovesEveryStaleSpan: a fact stated twice and then
// changed (issue 24: "resolving one conflict left the other stale turn in
// the pack"). The pack cites the change first and marks both older turns
// superseded by it; resolving one of the conflicts in favour of the change
// outdates every span that states the superseded value, so no stale turn
// and no conflict is left; the change is still cited.
func TestResolveConflictRemovesEveryStaleSpan(t *testing.T) {
	h := newHarness(t, Config{})
	turns := []struct{ day, text string }{
		{"01", "Maya: The design sync is every Tuesday at 10:00 in room 4B."},
		{"02", "Maya: The design sync is every Tuesday at 10:00 in room 4B!"}, // excluded as a near-duplicate of 01
		{"03", "Liam: Noted, design sync Tuesdays at 10:00, I'll bring the mockups."},
		{"05", "Nora: Who should own the offsite agenda?"},
		{"08", "Maya: Heads up: the design sync is no longer 10:00, it moved to 14:30."},
	}
	ids := map[string]string{}
	for _, tu := range turns {
		m := h.do("POST", "/v1/ingest", "", map[string]any{"workspace_id": "ws", "actor_id": "agent", "artifact_type": "chat_turn",
			"raw_payload": map[string]any{"role": "user", "content": tu.text}, "timestamp": "2026-10-" + tu.day + "T10:00:00Z"}).must(t, 201)
		ids[tu.day] = str(m, "artifact_id")
	}
	pack := func() map[string]any {
		return h.do("POST", "/v1/context-pack", "", map[string]any{"workspace_id": "ws", "query": "When is the design sync?", "max_tokens": 600, "actor_id": "agent"}).must(t, 200)
	}
	cites := func(p map[string]any) []string {
		var out []string
		for _, c := range p["citations"].([]any) {
			out = append(out, str(c.(map[string]any), "artifact_id"))
		}
		return out
	}
	p := pack()
	got := cites(p)
	if len(got) < 3 || got[0] != ids["08"] {
		t.Fatalf("the change is not cited first: %v\n%s", got, str(p, "context_text"))
	}
	conflicts := p["conflicts"].([]any)
	if len(conflicts) != 2 {
		t.Fatalf("%d conflicts, want 2 (each older statement against the change):\n%s", len(conflicts), str(p, "context_text"))
	}
	newSpan := str(p["citations"].([]any)[0].(map[string]any), "span_id")
	for _, c := range conflicts {
		c := c.(map[string]any)
		if str(c, "superseded_by") != newSpan || str(c, "superseded_span_id") == "" || str(c, "superseded_span_id") == newSpan {
			t.Errorf("conflict %v: want superseded by the change %s", c, newSpan)
		}
	}
	if strings.Contains(str(p, "context_text"), "agenda") && len(conflicts) != 2 {
		t.Errorf("the agenda question is in a conflict")
	}

	// Resolve one of the two conflicts in favour of the change.
	c := conflicts[0].(map[string]any)
	fb := h.do("POST", "/v1/feedback", "", map[string]any{"workspace_id": "ws", "actor_id": "u", "action": "resolve_conflict",
		"conflict_id": str(c, "id"), "preferred_span_id": newSpan}).must(t, 201)
	if fb["applied"].(float64) != 3 {
		t.Errorf("applied %v, want 3 (the conflict's other claim, the other stale turn, the near-duplicate)", fb["applied"])
	}
	p = pack()
	for _, a := range cites(p) {
		if a == ids["01"] || a == ids["02"] || a == ids["03"] {
			t.Errorf("a stale turn is still cited after resolving:\n%s", str(p, "context_text"))
		}
	}
	outdated := 0
	rc := h.do("GET", "/v1/receipts/"+str(p, "receipt_id"), "", nil).must(t, 200)
	for _, e := range rc["exclusions"].([]any) {
		e := e.(map[string]any)
		if a := str(e, "artifact_id"); (a == ids["01"] || a == ids["02"] || a == ids["03"]) && str(e, "reason") == "OUTDATED" {
			outdated++
		}
	}
	if outdated != 3 {
		t.Errorf("%d stale turns excluded as OUTDATED, want 3: %v", outdated, rc["exclusions"])
	}
	if len(p["conflicts"].([]any)) != 0 {
		t.Errorf("conflicts left: %v", p["conflicts"])
	}
	if got := cites(p); len(got) == 0 || got[0] != ids["08"] {
		t.Errorf("the change is not cited first after resolving: %v", got)
	}
}
