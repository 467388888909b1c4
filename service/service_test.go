package service

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loci-memory/loci/control"
)

const adminKey = "admin-secret-key-for-tests"

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// newService returns a control-plane service (no engine) over a control
// store whose records are applied at once, as the engine would after
// making them durable.
func newService(t *testing.T, cfg Config) (*Service, *clock) {
	t.Helper()
	clk := &clock{now: time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)}
	if cfg.Now == nil {
		cfg.Now = clk.Now
	}
	ctl := control.New(clk.Now)
	var mu sync.Mutex
	var seq uint64
	ctl.Attach(func(kind uint8, payload []byte) error {
		mu.Lock()
		defer mu.Unlock()
		seq++
		return ctl.ApplyControl(kind, seq, payload)
	})
	return New(nil, ctl, cfg), clk
}

var admin = Principal{TenantID: DefaultTenant, Plan: mustPlan("enterprise"), Admin: true}

func mustPlan(name string) Plan {
	p, ok := control.PlanByName(name)
	if !ok {
		panic(name)
	}
	return p
}

// tenant registers a tenant with the admin key and returns its principal
// and key.
func tenant(t *testing.T, s *Service, email, plan string) (Principal, string) {
	t.Helper()
	r, err := s.Register(admin, RegisterRequest{Email: email, Plan: plan})
	if err != nil {
		t.Fatalf("register %s: %v", email, err)
	}
	p, err := s.Authenticate(Credentials{APIKey: r.APIKey})
	if err != nil {
		t.Fatalf("authenticate %s: %v", email, err)
	}
	return p, r.APIKey
}

// wantErr checks err against a kind (nil: no error) and a substring of its
// message.
func wantErr(t *testing.T, err, kind error, detail string) {
	t.Helper()
	if kind == nil {
		if err != nil {
			t.Fatalf("unexpected error %v", err)
		}
		return
	}
	if !errors.Is(err, kind) {
		t.Fatalf("error %v, want kind %v", err, kind)
	}
	if !strings.Contains(err.Error(), detail) {
		t.Fatalf("error %q, want it to contain %q", err, detail)
	}
}

func TestAuthenticate(t *testing.T) {
	open, _ := newService(t, Config{})
	closed, _ := newService(t, Config{AdminKey: adminKey})
	openReg, _ := newService(t, Config{AdminKey: adminKey, OpenRegistration: true})
	tp, key := tenant(t, closed, "a@example.com", "pro")
	revoked, err := closed.CreateKey(tp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := closed.RevokeKey(tp, revoked.ID); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name    string
		s       *Service
		c       Credentials
		want    Principal
		kind    error
		message string
	}{
		{"authentication off", open, Credentials{}, Principal{TenantID: DefaultTenant, Plan: mustPlan("enterprise"), Open: true}, nil, ""},
		{"authentication off ignores a key", open, Credentials{APIKey: "whatever"}, Principal{TenantID: DefaultTenant, Plan: mustPlan("enterprise"), Open: true}, nil, ""},
		{"no key", closed, Credentials{}, Principal{}, ErrNoKey, ""},
		{"no key, registering, registration closed", closed, Credentials{Registering: true}, Principal{}, ErrNoKey, ""},
		{"no key, open registration", openReg, Credentials{Registering: true}, Principal{}, nil, ""},
		{"no key, open registration, other route", openReg, Credentials{}, Principal{}, ErrNoKey, ""},
		{"admin key", closed, Credentials{APIKey: adminKey}, admin, nil, ""},
		{"admin key prefix", closed, Credentials{APIKey: adminKey[:len(adminKey)-1]}, Principal{}, ErrUnauthorized, "invalid API key"},
		{"tenant key", closed, Credentials{APIKey: key}, tp, nil, ""},
		{"tenant key of another deployment", openReg, Credentials{APIKey: key}, Principal{}, ErrUnauthorized, "invalid API key"},
		{"malformed key", closed, Credentials{APIKey: "lk_wrong"}, Principal{}, ErrUnauthorized, "invalid API key"},
		{"revoked key", closed, Credentials{APIKey: revoked.Secret}, Principal{}, ErrUnauthorized, "invalid API key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.s.Authenticate(tc.c)
			wantErr(t, err, tc.kind, tc.message)
			if got != tc.want {
				t.Fatalf("principal %+v, want %+v", got, tc.want)
			}
		})
	}
	if tp.Plan.Name != "pro" || tp.Admin || tp.Open || tp.Anonymous() {
		t.Fatalf("tenant principal %+v", tp)
	}
	if !closed.KeyValid(key) || !closed.KeyValid(adminKey) || closed.KeyValid("") || closed.KeyValid("lk_wrong") || !open.KeyValid("") {
		t.Fatal("KeyValid disagrees with Authenticate")
	}
}

