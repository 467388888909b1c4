package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/pack"
	"github.com/loci-memory/loci/retrieval"
	"github.com/loci-memory/loci/text"
)

func strp(s string) *string { return &s }

// badInput checks that err is bad input (an *InvalidError or an ErrInvalid
// refusal, which transports answer alike) whose message is want.
func badInput(t *testing.T, name string, err error, want string) {
	t.Helper()
	var inv *InvalidError
	if err == nil || !errors.As(err, &inv) && !errors.Is(err, ErrInvalid) {
		t.Fatalf("%s: error %v (%T), want bad input %q", name, err, err, want)
	}
	if err.Error() != want {
		t.Fatalf("%s: error %q, want %q", name, err.Error(), want)
	}
}

// TestIngestBatchValidation: every bad batch is refused with a message
// naming the field (down to artifacts[i]), and nothing is stored or claimed.
func TestIngestBatchValidation(t *testing.T) {
	h := newData(t, Config{})
	item := func(s string) json.RawMessage { return json.RawMessage(s) }
	ok := item(`{"artifact_type":"note","raw_payload":"fine"}`)
	many := make([]json.RawMessage, MaxBatch+1)
	for i := range many {
		many[i] = ok
	}
	for _, c := range []struct {
		name string
		req  IngestBatchRequest
		want string
	}{
		{"no artifacts", IngestBatchRequest{WorkspaceID: "ws", ActorID: "a"}, "artifacts: is required (an array of 1 to 1000 artifacts)"},
		{"empty", IngestBatchRequest{WorkspaceID: "ws", ActorID: "a", Artifacts: []json.RawMessage{}}, "artifacts: must hold at least one artifact"},
		{"too many", IngestBatchRequest{WorkspaceID: "ws", ActorID: "a", Artifacts: many}, "artifacts: 1001 artifacts exceed the batch limit of 1000"},
		{"workspace id", IngestBatchRequest{WorkspaceID: "a/b", ActorID: "a", Artifacts: []json.RawMessage{ok}},
			`workspace_id: byte 1 ('/') is not allowed; a workspace id is 1 to 128 bytes of A-Z a-z 0-9 . _ : @ -`},
		{"async and wait", IngestBatchRequest{WorkspaceID: "ws", ActorID: "a", Artifacts: []json.RawMessage{ok}, AsyncIndex: true, WaitForEmbedding: true},
			"wait_for_embedding: cannot be combined with async_index (poll the jobs, then each artifact's status)"},
		{"unknown item field", IngestBatchRequest{WorkspaceID: "ws", ActorID: "a", Artifacts: []json.RawMessage{ok, item(`{"artifact_type":"note","metdata":{}}`)}},
			"artifacts[1].metdata: unknown field; allowed fields here: workspace_id, actor_id, artifact_type, raw_payload, timestamp, permissions, idempotency_key, session_id, thread_id, metadata, blob_pointer"},
		{"item not an object", IngestBatchRequest{WorkspaceID: "ws", ActorID: "a", Artifacts: []json.RawMessage{item(`"x"`)}},
			"artifacts[0]: expected an object, got JSON string"},
		{"item workspace differs", IngestBatchRequest{WorkspaceID: "ws", ActorID: "a", Artifacts: []json.RawMessage{item(`{"workspace_id":"other","artifact_type":"note"}`)}},
			`artifacts[0].workspace_id: "other" differs from the top-level workspace_id "ws"; give it once, at the top level`},
		{"item actor differs", IngestBatchRequest{WorkspaceID: "ws", ActorID: "a", Artifacts: []json.RawMessage{item(`{"actor_id":"b","artifact_type":"note"}`)}},
			`artifacts[0].actor_id: "b" differs from the top-level actor_id "a"; give it once, at the top level`},
		{"item timestamp", IngestBatchRequest{WorkspaceID: "ws", ActorID: "a", Artifacts: []json.RawMessage{ok, item(`{"artifact_type":"note","timestamp":"yesterday"}`)}},
			`artifacts[1].timestamp: "yesterday" is not an ISO 8601 date-time (e.g. 2024-05-01T12:00:00Z)`},
		{"item permissions", IngestBatchRequest{WorkspaceID: "ws", ActorID: "a", Artifacts: []json.RawMessage{item(`{"artifact_type":"note","permissions":{"visiblity":"private"}}`)}},
			"artifacts[0].permissions.visiblity: unknown field; allowed fields here: visibility, allowed_actors, denied_actors, rbac_tags"},
		{"item metadata", IngestBatchRequest{WorkspaceID: "ws", ActorID: "a", Artifacts: []json.RawMessage{item(`{"artifact_type":"note","metadata":{"team":7}}`)}},
			"artifacts[0].metadata.team: expected a string, got JSON number"},
		{"item type", IngestBatchRequest{WorkspaceID: "ws", ActorID: "a", Artifacts: []json.RawMessage{ok, item(`{"artifact_type":"poem"}`)}},
			`artifacts[1].artifact_type: unknown value "poem"; allowed: ` + fmt.Sprint(artifact.Types)},
		{"item payload", IngestBatchRequest{WorkspaceID: "ws", ActorID: "a", Artifacts: []json.RawMessage{item(`{"artifact_type":"note","raw_payload":42}`)}},
			"artifacts[0].raw_payload: must be a JSON object, string or array"},
		{"no actor", IngestBatchRequest{WorkspaceID: "ws", Artifacts: []json.RawMessage{ok}}, "actor_id: is required"},
	} {
		_, err := h.svc.IngestBatch(context.Background(), open, c.req)
		badInput(t, c.name, err, c.want)
		// The same batch as a transport's body, decoded in one pass, is
		// refused alike.
		body, err := json.Marshal(c.req)
		if err != nil {
			t.Fatal(err)
		}
		req, err := DecodeIngestBatch(body)
		if err == nil {
			_, err = h.svc.IngestBatch(context.Background(), open, req)
		}
		badInput(t, c.name+" (body)", err, c.want)
	}
	// Bodies: an item's error comes after the earlier items' (in order),
	// and the whole body's duplicate-key scan names the item.
	for _, c := range []struct{ name, body, want string }{
		{"earlier item's error first", `{"workspace_id":"ws","actor_id":"a","artifacts":[{"artifact_type":"note","timestamp":"yesterday"},{"artifact_type":"note","metdata":{}}]}`,
			`artifacts[0].timestamp: "yesterday" is not an ISO 8601 date-time (e.g. 2024-05-01T12:00:00Z)`},
		{"later item's decode error", `{"workspace_id":"ws","actor_id":"a","artifacts":[{"artifact_type":"note","raw_payload":"x"},{"artifact_type":"note","session_id":7}]}`,
			"artifacts[1].session_id: expected a string, got JSON number"},
		{"duplicate key in an item", `{"workspace_id":"ws","actor_id":"a","artifacts":[{"artifact_type":"note","raw_payload":{"k":1,"k":2}}]}`,
			"artifacts[0].raw_payload.k: duplicate key: a key may appear only once in a JSON object"},
		{"unknown top-level field", `{"workspace_id":"ws","actor_id":"a","artifact":[]}`,
			"artifact: unknown field; allowed fields here: workspace_id, actor_id, artifacts, async_index, wait_for_embedding"},
		{"artifacts null", `{"workspace_id":"ws","actor_id":"a","artifacts":null}`, "artifacts: is required (an array of 1 to 1000 artifacts)"},
	} {
		req, err := DecodeIngestBatch([]byte(c.body))
		if err == nil {
			_, err = h.svc.IngestBatch(context.Background(), open, req)
		}
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	if ws, err := h.svc.ListWorkspaces(open); err != nil || len(ws.Workspaces) != 0 {
		t.Fatalf("refused batches stored something: %+v %v", ws, err)
	}
	if n := len(h.ctl.Workspaces(DefaultTenant)); n != 0 {
		t.Fatalf("refused batches claimed %d workspaces", n)
	}
}

// TestIngestValidation: v1 ingest refuses bad input naming the field.
func TestIngestValidation(t *testing.T) {
	h := newData(t, Config{})
	base := func() IngestRequest {
		return IngestRequest{WorkspaceID: "ws", ActorID: "a", ArtifactType: "note", RawPayload: json.RawMessage(`"x"`)}
	}
	for _, c := range []struct {
		name   string
		change func(*IngestRequest)
		want   string
	}{
		{"workspace dot segment", func(r *IngestRequest) { r.WorkspaceID = ".." }, `workspace_id: ".." is not allowed (a path dot segment)`},
		{"no workspace", func(r *IngestRequest) { r.WorkspaceID = "" }, "workspace_id: is required"},
		{"timestamp", func(r *IngestRequest) { r.Timestamp = strp("12:00") }, `timestamp: "12:00" is not an ISO 8601 date-time (e.g. 2024-05-01T12:00:00Z)`},
		{"permissions type", func(r *IngestRequest) { r.Permissions = json.RawMessage(`{"allowed_actors":"bob"}`) },
			"permissions.allowed_actors: expected an array, got JSON string"},
		{"visibility", func(r *IngestRequest) { r.Permissions = json.RawMessage(`{"visibility":"secret"}`) },
			`permissions.visibility: unknown value "secret"; allowed: public, private, restricted`},
		{"metadata not an object", func(r *IngestRequest) { r.Metadata = json.RawMessage(`[1]`) }, "metadata: expected an object, got JSON array"},
		{"payload not JSON", func(r *IngestRequest) { r.RawPayload = json.RawMessage(`{"a":`) }, "raw_payload: is not valid JSON"},
		{"no type", func(r *IngestRequest) { r.ArtifactType = "" }, "artifact_type: is required"},
	} {
		r := base()
		c.change(&r)
		_, err := h.svc.Ingest(context.Background(), open, r)
		badInput(t, c.name, err, c.want)
	}
	if n := len(h.ctl.Workspaces(DefaultTenant)); n != 0 {
		t.Fatalf("refused ingests claimed %d workspaces", n)
	}
	// The same request, valid, is stored, and sent again is a replay.
	r := base()
	r.IdempotencyKey = "k"
	first, err := h.svc.Ingest(context.Background(), open, r)
	if err != nil || first.Replayed || !first.Indexed || len(first.SpanIDs) == 0 || first.Usage.Artifacts != 1 || first.Usage.RawBytes != 3 {
		t.Fatalf("ingest: %+v %v", first, err)
	}
	again, err := h.svc.Ingest(context.Background(), open, r)
	if err != nil || !again.Replayed || again.ArtifactID != first.ArtifactID || again.Usage != (UsageDelta{}) {
		t.Fatalf("replay: %+v %v", again, err)
	}
	r.RawPayload = json.RawMessage(`"y"`)
	var conflict *IdempotencyConflictError
	if _, err := h.svc.Ingest(context.Background(), open, r); !errors.As(err, &conflict) || conflict.ArtifactID != first.ArtifactID {
		t.Fatalf("key reused for another artifact: %v", err)
	}
}

// TestListQuery checks a listing request's validation, in the order the
// fields are checked.
func TestListQuery(t *testing.T) {
	for _, c := range []struct {
		name string
		req  ListArtifactsRequest
		want string
	}{
		{"empty session", ListArtifactsRequest{SessionID: strp("")}, "session_id: must not be empty (leave the parameter out to list all)"},
		{"empty actor", ListArtifactsRequest{ActorID: strp("")}, "actor_id: must not be empty (leave the parameter out to list all)"},
		{"type", ListArtifactsRequest{ArtifactType: strp("poem")}, `artifact_type: "poem" is not one of ` + strings.Join(artifact.Types, ", ")},
		{"since", ListArtifactsRequest{Since: strp("soon")}, `since: "soon" is not an ISO 8601 date-time (e.g. 2024-05-01T12:00:00Z)`},
		{"until", ListArtifactsRequest{Until: strp("")}, `until: "" is not an ISO 8601 date-time (e.g. 2024-05-01T12:00:00Z)`},
		{"limit zero", ListArtifactsRequest{Limit: strp("0")}, `limit: must be an integer from 1 to 500, got "0"`},
		{"limit high", ListArtifactsRequest{Limit: strp("501")}, `limit: must be an integer from 1 to 500, got "501"`},
		{"limit text", ListArtifactsRequest{Limit: strp("ten")}, `limit: must be an integer from 1 to 500, got "ten"`},
		{"cursor", ListArtifactsRequest{Cursor: strp("abc")}, "cursor: not a cursor this API returned (pass next_cursor as is)"},
		{"cursor of seq 0", ListArtifactsRequest{Cursor: strp(encodeCursor(engine.ListPosition{Timestamp: 5}))}, "cursor: not a cursor this API returned (pass next_cursor as is)"},
		{"first error wins", ListArtifactsRequest{SessionID: strp(""), Limit: strp("0")}, "session_id: must not be empty (leave the parameter out to list all)"},
	} {
		_, err := listQuery(c.req)
		badInput(t, c.name, err, c.want)
	}
	pos := engine.ListPosition{Timestamp: -42, Seq: 7}
	q, err := listQuery(ListArtifactsRequest{SessionID: strp("s"), ArtifactType: strp("note"), Since: strp("2024-05-01"), Limit: strp("3"), Cursor: strp(encodeCursor(pos))})
	if err != nil || q.SessionID != "s" || q.Type != "note" || !q.HasSince || q.HasUntil || q.Limit != 3 || !q.HasAfter || q.After != pos {
		t.Fatalf("valid query: %+v %v", q, err)
	}
	if q, err := listQuery(ListArtifactsRequest{}); err != nil || q.Limit != DefaultListLimit || q.HasAfter {
		t.Fatalf("default query: %+v %v", q, err)
	}
}

// TestDataPlaneValidation covers the other requests' validation.
func TestDataPlaneValidation(t *testing.T) {
	h := newData(t, Config{})
	stored, err := h.svc.Ingest(context.Background(), open, IngestRequest{WorkspaceID: "ws", ActorID: "a", ArtifactType: "note", RawPayload: json.RawMessage(`"the heron"`)})
	if err != nil {
		t.Fatal(err)
	}
	feedback := func(r FeedbackRequest) func() error {
		return func() error {
			r.WorkspaceID, r.ArtifactID = "ws", stored.ArtifactID.String()
			_, err := h.svc.Feedback(open, r)
			return err
		}
	}
	for _, c := range []struct {
		name string
		call func() error
		want string
	}{
		{"receipts without workspace", func() error { _, err := h.svc.ListReceipts(open, ListReceiptsRequest{Limit: strp("x")}); return err },
			"workspace_id: query parameter is required"},
		{"receipts limit", func() error {
			_, err := h.svc.ListReceipts(open, ListReceiptsRequest{WorkspaceID: "ws", Limit: strp("501")})
			return err
		}, `limit: must be an integer from 1 to 500, got "501"`},
		{"receipts offset", func() error {
			_, err := h.svc.ListReceipts(open, ListReceiptsRequest{WorkspaceID: "ws", Offset: strp("-1")})
			return err
		}, `offset: must be a non-negative integer, got "-1"`},
		{"feedback without artifact", func() error {
			_, err := h.svc.Feedback(open, FeedbackRequest{WorkspaceID: "ws", Action: "pin"})
			return err
		}, "artifact_id: is required"},
		{"feedback artifact id", func() error {
			_, err := h.svc.Feedback(open, FeedbackRequest{WorkspaceID: "ws", Action: "pin", ArtifactID: "nope"})
			return err
		}, `artifact_id: "nope" is not a UUID`},
		{"feedback span id", func() error {
			_, err := h.svc.Feedback(open, FeedbackRequest{WorkspaceID: "ws", Action: "pin", ArtifactID: "00000000-0000-0000-0000-000000000001", SpanID: "x"})
			return err
		}, `span_id: "x" is not a UUID`},
		{"feedback workspace", func() error {
			_, err := h.svc.Feedback(open, FeedbackRequest{WorkspaceID: "a/b", Action: "pin"})
			return err
		},
			`workspace_id: byte 1 ('/') is not allowed; a workspace id is 1 to 128 bytes of A-Z a-z 0-9 . _ : @ -`},
		{"feedback actor", feedback(FeedbackRequest{ActorID: "a\x01b", Action: "like"}), "actor_id: contains a control character"},
		{"feedback action", feedback(FeedbackRequest{Action: "like", Reason: strings.Repeat("r", 4097)}),
			fmt.Sprintf(`action: unknown value "like"; allowed: %v`, engine.FeedbackActions)},
		{"feedback reason", feedback(FeedbackRequest{Action: "pin", Reason: strings.Repeat("r", 4097)}), "reason: is longer than 4096 bytes"},
		{"resolve without conflict", feedback(FeedbackRequest{Action: engine.ActionResolveConflict}), "conflict_id: is required for resolve_conflict"},
		{"retention missing", func() error { _, err := h.svc.SetSettings(open, SetSettingsRequest{WorkspaceID: "ws"}); return err },
			"retention_days: is required (null clears the retention)"},
		{"retention zero", func() error {
			_, err := h.svc.SetSettings(open, SetSettingsRequest{WorkspaceID: "ws", RetentionDays: json.RawMessage(`0`)})
			return err
		}, "retention_days: must be between 1 and 36500, or null to clear"},
		{"retention text", func() error {
			_, err := h.svc.SetSettings(open, SetSettingsRequest{WorkspaceID: "ws", RetentionDays: json.RawMessage(`"7"`)})
			return err
		}, "retention_days: expected an integer, got JSON string"},
	} {
		badInput(t, c.name, c.call(), c.want)
	}
	for _, c := range []struct {
		name string
		call func() error
		want string
	}{
		{"artifact id", func() error { _, err := h.svc.Artifact(open, "nope"); return err }, "artifact not found"},
		{"status id", func() error { _, err := h.svc.ArtifactStatus(open, "00000000-0000-0000-0000-000000000001"); return err }, "artifact not found"},
		{"erase id", func() error { _, err := h.svc.EraseArtifact(open, "nope"); return err }, "artifact not found"},
		{"receipt", func() error { _, err := h.svc.Receipt(open, "nope"); return err }, "receipt not found"},
		{"job", func() error { _, err := h.svc.Job(open, "nope"); return err }, "job not found"},
		{"feedback target", func() error {
			_, err := h.svc.Feedback(open, FeedbackRequest{WorkspaceID: "ws", Action: "pin", ArtifactID: "00000000-0000-0000-0000-000000000001"})
			return err
		}, `artifact or span not found in workspace "ws"`},
	} {
		if err := c.call(); !errors.Is(err, ErrNotFound) || err.Error() != c.want {
			t.Fatalf("%s: %v, want ErrNotFound %q", c.name, err, c.want)
		}
	}
	// Settings round trip: set, read, clear.
	st, err := h.svc.SetSettings(open, SetSettingsRequest{WorkspaceID: "ws", RetentionDays: json.RawMessage(`30`)})
	if err != nil || st.RetentionDays == nil || *st.RetentionDays != 30 {
		t.Fatalf("set retention: %+v %v", st, err)
	}
	if st, err = h.svc.Settings(open, "ws"); err != nil || st.RetentionDays == nil || *st.RetentionDays != 30 {
		t.Fatalf("read retention: %+v %v", st, err)
	}
	if st, err = h.svc.SetSettings(open, SetSettingsRequest{WorkspaceID: "ws", RetentionDays: json.RawMessage(`null`)}); err != nil || st.RetentionDays != nil {
		t.Fatalf("clear retention: %+v %v", st, err)
	}
}

// TestDecodeMetadata checks metadata decoding: strings only, by path, in
// a deterministic order of keys.
func TestDecodeMetadata(t *testing.T) {
	for _, c := range []struct {
		raw, want string
	}{
		{`{"b":1,"a":2}`, "metadata.a: expected a string, got JSON number"},
		{`{"a":"x","b":null}`, "metadata.b: expected a string, got JSON null"},
		{`"x"`, "metadata: expected an object, got JSON string"},
		{`{"a":"x"} {}`, "malformed JSON: trailing data after the top-level value"},
	} {
		_, err := DecodeMetadata(json.RawMessage(c.raw), "metadata")
		if err == nil || err.Error() != c.want {
			t.Fatalf("%s: %v, want %q", c.raw, err, c.want)
		}
	}
	for _, raw := range []string{``, `null`, `{}`} {
		if m, err := DecodeMetadata(json.RawMessage(raw), "metadata"); err != nil || m != nil {
			t.Fatalf("%q: %v %v, want none", raw, m, err)
		}
	}
	if m, err := DecodeMetadata(json.RawMessage(`{"team":"ops","env":"prod"}`), "metadata"); err != nil || len(m) != 2 || m["team"] != "ops" {
		t.Fatalf("valid metadata: %v %v", m, err)
	}
}

// TestMinRelevanceDefaults: a pack's relevance floor is the request's, or
// its profile's: v1, low_latency and balanced stop at pack.MinRelevance,
// high_recall fills down to pack.HighRecallMinRelevance.
func TestMinRelevanceDefaults(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		v2      bool
		profile *string
		set     *float64
		want    float64
	}{
		{false, nil, nil, pack.MinRelevance},
		{true, nil, nil, pack.MinRelevance},
		{true, strp("low_latency"), nil, pack.MinRelevance},
		{true, strp("balanced"), nil, pack.MinRelevance},
		{true, strp("high_recall"), nil, pack.HighRecallMinRelevance},
		{true, strp("high_recall"), f(0.5), 0.5},
		{false, nil, f(0), 0},
	} {
		maxTokens := 100
		r := PackRequest{WorkspaceID: "ws", Query: strp("q"), MaxTokens: &maxTokens, MinRelevance: c.set}
		got, err := r.retrievalRequest(c.v2, c.profile)
		if err != nil || got.Tuning.MinRelevance != c.want {
			t.Errorf("v2 %v profile %v min_relevance %v: got %v (%v), want %v", c.v2, c.profile, c.set, got.Tuning.MinRelevance, err, c.want)
		}
	}
}

