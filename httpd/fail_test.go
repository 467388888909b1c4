package httpd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"syscall"
	"testing"

	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/service"
	"github.com/valyala/fasthttp"
)

// TestWireErrors: every kind of the service's errors has its answer, and
// an error of each kind gets the status, Retry-After and detail the API
// has always given it.
func TestWireErrors(t *testing.T) {
	for _, k := range service.Kinds() {
		if _, ok := wireErrors[k]; !ok && k != service.KindNotServed {
			t.Errorf("kind %s has no answer in wireErrors", k)
		}
	}
	s := &Server{log: slog.New(slog.DiscardHandler)}
	inv := &engine.InvalidError{Field: "query", Reason: "is required"}
	for _, tc := range []struct {
		err    error
		status int
		retry  string
		detail string
	}{
		{service.ErrNoKey, 401, "", "missing API key: send X-API-Key or Authorization: Bearer"},
		{&service.PlanError{Plan: "free", Feature: "the v2 API", Upgrade: []string{"pro"}}, 403, "", "plan free does not include the v2 API; upgrade to pro (PUT /v1/billing/plan)"},
		{fmt.Errorf("wrapped: %w", inv), 400, "", "query: is required"},
		{&control.InvalidError{Field: "email", Reason: "is required"}, 400, "", "email: is required"},
		{engine.ErrNotFound, 404, "", "not found"},
		{control.ErrNotFound, 404, "", "not found"},
		{control.ErrWorkspaceQuota, 403, "", control.ErrWorkspaceQuota.Error()},
		{control.ErrJobBacklog, 429, "1", "too many unfinished indexing jobs for this tenant: nothing was queued; retry when some are done"},
		{&engine.BackpressureError{UnflushedBytes: 7}, 503, "5", (&engine.BackpressureError{UnflushedBytes: 7}).Error()},
		{engine.ErrClosed, 503, "", "the service is shutting down"},
		{fmt.Errorf("publish: %w", engine.ErrUnavailable), 503, "1", engine.ErrUnavailable.Error()},
		{context.Canceled, 503, "1", "request cancelled: the client closed its connection or the service is shutting down"},
		{context.DeadlineExceeded, 503, "1", "the service is overloaded: the request did not finish in time; retry shortly"},
		{&os.PathError{Op: "write", Path: "wal", Err: syscall.ENOSPC}, 507, "30", "no space left on device: write refused, nothing stored; retry when space is freed"},
		{errors.New("disk on fire"), 500, "", "internal error"},
	} {
		ctx := &fasthttp.RequestCtx{}
		s.serviceFail(ctx, tc.err)
		var body struct{ Detail string }
		if err := json.Unmarshal(ctx.Response.Body(), &body); err != nil {
			t.Fatal(err)
		}
		if got, retry := ctx.Response.StatusCode(), string(ctx.Response.Header.Peek("Retry-After")); got != tc.status || retry != tc.retry || body.Detail != tc.detail {
			t.Errorf("%v: %d, Retry-After %q, %q; want %d, %q, %q", tc.err, got, retry, body.Detail, tc.status, tc.retry, tc.detail)
		}
	}
}
