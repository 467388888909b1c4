package httpd

import (
	"fmt"
	"slices"
	"testing"

	"github.com/loci-memory/loci/service"
)

// TestRetentionOverHTTP: settings are set, read and cleared per tenant;
// bad input is a 400 naming the field; listings and packs exclude the
// artifacts older than the cutoff, taken from the newest artifact time.
func TestRetentionOverHTTP(t *testing.T) {
	h := newHarness(t, Config{}, service.Config{AdminKey: adminKey})
	_, a := register(t, h, "a@example.com", "pro")
	_, b := register(t, h, "b@example.com", "pro")
	const day = 24 * 60 // minutes; ingestAt counts from 2026-01-01T09:00Z
	old := ingestAt(t, h, a, "shared", "tenant A old note: the wombatrail launch is on Friday", "", 0)
	mid := ingestAt(t, h, a, "shared", "tenant A note: the wombatrail launch moved to Monday", "", 5*day)
	newest := ingestAt(t, h, a, "shared", "tenant A newest note: the wombatrail launch is confirmed", "", 10*day)
	idB := ingestAt(t, h, b, "shared", "tenant B note: the wombatrail launch of B", "", 0)

	settings := "/v1/workspaces/shared/settings"
	get := func(key string) map[string]any { return h.do("GET", settings, key, nil).must(t, 200) }
	if m := get(a); str(m, "workspace_id") != "shared" || m["retention_days"] != nil || len(m) != 2 {
		t.Fatalf("default settings %v", m)
	}
	if m := h.do("GET", "/v1/workspaces/never-used/settings", a, nil).must(t, 200); m["retention_days"] != nil {
		t.Fatalf("unknown workspace settings %v", m)
	}

	for _, c := range []struct {
		name, body, want string
	}{
		{"unknown field", `{"retention_days": 3, "retention": 3}`, "retention: unknown field"},
		{"missing", `{}`, "retention_days: is required"},
		{"empty body", ``, "request body is empty"},
		{"zero", `{"retention_days": 0}`, "retention_days: must be between 1 and 36500"},
		{"negative", `{"retention_days": -2}`, "retention_days: must be between 1 and 36500"},
		{"too long", `{"retention_days": 36501}`, "retention_days: must be between 1 and 36500"},
		{"fraction", `{"retention_days": 1.5}`, "retention_days"},
		{"string", `{"retention_days": "3"}`, "retention_days"},
		{"not an object", `[3]`, ""},
		{"trailing", `{"retention_days": 3} {}`, "trailing data"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h.do("PUT", settings, a, c.body).fails(t, 400, c.want)
		})
	}
	h.do("PUT", settings+"?force=1", a, `{"retention_days": 3}`).fails(t, 400, "force: unknown query parameter")
	h.do("GET", settings+"?x=1", a, nil).fails(t, 400, "x: unknown query parameter")
	if m := get(a); m["retention_days"] != nil {
		t.Fatalf("refused changes changed the settings: %v", m)
	}

	wsVersion := func(key string) float64 {
		for _, w := range h.do("GET", "/v1/workspaces", key, nil).must(t, 200)["workspaces"].([]any) {
			if w := w.(map[string]any); str(w, "workspace_id") == "shared" {
				return w["data_version"].(float64)
			}
		}
		return -1
	}
	v0 := wsVersion(a)
	m := h.do("PUT", settings, a, map[string]any{"retention_days": 3}).must(t, 200)
	if str(m, "workspace_id") != "shared" || m["retention_days"] != float64(3) {
		t.Fatalf("put %v", m)
	}
	if v := wsVersion(a); v <= v0 {
		t.Fatalf("data version %v -> %v", v0, v)
	}
	pack := func(key string) map[string]any {
		return h.do("POST", "/v1/context-pack", key, map[string]any{"workspace_id": "shared", "query": "when is the wombatrail launch", "max_tokens": 1000}).must(t, 200)
	}
	check := func() {
		t.Helper()
		if m := get(a); m["retention_days"] != float64(3) {
			t.Fatalf("settings %v", m)
		}
		if m := get(b); m["retention_days"] != nil {
			t.Fatalf("tenant B sees tenant A's settings: %v", m)
		}
		// Newest is day 10: the cutoff is day 7, so only the newest is kept.
		if got := listAll(t, h, a, "shared", "", 10, nil); !slices.Equal(got, []string{newest}) {
			t.Fatalf("listing %v, want %v", got, []string{newest})
		}
		for _, id := range []string{old, mid} {
			h.do("GET", "/v1/artifacts/"+id, a, nil).fails(t, 404, "not found")
		}
		p := pack(a)
		for _, c := range p["citations"].([]any) {
			if id := str(c.(map[string]any), "artifact_id"); id != newest {
				t.Fatalf("pack cites %s", id)
			}
		}
		if len(p["citations"].([]any)) == 0 {
			t.Fatalf("pack cites nothing: %v", p)
		}
		if got := listAll(t, h, b, "shared", "", 10, nil); !slices.Equal(got, []string{idB}) {
			t.Fatalf("tenant B's listing %v", got)
		}
	}
	check()
	p0 := pack(a)
	h.restart()
	check()
	if p := pack(a); fmt.Sprint(p["citations"]) != fmt.Sprint(p0["citations"]) || p["receipt_id"] != p0["receipt_id"] {
		t.Fatalf("pack changed with restart:\n%v\n%v", p0, p)
	}

	// Clearing stops further exclusion; what was erased stays erased.
	if m := h.do("PUT", settings, a, `{"retention_days": null}`).must(t, 200); m["retention_days"] != nil || len(m) != 2 {
		t.Fatalf("clear %v", m)
	}
	back := ingestAt(t, h, a, "shared", "tenant A back-dated note about the wombatrail", "", day)
	if got := listAll(t, h, a, "shared", "", 10, nil); !slices.Equal(got, []string{newest, back}) {
		t.Fatalf("listing after clearing %v", got)
	}
	h.do("GET", "/v1/artifacts/"+old, a, nil).fails(t, 404, "not found")
}
