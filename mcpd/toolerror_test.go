package mcpd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/service"
)

// TestToolErrorWording: an error of each of the service's kinds is worded
// for the model as it has always been, and the cases cover every kind.
func TestToolErrorWording(t *testing.T) {
	s := &Server{log: slog.New(slog.DiscardHandler)}
	inv := fmt.Errorf("ingest: %w", &engine.InvalidError{Field: "artifacts[0].raw_payload", Reason: "is required"})
	plan := &service.PlanError{Plan: "free", Feature: "the v2 API", Upgrade: []string{"pro"}}
	rl := &service.RateLimitedError{RetryAfter: time.Second}
	backpressure := &engine.BackpressureError{UnflushedBytes: 7}
	seen := map[service.Kind]bool{}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{service.ErrNoKey, errUnauthorized.Error()},
		{errUnauthorized, errUnauthorized.Error()},
		{rl, "rate limited: " + rl.Error()},
		{plan, plan.Error()},
		{&service.Error{Kind: service.ErrInvalid, Detail: "cursor: not a cursor"}, "cursor: not a cursor"},
		{&service.Error{Kind: service.ErrUnauthorized, Detail: "invalid API key"}, "invalid API key"},
		{&service.Error{Kind: service.ErrForbidden, Detail: "admin only"}, "admin only"},
		{&service.Error{Kind: service.ErrNotFound, Detail: "artifact not found"}, "artifact not found"},
		{&service.Error{Kind: service.ErrConflict, Detail: "taken"}, "taken"},
		{inv, "artifacts[0].raw_payload: is required"}, // the detail, without the call path's wrapping
		{&control.InvalidError{Field: "email", Reason: "is required"}, "email: is required"},
		{fmt.Errorf("ingest: %w", control.ErrWorkspaceQuota), control.ErrWorkspaceQuota.Error()},
		{control.ErrJobBacklog, control.ErrJobBacklog.Error()},
		{backpressure, backpressure.Error()},
		{&service.IdempotencyConflictError{Field: "idempotency_key", Key: "k"}, (&service.IdempotencyConflictError{Field: "idempotency_key", Key: "k"}).Error()},
		{fmt.Errorf("receipt: %w", engine.ErrNotFound), "not found"},
		{control.ErrNotFound, "not found"},
		{engine.ErrClosed, "the service is shutting down; retry shortly"},
		{fmt.Errorf("publish: %w", engine.ErrUnavailable), engine.ErrUnavailable.Error()},
		{&service.NotServedError{Shard: 1}, "the workspace's shard is being handed over between the cluster's nodes; retry shortly"},
		{context.Canceled, "the request was cancelled or timed out; retry shortly"},
		{context.DeadlineExceeded, "the request was cancelled or timed out; retry shortly"},
		{&os.PathError{Op: "write", Path: "wal", Err: syscall.EDQUOT}, "no space left on device: nothing was stored; retry when space is freed"},
		{errors.New("disk on fire"), "internal error"},
	} {
		if got := s.toolError(tc.err).Error(); got != tc.want {
			t.Errorf("toolError(%v) = %q, want %q", tc.err, got, tc.want)
		}
		seen[service.Classify(tc.err).Kind] = true
	}
	for _, k := range service.Kinds() {
		if !seen[k] {
			t.Errorf("no case of kind %s: add one, with the wording toolError gives it", k)
		}
	}
}
