package service

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/ratelimit"
)

// Kind is what an error means to a caller, whichever layer returned it: the
// service's own refusals, and the engine's, control's, context and storage
// errors it passes through. It is the one error vocabulary of the service;
// each transport maps kinds to its answers (status codes, tool-error
// wording) in one place, and Classify is the only place that knows which
// error is which kind.
type Kind uint8

// The kinds. Detail is the error's own message for the kinds marked so; the
// others are worded by the transport.
const (
	KindInternal     Kind = iota // anything else: a storage failure or a bug (to log; no detail)
	KindInvalid                  // bad input; the detail names the field
	KindNoKey                    // no API key (ErrNoKey): the transport names its credential
	KindUnauthorized             // the key is not valid; detail
	KindForbidden                // the caller may not (also the plan's workspace limit); detail
	KindPlan                     // the plan lacks a feature (*PlanError); detail
	KindNotFound                 // detail ("not found" for the engine's and control's)
	KindConflict                 // a refusal, or an idempotency key bound to another artifact; detail
	KindRateLimited              // *RateLimitedError; detail, RetryAfter
	KindJobBacklog               // too many unfinished indexing jobs; nothing was queued; detail
	KindBackpressure             // ingest refused while the server catches up; nothing stored; detail
	KindUnavailable              // the replicated log did not acknowledge in time; detail
	KindShuttingDown             // the engine is closed
	KindNotServed                // *NotServedError: another node serves the shard
	KindCanceled                 // context.Canceled: the client went, or the server stops
	KindTimeout                  // context.DeadlineExceeded
	KindDiskFull                 // ENOSPC or EDQUOT: nothing stored

	numKinds // not a kind: the number of kinds
)

var kindNames = [numKinds]string{
	KindInternal: "internal", KindInvalid: "invalid", KindNoKey: "no key", KindUnauthorized: "unauthorized",
	KindForbidden: "forbidden", KindPlan: "plan", KindNotFound: "not found", KindConflict: "conflict",
	KindRateLimited: "rate limited", KindJobBacklog: "job backlog", KindBackpressure: "back-pressure",
	KindUnavailable: "unavailable", KindShuttingDown: "shutting down", KindNotServed: "not served",
	KindCanceled: "canceled", KindTimeout: "timeout", KindDiskFull: "disk full",
}

// Kinds returns every kind, for the transports' tests that check they
// answer each.
func Kinds() []Kind {
	ks := make([]Kind, numKinds)
	for i := range ks {
		ks[i] = Kind(i)
	}
	return ks
}

func (k Kind) String() string {
	if k < numKinds && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Fault is an error as a caller sees it.
type Fault struct {
	Kind Kind
	// Detail is the message for the caller, for the kinds that have one.
	Detail string
	// RetryAfter is when the same request may succeed, in whole seconds,
	// when the error says (a rate limit's window); 0 otherwise.
	RetryAfter int
}

// Classify gives err's kind and detail. The order is the precedence when
// an error matches more than one kind. A detail is written for the caller:
// it is the matched error's own text, never the wrapping around it (a
// "pkg: doing x: " context the layers add for their logs), and the
// passed-through errors' texts carry no package prefix
// (TestDetailsForCallers).
func Classify(err error) Fault {
	var rl *RateLimitedError
	var plan *PlanError
	var ns *NotServedError
	var conflict *IdempotencyConflictError
	var inv *engine.InvalidError
	var cinv *control.InvalidError
	var quota *control.WorkspaceQuotaError
	var bp *engine.BackpressureError
	switch {
	case errors.Is(err, ErrNoKey):
		return Fault{Kind: KindNoKey}
	case errors.As(err, &rl):
		return Fault{Kind: KindRateLimited, Detail: rl.Error(), RetryAfter: rl.RetryAfterSeconds()}
	case errors.As(err, &plan):
		return Fault{Kind: KindPlan, Detail: plan.Error()}
	case errors.Is(err, ErrInvalid):
		return Fault{Kind: KindInvalid, Detail: refusalDetail(err)}
	case errors.Is(err, ErrUnauthorized):
		return Fault{Kind: KindUnauthorized, Detail: refusalDetail(err)}
	case errors.Is(err, ErrForbidden):
		return Fault{Kind: KindForbidden, Detail: refusalDetail(err)}
	case errors.Is(err, ErrNotFound):
		return Fault{Kind: KindNotFound, Detail: refusalDetail(err)}
	case errors.Is(err, ErrConflict):
		return Fault{Kind: KindConflict, Detail: refusalDetail(err)}
	case errors.As(err, &ns):
		return Fault{Kind: KindNotServed}
	case errors.As(err, &conflict):
		return Fault{Kind: KindConflict, Detail: conflict.Error()}
	case errors.As(err, &inv):
		return Fault{Kind: KindInvalid, Detail: inv.Error()}
	case errors.As(err, &cinv):
		return Fault{Kind: KindInvalid, Detail: cinv.Error()}
	case errors.Is(err, engine.ErrNotFound), errors.Is(err, control.ErrNotFound):
		return Fault{Kind: KindNotFound, Detail: "not found"}
	case errors.As(err, &quota):
		return Fault{Kind: KindForbidden, Detail: quota.Error()}
	case errors.Is(err, control.ErrWorkspaceQuota):
		return Fault{Kind: KindForbidden, Detail: control.ErrWorkspaceQuota.Error()}
	case errors.Is(err, control.ErrJobBacklog):
		return Fault{Kind: KindJobBacklog, Detail: control.ErrJobBacklog.Error()}
	case errors.As(err, &bp):
		return Fault{Kind: KindBackpressure, Detail: bp.Error()}
	case errors.Is(err, engine.ErrBackpressure):
		return Fault{Kind: KindBackpressure, Detail: backpressureDetail}
	case errors.Is(err, engine.ErrClosed):
		return Fault{Kind: KindShuttingDown}
	case errors.Is(err, engine.ErrUnavailable):
		return Fault{Kind: KindUnavailable, Detail: engine.ErrUnavailable.Error()}
	case errors.Is(err, context.Canceled):
		return Fault{Kind: KindCanceled}
	case errors.Is(err, context.DeadlineExceeded):
		return Fault{Kind: KindTimeout}
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return Fault{Kind: KindDiskFull}
	}
	return Fault{Kind: KindInternal}
}

// backpressureDetail words engine.ErrBackpressure when it comes without
// its *BackpressureError (whose text says how much waits).
const backpressureDetail = "the server is catching up: the write was refused and nothing was stored; retry shortly"

// refusalDetail is the detail of one of the service's refusals: the *Error's
// own, without what wraps it; err's text for a refusal of another type
// (an *InvalidError is matched before).
func refusalDetail(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Detail
	}
	return err.Error()
}

