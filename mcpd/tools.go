package mcpd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/google/uuid"
	"github.com/loci-memory/loci/pack"
	"github.com/loci-memory/loci/retrieval"
	"github.com/loci-memory/loci/service"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxRememberItems bounds the memories one remember call stores.
const MaxRememberItems = 100

// DefaultRecallTokens is recall's budget when the model gives none.
const DefaultRecallTokens = 2048

// Memory is one thing to remember.
type Memory struct {
	Content        string            `json:"content,omitempty" jsonschema:"the text to remember: what was said, decided, found or written"`
	ArtifactType   string            `json:"artifact_type,omitempty" jsonschema:"what it is: chat_turn, note (default), document, email, tool_call, tool_result, meeting_transcript, calendar_event or attachment"`
	Role           string            `json:"role,omitempty" jsonschema:"for a chat_turn: who said it (user, assistant, or a name)"`
	Title          string            `json:"title,omitempty" jsonschema:"for a document or email: its title or subject"`
	RawPayload     json.RawMessage   `json:"raw_payload,omitempty" jsonschema:"instead of content: the artifact's JSON payload as the HTTP API takes it, e.g. an email object with subject, from, to and body"`
	SessionID      string            `json:"session_id,omitempty" jsonschema:"the conversation or task this belongs to; recall can be restricted to it"`
	Timestamp      string            `json:"timestamp,omitempty" jsonschema:"when it happened, ISO 8601 (default: now)"`
	Metadata       map[string]string `json:"metadata,omitempty" jsonschema:"string key-value pairs (e.g. user_id) that recall can filter on exactly"`
	IdempotencyKey string            `json:"idempotency_key,omitempty" jsonschema:"a unique key for this memory: storing it again with the same key changes nothing"`
}

// RememberInput is remember's arguments.
type RememberInput struct {
	WorkspaceID string   `json:"workspace_id" jsonschema:"the memory space, e.g. one per user or project (letters, digits and . _ : @ -)"`
	ActorID     string   `json:"actor_id,omitempty" jsonschema:"who is storing it (default: agent)"`
	Memories    []Memory `json:"memories"` // described with its bounds by inputSchemas
}

// Remembered is one stored memory.
type Remembered struct {
	ArtifactID string `json:"artifact_id"`
	Spans      int    `json:"spans"`
	Replayed   bool   `json:"replayed" jsonschema:"true when the idempotency key was seen before and nothing new was stored"`
}

// RememberOutput is remember's result.
type RememberOutput struct {
	WorkspaceID string       `json:"workspace_id"`
	Stored      []Remembered `json:"stored"`
}

// RecallInput is recall's arguments.
type RecallInput struct {
	WorkspaceID string            `json:"workspace_id" jsonschema:"the memory space to search"`
	Query       string            `json:"query" jsonschema:"the question or task to find evidence for, in natural language"`
	MaxTokens   *int              `json:"max_tokens,omitempty"` // described with its bounds by inputSchemas
	Profile     string            `json:"profile,omitempty" jsonschema:"low_latency, balanced (default) or high_recall"`
	SessionID   string            `json:"session_id,omitempty" jsonschema:"only evidence from this session"`
	ActorID     string            `json:"actor_id,omitempty" jsonschema:"who is asking: private memories of others stay out"`
	Metadata    map[string]string `json:"metadata,omitempty" jsonschema:"only memories whose metadata holds all these pairs exactly"`
	Since       string            `json:"since,omitempty" jsonschema:"only memories at or after this ISO 8601 time (e.g. 2026-10-01 or 2026-10-01T09:00:00Z)"`
	Until       string            `json:"until,omitempty" jsonschema:"only memories at or before this ISO 8601 time"`
}