func TestAdmit(t *testing.T) {
	s, clk := newService(t, Config{AdminKey: adminKey, RateWindow: time.Minute})
	free, _ := tenant(t, s, "free@example.com", "free")
	pro, _ := tenant(t, s, "pro@example.com", "pro")

	// A free tenant gets its plan's 30 requests per window, then refusals
	// that name the plan and when to retry, each counted as rate limited.
	for i := 1; i <= 30; i++ {
		q, err := s.Admit(free, AdmitRequest{Endpoint: "POST /v1/ingest"})
		if err != nil || q.Limit != 30 || q.Remaining != 30-i {
			t.Fatalf("request %d: quota %+v, err %v", i, q, err)
		}
	}
	q, err := s.Admit(free, AdmitRequest{Endpoint: "POST /v1/ingest"})
	var rl *RateLimitedError
	if !errors.As(err, &rl) || q.Limit != 30 || q.Remaining != 0 || rl.RetryAfterSeconds() < 1 || rl.RetryAfterSeconds() > 60 {
		t.Fatalf("over the limit: quota %+v, err %v", q, err)
	}
	if want := "rate limit of 30 requests per minute exceeded for plan free; retry after"; !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("detail %q", err)
	}
	if u, _ := s.Usage(free, UsageRequest{}); u.RateLimited != 1 || u.Requests["POST /v1/ingest"] != 1 {
		t.Fatalf("usage after a refusal %+v", u)
	}
	// Limits are per tenant, and the window moves on.
	if _, err := s.Admit(pro, AdmitRequest{}); err != nil {
		t.Fatalf("another tenant limited by the first: %v", err)
	}
	clk.Add(time.Minute)
	if _, err := s.Admit(free, AdmitRequest{}); err != nil {
		t.Fatalf("after the window: %v", err)
	}

	open := Principal{TenantID: DefaultTenant, Plan: mustPlan("enterprise"), Open: true}
	for _, tc := range []struct {
		name    string
		p       Principal
		v2      bool
		limit   int
		kind    error
		message string
	}{
		{"v1 on free", free, false, 30, nil, ""},
		{"v2 on free", free, true, 30, ErrForbidden, "plan free does not include the v2 API; upgrade to pro, team or enterprise"},
		{"v2 on pro", pro, true, 120, nil, ""},
		{"admin: no limit", admin, true, 0, nil, ""},
		{"authentication off: no limit", open, true, 0, nil, ""},
		{"anonymous: no limit, no v2", Principal{}, true, 0, ErrForbidden, "plan  does not include"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := s.Admit(tc.p, AdmitRequest{V2: tc.v2})
			wantErr(t, err, tc.kind, tc.message)
			if q.Limit != tc.limit {
				t.Fatalf("limit %d, want %d", q.Limit, tc.limit)
			}
		})
	}
}

