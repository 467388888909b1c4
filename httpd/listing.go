package httpd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/loci-memory/loci/service"
	"github.com/valyala/fasthttp"
)

// queryParams reads the request's query parameters strictly, as bodies are
// read: a parameter the route does not know, or one given twice, is an
// error naming it. Values are returned by name.
func queryParams(ctx *fasthttp.RequestCtx, allowed ...string) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range ctx.QueryArgs().All() {
		name := string(k)
		if !slices.Contains(allowed, name) {
			known := "none"
			if len(allowed) > 0 {
				known = strings.Join(allowed, ", ")
			}
			return nil, fmt.Errorf("%s: unknown query parameter; allowed here: %s", name, known)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s: query parameter given more than once", name)
		}
		out[name] = string(v)
	}
	return out, nil
}

// param is a query parameter's value, nil when absent.
func param(params map[string]string, name string) *string {
	v, ok := params[name]
	if !ok {
		return nil
	}
	return &v
}

// listWorkspaces answers GET /v1/workspaces: the caller's workspaces that
// hold artifacts, by id.
func (s *Server) listWorkspaces(ctx *fasthttp.RequestCtx, c *call) {
	if _, err := queryParams(ctx); err != nil {
		badRequest(ctx, err)
		return
	}
	var shards []int
	var err error
	if s.cfg.Cluster != nil {
		if shards, err = requestShards(ctx); err != nil {
			badRequest(ctx, err)
			return
		}
	}
	var res service.WorkspacesResult
	if shards != nil {
		res, err = s.svc.ListWorkspacesOf(c.who, shards) // a part of another node's listing
	} else if res, err = s.svc.ListWorkspaces(c.who); err == nil && len(res.Elsewhere) > 0 {
		err = s.gather(ctx, &res)
	}
	if err != nil {
		s.serviceFail(ctx, err)
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, res)
}

// listArtifacts answers GET /v1/workspaces/{workspace_id}/artifacts.
func (s *Server) listArtifacts(ctx *fasthttp.RequestCtx, c *call) {
	params, err := queryParams(ctx, "session_id", "actor_id", "artifact_type", "since", "until", "limit", "cursor")
	if err != nil {
		badRequest(ctx, err)
		return
	}
	page, err := s.svc.ListArtifacts(c.who, service.ListArtifactsRequest{WorkspaceID: c.params["workspace_id"],
		SessionID: param(params, "session_id"), ActorID: param(params, "actor_id"), ArtifactType: param(params, "artifact_type"),
		Since: param(params, "since"), Until: param(params, "until"), Limit: param(params, "limit"), Cursor: param(params, "cursor")})
	if err != nil {
		s.serviceFail(ctx, err)
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, page)
}

func (s *Server) eraseWorkspace(ctx *fasthttp.RequestCtx, c *call) {
	res, err := s.svc.EraseWorkspace(c.who, c.params["workspace_id"])
	if err != nil {
		s.serviceFail(ctx, err)
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, res)
}
