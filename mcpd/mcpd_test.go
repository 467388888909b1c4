package mcpd_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/embed/glove"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/internal/enginetest"
	"github.com/loci-memory/loci/mcpd"
	"github.com/loci-memory/loci/service"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newService runs the real service over a real engine in a temporary
// directory, with cfg (authentication off by default).
func newService(t *testing.T, cfg service.Config) *service.Service {
	t.Helper()
	ctl := control.New(time.Now)
	db := enginetest.OpenControlled(t, t.TempDir(), engine.Options{Embedder: glove.New(), Logger: quiet}, ctl)
	cfg.Logger = quiet
	svc := service.New(db, ctl, cfg)
	svc.Start()
	t.Cleanup(func() {
		svc.Stop()
		db.Close()
	})
	return svc
}

// connect serves srv over an in-memory transport and returns a client
// session of the SDK's own client.
func connect(t *testing.T, srv *mcpd.Server) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and decodes its structured result into out (when not
// nil); it fails the test on a tool error unless wantErr is set, in which
// case it returns the error text.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any, out any) string {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	text := ""
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if res.IsError {
		return "ERROR: " + text
	}
	if out != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 || string(b) == "null" {
			b = []byte(text)
		}
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: result %s: %v", name, b, err)
		}
	}
	return text
}

// TestToolsEndToEnd drives every tool through the SDK's client: remember,
// recall, explain, feedback (the wrong span leaves the next recall), list,
// forget, and the resources.
func TestToolsEndToEnd(t *testing.T) {
	svc := newService(t, service.Config{})
	p, err := svc.Authenticate(service.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, mcpd.New(svc, mcpd.Options{Principal: &p}))

	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.InputSchema == nil {
			t.Errorf("tool %s has no description or input schema", tool.Name)
		}
	}
	slices.Sort(names)
	if want := []string{"explain", "feedback", "forget", "list", "recall", "remember"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	var rem mcpd.RememberOutput
	call(t, cs, "remember", map[string]any{"workspace_id": "user-42", "memories": []map[string]any{
		{"content": "I moved to Lisbon in March and I work at the harbour office.", "artifact_type": "chat_turn", "role": "user", "session_id": "s1"},
		{"content": "The user's favourite coffee is a galão with oat milk.", "metadata": map[string]string{"topic": "food"}, "idempotency_key": "coffee-1"},
		{"content": "Runbook: the deploy window is Tuesday 14:00 UTC; freeze on Fridays.", "artifact_type": "document", "title": "Deploy runbook"},
	}}, &rem)
	if len(rem.Stored) != 3 || rem.Stored[0].Spans == 0 {
		t.Fatalf("remember: %+v", rem)
	}
	// The same idempotency key stores nothing new.
	var again mcpd.RememberOutput
	call(t, cs, "remember", map[string]any{"workspace_id": "user-42", "memories": []map[string]any{
		{"content": "The user's favourite coffee is a galão with oat milk.", "metadata": map[string]string{"topic": "food"}, "idempotency_key": "coffee-1"}}}, &again)
	if len(again.Stored) != 1 || !again.Stored[0].Replayed || again.Stored[0].ArtifactID != rem.Stored[1].ArtifactID {
		t.Fatalf("replay: %+v", again)
	}

	var rec mcpd.RecallOutput
	text := call(t, cs, "recall", map[string]any{"workspace_id": "user-42", "query": "where does the user live and work?"}, &rec)
	if rec.Abstain || len(rec.Citations) == 0 || !strings.Contains(rec.ContextText, "[cite:1]") || rec.ReceiptID == "" {
		t.Fatalf("recall: %+v", rec)
	}
	if rec.Citations[0].ArtifactID != rem.Stored[0].ArtifactID || !strings.Contains(text, "Lisbon") || !strings.Contains(text, "receipt_id: "+rec.ReceiptID) {
		t.Fatalf("recall cites %+v first; text %q", rec.Citations[0], text)
	}
	// The metadata filter keeps only matching memories.
	var food mcpd.RecallOutput
	call(t, cs, "recall", map[string]any{"workspace_id": "user-42", "query": "where does the user live?", "metadata": map[string]string{"topic": "food"}}, &food)
	for _, c := range food.Citations {
		if c.ArtifactID != rem.Stored[1].ArtifactID {
			t.Fatalf("filtered recall cites %s", c.ArtifactID)
		}
	}

	explained := call(t, cs, "explain", map[string]any{"receipt_id": rec.ReceiptID}, nil)
	var receipt struct {
		ID       string `json:"id"`
		Evidence []struct {
			SpanID string `json:"span_id"`
		} `json:"evidence"`
	}
	if err := json.Unmarshal([]byte(explained), &receipt); err != nil || receipt.ID != rec.ReceiptID || len(receipt.Evidence) != len(rec.Citations) {
		t.Fatalf("explain: %v %s", err, explained)
	}

	// Marking the top span wrong keeps it out of the next recall.
	wrong := rec.Citations[0]
	var fb mcpd.FeedbackOutput
	call(t, cs, "feedback", map[string]any{"workspace_id": "user-42", "action": "mark_wrong", "artifact_id": wrong.ArtifactID,
		"span_id": wrong.SpanID, "reason": "moved away"}, &fb)
	if fb.Action != "mark_wrong" || fb.Applied != 1 {
		t.Fatalf("feedback: %+v", fb)
	}
	var after mcpd.RecallOutput
	call(t, cs, "recall", map[string]any{"workspace_id": "user-42", "query": "where does the user live and work?"}, &after)
	for _, c := range after.Citations {
		if c.SpanID == wrong.SpanID {
			t.Fatal("a span marked wrong was recalled again")
		}
	}

	var workspaces struct {
		Workspaces []service.WorkspaceJSON `json:"workspaces"`
	}
	call(t, cs, "list", map[string]any{}, &workspaces)
	if len(workspaces.Workspaces) != 1 || workspaces.Workspaces[0].WorkspaceID != "user-42" || workspaces.Workspaces[0].ArtifactCount != 3 {
		t.Fatalf("list workspaces: %+v", workspaces)
	}
	var page service.ArtifactsPage
	call(t, cs, "list", map[string]any{"workspace_id": "user-42", "limit": 2}, &page)
	if len(page.Artifacts) != 2 || page.NextCursor == nil || page.Artifacts[0].ArtifactID.String() != rem.Stored[2].ArtifactID {
		t.Fatalf("list artifacts: %+v", page)
	}
	var rest service.ArtifactsPage
	call(t, cs, "list", map[string]any{"workspace_id": "user-42", "limit": 2, "cursor": *page.NextCursor}, &rest)
	if len(rest.Artifacts) != 1 || rest.NextCursor != nil {
		t.Fatalf("second page: %+v", rest)
	}

	var gone mcpd.ForgetOutput
	call(t, cs, "forget", map[string]any{"artifact_id": rem.Stored[2].ArtifactID}, &gone)
	if gone.ArtifactID != rem.Stored[2].ArtifactID || gone.SpansErased == 0 {
		t.Fatalf("forget: %+v", gone)
	}
	var deploy mcpd.RecallOutput
	call(t, cs, "recall", map[string]any{"workspace_id": "user-42", "query": "when is the deploy window?"}, &deploy)
	for _, c := range deploy.Citations {
		if c.ArtifactID == gone.ArtifactID {
			t.Fatal("a forgotten artifact was recalled")
		}
	}
	if msg := call(t, cs, "forget", map[string]any{"artifact_id": gone.ArtifactID}, nil); !strings.Contains(msg, "not found") {
		t.Fatalf("forgetting twice: %q", msg)
	}

	// Resources: the workspaces, a workspace's artifacts, a receipt.
	for uri, want := range map[string]string{
		"loci://workspaces":                `"workspace_id":"user-42"`,
		"loci://workspaces/user-42":        rem.Stored[0].ArtifactID,
		"loci://receipts/" + rec.ReceiptID: rec.ReceiptID,
	} {
		res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, want) {
			t.Fatalf("read %s: %v %+v", uri, err, res)
		}
	}
	if _, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "loci://receipts/0b6f3c1e-0000-4000-8000-000000000000"}); err == nil {
		t.Fatal("an unknown receipt was read")
	}
}

