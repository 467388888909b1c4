package service

import (
	"crypto/rand"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/loci-memory/loci/control"
)

// RegisterRequest asks for a new tenant and its first key.
type RegisterRequest struct {
	Email string
	Plan  string // default free
	// ClientAddr is the caller's address, by which open registration is
	// rate limited.
	ClientAddr string
}

// Registered is a new tenant with its first key's secret, shown only once.
type Registered struct {
	TenantID string
	APIKey   string
	Plan     string
	Message  string
}

// registeredMessage tells the caller that the key cannot be shown again.
const registeredMessage = "Store this API key now: it is shown only once and kept only as a hash."

// Register creates a tenant. The admin key (or authentication off)
// registers any plan, and a taken email is ErrConflict. Others need open
// registration, which creates free tenants only (see registerOpen).
func (s *Service) Register(p Principal, r RegisterRequest) (Registered, error) {
	if r.Plan == "" {
		r.Plan = "free"
	}
	if !p.Admin && !p.Open {
		if !s.cfg.OpenRegistration {
			return Registered{}, refuse(ErrForbidden, "registering a tenant needs the admin key (or OPEN_REGISTRATION=true)")
		}
		if r.Plan != "free" {
			return Registered{}, refuse(ErrForbidden, "open registration creates free tenants only; plan %q needs the admin key", r.Plan)
		}
		return s.registerOpen(r)
	}
	t, key, err := s.ctl.Register(r.Email, r.Plan)
	if errors.Is(err, control.ErrDuplicateEmail) {
		return Registered{}, refuse(ErrConflict, "a tenant with email %q is already registered", r.Email)
	}
	if err != nil {
		return Registered{}, fromControl(err)
	}
	return Registered{TenantID: t.ID, APIKey: key, Plan: t.Plan, Message: registeredMessage}, nil
}

// registerOpen is open registration (no admin key). It must not reveal
// which emails are registered, so a taken email is answered exactly like a
// new one: a new free tenant and its key. An email given to open
// registration is an unverified contact address, not an identity: when it
// is taken, the new tenant's contact becomes a plus-tagged subaddress of it
// (local+tag@domain, which mail delivers to the same mailbox), so the
// existing tenant is untouched and the reply, and its timing, are the same.
// The caller's address is rate limited (RegisterLimit per RegisterWindow)
// before anything else, so registration cannot be used to probe in bulk.
func (s *Service) registerOpen(r RegisterRequest) (Registered, error) {
	if s.cfg.RegisterLimit > 0 {
		ok, _, retry := s.regLimiter.Allow(r.ClientAddr, s.cfg.RegisterLimit)
		if !ok {
			e := &RateLimitedError{RetryAfter: retry}
			e.detail = fmt.Sprintf("open registration is limited to %d per %s per client address; retry after %d s",
				s.cfg.RegisterLimit, s.cfg.RegisterWindow, e.RetryAfterSeconds())
			return Registered{}, e
		}
	}
	// Room for the tag, whether or not the email is taken, so that the
	// length limit cannot tell the two apart either.
	if len(r.Email) > maxOpenEmailLength {
		return Registered{}, &InvalidError{Field: "email", Reason: fmt.Sprintf("is %d bytes, longer than the open registration limit of %d", len(r.Email), maxOpenEmailLength)}
	}
	t, key, err := s.ctl.Register(r.Email, "free")
	for try := 0; errors.Is(err, control.ErrDuplicateEmail) && try < 4; try++ {
		t, key, err = s.ctl.Register(subaddress(r.Email), "free")
	}
	if err != nil {
		return Registered{}, fromControl(err)
	}
	return Registered{TenantID: t.ID, APIKey: key, Plan: t.Plan, Message: registeredMessage}, nil
}

// maxOpenEmailLength leaves room under the control store's 254 bytes for
// subaddress's tag ("+" and 8 hex digits).
const maxOpenEmailLength = 254 - 9

