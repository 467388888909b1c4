package httpd

import (
	"github.com/loci-memory/loci/service"
	"github.com/valyala/fasthttp"
)

// getSettings answers GET /v1/workspaces/{workspace_id}/settings.
func (s *Server) getSettings(ctx *fasthttp.RequestCtx, c *call) {
	if _, err := queryParams(ctx); err != nil {
		badRequest(ctx, err)
		return
	}
	res, err := s.svc.Settings(c.who, c.params["workspace_id"])
	if err != nil {
		s.serviceFail(ctx, err)
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, res)
}

// putSettings answers PUT /v1/workspaces/{workspace_id}/settings:
// retention_days (required) sets the retention, or null clears it.
func (s *Server) putSettings(ctx *fasthttp.RequestCtx, c *call) {
	if _, err := queryParams(ctx); err != nil {
		badRequest(ctx, err)
		return
	}
	var r service.SetSettingsRequest
	if err := decodeBody(ctx.PostBody(), &r); err != nil {
		badRequest(ctx, err)
		return
	}
	r.WorkspaceID = c.params["workspace_id"]
	res, err := s.svc.SetSettings(c.who, r)
	if err != nil {
		s.serviceFail(ctx, err)
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, res)
}
