package httpd

import (
	"github.com/loci-memory/loci/service"
	"github.com/valyala/fasthttp"
)

func (s *Server) feedback(ctx *fasthttp.RequestCtx, c *call) {
	var r service.FeedbackRequest
	if err := decodeBody(ctx.PostBody(), &r); err != nil {
		badRequest(ctx, err)
		return
	}
	res, err := s.svc.Feedback(c.who, r)
	if err != nil {
		s.serviceFail(ctx, err)
		return
	}
	writeJSON(ctx, fasthttp.StatusCreated, res)
}

// peekParam is a query parameter's value, nil when absent; the receipts
// route reads its parameters leniently (the first of a repeated one, others
// ignored), as it always has.
func peekParam(args *fasthttp.Args, name string) *string {
	v := args.Peek(name)
	if v == nil {
		return nil
	}
	s := string(v)
	return &s
}

func (s *Server) listReceipts(ctx *fasthttp.RequestCtx, c *call) {
	args := ctx.QueryArgs()
	page, err := s.svc.ListReceipts(c.who, service.ListReceiptsRequest{WorkspaceID: string(args.Peek("workspace_id")),
		PackHash: string(args.Peek("pack_hash")), Limit: peekParam(args, "limit"), Offset: peekParam(args, "offset")})
	if err != nil {
		s.serviceFail(ctx, err)
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, page)
}

func (s *Server) getReceipt(ctx *fasthttp.RequestCtx, c *call) {
	body, err := s.svc.Receipt(c.who, c.params["receipt_id"])
	if err != nil {
		s.serviceFail(ctx, err)
		return
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}
