package httpd

import (
	"context"

	"github.com/loci-memory/loci/service"
	"github.com/valyala/fasthttp"
)

// MaxBatch is the most artifacts one v2 ingest may carry.
const MaxBatch = service.MaxBatch

// MaxEmbeddingWait bounds how long a v2 ingest with wait_for_embedding
// waits for the background embedder.
const MaxEmbeddingWait = service.MaxEmbeddingWait

func (s *Server) ingestV1(ctx *fasthttp.RequestCtx, c *call) {
	var r service.IngestRequest
	if err := decodeBody(ctx.PostBody(), &r); err != nil {
		badRequest(ctx, err)
		return
	}
	res, err := s.svc.Ingest(context.Background(), c.who, r)
	if err != nil {
		s.serviceFail(ctx, err)
		return
	}
	c.usage = res.Usage
	status := fasthttp.StatusCreated
	if res.Replayed {
		ctx.Response.Header.Set("Idempotent-Replay", "true")
		status = fasthttp.StatusOK
	}
	writeJSON(ctx, status, res)
}

func (s *Server) ingestV2(ctx *fasthttp.RequestCtx, c *call) {
	body := ctx.PostBody()
	if err := checkBody(body); err != nil {
		badRequest(ctx, err)
		return
	}
	r, err := service.DecodeIngestBatch(body)
	if err != nil {
		badRequest(ctx, err)
		return
	}
	res, err := s.svc.IngestBatch(context.Background(), c.who, r)
	if err != nil {
		s.serviceFail(ctx, err)
		return
	}
	c.usage = res.Usage
	status := fasthttp.StatusOK
	switch {
	case r.AsyncIndex:
		status = fasthttp.StatusAccepted
	case res.Created:
		status = fasthttp.StatusCreated
	}
	writeJSON(ctx, status, res)
}
