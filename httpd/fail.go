package httpd

import (
	"errors"
	"strconv"

	"github.com/loci-memory/loci/service"
	"github.com/valyala/fasthttp"
)

// diskFullRetrySeconds is the Retry-After of a 507: freeing space is an
// operator's job, so clients should not hammer the server meanwhile.
const diskFullRetrySeconds = 30

// backpressureRetrySeconds is the Retry-After of an ingest refused while the
// server catches up with flushing and embedding.
const backpressureRetrySeconds = 5

// wireError is the HTTP form of a kind of error.
type wireError struct {
	status int
	// detail is the {"detail": ...} text; "" for the error's own
	// (service.Fault.Detail), followed by hint.
	detail, hint string
	// retryAfter is the Retry-After header in seconds (0: none); the
	// error's own advice (a rate limit's window) comes first.
	retryAfter int
}

// wireErrors maps the service's error kinds to status codes, texts and
// Retry-After: the one table of the HTTP API's errors. A kind that is not
// in it is answered as internal (TestWireErrors checks that each is).
// KindNotServed is not answered: the request is forwarded.
var wireErrors = map[service.Kind]wireError{
	service.KindInvalid:      {status: fasthttp.StatusBadRequest},
	service.KindNoKey:        {status: fasthttp.StatusUnauthorized, detail: "missing API key: send X-API-Key or Authorization: Bearer"},
	service.KindUnauthorized: {status: fasthttp.StatusUnauthorized},
	service.KindForbidden:    {status: fasthttp.StatusForbidden},
	service.KindPlan:         {status: fasthttp.StatusForbidden, hint: " (PUT /v1/billing/plan)"},
	service.KindNotFound:     {status: fasthttp.StatusNotFound},
	service.KindConflict:     {status: fasthttp.StatusConflict},
	service.KindRateLimited:  {status: fasthttp.StatusTooManyRequests},
	// Nothing was queued, or stored: the same request may be sent again.
	service.KindJobBacklog: {status: fasthttp.StatusTooManyRequests, retryAfter: 1,
		detail: "too many unfinished indexing jobs for this tenant: nothing was queued; retry when some are done"},
	service.KindBackpressure: {status: fasthttp.StatusServiceUnavailable, retryAfter: backpressureRetrySeconds},
	service.KindUnavailable:  {status: fasthttp.StatusServiceUnavailable, retryAfter: 1},
	service.KindShuttingDown: {status: fasthttp.StatusServiceUnavailable, detail: "the service is shutting down"},
	// The client has gone (nobody reads this) or the server is stopping.
	service.KindCanceled: {status: fasthttp.StatusServiceUnavailable, retryAfter: 1,
		detail: "request cancelled: the client closed its connection or the service is shutting down"},
	service.KindTimeout: {status: fasthttp.StatusServiceUnavailable, retryAfter: 1,
		detail: "the service is overloaded: the request did not finish in time; retry shortly"},
	// The engine stores nothing of a write that fails this way, so the
	// client may retry the same request once space is freed.
	service.KindDiskFull: {status: fasthttp.StatusInsufficientStorage, retryAfter: diskFullRetrySeconds,
		detail: "no space left on device: write refused, nothing stored; retry when space is freed"},
	service.KindInternal: {status: fasthttp.StatusInternalServerError, detail: "internal error"},
}

// serviceFail answers a request the service refused or failed, whatever
// layer the error comes from: the one place where errors become status
// codes (through service.Classify and wireErrors). A shard this node does not
// serve is forwarded instead; a full disk and internal errors are logged.
func (s *Server) serviceFail(ctx *fasthttp.RequestCtx, err error) {
	f := service.Classify(err)
	a, ok := wireErrors[f.Kind]
	switch {
	case f.Kind == service.KindNotServed:
		var ns *service.NotServedError
		errors.As(err, &ns)
		s.forward(ctx, ns)
		return
	case f.Kind == service.KindDiskFull:
		s.log.Error("httpd: write refused: disk full", "path", string(ctx.Path()), "request_id", requestID(ctx), "err", err)
	case f.Kind == service.KindInternal, !ok:
		s.log.Error("httpd: request failed", "path", string(ctx.Path()), "request_id", requestID(ctx), "err", err)
		a = wireErrors[service.KindInternal]
	}
	retry := a.retryAfter
	if f.RetryAfter > 0 {
		retry = f.RetryAfter
	}
	if retry > 0 {
		ctx.Response.Header.Set("Retry-After", strconv.Itoa(retry))
	}
	detail := a.detail
	if detail == "" {
		detail = f.Detail + a.hint
	}
	writeError(ctx, a.status, detail)
}
