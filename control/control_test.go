package control

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// record is one control record as the fake engine logged it.
type record struct {
	kind    uint8
	seq     uint64
	payload []byte
}

// fakeEngine stands in for engine.DB: it numbers records, applies them to
// the store before the append returns, and logs them for replay.
type fakeEngine struct {
	mu    sync.Mutex
	store *Store
	seq   uint64
	log   []record
	fail  error // when set, appends fail without applying
}

func (e *fakeEngine) append(kind uint8, payload []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fail != nil {
		return e.fail
	}
	e.seq++
	p := append([]byte(nil), payload...)
	if err := e.store.ApplyControl(kind, e.seq, p); err != nil {
		e.seq--
		return err
	}
	e.log = append(e.log, record{kind, e.seq, p})
	return nil
}

func (e *fakeEngine) records() []record {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]record(nil), e.log...)
}

func (e *fakeEngine) setFail(err error) {
	e.mu.Lock()
	e.fail = err
	e.mu.Unlock()
}

// fakeClock starts at a fixed time and moves one second per reading, so
// every recorded time is distinct and runs are reproducible.
type fakeClock struct{ n atomic.Int64 }

func (c *fakeClock) now() time.Time {
	return time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(c.n.Add(1)) * time.Second)
}

func newTestStore(t testing.TB) (*Store, *fakeEngine) {
	t.Helper()
	c := &fakeClock{}
	s := New(c.now)
	e := &fakeEngine{store: s}
	s.Attach(e.append)
	return s, e
}

// replay builds a fresh store from a log, as the engine does at open.
func replay(t testing.TB, recs []record) *Store {
	t.Helper()
	s := New(nil)
	for _, r := range recs {
		if err := s.ApplyControl(r.kind, r.seq, r.payload); err != nil {
			t.Fatalf("replay seq %d: %v", r.seq, err)
		}
	}
	return s
}

func mustRegister(t testing.TB, s *Store, email, plan string) (Tenant, string) {
	t.Helper()
	tn, secret, err := s.Register(email, plan)
	if err != nil {
		t.Fatalf("Register(%q, %q): %v", email, plan, err)
	}
	return tn, secret
}

func TestPlans(t *testing.T) {
	want := []Plan{{"free", 30, false, 1}, {"pro", 120, true, 5}, {"team", 300, true, 20}, {"enterprise", 1000, true, 0}}
	got := Plans()
	if len(got) != len(want) {
		t.Fatalf("Plans() = %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("plan %d = %+v, want %+v", i, got[i], want[i])
		}
		if p, ok := PlanByName(want[i].Name); !ok || p != want[i] {
			t.Errorf("PlanByName(%q) = %+v, %v", want[i].Name, p, ok)
		}
	}
	got[0].RPM = 1
	if Plans()[0].RPM != 30 {
		t.Error("Plans returns the catalogue itself")
	}
	if _, ok := PlanByName("gold"); ok {
		t.Error("PlanByName(gold) found")
	}
}

func TestRegisterValidation(t *testing.T) {
	s, e := newTestStore(t)
	mustRegister(t, s, "Ann@Example.com", "pro")
	tests := []struct {
		email, plan string
		field       string // InvalidError field, or "" for ErrDuplicateEmail
	}{
		{"", "free", "email"},
		{"no-at-sign", "free", "email"},
		{"Ann <ann@example.com>", "free", "email"},
		{" ann@example.org", "free", "email"},
		{"a b@example.org", "free", "email"},
		{strings.Repeat("a", 250) + "@x.io", "free", "email"},
		{"bob@example.com", "gold", "plan"},
		{"ann@example.com", "free", ""},
		{"ANN@EXAMPLE.COM", "team", ""},
	}
	for _, tt := range tests {
		n := len(e.records())
		_, _, err := s.Register(tt.email, tt.plan)
		var ie *InvalidError
		switch {
		case tt.field == "" && !errors.Is(err, ErrDuplicateEmail):
			t.Errorf("Register(%q): %v, want ErrDuplicateEmail", tt.email, err)
		case tt.field != "" && (!errors.As(err, &ie) || ie.Field != tt.field):
			t.Errorf("Register(%q, %q): %v, want InvalidError on %s", tt.email, tt.plan, err, tt.field)
		}
		if len(e.records()) != n {
			t.Errorf("Register(%q) wrote a record", tt.email)
		}
	}
	tn, _ := mustRegister(t, s, "carl@example.com", "")
	if tn.Plan != "free" {
		t.Errorf("default plan %q, want free", tn.Plan)
	}
}