// TestPackValidation: bad pack requests are refused naming the field, v2
// requires max_tokens and takes profile, and another tenant's workspace is
// not found; a good request packs and is metered.
func TestPackValidation(t *testing.T) {
	h := newData(t, Config{})
	if _, err := h.svc.Ingest(context.Background(), open, IngestRequest{WorkspaceID: "ws", ActorID: "a", ArtifactType: "note",
		RawPayload: json.RawMessage(`"The deploy window is Tuesday at 10:00."`)}); err != nil {
		t.Fatal(err)
	}
	q := strp("when is the deploy window")
	n := func(v int) *int { return &v }
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		name string
		req  PackV2Request
		v2   bool
		want string
	}{
		{"no query", PackV2Request{PackRequest: PackRequest{WorkspaceID: "ws"}}, false, "query: is required"},
		{"v2 without max_tokens", PackV2Request{PackRequest: PackRequest{WorkspaceID: "ws", Query: q}}, true, "max_tokens: is required (1 to 128000)"},
		{"max_tokens", PackV2Request{PackRequest: PackRequest{WorkspaceID: "ws", Query: q, MaxTokens: n(0)}}, false, "max_tokens: must be between 1 and 128000, got 0"},
		{"policy field", PackV2Request{PackRequest: PackRequest{WorkspaceID: "ws", Query: q, Policy: json.RawMessage(`{"rbac_requried":[]}`)}}, false,
			"policy.rbac_requried: unknown field; allowed fields here: allowed_sources, denied_sources, allowed_actors, rbac_required, privacy_level"},
		{"min_confidence", PackV2Request{PackRequest: PackRequest{WorkspaceID: "ws", Query: q, MinConfidence: f(2)}}, false, "min_confidence: must be between 0 and 1, got 2"},
		{"min_relevance", PackV2Request{PackRequest: PackRequest{WorkspaceID: "ws", Query: q, MinRelevance: f(-0.1)}}, false, "min_relevance: must be between 0 and 1, got -0.1"},
		{"min_relevance v2", PackV2Request{PackRequest: PackRequest{WorkspaceID: "ws", Query: q, MaxTokens: n(100), MinRelevance: f(1.5)}}, true, "min_relevance: must be between 0 and 1, got 1.5"},
		{"as_of", PackV2Request{PackRequest: PackRequest{WorkspaceID: "ws", Query: q, AsOf: strp("soon")}}, false,
			`as_of: "soon" is not an ISO 8601 date-time (e.g. 2024-05-01T12:00:00Z)`},
		{"profile", PackV2Request{PackRequest: PackRequest{WorkspaceID: "ws", Query: q, MaxTokens: n(100)}, Profile: strp("fast")}, true,
			`profile: unknown value "fast"; allowed: low_latency, balanced, high_recall`},
		{"rerank_depth", PackV2Request{PackRequest: PackRequest{WorkspaceID: "ws", Query: q, RerankDepth: n(101)}}, false,
			"rerank_depth: must be between 0 and 100, got 101"},
		{"negative rerank_depth", PackV2Request{PackRequest: PackRequest{WorkspaceID: "ws", Query: q, RerankDepth: n(-1)}}, false,
			"rerank_depth: must be between 0 and 100, got -1"},
		{"low_latency reranking", PackV2Request{PackRequest: PackRequest{WorkspaceID: "ws", Query: q, MaxTokens: n(100), RerankDepth: n(5)}, Profile: strp("low_latency")}, true,
			"rerank_depth: the low_latency profile never reranks; use balanced or high_recall, or leave rerank_depth out"},
		{"late_depth", PackV2Request{PackRequest: PackRequest{WorkspaceID: "ws", Query: q, LateDepth: n(101)}}, false,
			"late_depth: must be between 0 and 100, got 101"},
		{"negative late_depth", PackV2Request{PackRequest: PackRequest{WorkspaceID: "ws", Query: q, MaxTokens: n(100), LateDepth: n(-3)}}, true,
			"late_depth: must be between 0 and 100, got -3"},
		{"low_latency late interaction", PackV2Request{PackRequest: PackRequest{WorkspaceID: "ws", Query: q, MaxTokens: n(100), LateDepth: n(5)}, Profile: strp("low_latency")}, true,
			"late_depth: the low_latency profile never runs late interaction; use balanced or high_recall, or leave late_depth out"},
		{"since", PackV2Request{PackRequest: PackRequest{WorkspaceID: "ws", Query: q, Since: strp("last week")}}, false,
			`since: "last week" is not an ISO 8601 date-time (e.g. 2024-05-01T12:00:00Z)`},
		{"until", PackV2Request{PackRequest: PackRequest{WorkspaceID: "ws", Query: q, MaxTokens: n(100), Until: strp("2026-13-01")}}, true,
			`until: "2026-13-01" is not an ISO 8601 date-time (e.g. 2024-05-01T12:00:00Z)`},
		{"since after until", PackV2Request{PackRequest: PackRequest{WorkspaceID: "ws", Query: q, Since: strp("2026-10-14"), Until: strp("2026-10-13T23:59:59Z")}}, false,
			"since: 2026-10-14T00:00:00Z is after until (2026-10-13T23:59:59Z): the window is empty"},
	} {
		_, err := h.svc.Pack(context.Background(), open, c.req, c.v2)
		badInput(t, c.name, err, c.want)
	}
	res, err := h.svc.Pack(context.Background(), open, PackV2Request{PackRequest: PackRequest{WorkspaceID: "ws", Query: q, MaxTokens: n(200)}, Profile: strp("high_recall")}, true)
	if err != nil {
		t.Fatal(err)
	}
	if v2 := res.V2(); v2.ServingProfile != "high_recall" || len(v2.Snippets) != 1 || res.Usage.Packs != 1 || res.Usage.Tokens != uint64(res.Result.TotalTokens) {
		t.Fatalf("pack %+v, usage %+v", v2, res.Usage)
	}
	if v1 := res.V1(); v1.ReceiptID != res.ReceiptID || v1.TotalTokens != res.Result.TotalTokens || v1.ContextText == "" {
		t.Fatalf("v1 view %+v", v1)
	}
	// since and until bound the artifact time, both inclusive (the note is
	// stamped at ingest, by the test clock); one instant is a window.
	ts := res.V2().Snippets[0].Timestamp
	for _, c := range []struct {
		since, until *string
		cited        int
	}{{strp(ts), strp(ts), 1}, {strp(ts), nil, 1}, {nil, strp(ts), 1}, {nil, strp("2000-01-01"), 0}, {strp("2999-01-01"), nil, 0}} {
		res, err := h.svc.Pack(context.Background(), open, PackV2Request{PackRequest: PackRequest{WorkspaceID: "ws", Query: q, Since: c.since, Until: c.until}}, false)
		if err != nil || len(res.Result.Citations) != c.cited {
			t.Fatalf("window %v..%v: %v, %d citations, want %d", c.since, c.until, err, len(res.Result.Citations), c.cited)
		}
	}
	// Workspaces are per tenant: another tenant's "ws" is its own, empty one.
	other := Principal{TenantID: "t2", Plan: mustPlan("enterprise")}
	if res, err := h.svc.Pack(context.Background(), other, PackV2Request{PackRequest: PackRequest{WorkspaceID: "ws", Query: q}}, false); err != nil ||
		len(res.Result.Citations) != 0 || !res.Result.Abstain {
		t.Fatalf("another tenant's pack of ws: %v, %+v", err, res.PackResponse)
	}
}

