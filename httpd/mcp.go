package httpd

import (
	"github.com/loci-memory/loci/mcpd"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

// mcpHandler serves the Model Context Protocol's streamable HTTP transport
// at POST /mcp (package mcpd, over the same service). The route is public
// to the dispatcher: mcpd authenticates every request, admits and meters
// every JSON-RPC message itself (each message of a batch is one request
// against the rate limit), under the caller's plan, as the API would, and
// sets the X-RateLimit-* headers of the answer.
func (s *Server) newMCPHandler() fasthttp.RequestHandler {
	m := mcpd.New(s.svc, mcpd.Options{Version: s.cfg.Version, Logger: s.log})
	return fasthttpadaptor.NewFastHTTPHandler(m.HTTPHandler())
}

func (s *Server) mcp(ctx *fasthttp.RequestCtx, _ *call) {
	if s.cfg.Cluster != nil {
		s.mcpRouted(ctx)
		return
	}
	s.mcpHandler(ctx)
}
