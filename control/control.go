// Package control is the durable control-plane state of the HTTP service:
// tenants, API keys, plans, workspace ownership, usage counters and
// asynchronous indexing jobs.
//
// Store is a state machine made durable by the storage engine's WAL. Every
// change is encoded as a record and handed to an Appender; the engine writes
// it to its WAL, syncs it and calls ApplyControl in log order before the
// append returns, so the state changes only through ApplyControl and replay
// after a restart rebuilds exactly the same state. The engine also asks for a
// snapshot of the whole state (SnapshotControl) and restores it at open
// (RestoreControl). The byte layout of records and snapshots is in
// docs/format/control.md.
package control

import (
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Appender makes a control record durable: the engine writes it to its WAL,
// syncs, calls ApplyControl with it and only then returns.
type Appender func(kind uint8, payload []byte) error

// DefaultTenant is the built-in tenant used when authentication is off. It
// exists without registration, is on plan enterprise and has no keys.
const DefaultTenant = "default"

// Errors of the Store's methods; service.KindOf gives each its kind, which
// the transports map to their statuses.
var (
	// ErrNotFound: no such tenant, key or job, or one of another tenant.
	ErrNotFound = errors.New("not found")
	// ErrDuplicateEmail: a tenant with the email, in any case, exists.
	ErrDuplicateEmail = errors.New("control: a tenant with this email exists")
	// ErrLastKey: revoking the key would leave the tenant without a usable key.
	ErrLastKey = errors.New("control: a tenant must keep at least one unrevoked key")
	// ErrWorkspaceQuota: the tenant owns as many workspaces as its plan
	// allows. ClaimWorkspace returns a *WorkspaceQuotaError, which names the
	// plan and its limit and matches it (errors.Is). Its text reaches
	// callers, so it has no package prefix.
	ErrWorkspaceQuota = errors.New("the plan's workspace limit is reached")
	// ErrBuiltinTenant: the built-in tenant has no keys and its plan is fixed.
	ErrBuiltinTenant = errors.New("control: the built-in tenant has no keys and a fixed plan")
	// ErrJobFinished: the job is done or failed; its status is final.
	ErrJobFinished = errors.New("control: the job is already done or failed")
	// ErrNotAttached: a change was asked for before Attach.
	ErrNotAttached = errors.New("control: no appender attached")

	errUsageNotApplied = errors.New("control: the usage record was not applied")
)

// WorkspaceQuotaError refuses a new workspace beyond the plan's limit,
// naming the plan and the limit for the caller; it is ErrWorkspaceQuota
// (errors.Is).
type WorkspaceQuotaError struct {
	Plan  string // the tenant's plan
	Limit int    // the workspaces the plan allows, all owned
}

func (e *WorkspaceQuotaError) Error() string {
	s := "s"
	if e.Limit == 1 {
		s = ""
	}
	return fmt.Sprintf("plan %s allows %d workspace%s and the tenant owns %d: erase one of its workspaces or change the plan",
		e.Plan, e.Limit, s, e.Limit)
}

// Is makes the error match ErrWorkspaceQuota.
func (e *WorkspaceQuotaError) Is(target error) bool { return target == ErrWorkspaceQuota }

// InvalidError reports a bad argument, naming the field: nothing was
// changed. Its text is the engine's (field: reason), and service.KindOf
// gives both the same kind.
type InvalidError struct {
	Field  string
	Reason string
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Reason }

// Plan is a service plan: its rate limit, whether it includes the v2 API and
// how many workspaces a tenant on it may own.
type Plan struct {
	Name       string
	RPM        int  // requests per minute
	V2         bool // v2 endpoints allowed
	Workspaces int  // 0 = unlimited
}

var plans = []Plan{
	{Name: "free", RPM: 30, V2: false, Workspaces: 1},
	{Name: "pro", RPM: 120, V2: true, Workspaces: 5},
	{Name: "team", RPM: 300, V2: true, Workspaces: 20},
	{Name: "enterprise", RPM: 1000, V2: true, Workspaces: 0},
}

// Plans returns the plan catalogue, cheapest first.
func Plans() []Plan { return append([]Plan(nil), plans...) }

// PlanByName returns the named plan.
func PlanByName(name string) (Plan, bool) {
	for _, p := range plans {
		if p.Name == name {
			return p, true
		}
	}
	return Plan{}, false
}

// Tenant is a customer account. The built-in DefaultTenant has a zero
// CreatedAt and an empty Email.
type Tenant struct {
	ID, Email, Plan string
	CreatedAt       time.Time
}

// KeyInfo describes an API key; the secret itself is never stored.
type KeyInfo struct {
	ID, TenantID string
	Prefix       string // the first 8 characters of the secret, for display
	CreatedAt    time.Time
	LastUsedAt   *time.Time // nil until the key authenticates a request
	Revoked      bool
}

// Store is the control state. It is safe for concurrent use. Its
// ApplyControl, SnapshotControl and RestoreControl methods implement the
// engine's ControlState interface (asserted in engine_test.go: control
// imports no engine).
type Store struct {
	now func() time.Time

	adminMu sync.Mutex    // serializes check-then-append of tenants, keys and workspaces
	flushMu sync.Mutex    // one usage flush at a time
	kick    chan struct{} // usage pending: wakes RunUsageWriter

	mu        sync.RWMutex // guards everything below
	app       Appender
	st        *state
	retention JobRetention
	// The payloads generation last made durable by the engine (known: one was).
	payloadsWritten uint64
	payloadsKnown   bool
	// Usage not yet applied: pending was counted since the last flush,
	// inflight is carried by the usage record being appended (flushing).
	pending, inflight         map[usageKey]*counts
	pendingUsed, inflightUsed map[uuid.UUID]int64
	flushing                  bool
}

// New returns an empty store that reads the time from now (time.Now when
// nil). Its methods that change state fail with ErrNotAttached until Attach.
func New(now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{
		now:         now,
		kick:        make(chan struct{}, 1),
		st:          newState(),
		retention:   DefaultJobRetention,
		pending:     make(map[usageKey]*counts),
		pendingUsed: make(map[uuid.UUID]int64),
	}
}

// Attach sets the appender that makes records durable; call it once, after
// the engine has opened (restored and replayed the state).
func (s *Store) Attach(app Appender) {
	s.mu.Lock()
	s.app = app
	s.mu.Unlock()
}

// ApplyControl applies one record in WAL order. A record with seq at or below
// the highest applied seq (one the restored snapshot covers) is ignored. A
// malformed record, an unknown kind or a record that contradicts the state is
// an error and changes nothing.
func (s *Store) ApplyControl(kind uint8, seq uint64, payload []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if seq <= s.st.seq {
		return nil
	}
	rec, err := decodeRecord(kind, payload)
	if err != nil {
		return err
	}
	if err := s.st.apply(rec, seq); err != nil {
		return err
	}
	if _, ok := rec.(usageRec); ok && s.flushing {
		// FlushUsage's own record (flushes are serialized, and replay runs
		// before Attach): what it carried is applied now, in the same step.
		s.inflight, s.inflightUsed, s.flushing = nil, nil, false
	}
	return nil
}

// SnapshotControl encodes the whole applied state, including the highest
// applied seq. Counts not yet flushed are not part of it.
func (s *Store) SnapshotControl() []byte {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.encodeSnapshot()
}

// RestoreControl replaces the applied state with a snapshot made by
// SnapshotControl. On error the state is unchanged.
func (s *Store) RestoreControl(b []byte) error {
	st, err := decodeSnapshot(b)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.st = st
	s.mu.Unlock()
	return nil
}

// append hands a record to the appender; ApplyControl has run when it
// returns nil. Callers must not hold mu.
func (s *Store) append(kind uint8, payload []byte) error {
	s.mu.RLock()
	app := s.app
	s.mu.RUnlock()
	if app == nil {
		return ErrNotAttached
	}
	return app(kind, payload)
}

// Validation shared by the methods and the decoders.

const maxEmailLength = 254

// checkEmail accepts a bare address (no display name, no angle brackets).
func checkEmail(email string) error {
	if email == "" {
		return &InvalidError{Field: "email", Reason: "is required"}
	}
	if len(email) > maxEmailLength {
		return &InvalidError{Field: "email", Reason: fmt.Sprintf("is %d bytes, longer than the limit of %d", len(email), maxEmailLength)}
	}
	a, err := mail.ParseAddress(email)
	if err != nil || a.Name != "" || a.Address != email {
		return &InvalidError{Field: "email", Reason: "is not a valid email address"}
	}
	return nil
}

func validPlanName(name string) error {
	if _, ok := PlanByName(name); !ok {
		return &InvalidError{Field: "plan", Reason: fmt.Sprintf("unknown plan %q; plans are free, pro, team, enterprise", name)}
	}
	return nil
}

// validTenantID accepts a canonical UUID string, the form Register assigns.
func validTenantID(id string) error {
	if u, err := uuid.Parse(id); err != nil || u.String() != id {
		return fmt.Errorf("tenant id %q is not a canonical UUID", id)
	}
	return nil
}

func validTenant(t tenantState) error {
	if err := validTenantID(t.id); err != nil {
		return err
	}
	if t.email == "" || len(t.email) > maxEmailLength || !utf8.ValidString(t.email) {
		return errors.New("bad email")
	}
	if err := validPlanName(t.plan); err != nil {
		return err
	}
	return validTimeErr(t.created)
}

func validKey(k keyState) error {
	if k.id == uuid.Nil {
		return errors.New("nil key id")
	}
	if err := validTenantID(k.tenantID); err != nil {
		return err
	}
	if len(k.prefix) != prefixLength || !strings.HasPrefix(k.prefix, secretPrefix) || !isBase62(k.prefix[len(secretPrefix):]) {
		return fmt.Errorf("bad key prefix %q", k.prefix)
	}
	return validTimeErr(k.created)
}

func validWorkspace(ws string) error {
	if ws == "" {
		return &InvalidError{Field: "workspace_id", Reason: "is required"}
	}
	return nil
}

func validTimeErr(us int64) error {
	if !validTime(us) {
		return fmt.Errorf("time %d µs out of range", us)
	}
	return nil
}

// validPeriod accepts "YYYY-MM" with a month 01..12.
func validPeriod(p string) error {
	if _, err := time.Parse("2006-01", p); err != nil || len(p) != 7 {
		return fmt.Errorf("bad period %q", p)
	}
	return nil
}