// TestCheckPackRequest: a converted pack request the packer cannot serve is
// refused naming the field (the packer does not check again); zero values
// are the packer's defaults.
func TestCheckPackRequest(t *testing.T) {
	for _, c := range []struct {
		req  retrieval.PackRequest
		want string
	}{
		{retrieval.PackRequest{Workspace: "ws", Query: ""}, "query: is required and must not be empty"},
		{retrieval.PackRequest{Workspace: "ws", Query: strings.Repeat("x", 16<<10+1)}, "query: is longer than 16384 bytes"},
		{retrieval.PackRequest{Workspace: "ws", Query: "x", MaxTokens: 128001}, "max_tokens: must be between 1 and 128000, got 128001"},
		{retrieval.PackRequest{Workspace: "ws", Query: "x", MaxTokens: -1}, "max_tokens: must be between 1 and 128000, got -1"},
		{retrieval.PackRequest{Workspace: "ws", Query: "x", ActorID: "a\x01"}, "actor_id: contains a control character"},
		{retrieval.PackRequest{Workspace: "ws", Query: "x", Mode: "fast"}, `mode: unknown value "fast"; allowed: relevance, coverage`},
		{retrieval.PackRequest{Workspace: "ws", Query: "x", Profile: "turbo"}, `profile: unknown value "turbo"; allowed: low_latency, balanced, high_recall`},
		{retrieval.PackRequest{Workspace: "ws", Query: "x", Policy: pack.Policy{PrivacyLevel: "paranoid"}},
			`policy.privacy_level: unknown value "paranoid"; allowed: default, strict`},
		{retrieval.PackRequest{Workspace: "ws", Query: "x", Since: &[]int64{2}[0], Until: &[]int64{1}[0]},
			"since: 1970-01-01T00:00:00.000002Z is after until (1970-01-01T00:00:00.000001Z): the window is empty"},
	} {
		badInput(t, fmt.Sprintf("%+.40v", c.req), CheckPackRequest(&c.req), c.want)
	}
	if err := CheckPackRequest(&retrieval.PackRequest{Workspace: "ws", Query: "x"}); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

// TestCheckInput: an artifact's fields are checked with the API's names,
// in the API's order (the engine checks its invariants again, in its own
// words).
func TestCheckInput(t *testing.T) {
	ok := engine.IngestInput{Workspace: "ws", ActorID: "a", Type: "chat_turn", Payload: []byte(`{"role":"user","content":"hello"}`)}
	many := map[string]string{}
	for i := range engine.MaxMetadataKeys + 1 {
		many[fmt.Sprint("k", i)] = "v"
	}
	for _, c := range []struct {
		name string
		edit func(*engine.IngestInput)
		want string
	}{
		{"no workspace", func(in *engine.IngestInput) { in.Workspace = "" }, "workspace_id: is required"},
		{"no actor", func(in *engine.IngestInput) { in.ActorID = "" }, "actor_id: is required"},
		{"no type", func(in *engine.IngestInput) { in.Type = "" }, "artifact_type: is required"},
		{"bad type", func(in *engine.IngestInput) { in.Type = "tweet" }, fmt.Sprintf(`artifact_type: unknown value "tweet"; allowed: %v`, artifact.Types)},
		{"bad json", func(in *engine.IngestInput) { in.Payload = []byte(`{"a":`) }, "raw_payload: is not valid JSON"},
		{"number payload", func(in *engine.IngestInput) { in.Payload = []byte(`42`) }, "raw_payload: must be a JSON object, string or array"},
		{"bad visibility", func(in *engine.IngestInput) { in.Permissions.Visibility = "secret" },
			`permissions.visibility: unknown value "secret"; allowed: public, private, restricted`},
		{"long key", func(in *engine.IngestInput) { in.IdempotencyKey = strings.Repeat("k", engine.MaxIDLength+1) },
			"idempotency_key: is 257 bytes, longer than the limit of 256"},
		{"control char", func(in *engine.IngestInput) { in.Workspace = "a\nb" }, "workspace_id: contains a control character"},
		{"empty tag", func(in *engine.IngestInput) { in.Permissions.RBACTags = []string{""} }, "permissions.rbac_tags[0]: is required"},
		{"denied actor", func(in *engine.IngestInput) { in.Permissions.DeniedActors = []string{"b", "\xff"} }, "permissions.denied_actors[1]: is not valid UTF-8"},
		{"metadata keys", func(in *engine.IngestInput) { in.Metadata = many }, "metadata: has 33 keys, more than the limit of 32"},
		{"metadata value", func(in *engine.IngestInput) { in.Metadata = map[string]string{"k": "a\nb"} }, "metadata.k: contains a control character"},
		// The payload comes before the permissions and metadata, and its
		// JSON validity before its shape.
		{"order", func(in *engine.IngestInput) {
			in.Payload, in.Permissions.Visibility, in.Metadata = []byte(`12 x`), "secret", many
		}, "raw_payload: is not valid JSON"},
	} {
		in := ok
		c.edit(&in)
		badInput(t, c.name, prepareInput(&in), c.want)
	}
	in := ok
	if err := prepareInput(&in); err != nil {
		t.Fatal(err)
	}
	if want, _ := text.Extract(in.Type, in.ActorID, in.Payload); !in.Extracted || in.Text != want {
		t.Fatalf("prepared text %q (extracted %v), want %q", in.Text, in.Extracted, want)
	}
}

// TestIngestValidationOrder: for every mix of faults, a batch item is
// refused with the error its v1 ingest gets, named artifacts[i].
func TestIngestValidationOrder(t *testing.T) {
	h := newData(t, Config{})
	payloads := []string{`{"content":"x"}`, `{"content":`, `nope`, `12`, `"text"`, `[1,2`, `  {"a":1} x`, `[]`, ``}
	visibilities := []string{"", "public", "secret"}
	actors := []string{`null`, `["bob"]`, `[""]`, `["a\u0001"]`}
	n := 0
	for _, p := range payloads {
		for _, v := range visibilities {
			for _, a := range actors {
				perms := json.RawMessage(fmt.Sprintf(`{"visibility":%q,"allowed_actors":%s}`, v, a))
				r := IngestRequest{WorkspaceID: "ws", ActorID: "a", ArtifactType: "note", RawPayload: json.RawMessage(p), Permissions: perms}
				_, err := h.svc.Ingest(context.Background(), open, r)
				if err == nil {
					continue // valid: stored
				}
				item := map[string]any{"artifact_type": "note", "permissions": perms}
				if p != "" {
					item["raw_payload"] = json.RawMessage(p)
				}
				raw, jerr := json.Marshal(item)
				if jerr != nil { // not JSON: a batch cannot carry it
					continue
				}
				_, berr := h.svc.IngestBatch(context.Background(), open, IngestBatchRequest{WorkspaceID: "ws", ActorID: "a",
					Artifacts: []json.RawMessage{json.RawMessage(`{"artifact_type":"note","raw_payload":"fine"}`), raw}})
				if want := "artifacts[1]." + err.Error(); berr == nil || berr.Error() != want {
					t.Errorf("payload %q, visibility %q, actors %s: batch error %v, want %q", p, v, a, berr, want)
				}
				n++
			}
		}
	}
	if n < 30 {
		t.Fatalf("only %d faulty cases", n)
	}
}

// TestCheckWorkspace: ids outside the rule are refused unless the tenant
// already holds data under them (written before the rule).
func TestCheckWorkspace(t *testing.T) {
	h := newData(t, Config{})
	legacy := engine.IngestInput{Workspace: "team/legacy", ActorID: "a", Type: "note", Payload: []byte(`"written before the rule"`)}
	if _, err := h.db.Ingest("t", legacy); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tenant, ws string
		ok         bool
	}{
		{"t", "ws", true},
		{"t", "never-written", true},
		{"t", "team/legacy", true},
		{"other", "team/legacy", false}, // another tenant's legacy id is not this tenant's
		{"t", "team/other", false},
		{"t", "..", false},
		{"t", "", false},
		{"t", strings.Repeat("x", engine.MaxWorkspaceIDLength+1), false},
	} {
		err := checkWorkspace(h.db, c.tenant, c.ws)
		var inv *InvalidError
		if c.ok != (err == nil) || err != nil && (!errors.As(err, &inv) || inv.Field != "workspace_id") {
			t.Errorf("checkWorkspace(%q, %q) = %v, want ok %v", c.tenant, c.ws, err, c.ok)
		}
	}
}