func TestRegisterAuthenticateRevoke(t *testing.T) {
	s, e := newTestStore(t)
	tn, secret := mustRegister(t, s, "ann@example.com", "pro")
	if len(e.records()) != 1 {
		t.Fatalf("Register wrote %d records, want one (tenant with its first key)", len(e.records()))
	}
	if len(secret) != 46 || !strings.HasPrefix(secret, "lk_") || !isBase62(secret[3:]) {
		t.Fatalf("secret %q is not lk_ + 43 base62 characters", secret)
	}
	if got, ok := s.Tenant(tn.ID); !ok || got != tn {
		t.Fatalf("Tenant(%s) = %+v, %v; Register returned %+v", tn.ID, got, ok, tn)
	}
	at, k1, ok := s.Authenticate(secret)
	if !ok || at.ID != tn.ID || k1.TenantID != tn.ID || k1.Prefix != secret[:8] || k1.LastUsedAt == nil {
		t.Fatalf("Authenticate = %+v, %+v, %v", at, k1, ok)
	}
	for _, bad := range []string{"", secret[:45], secret + "x", "lk_" + strings.Repeat("A", 43), "xx" + secret[2:]} {
		if _, _, ok := s.Authenticate(bad); ok {
			t.Errorf("Authenticate(%q) succeeded", bad)
		}
	}
	if _, err := s.RevokeKey(tn.ID, k1.ID); !errors.Is(err, ErrLastKey) {
		t.Fatalf("revoking the only key: %v, want ErrLastKey", err)
	}
	k2, secret2, err := s.CreateKey(tn.ID)
	if err != nil || secret2 == secret || k2.Prefix != secret2[:8] {
		t.Fatalf("CreateKey = %+v, %q, %v", k2, secret2, err)
	}
	keys := s.Keys(tn.ID)
	if len(keys) != 2 || keys[0].ID != k1.ID || keys[1].ID != k2.ID || keys[1].LastUsedAt != nil {
		t.Fatalf("Keys = %+v", keys)
	}
	rk, err := s.RevokeKey(tn.ID, k1.ID)
	if err != nil || !rk.Revoked {
		t.Fatalf("RevokeKey = %+v, %v", rk, err)
	}
	if _, _, ok := s.Authenticate(secret); ok {
		t.Fatal("revoked key authenticates")
	}
	if _, _, ok := s.Authenticate(secret2); !ok {
		t.Fatal("new key does not authenticate")
	}
	n := len(e.records())
	if rk, err := s.RevokeKey(tn.ID, k1.ID); err != nil || !rk.Revoked || len(e.records()) != n {
		t.Fatalf("revoking a revoked key: %+v, %v, %d new records", rk, err, len(e.records())-n)
	}
	if _, err := s.RevokeKey(tn.ID, k2.ID); !errors.Is(err, ErrLastKey) {
		t.Fatalf("revoking the last unrevoked key: %v, want ErrLastKey", err)
	}
	for _, id := range []string{"", "not-a-uuid", "00000000-0000-0000-0000-000000000001"} {
		if _, err := s.RevokeKey(tn.ID, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("RevokeKey(%q) = %v, want ErrNotFound", id, err)
		}
	}

	// The state survives replay, last-used times included once flushed.
	if err := s.FlushUsage(); err != nil {
		t.Fatal(err)
	}
	r := replay(t, e.records())
	if got, want := r.Keys(tn.ID), s.Keys(tn.ID); !equalKeys(got, want) {
		t.Fatalf("after replay Keys = %+v, want %+v", got, want)
	}
	if _, _, ok := r.Authenticate(secret); ok {
		t.Fatal("revoked key authenticates after replay")
	}
	if _, _, ok := r.Authenticate(secret2); !ok {
		t.Fatal("key does not authenticate after replay")
	}
}

