package httpd

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/loci-memory/loci/service"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// datedTurn is a chat turn of ws said by speaker at ts, in session s1.
func datedTurn(ws, speaker, content, ts string) map[string]any {
	return map[string]any{"workspace_id": ws, "actor_id": "u-" + strings.ToLower(speaker), "artifact_type": "chat_turn",
		"session_id": "s1", "timestamp": ts, "raw_payload": map[string]any{"role": speaker, "content": content}}
}

// TestDatedEvidenceOverHTTP: every evidence line of a pack says when and
// who; v1 citations, v2 snippets, the receipt's evidence and MCP recall's
// citations carry timestamp, actor_id and session_id (null when none); v2
// packs carry context_text and conflicts.
func TestDatedEvidenceOverHTTP(t *testing.T) {
	h := newHarness(t, Config{})
	h.do("POST", "/v1/ingest", "", datedTurn("ws", "Maya", "The design sync moves to 14:30 on Thursday.", "2026-10-13T14:30:00Z")).must(t, 201)
	h.do("POST", "/v1/ingest", "", map[string]any{"workspace_id": "ws", "actor_id": "planner", "artifact_type": "note",
		"timestamp": "2026-10-02", "raw_payload": map[string]any{"content": "Design sync agenda: launch plan review."}}).must(t, 201)
	q := map[string]any{"workspace_id": "ws", "query": "when is the design sync", "max_tokens": 500}
	v1 := h.do("POST", "/v1/context-pack", "", q).must(t, 200)
	text := str(v1, "context_text")
	for _, line := range []string{"] 2026-10-13 14:30 Maya: The design sync moves to 14:30 on Thursday.\n",
		"] 2026-10-02 planner: Design sync agenda: launch plan review.\n"} {
		if !strings.Contains(text, line) {
			t.Fatalf("no line %q in\n%s", line, text)
		}
	}
	want := map[string][3]any{ // by source type: timestamp, actor_id, session_id
		"chat_turn": {"2026-10-13T14:30:00Z", "u-maya", "s1"},
		"note":      {"2026-10-02T00:00:00Z", "planner", nil},
	}
	checkDated := func(where string, items []any, typeKey string) {
		t.Helper()
		if len(items) != 2 {
			t.Fatalf("%s: %d items", where, len(items))
		}
		for _, it := range items {
			m := it.(map[string]any)
			w := want[str(m, typeKey)]
			if m["timestamp"] != w[0] || m["actor_id"] != w[1] || m["session_id"] != w[2] {
				t.Errorf("%s: %s has timestamp %v, actor_id %v, session_id %v; want %v", where, str(m, typeKey), m["timestamp"], m["actor_id"], m["session_id"], w)
			}
			if _, ok := m["session_id"]; !ok {
				t.Errorf("%s: session_id left out instead of null", where)
			}
		}
	}
	checkDated("v1 citations", v1["citations"].([]any), "source_type")
	rec := h.do("GET", "/v1/receipts/"+str(v1, "receipt_id"), "", nil).must(t, 200)
	checkDated("receipt evidence", rec["evidence"].([]any), "source_type")

	q2 := map[string]any{"workspace_id": "ws", "query": "when is the design sync", "max_tokens": 500, "profile": "balanced"}
	v2 := h.do("POST", "/v2/context-pack", "", q2).must(t, 200)
	checkDated("v2 snippets", v2["snippets"].([]any), "artifact_type")
	if !strings.Contains(str(v2, "context_text"), "2026-10-13 14:30 Maya: ") {
		t.Fatalf("v2 context_text %q", v2["context_text"])
	}
	if _, ok := v2["conflicts"].([]any); !ok {
		t.Fatalf("v2 conflicts %v", v2["conflicts"])
	}

	// MCP recall (over /mcp, which needs a tenant's key).
	hm := newHarness(t, Config{}, service.Config{AdminKey: adminKey})
	_, key := register(t, hm, "dated@example.com", "pro")
	cs := mcpSession(t, hm, key)
	if text, isErr := toolText(t, cs, "remember", map[string]any{"workspace_id": "notes", "actor_id": "maya", "memories": []map[string]any{
		{"content": "The quokka ferry leaves pier 7 at 06:40.", "session_id": "trip", "timestamp": "2026-10-13T06:00:00Z"},
		{"content": "The quokka ferry now leaves pier 9.", "timestamp": "2026-11-02T08:15:00Z"}}}); isErr {
		t.Fatalf("remember: %s", text)
	}
	recall := func(args map[string]any) ([]any, string) {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "recall", Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("recall %v: %v %v", args, err, res)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var out struct {
			Citations   []any  `json:"citations"`
			ContextText string `json:"context_text"`
		}
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return out.Citations, out.ContextText
	}
	cites, text := recall(map[string]any{"workspace_id": "notes", "query": "where does the quokka ferry leave?"})
	if len(cites) != 2 || !strings.Contains(text, "2026-11-02 08:15 maya: The quokka ferry now leaves pier 9.") {
		t.Fatalf("recall: %v\n%s", cites, text)
	}
	for _, c := range cites {
		m := c.(map[string]any)
		switch str(m, "timestamp") {
		case "2026-10-13T06:00:00Z":
			if m["session_id"] != "trip" || m["actor_id"] != "maya" {
				t.Errorf("recall citation %v", m)
			}
		case "2026-11-02T08:15:00Z":
			if m["session_id"] != nil || m["actor_id"] != "maya" {
				t.Errorf("recall citation %v", m)
			}
		default:
			t.Errorf("recall citation timestamp %v", m["timestamp"])
		}
	}
	// since/until on recall.
	cites, _ = recall(map[string]any{"workspace_id": "notes", "query": "where does the quokka ferry leave?", "since": "2026-11-01"})
	if len(cites) != 1 || str(cites[0].(map[string]any), "timestamp") != "2026-11-02T08:15:00Z" {
		t.Fatalf("recall since 2026-11-01: %v", cites)
	}
	if text, isErr := toolText(t, cs, "recall", map[string]any{"workspace_id": "notes", "query": "ferry", "since": "2026-11-02", "until": "2026-11-01"}); !isErr ||
		!strings.Contains(text, "since: 2026-11-02T00:00:00Z is after until (2026-11-01T00:00:00Z)") {
		t.Fatalf("recall with an empty window: %v %s", isErr, text)
	}
}