func TestMeter(t *testing.T) {
	s, _ := newService(t, Config{AdminKey: adminKey})
	a, _ := tenant(t, s, "a@example.com", "free")
	b, _ := tenant(t, s, "b@example.com", "free")
	s.Meter(a, "POST /v1/ingest", UsageDelta{Artifacts: 2, RawBytes: 10})
	s.Meter(a, "POST /v1/ingest", UsageDelta{Artifacts: 1, RawBytes: 5})
	s.Meter(a, "POST /v1/context-pack", UsageDelta{Packs: 1, Tokens: 99})
	s.Meter(Principal{}, "POST /v1/register", UsageDelta{}) // anonymous: not counted
	u, err := s.Usage(a, UsageRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if u.TenantID != a.TenantID || u.Period != "2026-03" || u.Requests["POST /v1/ingest"] != 2 || u.Requests["POST /v1/context-pack"] != 1 ||
		u.ArtifactsIngested != 3 || u.RawBytesStored != 15 || u.ContextPacks != 1 || u.TokensPacked != 99 {
		t.Fatalf("usage %+v", u)
	}
	if u, _ := s.Usage(b, UsageRequest{}); u.Requests == nil || len(u.Requests) != 0 || u.ArtifactsIngested != 0 {
		t.Fatalf("another tenant's usage %+v", u)
	}
}

func TestRegister(t *testing.T) {
	s, _ := newService(t, Config{AdminKey: adminKey})
	sOpen, _ := newService(t, Config{AdminKey: adminKey, OpenRegistration: true, RegisterLimit: 3})
	tp, _ := tenant(t, s, "taken@example.com", "pro")
	tOpen, _ := tenant(t, sOpen, "taken@example.com", "pro")
	anon := Principal{}
	long := strings.Repeat("a", 240) + "@example.com"

	for _, tc := range []struct {
		name    string
		s       *Service
		p       Principal
		r       RegisterRequest
		plan    string
		kind    error
		message string
	}{
		{"admin, default plan", s, admin, RegisterRequest{Email: "n1@example.com"}, "free", nil, ""},
		{"admin, any plan", s, admin, RegisterRequest{Email: "n2@example.com", Plan: "team"}, "team", nil, ""},
		{"admin, taken email in any case", s, admin, RegisterRequest{Email: "TAKEN@example.com"}, "", ErrConflict, `a tenant with email "TAKEN@example.com" is already registered`},
		{"admin, bad email", s, admin, RegisterRequest{Email: "not-an-email"}, "", nil, ""},
		{"tenant key, registration closed", s, tp, RegisterRequest{Email: "n3@example.com"}, "", ErrForbidden, "needs the admin key (or OPEN_REGISTRATION=true)"},
		{"open, paid plan", sOpen, anon, RegisterRequest{Email: "n4@example.com", Plan: "pro"}, "", ErrForbidden, `open registration creates free tenants only; plan "pro" needs the admin key`},
		{"open, new email", sOpen, anon, RegisterRequest{Email: "n5@example.com", ClientAddr: "192.0.2.1"}, "free", nil, ""},
		{"open, taken email answered like a new one", sOpen, anon, RegisterRequest{Email: "Taken@Example.com", ClientAddr: "192.0.2.1"}, "free", nil, ""},
		{"open, tenant key", sOpen, tOpen, RegisterRequest{Email: "n6@example.com", ClientAddr: "192.0.2.1"}, "free", nil, ""},
		{"open, limit per address reached", sOpen, anon, RegisterRequest{Email: "n7@example.com", ClientAddr: "192.0.2.1"}, "", nil, ""},
		{"open, another address", sOpen, anon, RegisterRequest{Email: long, ClientAddr: "192.0.2.2"}, "", nil, ""},
		{"admin not limited", sOpen, admin, RegisterRequest{Email: "n8@example.com"}, "free", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := tc.s.Register(tc.p, tc.r)
			switch tc.name {
			case "admin, bad email":
				var inv *InvalidError
				if !errors.As(err, &inv) || inv.Field != "email" {
					t.Fatalf("bad email: %v", err)
				}
				return
			case "open, limit per address reached":
				var rl *RateLimitedError
				if !errors.As(err, &rl) || !strings.HasPrefix(err.Error(), "open registration is limited to 3 per 1h0m0s per client address; retry after ") {
					t.Fatalf("fourth open registration from one address: %v", err)
				}
				return
			case "open, another address":
				var inv *InvalidError
				if !errors.As(err, &inv) || err.Error() != "email: is 252 bytes, longer than the open registration limit of 245" {
					t.Fatalf("long email: %v", err)
				}
				return
			}
			wantErr(t, err, tc.kind, tc.message)
			if tc.kind != nil {
				return
			}
			if out.Plan != tc.plan || !strings.HasPrefix(out.APIKey, "lk_") || out.TenantID == "" || out.Message == "" {
				t.Fatalf("registered %+v", out)
			}
			p, err := tc.s.Authenticate(Credentials{APIKey: out.APIKey})
			if err != nil || p.TenantID != out.TenantID || p.TenantID == tp.TenantID || p.TenantID == tOpen.TenantID {
				t.Fatalf("new key authenticates as %+v, %v", p, err)
			}
		})
	}
	// The taken email's owner is untouched.
	if st, err := sOpen.Plan(tOpen, PlanRequest{}); err != nil || st.Plan.Name != "pro" {
		t.Fatalf("existing tenant after open registration with its email: %+v %v", st, err)
	}
}