func equalKeys(a, b []KeyInfo) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if (x.LastUsedAt == nil) != (y.LastUsedAt == nil) || (x.LastUsedAt != nil && !x.LastUsedAt.Equal(*y.LastUsedAt)) {
			return false
		}
		x.LastUsedAt, y.LastUsedAt = nil, nil
		if x != y {
			return false
		}
	}
	return true
}

func TestTenantIsolation(t *testing.T) {
	s, _ := newTestStore(t)
	a, _ := mustRegister(t, s, "a@example.com", "pro")
	b, _ := mustRegister(t, s, "b@example.com", "pro")
	ka, _, err := s.CreateKey(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range s.Keys(b.ID) {
		if k.TenantID != b.ID {
			t.Fatalf("Keys(b) lists %+v", k)
		}
	}
	if _, err := s.RevokeKey(b.ID, ka.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoking another tenant's key: %v, want ErrNotFound", err)
	}
	jobs, err := s.CreateJobs(a.ID, "ws-1", []JobInput{{ArtifactID: newUUID(t), IdempotencyKey: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Job(b.ID, jobs[0].ID); ok {
		t.Error("Job visible to another tenant")
	}
	if _, ok := s.JobByArtifact(b.ID, jobs[0].ArtifactID); ok {
		t.Error("JobByArtifact visible to another tenant")
	}
	if _, ok := s.JobByIdempotencyKey(b.ID, "ws-1", "k"); ok {
		t.Error("JobByIdempotencyKey visible to another tenant")
	}
	if _, ok := s.Job(a.ID, jobs[0].ID); !ok {
		t.Error("Job not visible to its tenant")
	}
}

func TestSetPlan(t *testing.T) {
	s, e := newTestStore(t)
	tn, _ := mustRegister(t, s, "ann@example.com", "free")
	got, err := s.SetPlan(tn.ID, "team")
	if err != nil || got.Plan != "team" {
		t.Fatalf("SetPlan = %+v, %v", got, err)
	}
	if cur, _ := s.Tenant(tn.ID); cur.Plan != "team" {
		t.Fatalf("plan after SetPlan: %q", cur.Plan)
	}
	n := len(e.records())
	if _, err := s.SetPlan(tn.ID, "team"); err != nil || len(e.records()) != n {
		t.Fatalf("setting the same plan: %v, %d records", err, len(e.records())-n)
	}
	var ie *InvalidError
	tests := []struct {
		tenant, plan string
		check        func(error) bool
	}{
		{tn.ID, "gold", func(err error) bool { return errors.As(err, &ie) && ie.Field == "plan" }},
		{"00000000-0000-0000-0000-000000000001", "pro", func(err error) bool { return errors.Is(err, ErrNotFound) }},
		{DefaultTenant, "pro", func(err error) bool { return errors.Is(err, ErrBuiltinTenant) }},
	}
	for _, tt := range tests {
		if _, err := s.SetPlan(tt.tenant, tt.plan); !tt.check(err) {
			t.Errorf("SetPlan(%q, %q) = %v", tt.tenant, tt.plan, err)
		}
	}
	if r := replay(t, e.records()); !mustTenant(t, r, tn.ID).CreatedAt.Equal(tn.CreatedAt) || mustTenant(t, r, tn.ID).Plan != "team" {
		t.Fatal("plan change lost on replay")
	}
}

func mustTenant(t testing.TB, s *Store, id string) Tenant {
	t.Helper()
	tn, ok := s.Tenant(id)
	if !ok {
		t.Fatalf("tenant %s missing", id)
	}
	return tn
}

func TestWorkspaceQuota(t *testing.T) {
	s, e := newTestStore(t)
	tn, _ := mustRegister(t, s, "ann@example.com", "free")
	steps := []struct {
		op      string // claim, release, plan
		arg     string
		err     error
		records int // records written by the step
	}{
		{"claim", "ws-1", nil, 1},
		{"claim", "ws-1", nil, 0},
		{"claim", "ws-2", ErrWorkspaceQuota, 0},
		{"plan", "pro", nil, 1},
		{"claim", "ws-2", nil, 1},
		{"claim", "ws-3", nil, 1},
		{"plan", "free", nil, 1},
		{"claim", "ws-4", ErrWorkspaceQuota, 0},
		{"claim", "ws-2", nil, 0},
		{"release", "ws-1", nil, 1},
		{"release", "ws-1", nil, 0},
		{"release", "ws-2", nil, 1},
		{"claim", "ws-4", ErrWorkspaceQuota, 0}, // still owns ws-3
		{"release", "ws-3", nil, 1},
		{"claim", "ws-4", nil, 1},
	}
	for i, st := range steps {
		n := len(e.records())
		var err error
		switch st.op {
		case "claim":
			err = s.ClaimWorkspace(tn.ID, st.arg)
		case "release":
			err = s.ReleaseWorkspace(tn.ID, st.arg)
		case "plan":
			_, err = s.SetPlan(tn.ID, st.arg)
		}
		if !errors.Is(err, st.err) || len(e.records())-n != st.records {
			t.Fatalf("step %d %s %s: %v and %d records, want %v and %d", i, st.op, st.arg, err, len(e.records())-n, st.err, st.records)
		}
	}
	if got := s.Workspaces(tn.ID); len(got) != 1 || got[0] != "ws-4" {
		t.Fatalf("Workspaces = %v", got)
	}
	if err := s.ClaimWorkspace("00000000-0000-0000-0000-000000000001", "w"); !errors.Is(err, ErrNotFound) {
		t.Errorf("claim by unknown tenant: %v", err)
	}
	var ie *InvalidError
	if err := s.ClaimWorkspace(tn.ID, ""); !errors.As(err, &ie) {
		t.Errorf("claim of empty workspace: %v", err)
	}
}

func TestDefaultTenant(t *testing.T) {
	s, e := newTestStore(t)
	tn, ok := s.Tenant(DefaultTenant)
	if !ok || tn.ID != DefaultTenant || tn.Plan != "enterprise" {
		t.Fatalf("Tenant(default) = %+v, %v", tn, ok)
	}
	for _, ws := range []string{"b", "a", "c", "a"} {
		if err := s.ClaimWorkspace(DefaultTenant, ws); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Workspaces(DefaultTenant); strings.Join(got, ",") != "a,b,c" {
		t.Fatalf("Workspaces(default) = %v", got)
	}
	if _, _, err := s.CreateKey(DefaultTenant); !errors.Is(err, ErrBuiltinTenant) {
		t.Fatalf("CreateKey(default) = %v", err)
	}
	if len(s.Keys(DefaultTenant)) != 0 {
		t.Fatal("default tenant has keys")
	}
	s.Count(DefaultTenant, time.Date(2025, 3, 9, 0, 0, 0, 0, time.UTC), UsageDelta{Endpoint: "GET /v1/receipts"})
	if _, err := s.CreateJobs(DefaultTenant, "a", []JobInput{{ArtifactID: newUUID(t)}}); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushUsage(); err != nil {
		t.Fatal(err)
	}
	r := replay(t, e.records())
	if got := r.Usage(DefaultTenant, "2025-03"); got.Requests["GET /v1/receipts"] != 1 {
		t.Fatalf("default usage after replay: %+v", got)
	}
	if len(r.Unfinished()) != 1 || strings.Join(r.Workspaces(DefaultTenant), ",") != "a,b,c" {
		t.Fatal("default tenant's jobs or workspaces lost on replay")
	}
}

func TestNotAttached(t *testing.T) {
	s := New(nil)
	if _, _, err := s.Register("a@example.com", "free"); !errors.Is(err, ErrNotAttached) {
		t.Fatalf("Register before Attach: %v", err)
	}
	s.Count("t", time.Date(2025, 3, 9, 0, 0, 0, 0, time.UTC), UsageDelta{Endpoint: "x"})
	if err := s.FlushUsage(); !errors.Is(err, ErrNotAttached) {
		t.Fatalf("FlushUsage before Attach: %v", err)
	}
	if got := s.Usage("t", "2025-03"); got.Requests["x"] != 1 {
		t.Fatalf("count lost: %+v", got)
	}
}