// TestToolErrors: bad arguments come back as tool errors that name the
// field, and store nothing.
func TestToolErrors(t *testing.T) {
	svc := newService(t, service.Config{})
	p, _ := svc.Authenticate(service.Credentials{})
	cs := connect(t, mcpd.New(svc, mcpd.Options{Principal: &p}))
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"remember", map[string]any{"workspace_id": "w", "memories": []map[string]any{}}, "memories: must hold from 1 to 100 items"},
		{"remember", map[string]any{"workspace_id": "w", "memories": []map[string]any{{"content": "ok"}, {"content": "x", "artifact_type": "poem"}}},
			`memories[1].artifact_type: unknown value "poem"`},
		{"remember", map[string]any{"workspace_id": "w", "memories": []map[string]any{{"artifact_type": "note"}}}, "memories[0].content: is required"},
		{"remember", map[string]any{"workspace_id": "a/b", "memories": []map[string]any{{"content": "x"}}}, "workspace_id: byte 1 ('/') is not allowed"},
		{"remember", map[string]any{"workspace_id": "w", "memories": []map[string]any{{"content": "x", "timestamp": "yesterday"}}},
			`memories[0].timestamp: "yesterday" is not an ISO 8601 date-time`},
		{"recall", map[string]any{"workspace_id": "w", "query": "q", "max_tokens": 500000}, "max_tokens: must be between 1 and 128000"},
		{"recall", map[string]any{"workspace_id": "w", "query": "q", "profile": "fast"}, `profile: unknown value "fast"`},
		{"feedback", map[string]any{"workspace_id": "w", "action": "love", "artifact_id": "0b6f3c1e-0000-4000-8000-000000000000"}, "action"},
		{"explain", map[string]any{"receipt_id": "nope"}, "receipt not found"},
		{"forget", map[string]any{"artifact_id": "nope"}, `artifact_id: "nope" is not an artifact id`},
	} {
		if msg := call(t, cs, c.tool, c.args, nil); !strings.HasPrefix(msg, "ERROR: ") || !strings.Contains(msg, c.want) {
			t.Errorf("%s %v: %q, want an error mentioning %q", c.tool, c.args, msg, c.want)
		}
	}
	var ws struct {
		Workspaces []service.WorkspaceJSON `json:"workspaces"`
	}
	call(t, cs, "list", map[string]any{}, &ws)
	if len(ws.Workspaces) != 0 {
		t.Fatalf("refused calls stored something: %+v", ws)
	}
}

