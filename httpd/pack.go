package httpd

import (
	"context"
	"time"

	"github.com/loci-memory/loci/service"
	"github.com/valyala/fasthttp"
)

// packTimeout bounds one pack (a remote query embedder is the slow part).
const packTimeout = 30 * time.Second

// runPack decodes a pack request (v1 bodies cannot carry profile) and
// serves it through the service.
func (s *Server) runPack(ctx *fasthttp.RequestCtx, c *call, v2 bool) (service.PackResult, bool) {
	var r service.PackV2Request
	var into any = &r.PackRequest
	if v2 {
		into = &r
	}
	if err := decodeBody(ctx.PostBody(), into); err != nil {
		badRequest(ctx, err)
		return service.PackResult{}, false
	}
	// The pack ends early when its client goes away or the server stops,
	// so abandoned packs do not hold live ones up at admission.
	pctx, cancel := context.WithTimeout(s.base, packTimeout)
	defer cancel()
	stop := watchClient(ctx, cancel)
	defer stop()
	res, err := s.svc.Pack(pctx, c.who, r, v2)
	if err != nil {
		s.serviceFail(ctx, err)
		return service.PackResult{}, false
	}
	c.usage = res.Usage
	return res, true
}

func (s *Server) packV1(ctx *fasthttp.RequestCtx, c *call) {
	if res, ok := s.runPack(ctx, c, false); ok {
		writeJSON(ctx, fasthttp.StatusOK, res.V1())
	}
}

func (s *Server) packV2(ctx *fasthttp.RequestCtx, c *call) {
	if res, ok := s.runPack(ctx, c, true); ok {
		writeJSON(ctx, fasthttp.StatusOK, res.V2())
	}
}