// Citation is one piece of evidence in a recalled context.
type Citation struct {
	Cite       int     `json:"cite" jsonschema:"N of the [cite:N] marker in context_text"`
	ArtifactID string  `json:"artifact_id"`
	SpanID     string  `json:"span_id"`
	SourceType string  `json:"source_type"`
	Relevance  float64 `json:"relevance"`
	Pinned     bool    `json:"pinned"`
	Text       string  `json:"text"`
	Timestamp  string  `json:"timestamp" jsonschema:"when the memory was made (RFC 3339, UTC)"`
	ActorID    *string `json:"actor_id" jsonschema:"who made it; null when unknown"`
	SessionID  *string `json:"session_id" jsonschema:"its session; null when none"`
}

// RecallOutput is recall's result.
type RecallOutput struct {
	ContextText   string     `json:"context_text" jsonschema:"the evidence, one [cite:N] line per span (its date, time and speaker, then its text), within the budget"`
	Citations     []Citation `json:"citations"`
	Confidence    float64    `json:"confidence" jsonschema:"0 to 1: how well the evidence covers the query"`
	Abstain       bool       `json:"abstain" jsonschema:"true when the memory holds too little evidence to answer"`
	AbstainReason string     `json:"abstain_reason,omitempty"`
	Conflicts     []string   `json:"conflicts,omitempty" jsonschema:"contradictions found between cited spans"`
	ReceiptID     string     `json:"receipt_id" jsonschema:"pass to explain to see why each span was included or left out"`
	PackHash      string     `json:"pack_hash"`
	TotalTokens   int        `json:"total_tokens"`
	Profile       string     `json:"profile"`
}

// FeedbackInput is feedback's arguments.
type FeedbackInput struct {
	WorkspaceID     string `json:"workspace_id" jsonschema:"the memory space the span is in"`
	Action          string `json:"action" jsonschema:"pin (always include), unpin, mark_wrong, outdated, private, clear (undo marks), or resolve_conflict"`
	ArtifactID      string `json:"artifact_id,omitempty" jsonschema:"the artifact the span belongs to (from recall's citations); required except for resolve_conflict"`
	SpanID          string `json:"span_id,omitempty" jsonschema:"the span (from recall's citations); without it the action applies to every span of the artifact"`
	Reason          string `json:"reason,omitempty" jsonschema:"why, in a few words (kept with the feedback)"`
	ConflictID      string `json:"conflict_id,omitempty" jsonschema:"for resolve_conflict: the conflict's id, from recall's conflicts (conflict_id) or explain"`
	PreferredSpanID string `json:"preferred_span_id,omitempty" jsonschema:"for resolve_conflict: the span that is right"`
	ActorID         string `json:"actor_id,omitempty" jsonschema:"who gives the feedback (default: agent); private marks hide a span from others"`
}

// ExplainInput is explain's arguments.
type ExplainInput struct {
	ReceiptID string `json:"receipt_id" jsonschema:"the receipt_id recall returned"`
}

// ListInput is list's arguments.
type ListInput struct {
	WorkspaceID  string `json:"workspace_id,omitempty" jsonschema:"list this workspace's artifacts, newest first; without it, list the workspaces"`
	SessionID    string `json:"session_id,omitempty" jsonschema:"with workspace_id: only artifacts of this session"`
	ActorID      string `json:"actor_id,omitempty" jsonschema:"with workspace_id: only artifacts stored by this actor"`
	ArtifactType string `json:"artifact_type,omitempty" jsonschema:"with workspace_id: only artifacts of this type (chat_turn, note, document, ...)"`
	Since        string `json:"since,omitempty" jsonschema:"with workspace_id: only artifacts at or after this ISO 8601 time"`
	Until        string `json:"until,omitempty" jsonschema:"with workspace_id: only artifacts before this ISO 8601 time"`
	Limit        *int   `json:"limit,omitempty"` // described with its bounds by inputSchemas
	Cursor       string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page"`
}

// ForgetInput is forget's arguments.
type ForgetInput struct {
	ArtifactID string `json:"artifact_id" jsonschema:"the artifact to erase for good (from list or recall)"`
}