// TestDuplicateKeys: a JSON value with a key twice in one object, at any
// depth, is refused naming the key's path; keys equal once escapes are
// resolved are duplicates; the same key in two objects is not.
func TestDuplicateKeys(t *testing.T) {
	for _, c := range []struct {
		body, path, want string // want "": accepted
	}{
		{`{"a":1,"b":2}`, "", ""},
		{`{"a":1,"a":2}`, "", "a: duplicate key"},
		{`{"a":{"x":1},"b":{"x":1}}`, "", ""},
		{`{"a":{"x":1,"y":[1,{"z":"\"}","z":2}]}}`, "", "a.y[1].z: duplicate key"},
		{`{"a":1,"\u0061":2}`, "", "a: duplicate key"},
		{`{"a\\":1,"a":2}`, "", ""},
		{`[{"k":1},{"k":1,"k":1}]`, "artifacts", "artifacts[1].k: duplicate key"},
		{`{"k":1,"k":1}`, "policy", "policy.k: duplicate key"},
		{` { "s" : "a \" , \"s\": " , "t" : [ ] , "u" : [ [ ] , { } ] } `, "", ""},
	} {
		var v any
		err := DecodeJSON([]byte(c.body), c.path, &v)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.body, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%s: error %v, want %q", c.body, err, c.want)
		}
	}
	// Many keys (the map past the first few dozen).
	var b strings.Builder
	b.WriteString("{")
	for i := range 100 {
		fmt.Fprintf(&b, `"k%d":%d,`, i, i)
	}
	b.WriteString(`"k7":0}`)
	var v any
	if err := DecodeJSON([]byte(b.String()), "", &v); err == nil || !strings.HasPrefix(err.Error(), "k7: duplicate key") {
		t.Errorf("100 keys and k7 again: %v", err)
	}
}