func TestSubaddress(t *testing.T) {
	for _, tc := range []struct{ in, prefix, suffix string }{
		{"a@example.com", "a+", "@example.com"},
		{"a+b@c@example.com", "a+b@c+", "@example.com"},
		{"no-at", "no-at", "no-at"},
	} {
		got := subaddress(tc.in)
		if !strings.HasPrefix(got, tc.prefix) || !strings.HasSuffix(got, tc.suffix) {
			t.Errorf("subaddress(%q) = %q", tc.in, got)
		}
		if tc.in != "no-at" && len(got) != len(tc.in)+9 {
			t.Errorf("subaddress(%q) = %q: tag of %d bytes, want 9", tc.in, got, len(got)-len(tc.in))
		}
	}
}

func TestKeys(t *testing.T) {
	s, _ := newService(t, Config{AdminKey: adminKey})
	a, aKey := tenant(t, s, "a@example.com", "free")
	b, _ := tenant(t, s, "b@example.com", "free")
	open := Principal{TenantID: DefaultTenant, Plan: mustPlan("enterprise"), Open: true}

	// The built-in tenant has no keys.
	for _, p := range []Principal{admin, open, {}} {
		_, err := s.CreateKey(p)
		wantErr(t, err, ErrForbidden, "API keys belong to registered tenants; call with a tenant key")
		_, err = s.Keys(p)
		wantErr(t, err, ErrForbidden, "tenant key")
		_, err = s.RevokeKey(p, "x")
		wantErr(t, err, ErrForbidden, "tenant key")
	}

	k, err := s.CreateKey(a)
	if err != nil || !strings.HasPrefix(k.Secret, k.Prefix) || k.TenantID != a.TenantID {
		t.Fatalf("create key %+v %v", k, err)
	}
	if p, err := s.Authenticate(Credentials{APIKey: k.Secret}); err != nil || p.TenantID != a.TenantID {
		t.Fatalf("new key: %+v %v", p, err)
	}
	bKeys, _ := s.Keys(b)
	for _, tc := range []struct {
		name    string
		p       Principal
		id      string
		kind    error
		message string
	}{
		{"another tenant's key is not found", b, k.ID, ErrNotFound, "key not found"},
		{"a malformed id is not found", a, "not-a-uuid", ErrNotFound, "key not found"},
		{"own key", a, k.ID, nil, ""},
		{"again: no change", a, k.ID, nil, ""},
		{"last live key", b, bKeys[0].ID, ErrConflict, "last active key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info, err := s.RevokeKey(tc.p, tc.id)
			wantErr(t, err, tc.kind, tc.message)
			if err == nil && (!info.Revoked || info.ID != tc.id) {
				t.Fatalf("revoked %+v", info)
			}
		})
	}
	keys, err := s.Keys(a)
	if err != nil || len(keys) != 2 {
		t.Fatalf("keys %+v %v", keys, err)
	}
	for _, info := range keys {
		if info.TenantID != a.TenantID || info.Revoked != (info.ID == k.ID) {
			t.Fatalf("keys %+v", keys)
		}
	}
	if _, err := s.Authenticate(Credentials{APIKey: k.Secret}); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("revoked key authenticates: %v", err)
	}
	if _, err := s.Authenticate(Credentials{APIKey: aKey}); err != nil {
		t.Fatalf("first key after revoking the second: %v", err)
	}
}