func (s *Server) addTools() {
	s.tools = map[string]bool{"remember": true, "recall": true, "feedback": true, "explain": true, "list": true, "forget": true}
	yes, no := true, false
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "remember", Title: "Remember", InputSchema: rememberSchema,
		Description: "Store memories in a workspace: chat turns, notes, decisions, tool results, documents. Each is " +
			"durable when this returns and findable by recall at once.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: &no, IdempotentHint: false, OpenWorldHint: &no}}, s.remember)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "recall", InputSchema: recallSchema, Title: "Recall",
		Description: "Find the stored evidence most relevant to a query, packed into a token budget as lines cited " +
			"[cite:N], with a confidence and an abstain flag. Call it before answering from memory; quote the citations.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no}}, s.recall)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "feedback", InputSchema: feedbackSchema, Title: "Feedback",
		Description: "Correct memory for later recalls: pin a span so it is always included, mark one wrong, " +
			"outdated or private, clear marks, or resolve a conflict between two spans.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &no, IdempotentHint: true, OpenWorldHint: &no}}, s.feedback)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "explain", InputSchema: explainSchema, Title: "Explain a recall",
		Description: "The decision receipt of a recall: every span it included and every one it left out, with the " +
			"reason (budget, low relevance, redundancy, policy, feedback) and scores.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no}}, s.explain)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "list", InputSchema: listSchema, Title: "List memory",
		Description: "Without workspace_id: the workspaces with their artifact counts. With it: that workspace's " +
			"artifacts, newest first, filtered by session, actor, type or time, a page at a time.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no}}, s.list)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "forget", InputSchema: forgetSchema, Title: "Forget",
		Description: "Erase one artifact for good: unreadable at once, removed from disk by compaction. It cannot " +
			"be undone.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes, IdempotentHint: true, OpenWorldHint: &no}}, s.forget)
}

// inputSchema is a tool's input schema inferred from T, with the bounds the
// service enforces written in by bound (the one source of each number is
// the constant the service or this package checks against), raw_payload as
// any JSON value (inferred from json.RawMessage it would be an array of
// bytes), and no "null" in a parameter's types: an absent parameter is
// left out, never null.
func inputSchema[T any](bound func(props map[string]*jsonschema.Schema)) *jsonschema.Schema {
	sch, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): {Types: []string{"object", "string", "array"}},
	}})
	if err != nil {
		panic(err) // a static type: fails the first test run, never in production
	}
	dropNull(sch)
	if bound != nil {
		bound(sch.Properties)
	}
	return sch
}

// dropNull rewrites the types ["null", X] that Go's slices, maps and
// pointers infer to X, in sch and the schemas under it.
func dropNull(sch *jsonschema.Schema) {
	if len(sch.Types) == 2 && sch.Types[0] == "null" {
		sch.Type, sch.Types = sch.Types[1], nil
	}
	for _, p := range sch.Properties {
		dropNull(p)
	}
	if sch.Items != nil {
		dropNull(sch.Items)
	}
}

// Each tool's input schema, bounds included.
var (
	rememberSchema = inputSchema[RememberInput](func(props map[string]*jsonschema.Schema) {
		m := props["memories"]
		m.MinItems, m.MaxItems = jsonschema.Ptr(1), jsonschema.Ptr(MaxRememberItems)
		m.Description = fmt.Sprintf("one or more memories, oldest first (at most %d)", MaxRememberItems)
	})
	recallSchema = inputSchema[RecallInput](func(props map[string]*jsonschema.Schema) {
		m := props["max_tokens"]
		m.Minimum, m.Maximum = jsonschema.Ptr(1.0), jsonschema.Ptr(float64(retrieval.MaxPackTokens))
		m.Description = fmt.Sprintf("token budget of the returned context (default %d, at most %d)", DefaultRecallTokens, retrieval.MaxPackTokens)
	})
	listSchema = inputSchema[ListInput](func(props map[string]*jsonschema.Schema) {
		m := props["limit"]
		m.Minimum, m.Maximum = jsonschema.Ptr(1.0), jsonschema.Ptr(float64(service.MaxListLimit))
		m.Description = fmt.Sprintf("with workspace_id: artifacts per page (default %d, at most %d)", service.DefaultListLimit, service.MaxListLimit)
	})
	feedbackSchema = inputSchema[FeedbackInput](nil)
	explainSchema  = inputSchema[ExplainInput](nil)
	forgetSchema   = inputSchema[ForgetInput](nil)
)

