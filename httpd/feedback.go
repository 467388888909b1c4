package httpd

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine"
	"github.com/valyala/fasthttp"
)

type feedbackRequest struct {
	WorkspaceID     string `json:"workspace_id"`
	ActorID         string `json:"actor_id"`
	Action          string `json:"action"`
	ArtifactID      string `json:"artifact_id"`
	SpanID          string `json:"span_id"`
	Reason          string `json:"reason"`
	ConflictID      string `json:"conflict_id"`
	PreferredSpanID string `json:"preferred_span_id"`
}

// optionalID parses an optional UUID field.
func optionalID(field, v string) (uuid.UUID, error) {
	if v == "" {
		return uuid.Nil, nil
	}
	id, err := uuid.Parse(v)
	if err != nil {
		return uuid.Nil, fmt.Errorf("%s: %q is not a UUID", field, v)
	}
	return id, nil
}

func (s *Server) feedback(ctx *fasthttp.RequestCtx, c *call) {
	var r feedbackRequest
	if err := decodeBody(ctx.PostBody(), &r); err != nil {
		badRequest(ctx, err)
		return
	}
	in := engine.FeedbackInput{Workspace: r.WorkspaceID, ActorID: r.ActorID, Action: r.Action, Reason: r.Reason, ConflictID: r.ConflictID}
	err := s.db.CheckWorkspace(c.who.tenant, r.WorkspaceID)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	if r.ArtifactID == "" && r.Action != engine.ActionResolveConflict {
		badRequest(ctx, errors.New("artifact_id: is required"))
		return
	}
	if in.ArtifactID, err = optionalID("artifact_id", r.ArtifactID); err != nil {
		badRequest(ctx, err)
		return
	}
	if in.SpanID, err = optionalID("span_id", r.SpanID); err != nil {
		badRequest(ctx, err)
		return
	}
	if in.PreferredSpanID, err = optionalID("preferred_span_id", r.PreferredSpanID); err != nil {
		badRequest(ctx, err)
		return
	}
	res, err := s.db.Feedback(c.who.tenant, in)
	if errors.Is(err, engine.ErrNotFound) {
		what := "artifact or span"
		if in.Action == engine.ActionResolveConflict {
			what = "conflict"
		}
		writeError(ctx, fasthttp.StatusNotFound, what+" not found in workspace "+strconv.Quote(in.Workspace))
		return
	}
	if err != nil {
		s.fail(ctx, err)
		return
	}
	writeJSON(ctx, fasthttp.StatusCreated, map[string]any{"feedback_id": res.FeedbackID, "action": res.Action,
		"applied": res.Applied, "created_at": formatTime(res.CreatedAt)})
}

func (s *Server) listReceipts(ctx *fasthttp.RequestCtx, c *call) {
	args := ctx.QueryArgs()
	ws := string(args.Peek("workspace_id"))
	if ws == "" {
		badRequest(ctx, errors.New("workspace_id: query parameter is required"))
		return
	}
	if err := s.db.CheckWorkspace(c.who.tenant, ws); err != nil {
		s.fail(ctx, err)
		return
	}
	limit, offset := 50, 0
	if v := args.Peek("limit"); v != nil {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 1 || n > 500 {
			badRequest(ctx, fmt.Errorf("limit: must be an integer from 1 to 500, got %q", v))
			return
		}
		limit = n
	}
	if v := args.Peek("offset"); v != nil {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 0 {
			badRequest(ctx, fmt.Errorf("offset: must be a non-negative integer, got %q", v))
			return
		}
		offset = n
	}
	page, err := s.db.ListReceipts(c.who.tenant, ws, string(args.Peek("pack_hash")), offset, limit)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	type summary struct {
		ID          uuid.UUID `json:"id"`
		Query       string    `json:"query"`
		Timestamp   string    `json:"timestamp"`
		ActorID     string    `json:"actor_id"`
		Confidence  float64   `json:"confidence"`
		AbstainFlag bool      `json:"abstain_flag"`
		PackHash    string    `json:"pack_hash"`
		TotalTokens int       `json:"total_tokens"`
	}
	out := make([]summary, len(page.Receipts))
	for i, r := range page.Receipts {
		out[i] = summary{r.ID, r.Query, formatTime(microTime(r.Timestamp)), r.ActorID, r.Confidence, r.Abstain, r.PackHash, r.TotalTokens}
	}
	writeJSON(ctx, fasthttp.StatusOK, map[string]any{"receipts": out, "total": page.Total, "limit": limit, "offset": offset})
}

func (s *Server) getReceipt(ctx *fasthttp.RequestCtx, c *call) {
	id, err := uuid.Parse(c.params["receipt_id"])
	if err != nil {
		writeError(ctx, fasthttp.StatusNotFound, "receipt not found")
		return
	}
	r, err := s.db.GetReceipt(c.who.tenant, id)
	if errors.Is(err, engine.ErrNotFound) {
		writeError(ctx, fasthttp.StatusNotFound, "receipt not found")
		return
	}
	if err != nil {
		s.fail(ctx, err)
		return
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("application/json")
	ctx.SetBody(r.Body)
}

func (s *Server) eraseWorkspace(ctx *fasthttp.RequestCtx, c *call) {
	ws := c.params["workspace_id"]
	if err := s.db.CheckWorkspace(c.who.tenant, ws); err != nil {
		s.fail(ctx, err)
		return
	}
	res, err := s.db.EraseWorkspace(c.who.tenant, ws)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	if err := s.ctl.EraseWorkspaceJobs(c.who.tenant, ws, res.Seq); err != nil {
		s.fail(ctx, err)
		return
	}
	if err := s.ctl.ReleaseWorkspace(c.who.tenant, ws); err != nil {
		s.fail(ctx, err)
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, map[string]any{"workspace_id": ws, "artifacts_erased": res.Artifacts, "spans_erased": res.Spans,
		"feedback_erased": res.MarkedSpans, "receipts_erased": res.Receipts})
}