// TestRememberRawPayload: a memory given as a typed payload (an email) is
// stored as that type and recalled by its fields.
func TestRememberRawPayload(t *testing.T) {
	svc := newService(t, service.Config{})
	p, _ := svc.Authenticate(service.Credentials{})
	cs := connect(t, mcpd.New(svc, mcpd.Options{Principal: &p}))
	var rem mcpd.RememberOutput
	call(t, cs, "remember", map[string]any{"workspace_id": "mail", "memories": []map[string]any{{"artifact_type": "email",
		"raw_payload": map[string]any{"subject": "Invoice 2231", "from": "billing@harbour.example", "body": "Please pay invoice 2231 by Friday."}}}}, &rem)
	if len(rem.Stored) != 1 {
		t.Fatalf("remember: %+v", rem)
	}
	a, err := svc.Artifact(p, rem.Stored[0].ArtifactID)
	if err != nil || a.ArtifactType != "email" || !strings.Contains(string(a.RawPayload), `"subject":"Invoice 2231"`) {
		t.Fatalf("stored: %v %+v", err, a)
	}
	var rec mcpd.RecallOutput
	call(t, cs, "recall", map[string]any{"workspace_id": "mail", "query": "which invoice is due Friday?"}, &rec)
	if len(rec.Citations) != 1 || !strings.Contains(rec.Citations[0].Text, "Subject: Invoice 2231") {
		t.Fatalf("recall: %+v", rec)
	}
}

// TestResponseLimit: the answers to one HTTP request are bounded: a
// message whose answer would pass the limit gets a JSON-RPC error instead
// (CodeResponseTooLarge), and once a batch's answers reach it, its
// remaining calls are refused without being run, in the batch's order.
func TestResponseLimit(t *testing.T) {
	svc := newService(t, service.Config{})
	p, _ := svc.Authenticate(service.Credentials{})
	srv := httptest.NewServer(mcpd.New(svc, mcpd.Options{Principal: &p, MaxResponseBytes: 20000}).HTTPHandler())
	t.Cleanup(srv.Close)
	post := func(body string) []byte {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return b
	}
	list := `{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`
	// One tools/list answer is about 8.7 kB: two fit in 20,000 bytes.
	var answers []struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	var batch []string
	for i := 1; i <= 5; i++ {
		batch = append(batch, fmt.Sprintf(list, i))
	}
	b := post("[" + strings.Join(batch, ",") + "]")
	if err := json.Unmarshal(b, &answers); err != nil || len(answers) != 5 || len(b) > 20000+1000 {
		t.Fatalf("batch: %v %d bytes %.300s", err, len(b), b)
	}
	for i, a := range answers {
		switch {
		case a.ID != i+1:
			t.Fatalf("answer %d has id %d", i, a.ID)
		case i < 2 && (a.Error != nil || len(a.Result) == 0):
			t.Fatalf("answer %d: %+v", i, a.Error)
		case i == 2 && (a.Error == nil || a.Error.Code != mcpd.CodeResponseTooLarge || !strings.Contains(a.Error.Message, "was left out")):
			t.Fatalf("answer 2: %+v", a.Error)
		case i > 2 && (a.Error == nil || a.Error.Code != mcpd.CodeResponseTooLarge || !strings.HasPrefix(a.Error.Message, "not run")):
			t.Fatalf("answer %d: %+v", i, a.Error)
		}
	}
	// A single answer past the limit.
	srv2 := httptest.NewServer(mcpd.New(svc, mcpd.Options{Principal: &p, MaxResponseBytes: 5000}).HTTPHandler())
	t.Cleanup(srv2.Close)
	srv.URL = srv2.URL
	if b := post(fmt.Sprintf(list, 9)); !strings.Contains(string(b), `"code":-32030`) || strings.Contains(string(b), `"tools"`) {
		t.Fatalf("single answer past the limit: %s", b)
	}
}