// TestPackWindowOverHTTP: since and until on v1 and v2 packs are a hard,
// inclusive filter on artifact time; a pinned span outside the window is
// kept; two windows give two receipts, each recording its window; bad
// bounds are a 400 naming them, and change nothing.
func TestPackWindowOverHTTP(t *testing.T) {
	h := newHarness(t, Config{})
	ids := map[string]string{}
	for _, d := range []struct{ day, text string }{
		{"2026-10-01", "The launch is on November 20."},
		{"2026-10-13", "The launch is pushed to December 4."},
		{"2026-10-20", "Launch checklist reviewed; the launch stays on December 4."},
		{"2026-11-02", "The launch is moved to December 11."},
	} {
		m := h.do("POST", "/v1/ingest", "", map[string]any{"workspace_id": "ws", "actor_id": "pm", "artifact_type": "note",
			"timestamp": d.day + "T10:00:00Z", "raw_payload": map[string]any{"content": d.text}}).must(t, 201)
		ids[d.day] = str(m, "artifact_id")
	}
	pack := func(version string, extra map[string]any) (map[string]any, []string) {
		t.Helper()
		q := map[string]any{"workspace_id": "ws", "query": "when is the launch", "max_tokens": 1000}
		if version == "v2" {
			q["profile"] = "balanced"
		}
		for k, v := range extra {
			q[k] = v
		}
		m := h.do("POST", "/"+version+"/context-pack", "", q).must(t, 200)
		key := "citations"
		if version == "v2" {
			key = "snippets"
		}
		var days []string
		for _, c := range m[key].([]any) {
			for day, id := range ids {
				if str(c.(map[string]any), "artifact_id") == id {
					days = append(days, day)
				}
			}
		}
		sort.Strings(days)
		return m, days
	}
	cases := []struct {
		name   string
		window map[string]any
		want   []string
	}{
		{"none", nil, []string{"2026-10-01", "2026-10-13", "2026-10-20", "2026-11-02"}},
		{"bounds inclusive", map[string]any{"since": "2026-10-13T10:00:00Z", "until": "2026-10-20T10:00:00Z"}, []string{"2026-10-13", "2026-10-20"}},
		{"a microsecond short", map[string]any{"since": "2026-10-13T10:00:00.000001Z", "until": "2026-10-20T09:59:59.999999Z"}, nil},
		{"since only, a date", map[string]any{"since": "2026-10-14"}, []string{"2026-10-20", "2026-11-02"}},
		{"until only, zone offset", map[string]any{"until": "2026-10-13T12:00:00+02:00"}, []string{"2026-10-01", "2026-10-13"}},
	}
	receipts := map[string]string{}
	for _, c := range cases {
		for _, v := range []string{"v1", "v2"} {
			m, days := pack(v, c.window)
			if strings.Join(days, ",") != strings.Join(c.want, ",") {
				t.Errorf("%s %s: cites %v, want %v", v, c.name, days, c.want)
			}
			if prev, ok := receipts[v+str(m, "receipt_id")]; ok {
				t.Errorf("%s: windows %s and %s share a receipt", v, prev, c.name)
			}
			receipts[v+str(m, "receipt_id")] = c.name
			rec := h.do("GET", "/v1/receipts/"+str(m, "receipt_id"), "", nil).must(t, 200)
			if c.window["since"] != nil && rec["since"] == nil || c.window["since"] == nil && rec["since"] != nil ||
				c.window["until"] != nil && rec["until"] == nil {
				t.Errorf("%s %s: receipt window %v..%v", v, c.name, rec["since"], rec["until"])
			}
		}
	}
	// The receipt shows the window as RFC 3339 UTC.
	m, _ := pack("v1", map[string]any{"until": "2026-10-13T12:00:00+02:00"})
	if rec := h.do("GET", "/v1/receipts/"+str(m, "receipt_id"), "", nil).must(t, 200); rec["until"] != "2026-10-13T10:00:00Z" || rec["since"] != nil {
		t.Fatalf("receipt window %v..%v", rec["since"], rec["until"])
	}
	// A pinned span outside the window is kept, as the caller's authoritative context.
	h.do("POST", "/v1/feedback", "", map[string]any{"workspace_id": "ws", "actor_id": "pm", "action": "pin", "artifact_id": ids["2026-10-01"]}).must(t, 201)
	if _, days := pack("v1", map[string]any{"since": "2026-11-01"}); strings.Join(days, ",") != "2026-10-01,2026-11-02" {
		t.Fatalf("pinned outside the window: %v", days)
	}
	// Bad bounds: 400 naming them; no receipt is stored.
	before := h.do("GET", "/v1/receipts?workspace_id=ws", "", nil).must(t, 200)["total"]
	for _, v := range []string{"v1", "v2"} {
		q := map[string]any{"workspace_id": "ws", "query": "launch", "max_tokens": 100}
		if v == "v2" {
			q["profile"] = "balanced"
		}
		bad := func(extra map[string]any, want string) {
			for k, x := range extra {
				q[k] = x
			}
			h.do("POST", "/"+v+"/context-pack", "", q).fails(t, 400, want)
			delete(q, "since")
			delete(q, "until")
		}
		bad(map[string]any{"since": "2026-11-02", "until": "2026-10-01"}, "since: 2026-11-02T00:00:00Z is after until (2026-10-01T00:00:00Z): the window is empty")
		bad(map[string]any{"since": "yesterday"}, `since: "yesterday" is not an ISO 8601 date-time`)
		bad(map[string]any{"until": 20261001}, "until")
	}
	if after := h.do("GET", "/v1/receipts?workspace_id=ws", "", nil).must(t, 200)["total"]; after != before {
		t.Fatalf("refused packs stored receipts: %d, then %d", before, after)
	}
}
