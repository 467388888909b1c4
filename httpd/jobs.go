package httpd

import "github.com/valyala/fasthttp"

func (s *Server) getJob(ctx *fasthttp.RequestCtx, c *call) {
	j, err := s.svc.Job(c.who, c.params["job_id"])
	if err != nil {
		s.serviceFail(ctx, err)
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, j)
}