// InvalidError reports a bad argument, naming the field: the service's own
// and the engine's and retrieval's, which are of this type. Control has a
// type of its own (control imports no engine), with the same text: where
// one can reach a caller, fromControl makes it an *InvalidError, so that
// bad input is always an *InvalidError or an ErrInvalid refusal.
type InvalidError = engine.InvalidError

// fromControl is err, or the *InvalidError of control's *InvalidError.
func fromControl(err error) error {
	if cinv, ok := err.(*control.InvalidError); ok {
		return &InvalidError{Field: cinv.Field, Reason: cinv.Reason}
	}
	return err
}

// Refusal sentinels. Every refusal the service makes itself unwraps to one
// of them (or is an *InvalidError, a *PlanError or a *RateLimitedError).
var (
	ErrInvalid      = errors.New("invalid")
	ErrUnauthorized = errors.New("unauthorized")
	ErrForbidden    = errors.New("forbidden")
	ErrNotFound     = errors.New("not found")
	ErrConflict     = errors.New("conflict")
)

// ErrNoKey is the refusal of a request that carries no API key while
// authentication is on. It has no caller-facing message of its own: the
// transport names its own credential (a header, a connection parameter).
var ErrNoKey = &Error{Kind: ErrUnauthorized, Detail: "no API key"}

// Error is a refusal of one kind with a message for the caller.
type Error struct {
	Kind   error // ErrInvalid, ErrUnauthorized, ErrForbidden, ErrNotFound or ErrConflict (Classify gives the Kind of each)
	Detail string
}

func (e *Error) Error() string { return e.Detail }
func (e *Error) Unwrap() error { return e.Kind }

func refuse(kind error, format string, args ...any) *Error {
	return &Error{Kind: kind, Detail: fmt.Sprintf(format, args...)}
}

// invalid is bad input: an *InvalidError as it is, any other error (a
// decoding error that names its field in its text) as an ErrInvalid refusal.
func invalid(err error) error {
	var inv *InvalidError
	if errors.As(err, &inv) {
		return err
	}
	return &Error{Kind: ErrInvalid, Detail: err.Error()}
}

// RateLimitedError refuses a request over a rate limit: a plan's requests
// per minute, or open registrations per client address.
type RateLimitedError struct {
	RetryAfter time.Duration // until the window admits the next request
	detail     string
}

func (e *RateLimitedError) Error() string { return e.detail }

// RetryAfterSeconds is RetryAfter in whole seconds, rounded up, at least 1.
func (e *RateLimitedError) RetryAfterSeconds() int { return ratelimit.RetryAfterSeconds(e.RetryAfter) }

// PlanError refuses a request whose tenant's plan lacks a feature. It
// unwraps to ErrForbidden.
type PlanError struct {
	Plan    string // the tenant's plan
	Feature string // such as "the v2 API"
	Upgrade []string
}

func (e *PlanError) Error() string {
	msg := fmt.Sprintf("plan %s does not include %s", e.Plan, e.Feature)
	switch n := len(e.Upgrade); {
	case n == 1:
		msg += "; upgrade to " + e.Upgrade[0]
	case n > 1:
		msg += "; upgrade to "
		for i, p := range e.Upgrade[:n-1] {
			if i > 0 {
				msg += ", "
			}
			msg += p
		}
		msg += " or " + e.Upgrade[n-1]
	}
	return msg
}

func (e *PlanError) Unwrap() error { return ErrForbidden }
