package httpd

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/loci-memory/loci/apidoc"
	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/ratelimit"
	"github.com/valyala/fasthttp"
)

func microTime(us int64) time.Time { return time.UnixMicro(us).UTC() }

type registerRequest struct {
	Email string `json:"email"`
	Plan  string `json:"plan"`
}

func (s *Server) register(ctx *fasthttp.RequestCtx, c *call) {
	var r registerRequest
	if err := decodeBody(ctx.PostBody(), &r); err != nil {
		badRequest(ctx, err)
		return
	}
	if r.Plan == "" {
		r.Plan = "free"
	}
	// The admin key registers any plan; open registration only free tenants.
	if !c.who.admin && !c.who.open {
		if !s.cfg.OpenRegistration {
			writeError(ctx, fasthttp.StatusForbidden, "registering a tenant needs the admin key (or OPEN_REGISTRATION=true)")
			return
		}
		if r.Plan != "free" {
			writeError(ctx, fasthttp.StatusForbidden, fmt.Sprintf("open registration creates free tenants only; plan %q needs the admin key", r.Plan))
			return
		}
	}
	if !c.who.admin && !c.who.open {
		s.registerOpen(ctx, r.Email)
		return
	}
	t, key, err := s.ctl.Register(r.Email, r.Plan)
	if errors.Is(err, control.ErrDuplicateEmail) {
		writeError(ctx, fasthttp.StatusConflict, fmt.Sprintf("a tenant with email %q is already registered", r.Email))
		return
	}
	if err != nil {
		s.fail(ctx, err)
		return
	}
	writeJSON(ctx, fasthttp.StatusCreated, map[string]any{"tenant_id": t.ID, "api_key": key, "plan": t.Plan,
		"message": "Store this API key now: it is shown only once and kept only as a hash."})
}

