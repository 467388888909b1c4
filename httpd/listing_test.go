package httpd

import (
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/loci-memory/loci/service"
)

// ingestAt ingests a note into ws at base+minutes and returns its id.
func ingestAt(t *testing.T, h *harness, key, ws, content, session string, minutes int) string {
	t.Helper()
	in := map[string]any{"workspace_id": ws, "actor_id": "agent-1", "artifact_type": "note",
		"raw_payload": map[string]any{"content": content},
		"timestamp":   time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC).Add(time.Duration(minutes) * time.Minute).Format(time.RFC3339)}
	if session != "" {
		in["session_id"] = session
	}
	return str(h.do("POST", "/v1/ingest", key, in).must(t, 201), "artifact_id")
}

// listAll pages through a listing with page size limit; between pages it
// calls between (which may ingest more).
func listAll(t *testing.T, h *harness, key, ws, query string, limit int, between func()) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for {
		path := fmt.Sprintf("/v1/workspaces/%s/artifacts?limit=%d%s", ws, limit, query)
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		m := h.do("GET", path, key, nil).must(t, 200)
		for _, a := range m["artifacts"].([]any) {
			ids = append(ids, str(a.(map[string]any), "artifact_id"))
		}
		if m["next_cursor"] == nil {
			return ids
		}
		cursor = str(m, "next_cursor")
		if between != nil {
			between()
		}
	}
}

func TestListArtifactsOverHTTP(t *testing.T) {
	h := newHarness(t, Config{})
	var ids []string // ingest order; times 0, 1, 2, 0, 1, 2, ...
	for i := 0; i < 9; i++ {
		ids = append(ids, ingestAt(t, h, "", "ws", fmt.Sprintf("note number %d about the launch", i), fmt.Sprintf("s%d", i%2), i%3))
	}
	// Newest first; among equal times, later ingest first.
	want := []string{ids[8], ids[5], ids[2], ids[7], ids[4], ids[1], ids[6], ids[3], ids[0]}
	if got := listAll(t, h, "", "ws", "", 100, nil); !slices.Equal(got, want) {
		t.Fatalf("listing %v, want %v", got, want)
	}
	m := h.do("GET", "/v1/workspaces/ws/artifacts", "", nil).must(t, 200)
	a0 := m["artifacts"].([]any)[0].(map[string]any)
	if m["limit"].(float64) != 50 || str(a0, "artifact_type") != "note" || str(a0, "workspace_id") != "ws" ||
		str(a0, "timestamp") != "2026-01-01T09:02:00Z" || str(a0, "session_id") != "s0" || a0["raw_payload"] != nil {
		t.Fatalf("listing %v", m)
	}

	// Paging while artifacts arrive: every artifact present at the start is
	// listed exactly once, in order; newer ones land before the cursor.
	extra := 0
	got := listAll(t, h, "", "ws", "", 2, func() {
		ingestAt(t, h, "", "ws", fmt.Sprintf("late note %d", extra), "", 5+extra)
		extra++
	})
	if !slices.Equal(got, want) {
		t.Fatalf("paging while ingesting: %v, want %v", got, want)
	}

	for _, c := range []struct{ query, want string }{
		{"&session_id=s1", fmt.Sprint([]string{ids[5], ids[7], ids[1], ids[3]})},
		{"&since=2026-01-01T09:01:00Z&until=2026-01-01T09:01:00Z", fmt.Sprint([]string{ids[7], ids[4], ids[1]})},
		{"&actor_id=nobody", fmt.Sprint([]string(nil))},
		{"&artifact_type=email", fmt.Sprint([]string(nil))},
	} {
		if got := fmt.Sprint(listAll(t, h, "", "ws", c.query, 3, nil)); got != c.want {
			t.Errorf("%s: %s, want %s", c.query, got, c.want)
		}
	}
	// A workspace nobody wrote lists empty, as receipts do.
	if m := h.do("GET", "/v1/workspaces/never-written/artifacts", "", nil).must(t, 200); len(m["artifacts"].([]any)) != 0 {
		t.Fatalf("empty workspace %v", m)
	}

	for _, c := range []struct{ path, want string }{
		{"/v1/workspaces/ws/artifacts?limit=0", "limit"},
		{"/v1/workspaces/ws/artifacts?limit=501", "limit"},
		{"/v1/workspaces/ws/artifacts?limit=x", "limit"},
		{"/v1/workspaces/ws/artifacts?since=yesterday", "since"},
		{"/v1/workspaces/ws/artifacts?until=2026-13-01", "until"},
		{"/v1/workspaces/ws/artifacts?cursor=abc", "cursor"},
		{"/v1/workspaces/ws/artifacts?artifact_type=tweet", "artifact_type"},
		{"/v1/workspaces/ws/artifacts?session_id=", "session_id"},
		{"/v1/workspaces/ws/artifacts?sesion_id=s1", "sesion_id: unknown query parameter"},
		{"/v1/workspaces/ws/artifacts?limit=1&limit=2", "limit"},
		{"/v1/workspaces/bad%20id/artifacts", "workspace_id"},
		{"/v1/workspaces?x=1", "x: unknown query parameter"},
		{"/v1/artifacts/" + ids[0] + "?force=1", "force"},
	} {
		method := "GET"
		if c.path[:14] == "/v1/artifacts/" {
			method = "DELETE"
		}
		h.do(method, c.path, "", nil).fails(t, 400, c.want)
	}
	h.do("GET", "/v1/artifacts/"+ids[0], "", nil).must(t, 200) // the refused DELETE changed nothing
}