// inputSchemas are the tools' input schemas by name.
var inputSchemas = map[string]*jsonschema.Schema{"remember": rememberSchema, "recall": recallSchema, "list": listSchema,
	"feedback": feedbackSchema, "explain": explainSchema, "forget": forgetSchema}

// schemaRefusal is the SDK's refusal of a tool's top-level argument that
// breaks a bound of its input schema.
var schemaRefusal = regexp.MustCompile(`^validating "arguments": validating root: validating /properties/([a-z_]+): (minimum|maximum|minItems|maxItems): `)

// rewordBound rewrites res, tool's refusal by its input schema of an
// argument past a bound, in the words the service uses for the same bound
// ("max_tokens: must be between 1 and 128000"), so that the model reads the
// same error whichever checks it first.
func rewordBound(tool string, res *mcp.CallToolResult) {
	if !res.IsError || len(res.Content) != 1 {
		return
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return
	}
	m := schemaRefusal.FindStringSubmatch(tc.Text)
	sch := inputSchemas[tool]
	if m == nil || sch == nil || sch.Properties[m[1]] == nil {
		return
	}
	prop := sch.Properties[m[1]]
	var text string
	switch {
	case prop.Minimum != nil && prop.Maximum != nil:
		text = fmt.Sprintf("%s: must be between %d and %d", m[1], int(*prop.Minimum), int(*prop.Maximum))
	case prop.MinItems != nil && prop.MaxItems != nil:
		text = fmt.Sprintf("%s: must hold from %d to %d items", m[1], *prop.MinItems, *prop.MaxItems)
	default:
		return
	}
	res.Content = []mcp.Content{&mcp.TextContent{Text: text}}
}

// payload returns a memory's raw_payload: as given, or built from its
// content the way its type's text extraction reads it.
func (m *Memory) payload(typ string) (json.RawMessage, error) {
	if len(m.RawPayload) > 0 {
		if m.Content != "" {
			return nil, errors.New("give content or raw_payload, not both")
		}
		return m.RawPayload, nil
	}
	if strings.TrimSpace(m.Content) == "" {
		return nil, errors.New("content: is required (or raw_payload)")
	}
	body := map[string]string{"content": m.Content}
	switch typ {
	case "chat_turn":
		if m.Role != "" {
			body["role"] = m.Role
		}
	case "document", "email":
		if m.Title != "" {
			body["title"] = m.Title
			if typ == "email" {
				body = map[string]string{"subject": m.Title, "body": m.Content}
			}
		}
	}
	return json.Marshal(body)
}

