package httpd

import (
	"bytes"

	"github.com/loci-memory/loci/apidoc"
	"github.com/loci-memory/loci/service"
	"github.com/valyala/fasthttp"
)

type registerRequest struct {
	Email string `json:"email"`
	Plan  string `json:"plan"`
}

// Response bodies whose fields were once map keys keep them in sorted order,
// as encoding/json wrote the maps, so the wire bytes stay the same.

type registeredJSON struct {
	APIKey   string `json:"api_key"`
	Message  string `json:"message"`
	Plan     string `json:"plan"`
	TenantID string `json:"tenant_id"`
}

func (s *Server) register(ctx *fasthttp.RequestCtx, c *call) {
	var r registerRequest
	if err := decodeBody(ctx.PostBody(), &r); err != nil {
		badRequest(ctx, err)
		return
	}
	out, err := s.svc.Register(c.who, service.RegisterRequest{Email: r.Email, Plan: r.Plan, ClientAddr: clientIP(ctx.RemoteAddr())})
	if err != nil {
		s.serviceFail(ctx, err)
		return
	}
	writeJSON(ctx, fasthttp.StatusCreated, registeredJSON{TenantID: out.TenantID, APIKey: out.APIKey, Plan: out.Plan, Message: out.Message})
}

type keyJSON struct {
	ID         string  `json:"id"`
	Prefix     string  `json:"prefix"`
	CreatedAt  string  `json:"created_at"`
	LastUsedAt *string `json:"last_used_at"`
	Revoked    bool    `json:"revoked"`
	APIKey     string  `json:"api_key,omitempty"`
}

func keyOf(k service.KeyInfo) keyJSON {
	out := keyJSON{ID: k.ID, Prefix: k.Prefix, CreatedAt: service.FormatTime(k.CreatedAt), Revoked: k.Revoked}
	if k.LastUsedAt != nil {
		t := service.FormatTime(*k.LastUsedAt)
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
	k, err := s.svc.CreateKey(c.who)
	if err != nil {
		s.serviceFail(ctx, err)
		return
	}
	out := keyOf(k.KeyInfo)
	out.APIKey = k.Secret
	writeJSON(ctx, fasthttp.StatusCreated, out)
}

func (s *Server) listKeys(ctx *fasthttp.RequestCtx, c *call) {
	keys, err := s.svc.Keys(c.who)
	if err != nil {
		s.serviceFail(ctx, err)
		return
	}
	out := make([]keyJSON, len(keys))
	for i, k := range keys {
		out[i] = keyOf(k)
	}
	writeJSON(ctx, fasthttp.StatusOK, map[string]any{"keys": out})
}

func (s *Server) revokeKey(ctx *fasthttp.RequestCtx, c *call) {
	k, err := s.svc.RevokeKey(c.who, c.params["key_id"])
	if err != nil {
		s.serviceFail(ctx, err)
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, map[string]any{"id": k.ID, "revoked": true})
}

type planJSON struct {
	Name       string `json:"name"`
	RPM        int    `json:"rpm"`
	V2         bool   `json:"v2"`
	Workspaces *int   `json:"workspaces"` // null: unlimited
}

func planOf(p service.Plan) planJSON {
	out := planJSON{Name: p.Name, RPM: p.RPM, V2: p.V2}
	if p.Workspaces > 0 {
		n := p.Workspaces
		out.Workspaces = &n
	}
	return out
}

func (s *Server) plans(ctx *fasthttp.RequestCtx, _ *call) {
	var out []planJSON
	for _, p := range s.svc.Plans() {
		out = append(out, planOf(p))
	}
	writeJSON(ctx, fasthttp.StatusOK, map[string]any{"plans": out})
}

type planStatusJSON struct {
	Plan           string `json:"plan"`
	RPM            int    `json:"rpm"`
	TenantID       string `json:"tenant_id"`
	V2             bool   `json:"v2"`
	Workspaces     *int   `json:"workspaces"` // null: unlimited
	WorkspacesUsed int    `json:"workspaces_used"`
}

func planStatusOf(st service.PlanStatus) planStatusJSON {
	return planStatusJSON{TenantID: st.TenantID, Plan: st.Plan.Name, RPM: st.Plan.RPM, V2: st.Plan.V2,
		Workspaces: planOf(st.Plan).Workspaces, WorkspacesUsed: st.WorkspacesUsed}
}

func (s *Server) getPlan(ctx *fasthttp.RequestCtx, c *call) {
	st, err := s.svc.Plan(c.who, service.PlanRequest{TenantID: string(ctx.QueryArgs().Peek("tenant_id"))})
	if err != nil {
		s.serviceFail(ctx, err)
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, planStatusOf(st))
}

func (s *Server) setPlan(ctx *fasthttp.RequestCtx, c *call) {
	// A caller who may not change plans is refused before its body is read.
	if err := service.MayChangePlans(c.who); err != nil {
		s.serviceFail(ctx, err)
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
	st, err := s.svc.SetPlan(c.who, service.SetPlanRequest{TenantID: r.TenantID, Plan: r.Plan})
	if err != nil {
		s.serviceFail(ctx, err)
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, planStatusOf(st))
}

type usageJSON struct {
	ArtifactsIngested uint64            `json:"artifacts_ingested"`
	ContextPacks      uint64            `json:"context_packs"`
	Period            string            `json:"period"`
	RateLimited       uint64            `json:"rate_limited"`
	RawBytesStored    uint64            `json:"raw_bytes_stored"`
	Requests          map[string]uint64 `json:"requests"`
	TenantID          string            `json:"tenant_id"`
	TokensPacked      uint64            `json:"tokens_packed"`
}

func (s *Server) usage(ctx *fasthttp.RequestCtx, c *call) {
	args := ctx.QueryArgs()
	u, err := s.svc.Usage(c.who, service.UsageRequest{TenantID: string(args.Peek("tenant_id")), Period: string(args.Peek("period"))})
	if err != nil {
		s.serviceFail(ctx, err)
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, usageJSON{TenantID: u.TenantID, Period: u.Period, Requests: u.Requests,
		ArtifactsIngested: u.ArtifactsIngested, RawBytesStored: u.RawBytesStored, ContextPacks: u.ContextPacks,
		TokensPacked: u.TokensPacked, RateLimited: u.RateLimited})
}

func (s *Server) openapi(ctx *fasthttp.RequestCtx, _ *call) {
	b, err := apidoc.JSON()
	if err != nil {
		s.serviceFail(ctx, err)
		return
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
}

// tenants answers GET /v1/tenants (admin key only): every tenant with its
// workspaces.
func (s *Server) tenants(ctx *fasthttp.RequestCtx, c *call) {
	if _, err := queryParams(ctx); err != nil {
		badRequest(ctx, err)
		return
	}
	res, err := s.svc.Tenants(c.who)
	if err != nil {
		s.serviceFail(ctx, err)
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, res)
}
