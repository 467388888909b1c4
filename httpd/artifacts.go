package httpd

import (
	"github.com/valyala/fasthttp"
)

func (s *Server) getArtifact(ctx *fasthttp.RequestCtx, c *call) {
	a, err := s.svc.Artifact(c.who, c.params["artifact_id"])
	if err != nil {
		s.serviceFail(ctx, err)
		return
	}
	// The payload goes out exactly as it was ingested (ArtifactResult.JSON).
	b, err := a.JSON()
	if err != nil {
		writeError(ctx, fasthttp.StatusInternalServerError, "internal error: response encoding failed")
		return
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
}

func (s *Server) artifactStatus(ctx *fasthttp.RequestCtx, c *call) {
	st, err := s.svc.ArtifactStatus(c.who, c.params["artifact_id"])
	if err != nil {
		s.serviceFail(ctx, err)
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, st)
}

// eraseArtifact answers DELETE /v1/artifacts/{artifact_id}: 200 with what
// was erased; 404 for an id that is not the caller's, not stored or
// already erased; 409 while an indexing job still holds it.
func (s *Server) eraseArtifact(ctx *fasthttp.RequestCtx, c *call) {
	if _, err := queryParams(ctx); err != nil {
		badRequest(ctx, err)
		return
	}
	res, err := s.svc.EraseArtifact(c.who, c.params["artifact_id"])
	if err != nil {
		s.serviceFail(ctx, err)
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, res)
}