func TestPlans(t *testing.T) {
	s, _ := newService(t, Config{AdminKey: adminKey})
	a, _ := tenant(t, s, "a@example.com", "free")
	b, _ := tenant(t, s, "b@example.com", "team")
	if ps := s.Plans(); len(ps) != 4 || ps[0].Name != "free" {
		t.Fatalf("plans %+v", ps)
	}

	for _, tc := range []struct {
		name    string
		p       Principal
		named   string
		want    string // tenant id
		plan    string
		kind    error
		message string
	}{
		{"own", a, "", a.TenantID, "free", nil, ""},
		{"own, named", a, a.TenantID, a.TenantID, "free", nil, ""},
		{"another tenant's", a, b.TenantID, "", "", ErrForbidden, "tenant_id of another tenant needs the admin key"},
		{"the built-in tenant's", a, DefaultTenant, "", "", ErrForbidden, "admin key"},
		{"admin, any tenant", admin, b.TenantID, b.TenantID, "team", nil, ""},
		{"admin, own", admin, "", DefaultTenant, "enterprise", nil, ""},
		{"admin, unknown tenant", admin, "0b6f3c1e-0000-4000-8000-000000000000", "", "", ErrNotFound, "tenant not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := s.Plan(tc.p, PlanRequest{TenantID: tc.named})
			wantErr(t, err, tc.kind, tc.message)
			if err == nil && (st.TenantID != tc.want || st.Plan.Name != tc.plan) {
				t.Fatalf("plan %+v", st)
			}
			// Usage follows the same rule for whose data may be read.
			_, err = s.Usage(tc.p, UsageRequest{TenantID: tc.named})
			wantErr(t, err, tc.kind, tc.message)
		})
	}

	for _, tc := range []struct {
		name    string
		p       Principal
		r       SetPlanRequest
		kind    error
		field   string
		message string
	}{
		{"tenant key", a, SetPlanRequest{TenantID: a.TenantID, Plan: "pro"}, ErrForbidden, "", "changing a plan needs the admin key"},
		{"no tenant", admin, SetPlanRequest{Plan: "pro"}, nil, "tenant_id", "tenant_id: is required with the admin key"},
		{"built-in tenant", admin, SetPlanRequest{TenantID: DefaultTenant, Plan: "pro"}, nil, "tenant_id", `tenant_id: "default" is the built-in tenant, whose plan is fixed`},
		{"unknown plan", admin, SetPlanRequest{TenantID: a.TenantID, Plan: "gold"}, nil, "plan", "plan: unknown plan"},
		{"unknown tenant", admin, SetPlanRequest{TenantID: "0b6f3c1e-0000-4000-8000-000000000000", Plan: "pro"}, ErrNotFound, "", "not found"},
		{"upgrade", admin, SetPlanRequest{TenantID: a.TenantID, Plan: "pro"}, nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := s.SetPlan(tc.p, tc.r)
			if tc.field != "" {
				var inv *InvalidError
				if !errors.As(err, &inv) || inv.Field != tc.field || !strings.HasPrefix(err.Error(), tc.message) {
					t.Fatalf("error %v, want an invalid %s: %s", err, tc.field, tc.message)
				}
				return
			}
			wantErr(t, err, tc.kind, tc.message)
			if err == nil && (st.TenantID != tc.r.TenantID || st.Plan.Name != tc.r.Plan || st.Plan.RPM != 120) {
				t.Fatalf("after the change %+v", st)
			}
		})
	}
	if err := MayChangePlans(a); !errors.Is(err, ErrForbidden) {
		t.Fatalf("MayChangePlans(tenant) = %v", err)
	}
	if err := MayChangePlans(admin); err != nil {
		t.Fatalf("MayChangePlans(admin) = %v", err)
	}
}

func TestUsagePeriod(t *testing.T) {
	s, _ := newService(t, Config{AdminKey: adminKey})
	a, _ := tenant(t, s, "a@example.com", "free")
	for _, tc := range []struct {
		period, want string
		ok           bool
	}{
		{"", "2026-03", true},
		{"2025-12", "2025-12", true},
		{"2025-13", "", false},
		{"2025-1", "", false},
		{"25-01", "", false},
	} {
		u, err := s.Usage(a, UsageRequest{Period: tc.period})
		if tc.ok != (err == nil) || (tc.ok && u.Period != tc.want) {
			t.Errorf("period %q: %+v %v", tc.period, u, err)
		}
		var inv *InvalidError
		if !tc.ok && (!errors.As(err, &inv) || inv.Field != "period") {
			t.Errorf("period %q: error %v, want an invalid period", tc.period, err)
		}
	}
}

func TestPlanError(t *testing.T) {
	for _, tc := range []struct {
		e    PlanError
		want string
	}{
		{PlanError{Plan: "free", Feature: "the v2 API", Upgrade: []string{"pro", "team", "enterprise"}}, "plan free does not include the v2 API; upgrade to pro, team or enterprise"},
		{PlanError{Plan: "free", Feature: "x", Upgrade: []string{"pro", "team"}}, "plan free does not include x; upgrade to pro or team"},
		{PlanError{Plan: "free", Feature: "x", Upgrade: []string{"pro"}}, "plan free does not include x; upgrade to pro"},
		{PlanError{Plan: "free", Feature: "x"}, "plan free does not include x"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
		if !errors.Is(&tc.e, ErrForbidden) {
			t.Errorf("%q is not ErrForbidden", tc.want)
		}
	}
}