// subaddress tags email's local part with a random suffix: local+tag@domain.
func subaddress(email string) string {
	at := strings.LastIndexByte(email, '@')
	if at < 0 {
		return email
	}
	var tag [4]byte
	rand.Read(tag[:])
	return fmt.Sprintf("%s+%x%s", email[:at], tag, email[at:])
}

// keysTenant is the tenant whose keys p manages: a tenant key's own tenant;
// the built-in tenant (authentication off, the admin key) has no keys.
func keysTenant(p Principal) (string, error) {
	if p.Admin || p.Open || p.Anonymous() {
		return "", refuse(ErrForbidden, "API keys belong to registered tenants; call with a tenant key")
	}
	return p.TenantID, nil
}

// NewKey is a key just created, with its secret: the only time it is shown.
type NewKey struct {
	KeyInfo
	Secret string
}

// CreateKey adds a key to the caller's tenant.
func (s *Service) CreateKey(p Principal) (NewKey, error) {
	tenant, err := keysTenant(p)
	if err != nil {
		return NewKey{}, err
	}
	k, secret, err := s.ctl.CreateKey(tenant)
	if err != nil {
		return NewKey{}, err
	}
	return NewKey{KeyInfo: k, Secret: secret}, nil
}

// Keys lists the caller's tenant's keys, revoked ones included.
func (s *Service) Keys(p Principal) ([]KeyInfo, error) {
	tenant, err := keysTenant(p)
	if err != nil {
		return nil, err
	}
	return s.ctl.Keys(tenant), nil
}

// RevokeKey revokes one of the caller's tenant's keys. Another tenant's key
// is not found, like a key that does not exist, so ids do not leak; the
// tenant's last live key cannot be revoked (ErrConflict).
func (s *Service) RevokeKey(p Principal, keyID string) (KeyInfo, error) {
	tenant, err := keysTenant(p)
	if err != nil {
		return KeyInfo{}, err
	}
	k, err := s.ctl.RevokeKey(tenant, keyID)
	switch {
	case errors.Is(err, control.ErrNotFound):
		return KeyInfo{}, refuse(ErrNotFound, "key not found")
	case errors.Is(err, control.ErrLastKey):
		return KeyInfo{}, refuse(ErrConflict, "cannot revoke the tenant's last active key; create another key first")
	}
	return k, err
}

// Plans returns the plan catalogue, cheapest first.
func (s *Service) Plans() []Plan { return control.Plans() }

// PlanStatus is a tenant's plan and how much of it the tenant uses.
type PlanStatus struct {
	TenantID       string
	Plan           Plan
	WorkspacesUsed int
}

// subject is the tenant a billing request is about: the caller's, or for
// the admin key any tenant named by id.
func (s *Service) subject(p Principal, named string) (control.Tenant, error) {
	id := p.TenantID
	if named != "" && named != id {
		if !p.Admin {
			return control.Tenant{}, refuse(ErrForbidden, "tenant_id of another tenant needs the admin key")
		}
		id = named
	}
	t, ok := s.ctl.Tenant(id)
	if !ok {
		return control.Tenant{}, refuse(ErrNotFound, "tenant not found")
	}
	return t, nil
}

func (s *Service) planStatus(t control.Tenant) PlanStatus {
	p, _ := control.PlanByName(t.Plan)
	return PlanStatus{TenantID: t.ID, Plan: p, WorkspacesUsed: len(s.ctl.Workspaces(t.ID))}
}

// PlanRequest names the tenant whose plan to read: empty for the caller's;
// another tenant's needs the admin key.
type PlanRequest struct {
	TenantID string
}

// Plan returns a tenant's plan.
func (s *Service) Plan(p Principal, r PlanRequest) (PlanStatus, error) {
	t, err := s.subject(p, r.TenantID)
	if err != nil {
		return PlanStatus{}, err
	}
	return s.planStatus(t), nil
}