func (s *Server) remember(ctx context.Context, req *mcp.CallToolRequest, in RememberInput) (*mcp.CallToolResult, RememberOutput, error) {
	out := RememberOutput{WorkspaceID: in.WorkspaceID}
	p, err := s.caller(ctx)
	if err != nil {
		return nil, out, err
	}
	switch {
	case len(in.Memories) == 0:
		return nil, out, errors.New("memories: give at least one")
	case len(in.Memories) > MaxRememberItems:
		return nil, out, fmt.Errorf("memories: %d exceed the limit of %d per call", len(in.Memories), MaxRememberItems)
	case len(in.Memories) > 1 && !p.Plan.V2:
		// Batches are part of the v2 API, which the plan lacks, as over HTTP.
		return nil, out, fmt.Errorf("memories: plan %s stores one memory per call (batches are part of the v2 API: plans %s)",
			p.Plan.Name, strings.Join(s.v2Plans(), ", "))
	}
	actor := in.ActorID
	if actor == "" {
		actor = "agent"
	}
	// The raw payloads as sent: the SDK hands in the arguments decoded and
	// encoded again (numbers through float64, keys sorted, escapes
	// rewritten), but storage is lossless and content_hash is the hash of
	// the bytes sent, as over REST.
	raws, err := rawPayloads(req.Params.Arguments, len(in.Memories))
	if err != nil {
		return nil, out, err
	}
	// One batch: every memory is checked before any is stored (errors name
	// memories[i]), then all are stored with one commit.
	items := make([]json.RawMessage, len(in.Memories))
	for i := range in.Memories {
		m := &in.Memories[i]
		typ := m.ArtifactType
		if typ == "" {
			typ = "note"
		}
		if len(m.RawPayload) > 0 && len(raws[i]) > 0 {
			m.RawPayload = raws[i]
		}
		raw, err := m.payload(typ)
		if err != nil {
			return nil, out, fmt.Errorf("memories[%d].%w", i, err)
		}
		if items[i], err = batchItem(raw, typ, m); err != nil {
			return nil, out, err
		}
	}
	res, err := s.svc.IngestBatch(ctx, p, service.IngestBatchRequest{WorkspaceID: in.WorkspaceID, ActorID: actor, Artifacts: items})
	if err != nil {
		return nil, out, errors.New(strings.ReplaceAll(s.callError(ctx, err).Error(), "artifacts[", "memories["))
	}
	addUsage(ctx, res.Usage)
	for _, it := range res.Ingested {
		out.Stored = append(out.Stored, Remembered{ArtifactID: it.ArtifactID.String(), Spans: len(it.SpanIDs), Replayed: it.IdempotentReplay})
	}
	return nil, out, nil
}

// batchItem is memory m as a batch ingest item, with raw_payload raw
// spliced in byte for byte (encoding it with the item would compact it and
// escape <, > and & in it).
func batchItem(raw json.RawMessage, typ string, m *Memory) (json.RawMessage, error) {
	rest, err := json.Marshal(struct {
		ArtifactType   string            `json:"artifact_type"`
		SessionID      string            `json:"session_id,omitempty"`
		IdempotencyKey string            `json:"idempotency_key,omitempty"`
		Timestamp      string            `json:"timestamp,omitempty"`
		Metadata       map[string]string `json:"metadata,omitempty"`
	}{typ, m.SessionID, m.IdempotencyKey, m.Timestamp, m.Metadata})
	if err != nil {
		return nil, err
	}
	item := make([]byte, 0, len(raw)+len(rest)+16)
	item = append(append(append(item, `{"raw_payload":`...), raw...), ',')
	return append(item, rest[1:]...), nil // rest: {"artifact_type":...}
}

// rawPayloads returns the raw_payload of each of the n memories of args,
// remember's arguments as the client sent them, with its bytes as sent
// (nil where a memory has none). Keys match exactly and the last of a
// repeated key wins, as in the SDK's decoding of the arguments.
func rawPayloads(args json.RawMessage, n int) ([]json.RawMessage, error) {
	var top map[string]json.RawMessage
	var memories []map[string]json.RawMessage
	if err := json.Unmarshal(args, &top); err != nil {
		return nil, fmt.Errorf("arguments: %v", err)
	}
	if err := json.Unmarshal(top["memories"], &memories); err != nil || len(memories) != n {
		return nil, fmt.Errorf("memories: not the array the arguments hold (%v)", err)
	}
	out := make([]json.RawMessage, n)
	for i, m := range memories {
		out[i] = m["raw_payload"]
	}
	return out, nil
}

