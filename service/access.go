package service

import (
	"context"
	"crypto/subtle"
	"fmt"
	"strings"

	"github.com/loci-memory/loci/control"
)

// Principal is who a request acts for.
type Principal struct {
	// TenantID is the tenant whose data the request reads and writes; empty
	// for an anonymous caller (open registration without a key).
	TenantID string
	Plan     Plan
	Admin    bool // the operator's admin key (acts as DefaultTenant)
	Open     bool // authentication is off (acts as DefaultTenant)
}

// Anonymous reports whether p is a caller without a key, admitted only to
// open registration.
func (p Principal) Anonymous() bool { return p.TenantID == "" }

// Credentials is what a caller presents.
type Credentials struct {
	APIKey string
	// Registering: the request is a registration, which open registration
	// admits without a key.
	Registering bool
}

// PresentedKey is the API key a request presents, from the values of its
// X-API-Key and Authorization headers: the first, else the token of a
// "Bearer <token>" authorization (the scheme matched without regard to
// case), else "". Every transport reads keys by this one rule
// (docs/api.md § Authentication).
func PresentedKey(xAPIKey, authorization string) string {
	if xAPIKey != "" {
		return xAPIKey
	}
	if len(authorization) > 7 && strings.EqualFold(authorization[:7], "bearer ") {
		return strings.TrimSpace(authorization[7:])
	}
	return ""
}

// Authenticate resolves a caller: the built-in tenant when authentication
// is off, DefaultTenant as admin for the admin key (compared in constant
// time), or a registered tenant by its key's hash. A registration without a
// key is anonymous when open registration is on. Refusals are ErrNoKey, or
// an *Error of kind ErrUnauthorized.
func (s *Service) Authenticate(c Credentials) (Principal, error) {
	if s.cfg.AdminKey == "" {
		p, _ := control.PlanByName("enterprise")
		return Principal{TenantID: DefaultTenant, Plan: p, Open: true}, nil
	}
	if c.APIKey == "" {
		if c.Registering && s.cfg.OpenRegistration {
			return Principal{}, nil
		}
		return Principal{}, ErrNoKey
	}
	if s.isAdminKey(c.APIKey) {
		p, _ := control.PlanByName("enterprise")
		return Principal{TenantID: DefaultTenant, Plan: p, Admin: true}, nil
	}
	t, ok := s.tenantOfKey(c.APIKey)
	if !ok {
		return Principal{}, refuse(ErrUnauthorized, "invalid API key")
	}
	p, ok := control.PlanByName(t.Plan)
	if !ok {
		return Principal{}, fmt.Errorf("service: tenant %s has an unknown plan %q", t.ID, t.Plan)
	}
	return Principal{TenantID: t.ID, Plan: p}, nil
}

// KeyValid reports whether key would authenticate: always when
// authentication is off, else for the admin key or a tenant's live key. It
// gates details (such as the engine's counters) that anyone with a key may
// see.
func (s *Service) KeyValid(key string) bool {
	if s.cfg.AdminKey == "" {
		return true
	}
	if key == "" {
		return false
	}
	if s.isAdminKey(key) {
		return true
	}
	_, ok := s.tenantOfKey(key)
	return ok
}

// ControlCatchUp is what a cluster node's Shards may also be: the node
// waits until it has applied its control stream as far as the stream
// reached when the call began (cluster.Node.CatchUpControl).
type ControlCatchUp interface {
	CatchUpControl(ctx context.Context) error
}

// tenantOfKey looks key up among the tenants' live keys. On a cluster
// node (Shards that are a ControlCatchUp) a key it does not know is looked
// up again once the node has caught up with the control stream, where keys
// live: a key registered or created through another node a moment ago
// (by a client behind a load balancer, which sends no data version) is
// known then, on every transport alike. Only a well-formed key is looked
// up again: garbage costs no reading of the stream.
func (s *Service) tenantOfKey(key string) (control.Tenant, bool) {
	t, _, ok := s.ctl.Authenticate(key)
	if cu, cluster := s.shards.(ControlCatchUp); !ok && cluster && control.WellFormedKey(key) && cu.CatchUpControl(context.Background()) == nil {
		t, _, ok = s.ctl.Authenticate(key)
	}
	return t, ok
}

func (s *Service) isAdminKey(key string) bool {
	return subtle.ConstantTimeCompare([]byte(key), []byte(s.cfg.AdminKey)) == 1
}

// AdmitRequest is one request about to be served.
type AdmitRequest struct {
	Endpoint string // the usage counter's endpoint name, such as "POST /v1/ingest"
	V2       bool   // the endpoint needs a plan with the v2 API
	// Forwarded: another node of the cluster forwarded the request after
	// admitting it; it is not counted against the rate limit again.
	Forwarded bool
}

// Quota is a tenant's rate limit after admitting or refusing a request.
// Limit 0: no limit applies (authentication off, the admin key, anonymous).
type Quota struct {
	Limit, Remaining int
}

// Admit decides whether p may make req now. A tenant key is held to its
// plan's requests per minute (a refusal is a *RateLimitedError, counted in
// the tenant's usage as rate limited); then a v2 endpoint needs a plan with
// the v2 API (a *PlanError). The quota is returned with either answer.
func (s *Service) Admit(p Principal, req AdmitRequest) (Quota, error) {
	var q Quota
	if !p.Anonymous() && !p.Open && !p.Admin && !req.Forwarded {
		ok, remaining, retry := s.limiter.Allow(p.TenantID, p.Plan.RPM)
		q = Quota{Limit: p.Plan.RPM, Remaining: remaining}
		if !ok {
			s.ctl.Count(p.TenantID, s.cfg.Now(), UsageDelta{Endpoint: req.Endpoint, RateLimited: true})
			e := &RateLimitedError{RetryAfter: retry}
			e.detail = fmt.Sprintf("rate limit of %d requests per minute exceeded for plan %s; retry after %d s", p.Plan.RPM, p.Plan.Name, e.RetryAfterSeconds())
			return q, e
		}
	}
	if req.V2 && !p.Plan.V2 {
		return q, &PlanError{Plan: p.Plan.Name, Feature: "the v2 API", Upgrade: plansWith(func(pl Plan) bool { return pl.V2 })}
	}
	return q, nil
}

// plansWith lists the names of the plans that have a feature, cheapest first.
func plansWith(has func(Plan) bool) []string {
	var out []string
	for _, p := range control.Plans() {
		if has(p) {
			out = append(out, p.Name)
		}
	}
	return out
}

// Meter counts one served request of p in its tenant's usage for the
// current month; an anonymous caller is not counted. It only touches
// memory (control writes the counts in the background).
func (s *Service) Meter(p Principal, endpoint string, u UsageDelta) {
	if p.Anonymous() {
		return
	}
	u.Endpoint = endpoint
	s.ctl.Count(p.TenantID, s.cfg.Now(), u)
}
