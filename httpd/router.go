package httpd

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/loci-memory/loci/telemetry"
	"github.com/valyala/fasthttp"
)

// route is one endpoint: a method and a path pattern whose {name} segments
// are parameters.
type route struct {
	method   string
	pattern  string
	name     string // "METHOD pattern": the usage counter's endpoint name
	segs     []string
	h        func(*fasthttp.RequestCtx, *call)
	public   bool // no authentication, no metering (/health, /openapi.json)
	register bool // open to anyone when OpenRegistration is on
	v2       bool // needs a plan with the v2 API
	metrics  *telemetry.Route
}

type router struct{ routes []*route }

func (r *router) add(method, pattern string, h func(*fasthttp.RequestCtx, *call), opts ...func(*route)) {
	rt := &route{method: method, pattern: pattern, name: method + " " + pattern, segs: strings.Split(pattern, "/"), h: h}
	for _, o := range opts {
		o(rt)
	}
	r.routes = append(r.routes, rt)
}

func public(rt *route)       { rt.public = true }
func registration(rt *route) { rt.register = true }
func v2(rt *route)           { rt.v2 = true }

// splitPath splits a request's raw path (as sent, before any decoding or
// normalisation) on '/' and percent-decodes each segment on its own, so that
// an encoded '/' or ".." inside a path parameter stays inside it: routing
// on the decoded, normalised path let DELETE /v1/workspaces/team%2F..%2Fprod
// erase "prod". A malformed escape is an error naming the segment.
func splitPath(raw string) ([]string, error) {
	segs := strings.Split(raw, "/")
	for i, seg := range segs {
		if !strings.Contains(seg, "%") {
			continue
		}
		dec, err := url.PathUnescape(seg)
		if err != nil {
			return nil, fmt.Errorf("path segment %q has a malformed percent-escape", seg)
		}
		segs[i] = dec
	}
	return segs, nil
}

// match finds the route for method and the path's segments (splitPath).
// When the path matches only under other methods, allowed lists them (for
// 405 and Allow).
func (r *router) match(method string, segs []string) (*route, map[string]string, string) {
	var methods []string
	for _, rt := range r.routes {
		params, ok := rt.matchPath(segs)
		if !ok {
			continue
		}
		if rt.method == method {
			return rt, params, ""
		}
		methods = append(methods, rt.method)
	}
	sort.Strings(methods)
	return nil, nil, strings.Join(methods, ", ")
}

func (rt *route) matchPath(segs []string) (map[string]string, bool) {
	if len(segs) != len(rt.segs) {
		return nil, false
	}
	var params map[string]string
	for i, p := range rt.segs {
		if strings.HasPrefix(p, "{") {
			if segs[i] == "" {
				return nil, false
			}
			if params == nil {
				params = map[string]string{}
			}
			params[p[1:len(p)-1]] = segs[i]
			continue
		}
		if p != segs[i] {
			return nil, false
		}
	}
	return params, true
}

// Routes lists the served routes as (method, pattern) pairs, sorted; the
// OpenAPI document must describe exactly these.
func (s *Server) Routes() [][2]string {
	var out [][2]string
	for _, rt := range s.router.routes {
		out = append(out, [2]string{rt.method, rt.pattern})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i][1] != out[j][1] {
			return out[i][1] < out[j][1]
		}
		return out[i][0] < out[j][0]
	})
	return out
}

func (s *Server) routes() router {
	var r router
	r.add("GET", "/health", s.health, public)
	r.add("GET", "/openapi.json", s.openapi, public)
	r.add("POST", "/v1/register", s.register, registration)
	r.add("POST", "/v1/keys", s.createKey)
	r.add("GET", "/v1/keys", s.listKeys)
	r.add("DELETE", "/v1/keys/{key_id}", s.revokeKey)
	r.add("POST", "/v1/ingest", s.ingestV1)
	r.add("GET", "/v1/artifacts/{artifact_id}", s.getArtifact)
	r.add("DELETE", "/v1/artifacts/{artifact_id}", s.eraseArtifact)
	r.add("GET", "/v1/artifacts/{artifact_id}/status", s.artifactStatus)
	r.add("POST", "/v1/context-pack", s.packV1)
	r.add("POST", "/v1/feedback", s.feedback)
	r.add("GET", "/v1/receipts", s.listReceipts)
	r.add("GET", "/v1/receipts/{receipt_id}", s.getReceipt)
	r.add("GET", "/v1/workspaces", s.listWorkspaces)
	r.add("DELETE", "/v1/workspaces/{workspace_id}", s.eraseWorkspace)
	r.add("GET", "/v1/workspaces/{workspace_id}/artifacts", s.listArtifacts)
	r.add("GET", "/v1/workspaces/{workspace_id}/settings", s.getSettings)
	r.add("PUT", "/v1/workspaces/{workspace_id}/settings", s.putSettings)
	r.add("GET", "/v1/billing/plans", s.plans)
	r.add("GET", "/v1/billing/plan", s.getPlan)
	r.add("PUT", "/v1/billing/plan", s.setPlan)
	r.add("GET", "/v1/billing/usage", s.usage)
	r.add("GET", "/v1/tenants", s.tenants)
	r.add("POST", "/v2/ingest", s.ingestV2, v2)
	r.add("POST", "/v2/context-pack", s.packV2, v2)
	r.add("GET", "/v2/jobs/{job_id}", s.getJob, v2)
	r.add("POST", "/mcp", s.mcp, public)
	return r
}