func (s *Server) recall(ctx context.Context, req *mcp.CallToolRequest, in RecallInput) (*mcp.CallToolResult, RecallOutput, error) {
	var out RecallOutput
	p, err := s.caller(ctx)
	if err != nil {
		return nil, out, err
	}
	maxTokens := DefaultRecallTokens
	if in.MaxTokens != nil {
		maxTokens = *in.MaxTokens
	}
	// Serving profiles are part of the v2 API: a plan without it gets the
	// v1 pack, as over HTTP.
	v2 := p.Plan.V2
	if !v2 && in.Profile != "" {
		return nil, out, fmt.Errorf("profile: plan %s has no serving profiles (the v2 API: plans %s); leave profile out",
			p.Plan.Name, strings.Join(s.v2Plans(), ", "))
	}
	profile := in.Profile
	if profile == "" {
		profile = pack.ProfileBalanced
	}
	r := service.PackV2Request{PackRequest: service.PackRequest{Query: &in.Query, MaxTokens: &maxTokens, WorkspaceID: in.WorkspaceID,
		ActorID: in.ActorID, SessionID: in.SessionID, Since: optional(in.Since), Until: optional(in.Until)}}
	if v2 {
		r.Profile = &profile
	}
	if len(in.Metadata) > 0 {
		if r.Metadata, err = json.Marshal(in.Metadata); err != nil {
			return nil, out, err
		}
	}
	res, err := s.svc.Pack(ctx, p, r, v2)
	if err != nil {
		return nil, out, s.callError(ctx, err)
	}
	addUsage(ctx, res.Usage)
	pr := res.Result
	out = RecallOutput{ContextText: pr.ContextText, Confidence: pr.Confidence, Abstain: pr.Abstain, AbstainReason: pr.AbstainReason,
		ReceiptID: res.ReceiptID.String(), PackHash: pr.PackHash, TotalTokens: pr.TotalTokens, Profile: res.ServingProfile,
		Citations: make([]Citation, len(pr.Citations))}
	for i, c := range pr.Citations {
		out.Citations[i] = Citation{Cite: c.Index, ArtifactID: c.ArtifactID.String(), SpanID: c.SpanID.String(), SourceType: c.SourceType,
			Relevance: c.RelevanceScore, Pinned: c.Pinned, Text: c.Text, Timestamp: c.Timestamp, ActorID: c.ActorID, SessionID: c.SessionID}
	}
	for _, cf := range pr.Conflicts {
		line := fmt.Sprintf("[cite:%d] vs [cite:%d]: %s (conflict_id %s)", cf.CiteA, cf.CiteB, cf.Description, cf.ID)
		if cf.SupersededBy != nil {
			newer, older := cf.CiteA, cf.CiteB
			if *cf.SupersededBy == cf.ClaimB.SpanID {
				newer, older = older, newer
			}
			line += fmt.Sprintf("; [cite:%d] is newer and supersedes [cite:%d]", newer, older)
		}
		out.Conflicts = append(out.Conflicts, line)
	}
	// The text a model reads first: the evidence, or why there is none.
	var b strings.Builder
	if pr.Abstain {
		fmt.Fprintf(&b, "No sufficient evidence in memory (%s); confidence %.2f.\n", pr.AbstainReason, pr.Confidence)
	} else {
		fmt.Fprintf(&b, "Evidence from memory (confidence %.2f, %d citations):\n", pr.Confidence, len(pr.Citations))
	}
	b.WriteString(pr.ContextText)
	fmt.Fprintf(&b, "receipt_id: %s\n", res.ReceiptID)
	structured, err := json.Marshal(out)
	if err != nil {
		return nil, out, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}, StructuredContent: json.RawMessage(structured)}, out, nil
}

// FeedbackOutput is a recorded feedback event.
type FeedbackOutput struct {
	FeedbackID string `json:"feedback_id"`
	Action     string `json:"action"`
	Applied    int    `json:"applied" jsonschema:"how many spans it applies to"`
	CreatedAt  string `json:"created_at"`
}