// SetPlanRequest moves a tenant to another plan.
type SetPlanRequest struct {
	TenantID string
	Plan     string
}

// MayChangePlans reports whether p may change plans (only the admin key
// may), so that a transport can refuse before it reads a request body.
func MayChangePlans(p Principal) error {
	if !p.Admin {
		return refuse(ErrForbidden, "changing a plan needs the admin key")
	}
	return nil
}

// SetPlan moves a tenant to another plan; it needs the admin key.
func (s *Service) SetPlan(p Principal, r SetPlanRequest) (PlanStatus, error) {
	if err := MayChangePlans(p); err != nil {
		return PlanStatus{}, err
	}
	if r.TenantID == "" {
		return PlanStatus{}, &InvalidError{Field: "tenant_id", Reason: "is required with the admin key"}
	}
	t, err := s.ctl.SetPlan(r.TenantID, r.Plan)
	switch {
	case errors.Is(err, control.ErrBuiltinTenant):
		return PlanStatus{}, &InvalidError{Field: "tenant_id", Reason: fmt.Sprintf("%q is the built-in tenant, whose plan is fixed", r.TenantID)}
	case errors.Is(err, control.ErrNotFound):
		return PlanStatus{}, refuse(ErrNotFound, "not found")
	case err != nil:
		return PlanStatus{}, fromControl(err)
	}
	return s.planStatus(t), nil
}

// UsageRequest asks for a tenant's usage in one month.
type UsageRequest struct {
	TenantID string // empty: the caller's; another tenant's needs the admin key
	Period   string // "YYYY-MM"; empty: the current month (UTC)
}

var periodPattern = regexp.MustCompile(`^[0-9]{4}-(0[1-9]|1[0-2])$`)

// Usage returns a tenant's usage in a month: counts applied and not yet
// written. Requests is never nil.
func (s *Service) Usage(p Principal, r UsageRequest) (Usage, error) {
	period := r.Period
	if period == "" {
		period = control.Period(s.cfg.Now())
	} else if !periodPattern.MatchString(period) {
		return Usage{}, &InvalidError{Field: "period", Reason: fmt.Sprintf("%q is not a month as YYYY-MM", period)}
	}
	t, err := s.subject(p, r.TenantID)
	if err != nil {
		return Usage{}, err
	}
	u := s.ctl.Usage(t.ID, period)
	u.TenantID, u.Period = t.ID, period
	if u.Requests == nil {
		u.Requests = map[string]uint64{}
	}
	return u, nil
}

// TenantWorkspaces is a tenant with its workspaces, as the admin sees it.
type TenantWorkspaces struct {
	TenantID   string          `json:"tenant_id"`
	Email      *string         `json:"email"` // nil for the built-in tenant
	Plan       string          `json:"plan"`
	Workspaces []WorkspaceJSON `json:"workspaces"`
}

// TenantsResult is GET /v1/tenants.
type TenantsResult struct {
	Tenants []TenantWorkspaces `json:"tenants"`
}

// Tenants lists every tenant, the built-in one first, then by id, each with
// the workspaces it holds here (the listing's rule: those of the shards
// this node serves): the admin key only, so that an operator can see whose
// data the server holds. A tenant's data stays readable with its own key
// only.
func (s *Service) Tenants(p Principal) (TenantsResult, error) {
	if !p.Admin {
		return TenantsResult{}, refuse(ErrForbidden, "listing tenants needs the admin key")
	}
	ts := s.ctl.Tenants()
	out := TenantsResult{Tenants: make([]TenantWorkspaces, len(ts))}
	for i, t := range ts {
		ws, err := s.listWorkspaces(Principal{TenantID: t.ID}, nil)
		if err != nil {
			return TenantsResult{}, err
		}
		out.Tenants[i] = TenantWorkspaces{TenantID: t.ID, Email: optional(t.Email), Plan: t.Plan, Workspaces: ws.Workspaces}
	}
	return out, nil
}