// twoStepBatch decodes body as IngestBatch did before DecodeIngestBatch:
// the body with its items raw, then each item.
func twoStepBatch(body []byte) ([]IngestRequest, error) {
	var r IngestBatchRequest
	if err := DecodeJSON(body, "", &r); err != nil {
		return nil, err
	}
	if r.Artifacts == nil {
		return nil, errors.New("no artifacts")
	}
	items := make([]IngestRequest, len(r.Artifacts))
	for i, raw := range r.Artifacts {
		if err := DecodeJSON(raw, fmt.Sprintf("artifacts[%d]", i), &items[i]); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// FuzzDecodeIngestBatch: the one-pass decoding of a batch gives its items
// exactly when decoding the body and then each item does, and the same
// items; otherwise it falls back to the body with its items raw.
func FuzzDecodeIngestBatch(f *testing.F) {
	for _, s := range []string{
		`{"workspace_id":"w","actor_id":"a","artifacts":[{"artifact_type":"note","raw_payload":"x"}]}`,
		`{"artifacts":[{"artifact_type":"note","raw_payload":{"a":[1,2]},"metadata":{"k":"v"},"permissions":{"visibility":"private"}}],"async_index":true}`,
		`{"artifacts":[{"ARTIFACT_TYPE":"note"},null,{"timestamp":null}]}`,
		`{"artifacts":[{"artifact_type":"note","raw_payload":{"k":1,"k":2}}]}`,
		`{"artifacts":[{"artifact_type":"note","metdata":{}}]}`,
		`{"artifacts":[{"artifact_type":7}]}`,
		`{"artifacts":["x"]}`,
		`{"artifacts":[]}`,
		`{"artifacts":null}`,
		`{"artifacts":[{}]} x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		want, wantErr := twoStepBatch(body)
		r, err := DecodeIngestBatch(body)
		if err != nil {
			if wantErr == nil {
				t.Fatalf("%q: refused (%v), the two steps accept it", body, err)
			}
			return
		}
		if r.items == nil {
			if wantErr == nil {
				t.Fatalf("%q: fell back to raw items, the two steps decode them", body)
			}
			return
		}
		if wantErr != nil {
			t.Fatalf("%q: decoded in one pass, the two steps refuse it: %v", body, wantErr)
		}
		if !reflect.DeepEqual(r.items, want) {
			t.Fatalf("%q: items %+v, the two steps give %+v", body, r.items, want)
		}
	})
}

// BenchmarkDecodeJSONBatch measures DecodeJSON on a v2 batch of 1,000 chat
// turns (about 240 KB) and, apart, the duplicate-key scan it includes.
func BenchmarkDecodeJSONBatch(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"workspace_id":"w","actor_id":"a","artifacts":[`)
	for i := range 1000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"artifact_type":"chat_turn","session_id":"s%d","timestamp":"2024-05-01T10:00:00Z","raw_payload":{"role":"user","content":"turn %d: the quarterly budget for project Atlas is 42000 dollars, said \"Maya\" on the call."}}`, i%7, i)
	}
	sb.WriteString(`]}`)
	body := []byte(sb.String())
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var req IngestBatchRequest
			if err := DecodeJSON(body, "", &req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("duplicate-scan", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, dup := duplicateKey(body); dup {
				b.Fatal("duplicate")
			}
		}
	})
}

// scoreByWord is a late-interaction model for tests: a passage holding the
// word scores 10, any other 0.
type scoreByWord string

func (scoreByWord) Model() string { return "by-word" }

func (scoreByWord) Query(q string) (retrieval.LateQuery, error) { return q, nil }

func (w scoreByWord) ScoreAll(_ context.Context, _ retrieval.LateQuery, texts, _ []string, _ [][]byte, dst []float64) error {
	for i, p := range texts {
		dst[i] = 0
		if strings.Contains(p, string(w)) {
			dst[i] = 10
		}
	}
	return nil
}

// TestPackLateDepth: with a late-interaction model, v2 balanced and
// high_recall packs that leave late_depth out run it at the server's depth,
// v1 and low_latency packs do not, and late_depth overrides the default;
// without a model, a pack asking for it says so.
func TestPackLateDepth(t *testing.T) {
	const depth = 7
	h := newData(t, Config{LateInteraction: scoreByWord("Tuesday"), LateInteractionDepth: depth})
	for _, text := range []string{"The deploy window is Tuesday at 10:00.", "The deploy window moved to Friday.", "Lunch is at noon."} {
		if _, err := h.svc.Ingest(context.Background(), open, IngestRequest{WorkspaceID: "ws", ActorID: "a", ArtifactType: "note",
			RawPayload: json.RawMessage(strconv.Quote(text))}); err != nil {
			t.Fatal(err)
		}
	}
	n := func(v int) *int { return &v }
	late := func(k int) string { return fmt.Sprintf(pack.AssumeLate, k, "by-word") }
	for _, c := range []struct {
		name string
		req  PackV2Request
		v2   bool
		want string // an assumption the pack must state, "" for none about late interaction
	}{
		{"v1", PackV2Request{}, false, ""},
		{"v1 asks", PackV2Request{PackRequest: PackRequest{LateDepth: n(1)}}, false, late(1)},
		{"v2 balanced", PackV2Request{}, true, late(2)}, // depth 7: the two candidates
		{"v2 high_recall", PackV2Request{Profile: strp("high_recall")}, true, late(2)},
		{"v2 low_latency", PackV2Request{Profile: strp("low_latency")}, true, ""},
		{"v2 late_depth 0", PackV2Request{PackRequest: PackRequest{LateDepth: n(0)}}, true, ""},
		{"v2 late_depth 1", PackV2Request{PackRequest: PackRequest{LateDepth: n(1)}}, true, late(1)},
	} {
		c.req.WorkspaceID, c.req.Query, c.req.MaxTokens = "ws", strp("when is the deploy window"), n(300)
		res, err := h.svc.Pack(context.Background(), open, c.req, c.v2)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var said []string
		for _, a := range res.Result.Assumptions {
			if strings.Contains(a, "late interaction") {
				said = append(said, a)
			}
		}
		if (c.want == "" && len(said) > 0) || (c.want != "" && !slices.Equal(said, []string{c.want})) {
			t.Errorf("%s: assumptions about late interaction %q, want %q", c.name, said, c.want)
		}
	}

	// With a span limit, packs that leave late_depth out run it, v1 too,
	// in workspaces of at most that many spans, and no others.
	limited := newData(t, Config{LateInteraction: scoreByWord("Tuesday"), LateInteractionDepth: depth, LateInteractionMaxSpans: 3})
	for i, text := range []string{"The deploy window is Tuesday at 10:00.", "The deploy window moved to Friday.", "Lunch is at noon.", "The deploy needs a review."} {
		for _, ws := range []string{"small", "large"} {
			if ws == "small" && i == 3 {
				continue
			}
			if _, err := limited.svc.Ingest(context.Background(), open, IngestRequest{WorkspaceID: ws, ActorID: "a", ArtifactType: "note",
				RawPayload: json.RawMessage(strconv.Quote(text))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range []struct {
		name, ws string
		req      PackV2Request
		v2       bool
		want     bool // whether late interaction runs
	}{
		{"small v1", "small", PackV2Request{}, false, true},
		{"small v2 balanced", "small", PackV2Request{}, true, true},
		{"small v2 low_latency", "small", PackV2Request{Profile: strp("low_latency")}, true, false},
		{"small v1 late_depth 0", "small", PackV2Request{PackRequest: PackRequest{LateDepth: n(0)}}, false, false},
		{"large v1", "large", PackV2Request{}, false, false},
		{"large v2 balanced", "large", PackV2Request{}, true, false},
		{"large v2 high_recall", "large", PackV2Request{Profile: strp("high_recall")}, true, false},
		{"large v1 late_depth 1", "large", PackV2Request{PackRequest: PackRequest{LateDepth: n(1)}}, false, true},
	} {
		c.req.WorkspaceID, c.req.Query, c.req.MaxTokens = c.ws, strp("when is the deploy window"), n(300)
		res, err := limited.svc.Pack(context.Background(), open, c.req, c.v2)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		ran := slices.ContainsFunc(res.Result.Assumptions, func(a string) bool { return strings.Contains(a, "late interaction") })
		if ran != c.want {
			t.Errorf("limit 3, %s: late interaction ran %v, want %v (assumptions %q)", c.name, ran, c.want, res.Result.Assumptions)
		}
	}

	plain := newData(t, Config{})
	if _, err := plain.svc.Ingest(context.Background(), open, IngestRequest{WorkspaceID: "ws", ActorID: "a", ArtifactType: "note",
		RawPayload: json.RawMessage(`"The deploy window is Tuesday."`)}); err != nil {
		t.Fatal(err)
	}
	res, err := plain.svc.Pack(context.Background(), open, PackV2Request{PackRequest: PackRequest{WorkspaceID: "ws", Query: strp("deploy window"), LateDepth: n(5)}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Result.Assumptions, pack.AssumeNoLate) {
		t.Errorf("a pack asking for late interaction without a model: assumptions %q", res.Result.Assumptions)
	}
	if res2, _ := plain.svc.Pack(context.Background(), open, PackV2Request{PackRequest: PackRequest{WorkspaceID: "ws", Query: strp("deploy window"), MaxTokens: n(300)}}, true); slices.Contains(res2.Result.Assumptions, pack.AssumeNoLate) {
		t.Errorf("a v2 pack on a server without the model says it asked for it: %q", res2.Result.Assumptions)
	}
}