func (s *Server) feedback(ctx context.Context, req *mcp.CallToolRequest, in FeedbackInput) (*mcp.CallToolResult, FeedbackOutput, error) {
	p, err := s.caller(ctx)
	if err != nil {
		return nil, FeedbackOutput{}, err
	}
	actor := in.ActorID
	if actor == "" {
		actor = "agent"
	}
	res, err := s.svc.Feedback(p, service.FeedbackRequest{WorkspaceID: in.WorkspaceID, ActorID: actor, Action: in.Action,
		ArtifactID: in.ArtifactID, SpanID: in.SpanID, Reason: in.Reason, ConflictID: in.ConflictID, PreferredSpanID: in.PreferredSpanID})
	if err != nil {
		return nil, FeedbackOutput{}, s.callError(ctx, err)
	}
	return nil, FeedbackOutput{FeedbackID: res.FeedbackID.String(), Action: res.Action, Applied: res.Applied, CreatedAt: res.CreatedAt}, nil
}

func (s *Server) explain(ctx context.Context, req *mcp.CallToolRequest, in ExplainInput) (*mcp.CallToolResult, any, error) {
	p, err := s.caller(ctx)
	if err != nil {
		return nil, nil, err
	}
	body, err := s.svc.Receipt(p, in.ReceiptID)
	if err != nil {
		return nil, nil, s.callError(ctx, err)
	}
	// The receipt as text, as stored, and as structured content like the
	// other tools' results.
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(body)}}}, json.RawMessage(body), nil
}

func (s *Server) list(ctx context.Context, req *mcp.CallToolRequest, in ListInput) (*mcp.CallToolResult, any, error) {
	p, err := s.caller(ctx)
	if err != nil {
		return nil, nil, err
	}
	var res any
	if in.WorkspaceID == "" {
		res, err = s.listWorkspaces(ctx, p)
	} else {
		r := service.ListArtifactsRequest{WorkspaceID: in.WorkspaceID, SessionID: optional(in.SessionID), ActorID: optional(in.ActorID),
			ArtifactType: optional(in.ArtifactType), Since: optional(in.Since), Until: optional(in.Until), Cursor: optional(in.Cursor)}
		if in.Limit != nil {
			r.Limit = optional(strconv.Itoa(*in.Limit))
		}
		res, err = s.svc.ListArtifacts(p, r)
	}
	if err != nil {
		return nil, nil, s.callError(ctx, err)
	}
	return nil, res, nil // structured content, and its JSON as text
}

// ForgetOutput is what forget erased.
type ForgetOutput struct {
	ArtifactID  string `json:"artifact_id"`
	WorkspaceID string `json:"workspace_id"`
	SpansErased int    `json:"spans_erased"`
}

func (s *Server) forget(ctx context.Context, req *mcp.CallToolRequest, in ForgetInput) (*mcp.CallToolResult, ForgetOutput, error) {
	p, err := s.caller(ctx)
	if err != nil {
		return nil, ForgetOutput{}, err
	}
	if _, err := uuid.Parse(in.ArtifactID); err != nil {
		return nil, ForgetOutput{}, fmt.Errorf("artifact_id: %q is not an artifact id (a UUID)", in.ArtifactID)
	}
	res, err := s.svc.EraseArtifact(p, in.ArtifactID)
	if err != nil {
		return nil, ForgetOutput{}, s.callError(ctx, err)
	}
	return nil, ForgetOutput{ArtifactID: res.ArtifactID.String(), WorkspaceID: res.WorkspaceID, SpansErased: res.SpansErased}, nil
}

// v2Plans names the plans with the v2 API, cheapest first.
func (s *Server) v2Plans() []string {
	var out []string
	for _, pl := range s.svc.Plans() {
		if pl.V2 {
			out = append(out, pl.Name)
		}
	}
	return out
}

// optional is nil for "", else a pointer to s.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
