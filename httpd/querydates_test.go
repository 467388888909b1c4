package httpd

import (
	"strings"
	"testing"
	"time"

	"github.com/loci-memory/loci/service"
)

// datedTurns stores a conversation over four days: the decision of
// October 13 shares the query's words no more than the later turns do.
func datedTurns(t *testing.T, h *harness) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for _, turn := range []struct{ at, text string }{
		{"2026-10-13T10:00:00Z", "Maya: we decide to ship the beta to the pilot customers first."},
		{"2026-10-20T09:00:00Z", "Sam: we decide the venue later, decide by Friday, decide nothing now."},
		{"2026-11-02T16:00:00Z", "Sam: we decide the offsite budget next week; we decide who owns the agenda."},
		{"2026-11-04T08:00:00Z", "Maya: the launch checklist is in the wiki."},
	} {
		in := chatTurn("dates", turn.text)
		in["timestamp"] = turn.at
		ids[turn.at[:10]] = str(h.do("POST", "/v1/ingest", "", in).must(t, 201), "artifact_id")
	}
	return ids
}

// firstCited is the artifact id of a v1 pack's first citation.
func firstCited(t *testing.T, m map[string]any) string {
	t.Helper()
	cites := m["citations"].([]any)
	if len(cites) == 0 {
		t.Fatalf("no citation: %v", m)
	}
	return str(cites[0].(map[string]any), "artifact_id")
}

// TestQueryDatesOverHTTP: a date in the query makes the pack prefer the
// turns of that day, resolved against as_of; the v2 pack's assumptions and
// the receipt's query_windows show the window; a query without a date has
// neither.
func TestQueryDatesOverHTTP(t *testing.T) {
	h := newHarness(t, Config{})
	ids := datedTurns(t, h)
	ask := func(query string, asOf any) map[string]any {
		body := map[string]any{"workspace_id": "dates", "query": query, "max_tokens": 512}
		if asOf != nil {
			body["as_of"] = asOf
		}
		return h.do("POST", "/v1/context-pack", "", body).must(t, 200)
	}
	receipt := func(m map[string]any) map[string]any {
		return h.do("GET", "/v1/receipts/"+str(m, "receipt_id"), "", nil).must(t, 200)
	}

	plain := ask("What did we decide?", "2026-11-05T12:00:00Z")
	if firstCited(t, plain) == ids["2026-10-13"] {
		t.Fatal("without a date the October 13 turn already leads: the test proves nothing")
	}
	if rc := receipt(plain); rc["query_windows"] != nil || strings.Contains(strings.Join(strs(rc["assumptions"]), " "), "query dates") {
		t.Errorf("a query without a date: query_windows %v, assumptions %v", rc["query_windows"], rc["assumptions"])
	}

	dated := ask("What did we decide on October 13?", "2026-11-05T12:00:00Z")
	if got := firstCited(t, dated); got != ids["2026-10-13"] {
		t.Errorf("first citation %s, want the turn of October 13 (%s)", got, ids["2026-10-13"])
	}
	if n := len(dated["citations"].([]any)); n < 3 {
		t.Errorf("%d citations: the window must not filter the other turns out", n)
	}
	rc := receipt(dated)
	ws, _ := rc["query_windows"].([]any)
	if len(ws) != 1 {
		t.Fatalf("receipt query_windows %v, want one", rc["query_windows"])
	}
	w := ws[0].(map[string]any)
	if str(w, "expression") != "October 13" || str(w, "start") != "2026-10-13T00:00:00Z" || str(w, "end") != "2026-10-14T00:00:00Z" {
		t.Errorf("query window %v", w)
	}
	v2 := h.do("POST", "/v2/context-pack", "", map[string]any{"workspace_id": "dates", "query": "What did we decide on October 13?",
		"max_tokens": 512, "as_of": "2026-11-05T12:00:00Z"}).must(t, 200)
	if a := strings.Join(strs(v2["assumptions"]), " "); !strings.Contains(a, `"October 13" = [2026-10-13T00:00:00Z, 2026-10-14T00:00:00Z)`) {
		t.Errorf("v2 assumptions %q do not show the window", a)
	}

	// The default as_of is the newest artifact time (November 4): a year-less
	// date after it is last year's, and "yesterday" is November 3.
	if w := receipt(ask("What did we decide yesterday?", nil))["query_windows"].([]any)[0].(map[string]any); str(w, "start") != "2026-11-03T00:00:00Z" {
		t.Errorf("yesterday against the default as_of: %v", w)
	}
}

// TestQueryDatesAsOfNow: as_of "now" is the one pack that reads the clock
// (the service's).
func TestQueryDatesAsOfNow(t *testing.T) {
	now := time.Date(2026, 11, 5, 12, 0, 0, 0, time.UTC) // a Thursday
	h := newHarness(t, Config{}, service.Config{Now: func() time.Time { return now }})
	ids := datedTurns(t, h)
	m := h.do("POST", "/v1/context-pack", "", map[string]any{"workspace_id": "dates", "query": "What did we decide 23 days ago?",
		"max_tokens": 512, "as_of": "now"}).must(t, 200)
	if got := firstCited(t, m); got != ids["2026-10-13"] {
		t.Errorf("first citation %s, want the turn of October 13 (%s)", got, ids["2026-10-13"])
	}
	rc := h.do("GET", "/v1/receipts/"+str(m, "receipt_id"), "", nil).must(t, 200)
	if w := rc["query_windows"].([]any)[0].(map[string]any); str(w, "start") != "2026-10-13T00:00:00Z" {
		t.Errorf("23 days ago against now (November 5): %v", w)
	}
	h.do("POST", "/v1/context-pack", "", map[string]any{"workspace_id": "dates", "query": "x", "as_of": "later"}).fails(t, 400, "as_of")
}

// strs is a JSON array of strings.
func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}
