package httpd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/loci-memory/loci/engine"
	"github.com/valyala/fasthttp"
)

// settingsJSON is a workspace's settings. RetentionDays is null when no
// retention is set.
type settingsJSON struct {
	WorkspaceID   string `json:"workspace_id"`
	RetentionDays *int   `json:"retention_days"`
}

// getSettings answers GET /v1/workspaces/{workspace_id}/settings. A
// workspace the caller never wrote has the default settings, as its
// listing is empty: workspaces are per tenant, so another tenant's are
// never seen.
func (s *Server) getSettings(ctx *fasthttp.RequestCtx, c *call) {
	ws := c.params["workspace_id"]
	if _, err := queryParams(ctx); err != nil {
		badRequest(ctx, err)
		return
	}
	if err := s.db.CheckWorkspace(c.who.tenant, ws); err != nil {
		s.fail(ctx, err)
		return
	}
	s.writeSettings(ctx, c.who.tenant, ws)
}

// putSettings answers PUT /v1/workspaces/{workspace_id}/settings:
// retention_days (required) sets the retention, or null clears it. The
// settings are durable when it answers, and artifacts the retention
// leaves behind are already hidden.
func (s *Server) putSettings(ctx *fasthttp.RequestCtx, c *call) {
	ws := c.params["workspace_id"]
	if _, err := queryParams(ctx); err != nil {
		badRequest(ctx, err)
		return
	}
	var r struct {
		RetentionDays json.RawMessage `json:"retention_days"`
	}
	if err := decodeBody(ctx.PostBody(), &r); err != nil {
		badRequest(ctx, err)
		return
	}
	days := 0 // null clears
	switch {
	case r.RetentionDays == nil:
		badRequest(ctx, errors.New("retention_days: is required (null clears the retention)"))
		return
	case !bytes.Equal(r.RetentionDays, []byte("null")):
		if err := decodeAt(r.RetentionDays, "retention_days", &days); err != nil {
			badRequest(ctx, err)
			return
		}
		if days < 1 || days > engine.MaxRetentionDays {
			badRequest(ctx, fmt.Errorf("retention_days: must be between 1 and %d, or null to clear", engine.MaxRetentionDays))
			return
		}
	}
	if err := s.db.CheckWorkspace(c.who.tenant, ws); err != nil {
		s.fail(ctx, err)
		return
	}
	if err := s.db.SetRetention(c.who.tenant, ws, days); err != nil {
		s.fail(ctx, err)
		return
	}
	s.writeSettings(ctx, c.who.tenant, ws)
}

func (s *Server) writeSettings(ctx *fasthttp.RequestCtx, tenant, ws string) {
	days, err := s.db.Retention(tenant, ws)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	out := settingsJSON{WorkspaceID: ws}
	if days > 0 {
		out.RetentionDays = &days
	}
	writeJSON(ctx, fasthttp.StatusOK, out)
}