func TestWorkspacesAndEraseArtifactOverHTTP(t *testing.T) {
	h := newHarness(t, Config{}, service.Config{AdminKey: adminKey})
	_, a := register(t, h, "a@example.com", "pro")
	_, b := register(t, h, "b@example.com", "pro")
	var idsA []string
	for i := 0; i < 3; i++ {
		idsA = append(idsA, ingestAt(t, h, a, "shared", fmt.Sprintf("tenant A note %d: the zebracorn launch is on Friday", i), "", i))
	}
	ingestAt(t, h, a, "alpha", "tenant A alpha workspace", "", 0)
	idB := ingestAt(t, h, b, "shared", "tenant B gardening tomatoes", "", 0)

	wsA := h.do("GET", "/v1/workspaces", a, nil).must(t, 200)["workspaces"].([]any)
	if len(wsA) != 2 || str(wsA[0].(map[string]any), "workspace_id") != "alpha" || str(wsA[1].(map[string]any), "workspace_id") != "shared" {
		t.Fatalf("workspaces of A %v", wsA)
	}
	shared := wsA[1].(map[string]any)
	if shared["artifact_count"].(float64) != 3 || shared["span_count"].(float64) < 3 || str(shared, "newest_artifact_at") != "2026-01-01T09:02:00Z" {
		t.Fatalf("shared %v", shared)
	}
	v0 := shared["data_version"].(float64)
	wsB := h.do("GET", "/v1/workspaces", b, nil).must(t, 200)["workspaces"].([]any)
	if len(wsB) != 1 || wsB[0].(map[string]any)["artifact_count"].(float64) != 1 {
		t.Fatalf("workspaces of B %v", wsB)
	}
	// B lists only its own artifacts in the workspace both use.
	if got := listAll(t, h, b, "shared", "", 10, nil); !slices.Equal(got, []string{idB}) {
		t.Fatalf("B's listing %v", got)
	}

	// Another tenant's id, a missing id and a malformed one: the same 404.
	missing := h.do("DELETE", "/v1/artifacts/00000000-0000-4000-8000-000000000000", b, nil)
	missing.fails(t, 404, "artifact not found")
	other := h.do("DELETE", "/v1/artifacts/"+idsA[2], b, nil)
	other.fails(t, 404, "artifact not found")
	if string(other.body) != string(missing.body) {
		t.Fatalf("another tenant's id answers %s, a missing one %s", other.body, missing.body)
	}
	h.do("DELETE", "/v1/artifacts/not-a-uuid", b, nil).fails(t, 404, "artifact not found")

	pack := func() map[string]any {
		return h.do("POST", "/v1/context-pack", a, map[string]any{"workspace_id": "shared", "query": "when is the zebracorn launch", "max_tokens": 1000}).must(t, 200)
	}
	p0 := pack()
	m := h.do("DELETE", "/v1/artifacts/"+idsA[2], a, nil).must(t, 200)
	if str(m, "artifact_id") != idsA[2] || str(m, "workspace_id") != "shared" || m["artifacts_erased"].(float64) != 1 || m["spans_erased"].(float64) < 1 {
		t.Fatalf("erase %v", m)
	}
	check := func() {
		t.Helper()
		h.do("GET", "/v1/artifacts/"+idsA[2], a, nil).fails(t, 404, "not found")
		h.do("GET", "/v1/artifacts/"+idsA[2]+"/status", a, nil).fails(t, 404, "not found")
		h.do("DELETE", "/v1/artifacts/"+idsA[2], a, nil).fails(t, 404, "artifact not found")
		if got := listAll(t, h, a, "shared", "", 10, nil); !slices.Equal(got, []string{idsA[1], idsA[0]}) {
			t.Fatalf("listing after erase %v", got)
		}
		ws := h.do("GET", "/v1/workspaces", a, nil).must(t, 200)["workspaces"].([]any)[1].(map[string]any)
		if ws["artifact_count"].(float64) != 2 || ws["data_version"].(float64) <= v0 || str(ws, "newest_artifact_at") != "2026-01-01T09:01:00Z" {
			t.Fatalf("workspace after erase %v", ws)
		}
		p := pack()
		if p["receipt_id"] == p0["receipt_id"] {
			t.Fatal("the pack's version did not change")
		}
		for _, c := range p["citations"].([]any) {
			if str(c.(map[string]any), "artifact_id") == idsA[2] {
				t.Fatal("erased artifact cited")
			}
		}
	}
	check()
	h.do("GET", "/v1/artifacts/"+idB, b, nil).must(t, 200)
	h.restart()
	check()
}
