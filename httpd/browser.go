package httpd

import (
	"errors"
	"fmt"
	"mime"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/valyala/fasthttp"
)

// Browsers (browser.go). A web page the user visits can send requests to a
// server on the user's machine: a CORS "simple request" (a POST with a
// text/plain body) goes out without a preflight, so with authentication off
// any page could store memories; and a DNS-rebinding page (its own name
// resolving to 127.0.0.1) is same-origin to the browser and can read the
// answers. So, by default, the server refuses
//   - a request whose Origin is not the server's own (the one the request
//     was sent to), unless Config.AllowedOrigins lists it;
//   - when it listens on loopback (or Config.AllowedHosts is set), a request
//     whose Host is not a loopback name or address, the listen address or
//     one of Config.AllowedHosts;
//   - a request body that is not declared application/json (a simple
//     request cannot declare it).
// The MCP streamable-HTTP transport requires the same Origin check of /mcp.

// corsExposed are the response headers a page of an allowed origin may read.
const corsExposed = "X-Request-ID, Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-Loci-Data-Version"

// corsAllowedHeaders are the request headers an allowed origin may send.
const corsAllowedHeaders = "Content-Type, X-API-Key, X-Request-ID, X-Loci-Min-Data-Version, Mcp-Session-Id, Mcp-Protocol-Version"

// ParseAllowedOrigins parses a comma-separated list of origins
// (scheme://host[:port], as browsers send them in Origin) that may make
// cross-origin requests, or "*" for any. Errors name the entry.
func ParseAllowedOrigins(list string) ([]string, error) {
	var out []string
	for _, o := range strings.Split(list, ",") {
		if o = strings.TrimSpace(o); o == "" {
			continue
		}
		if o != "*" {
			u, err := url.Parse(o)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
				return nil, fmt.Errorf("%q is not an origin such as https://app.example.com or http://localhost:5173", o)
			}
			o = strings.ToLower(o)
		}
		out = append(out, o)
	}
	return out, nil
}

// ParseAllowedHosts parses a comma-separated list of host names (or
// addresses, without a port) a loopback server answers besides loopback
// ones, or "*" for any. Errors name the entry.
func ParseAllowedHosts(list string) ([]string, error) {
	var out []string
	for _, h := range strings.Split(list, ",") {
		if h = strings.TrimSpace(h); h == "" {
			continue
		}
		if ip := net.ParseIP(strings.Trim(h, "[]")); ip != nil {
			h = ip.String() // an address, IPv6 without brackets
		} else if h != "*" && (strings.ContainsAny(h, "/:@ ") || strings.Trim(h, ".") == "") {
			return nil, fmt.Errorf("%q is not a host name such as loci.example.com (no scheme, no port)", h)
		}
		out = append(out, strings.ToLower(h))
	}
	return out, nil
}

// guardBrowser refuses a cross-origin or foreign-Host request with 403 and
// answers a preflight of an allowed origin; it reports whether the request
// was answered. A request another node of the cluster forwarded was checked
// there (forward drops its Origin), and its Host is a node's address.
func (s *Server) guardBrowser(ctx *fasthttp.RequestCtx) bool {
	if err := s.checkHost(ctx); err != nil {
		writeError(ctx, fasthttp.StatusForbidden, err.Error())
		return true
	}
	origin := string(ctx.Request.Header.Peek("Origin"))
	if origin == "" {
		return false
	}
	if sameOrigin(origin, string(ctx.Request.Header.Host())) {
		return false
	}
	if !s.originAllowed(origin) {
		writeError(ctx, fasthttp.StatusForbidden, fmt.Sprintf("cross-origin request refused: Origin %q is not this server's origin; "+
			"to serve pages of that origin, list it in LOCI_ALLOWED_ORIGINS (--allowed-origins)", origin))
		return true
	}
	h := &ctx.Response.Header
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	if ctx.IsOptions() && len(ctx.Request.Header.Peek("Access-Control-Request-Method")) > 0 {
		h.Set("Access-Control-Allow-Methods", "GET, HEAD, POST, PUT, DELETE")
		h.Set("Access-Control-Allow-Headers", corsAllowedHeaders)
		h.Set("Access-Control-Max-Age", "600")
		ctx.SetStatusCode(fasthttp.StatusNoContent)
		return true
	}
	h.Set("Access-Control-Expose-Headers", corsExposed)
	return false
}

func (s *Server) originAllowed(origin string) bool {
	o := strings.ToLower(origin)
	return slices.Contains(s.cfg.AllowedOrigins, "*") || slices.Contains(s.cfg.AllowedOrigins, o)
}

// sameOrigin reports whether origin names the host and port the request
// was sent to (host, the Host header). The scheme is not compared (behind a
// TLS proxy the page is https, the server plain HTTP); a port left out is
// the scheme's default. "null" (sandboxed frames, file pages) is no origin.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || host == "" {
		return false
	}
	def := "80"
	if u.Scheme == "https" {
		def = "443"
	}
	oh, op := splitHost(u.Host, def)
	hh, hp := splitHost(host, def)
	return oh == hh && op == hp
}

// splitHost splits host[:port] into a lower-case host name (IPv6 without
// brackets) and a port, def when there is none.
func splitHost(hostport, def string) (string, string) {
	h, p, err := net.SplitHostPort(hostport)
	if err != nil {
		h, p = strings.Trim(hostport, "[]"), def
	}
	return strings.ToLower(h), p
}

// checkHost refuses a Host header a loopback server does not answer to
// (DNS rebinding): checked when the server listens on loopback or
// Config.AllowedHosts is set.
func (s *Server) checkHost(ctx *fasthttp.RequestCtx) error {
	if !s.hostGuard.Load() && len(s.cfg.AllowedHosts) == 0 {
		return nil
	}
	host := string(ctx.Request.Header.Host())
	if host == "" {
		return nil // not a browser: browsers always send Host
	}
	name, _ := splitHost(host, "")
	if ip := net.ParseIP(name); ip != nil {
		name = ip.String()
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") || slices.Contains(s.cfg.AllowedHosts, "*") || slices.Contains(s.cfg.AllowedHosts, name) {
		return nil
	}
	if ip := net.ParseIP(name); ip != nil && (ip.IsLoopback() || s.listenIP(ip)) {
		return nil
	}
	//lint:ignore ST1005 the detail starts with the header's name, as callers see it
	return fmt.Errorf("Host %q refused: this server answers requests for loopback names and addresses only "+
		"(a defence against DNS rebinding); to reach it by that name, list it in LOCI_ALLOWED_HOSTS (--allowed-hosts)", host)
}

// listenIP reports whether ip is the address the server listens on.
func (s *Server) listenIP(ip net.IP) bool {
	l, _ := s.listenAddr.Load().(net.IP)
	return l != nil && l.Equal(ip)
}

// errNotJSON is the refusal of a request body not declared JSON.
var errNotJSON = errors.New("send the JSON body with Content-Type: application/json")

// checkJSONBody refuses a request body whose Content-Type is not
// application/json (parameters such as charset are allowed): a browser can
// send other types cross-origin without asking the server first.
func checkJSONBody(ctx *fasthttp.RequestCtx) error {
	// -1 is a chunked body; -2 (no Content-Length) is none on a request.
	if n := ctx.Request.Header.ContentLength(); n == 0 || n == -2 {
		return nil
	}
	ct := string(ctx.Request.Header.ContentType())
	if ct == "" {
		return fmt.Errorf("Content-Type header is missing: %w", errNotJSON)
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return fmt.Errorf("Content-Type %q is not accepted: %w", ct, errNotJSON)
	}
	return nil
}