// registerOpen is open registration (no admin key). It must not reveal
// which emails are registered, so a taken email is answered exactly like a
// new one: 201 with a new free tenant and its key. An email given to open
// registration is an unverified contact address, not an identity: when it
// is taken, the new tenant's contact becomes a plus-tagged subaddress of it
// (local+tag@domain, which mail delivers to the same mailbox), so the
// existing tenant is untouched and the reply, and its timing, are the same.
// The caller's address is rate limited (RegisterLimit per RegisterWindow)
// before anything else, so the endpoint cannot be used to probe in bulk.
func (s *Server) registerOpen(ctx *fasthttp.RequestCtx, email string) {
	if s.cfg.RegisterLimit > 0 {
		ok, _, retry := s.regLimiter.Allow(clientIP(ctx.RemoteAddr()), s.cfg.RegisterLimit)
		if !ok {
			secs := ratelimit.RetryAfterSeconds(retry)
			ctx.Response.Header.Set("Retry-After", strconv.Itoa(secs))
			writeError(ctx, fasthttp.StatusTooManyRequests, fmt.Sprintf("open registration is limited to %d per %s per client address; retry after %d s",
				s.cfg.RegisterLimit, s.cfg.RegisterWindow, secs))
			return
		}
	}
	// Room for the tag, whether or not the email is taken, so that the
	// length limit cannot tell the two apart either.
	if len(email) > maxOpenEmailLength {
		badRequest(ctx, fmt.Errorf("email: is %d bytes, longer than the open registration limit of %d", len(email), maxOpenEmailLength))
		return
	}
	t, key, err := s.ctl.Register(email, "free")
	for try := 0; errors.Is(err, control.ErrDuplicateEmail) && try < 4; try++ {
		t, key, err = s.ctl.Register(subaddress(email), "free")
	}
	if err != nil {
		s.fail(ctx, err)
		return
	}
	writeJSON(ctx, fasthttp.StatusCreated, map[string]any{"tenant_id": t.ID, "api_key": key, "plan": t.Plan,
		"message": "Store this API key now: it is shown only once and kept only as a hash."})
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

// keysTenant is the tenant whose keys a request manages: a tenant key's own
// tenant; the built-in tenant has no keys.
func (s *Server) keysTenant(ctx *fasthttp.RequestCtx, c *call) (string, bool) {
	if c.who.admin || c.who.open {
		writeError(ctx, fasthttp.StatusForbidden, "API keys belong to registered tenants; call with a tenant key")
		return "", false
	}
	return c.who.tenant, true
}

type keyJSON struct {
	ID         string  `json:"id"`
	Prefix     string  `json:"prefix"`
	CreatedAt  string  `json:"created_at"`
	LastUsedAt *string `json:"last_used_at"`
	Revoked    bool    `json:"revoked"`
	APIKey     string  `json:"api_key,omitempty"`
}

func keyOf(k control.KeyInfo) keyJSON {
	out := keyJSON{ID: k.ID, Prefix: k.Prefix, CreatedAt: formatTime(k.CreatedAt), Revoked: k.Revoked}
	if k.LastUsedAt != nil {
		t := formatTime(*k.LastUsedAt)
		out.LastUsedAt = &t
	}
	return out
}

func (s *Server) createKey(ctx *fasthttp.RequestCtx, c *call) {
	// The request has no fields; a body that names some is refused rather
	// than ignored.
	if body := ctx.PostBody(); len(bytes.TrimSpace(body)) > 0 {
		var none struct{}
		if err := decodeBody(body, &none); err != nil {
			badRequest(ctx, err)
			return
		}
	}
	tenant, ok := s.keysTenant(ctx, c)
	if !ok {
		return
	}
	k, secret, err := s.ctl.CreateKey(tenant)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	out := keyOf(k)
	out.APIKey = secret
	writeJSON(ctx, fasthttp.StatusCreated, out)
}

func (s *Server) listKeys(ctx *fasthttp.RequestCtx, c *call) {
	tenant, ok := s.keysTenant(ctx, c)
	if !ok {
		return
	}
	keys := s.ctl.Keys(tenant)
	out := make([]keyJSON, len(keys))
	for i, k := range keys {
		out[i] = keyOf(k)
	}
	writeJSON(ctx, fasthttp.StatusOK, map[string]any{"keys": out})
}

func (s *Server) revokeKey(ctx *fasthttp.RequestCtx, c *call) {
	tenant, ok := s.keysTenant(ctx, c)
	if !ok {
		return
	}
	k, err := s.ctl.RevokeKey(tenant, c.params["key_id"])
	switch {
	case errors.Is(err, control.ErrNotFound):
		writeError(ctx, fasthttp.StatusNotFound, "key not found")
	case errors.Is(err, control.ErrLastKey):
		writeError(ctx, fasthttp.StatusConflict, "cannot revoke the tenant's last active key; create another key first")
	case err != nil:
		s.fail(ctx, err)
	default:
		writeJSON(ctx, fasthttp.StatusOK, map[string]any{"id": k.ID, "revoked": true})
	}
}

type planJSON struct {
	Name       string `json:"name"`
	RPM        int    `json:"rpm"`
	V2         bool   `json:"v2"`
	Workspaces *int   `json:"workspaces"` // null: unlimited
}

func planOf(p control.Plan) planJSON {
	out := planJSON{Name: p.Name, RPM: p.RPM, V2: p.V2}
	if p.Workspaces > 0 {
		n := p.Workspaces
		out.Workspaces = &n
	}
	return out
}

func (s *Server) plans(ctx *fasthttp.RequestCtx, _ *call) {
	var out []planJSON
	for _, p := range control.Plans() {
		out = append(out, planOf(p))
	}
	writeJSON(ctx, fasthttp.StatusOK, map[string]any{"plans": out})
}

// subject is the tenant a billing request is about: the caller's, or for
// the admin key any tenant named by tenant_id.
func (s *Server) subject(ctx *fasthttp.RequestCtx, c *call, named string) (control.Tenant, bool) {
	id := c.who.tenant
	if named != "" && named != id {
		if !c.who.admin {
			writeError(ctx, fasthttp.StatusForbidden, "tenant_id of another tenant needs the admin key")
			return control.Tenant{}, false
		}
		id = named
	}
	t, ok := s.ctl.Tenant(id)
	if !ok {
		writeError(ctx, fasthttp.StatusNotFound, "tenant not found")
		return control.Tenant{}, false
	}
	return t, true
}

func (s *Server) planBody(t control.Tenant) map[string]any {
	p, _ := control.PlanByName(t.Plan)
	pj := planOf(p)
	return map[string]any{"tenant_id": t.ID, "plan": p.Name, "rpm": p.RPM, "v2": p.V2, "workspaces": pj.Workspaces,
		"workspaces_used": len(s.ctl.Workspaces(t.ID))}
}

func (s *Server) getPlan(ctx *fasthttp.RequestCtx, c *call) {
	t, ok := s.subject(ctx, c, string(ctx.QueryArgs().Peek("tenant_id")))
	if !ok {
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, s.planBody(t))
}

func (s *Server) setPlan(ctx *fasthttp.RequestCtx, c *call) {
	if !c.who.admin {
		writeError(ctx, fasthttp.StatusForbidden, "changing a plan needs the admin key")
		return
	}
	var r struct {
		TenantID string `json:"tenant_id"`
		Plan     string `json:"plan"`
	}
	if err := decodeBody(ctx.PostBody(), &r); err != nil {
		badRequest(ctx, err)
		return
	}
	if r.TenantID == "" {
		badRequest(ctx, errors.New("tenant_id: is required with the admin key"))
		return
	}
	t, err := s.ctl.SetPlan(r.TenantID, r.Plan)
	if errors.Is(err, control.ErrBuiltinTenant) {
		badRequest(ctx, fmt.Errorf("tenant_id: %q is the built-in tenant, whose plan is fixed", r.TenantID))
		return
	}
	if err != nil {
		s.fail(ctx, err)
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, s.planBody(t))
}

var periodPattern = regexp.MustCompile(`^[0-9]{4}-(0[1-9]|1[0-2])$`)

func (s *Server) usage(ctx *fasthttp.RequestCtx, c *call) {
	args := ctx.QueryArgs()
	period := string(args.Peek("period"))
	if period == "" {
		period = s.cfg.Now().UTC().Format("2006-01")
	} else if !periodPattern.MatchString(period) {
		badRequest(ctx, fmt.Errorf("period: %q is not a month as YYYY-MM", period))
		return
	}
	t, ok := s.subject(ctx, c, string(args.Peek("tenant_id")))
	if !ok {
		return
	}
	u := s.ctl.Usage(t.ID, period)
	requests := u.Requests
	if requests == nil {
		requests = map[string]uint64{}
	}
	writeJSON(ctx, fasthttp.StatusOK, map[string]any{"tenant_id": t.ID, "period": period, "requests": requests,
		"artifacts_ingested": u.ArtifactsIngested, "raw_bytes_stored": u.RawBytesStored, "context_packs": u.ContextPacks,
		"tokens_packed": u.TokensPacked, "rate_limited": u.RateLimited})
}

func (s *Server) openapi(ctx *fasthttp.RequestCtx, _ *call) {
	b, err := apidoc.JSON()
	if err != nil {
		s.fail(ctx, err)
		return
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
}
