// Package console serves the web console: a single-page application, built
// from console/web by esbuild into console/dist (committed, so building the
// binary needs no Node) and embedded here with go:embed, served under /ui.
// The application is a pure client of the public HTTP API; the only
// endpoint of its own is /ui/api/metrics, the Prometheus text of the
// server's metrics for the admin key, which the server page polls.
package console

import (
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"mime"
	"path"
	"strings"

	"github.com/loci-memory/loci/service"
	"github.com/loci-memory/loci/telemetry"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

//go:embed dist/index.html dist/assets
var dist embed.FS

// Prefix is the path the console is served under.
const Prefix = "/ui"

// MetricsPath is the console's endpoint for the server's Prometheus metrics.
const MetricsPath = Prefix + "/api/metrics"

// contentSecurityPolicy allows the page only its own scripts, styles and
// API: no inline script or style, no other origin, no framing. Charts are
// inline SVG built through the DOM; the API is same-origin.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Config configures a Console.
type Config struct {
	// AdminKey is the operator's admin key; empty means authentication is
	// off, so anyone may read the metrics (as anyone may call the API).
	AdminKey string
	// KeyValid reports whether a key other than the admin key is one of the
	// server's (a tenant's), so that the metrics endpoint answers an invalid
	// key 401 and a valid key lacking the right 403, as the API does. Nil:
	// every other key is invalid.
	KeyValid func(key string) bool
	// Metrics is the registry served at MetricsPath; nil answers 404 there.
	Metrics *telemetry.Metrics
}

// asset is one embedded file, ready to serve.
type asset struct {
	body  []byte
	ctype string
	etag  string
	// immutable: the name carries a hash of the content, so it may be
	// cached for a year; index.html is revalidated on every load.
	immutable bool
}

// Console serves the /ui tree.
type Console struct {
	adminKey string
	keyValid func(string) bool
	index    asset
	assets   map[string]asset // by request path, such as /ui/assets/app-HASH.js
	metrics  fasthttp.RequestHandler
}

// New loads the embedded assets. It fails only when the embedded build is
// broken (no index.html), which the package's tests rule out.
func New(cfg Config) (*Console, error) {
	c := &Console{adminKey: cfg.AdminKey, keyValid: cfg.KeyValid, assets: map[string]asset{}}
	idx, err := dist.ReadFile("dist/index.html")
	if err != nil {
		return nil, fmt.Errorf("console: the embedded build has no index.html: %w", err)
	}
	c.index = newAsset("index.html", idx, false)
	err = fs.WalkDir(dist, "dist/assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := dist.ReadFile(p)
		if err != nil {
			return err
		}
		c.assets[Prefix+strings.TrimPrefix(p, "dist")] = newAsset(p, b, true)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("console: reading the embedded assets: %w", err)
	}
	if cfg.Metrics != nil {
		c.metrics = fasthttpadaptor.NewFastHTTPHandler(cfg.Metrics.Handler())
	}
	return c, nil
}

func newAsset(name string, body []byte, immutable bool) asset {
	sum := sha256.Sum256(body)
	ctype := mime.TypeByExtension(path.Ext(name))
	switch path.Ext(name) { // not left to the host's mime tables
	case ".js":
		ctype = "text/javascript; charset=utf-8"
	case ".css":
		ctype = "text/css; charset=utf-8"
	case ".html":
		ctype = "text/html; charset=utf-8"
	case ".svg":
		ctype = "image/svg+xml"
	case ".map", ".json":
		ctype = "application/json"
	}
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	return asset{body: body, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`, immutable: immutable}
}

// Owns reports whether a request path belongs to the console: /ui or
// anything under /ui/.
func Owns(rawPath string) bool {
	return rawPath == Prefix || strings.HasPrefix(rawPath, Prefix+"/")
}

// Serve answers one request under /ui, or for / (a 302 to /ui): the metrics endpoint, a hashed asset
// (404 when unknown, never the page, so a stale script reference fails
// loudly), or otherwise index.html, so that client routes such as
// /ui/receipts/{id} load the application (SPA fallback).
func (c *Console) Serve(ctx *fasthttp.RequestCtx) {
	h := &ctx.Response.Header
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	p := string(ctx.Request.URI().PathOriginal())
	if p == MetricsPath {
		c.serveMetrics(ctx)
		return
	}
	if !ctx.IsGet() && !ctx.IsHead() {
		h.Set("Allow", "GET, HEAD")
		writeError(ctx, fasthttp.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s; allowed: GET, HEAD", ctx.Method(), p))
		return
	}
	if p == "/" { // the server's root: a browser pointed at the server gets the console
		h.Set("Location", Prefix)
		h.Set("Cache-Control", "no-cache")
		ctx.SetStatusCode(fasthttp.StatusFound)
		return
	}
	if strings.HasPrefix(p, Prefix+"/assets/") {
		a, ok := c.assets[p]
		if !ok {
			writeError(ctx, fasthttp.StatusNotFound, fmt.Sprintf("no console asset %s", p))
			return
		}
		c.serveAsset(ctx, a)
		return
	}
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	c.serveAsset(ctx, c.index)
}

func (c *Console) serveAsset(ctx *fasthttp.RequestCtx, a asset) {
	h := &ctx.Response.Header
	if a.immutable {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	h.Set("ETag", a.etag)
	h.SetContentType(a.ctype)
	if inm := string(ctx.Request.Header.Peek("If-None-Match")); inm != "" && etagMatches(inm, a.etag) {
		ctx.SetStatusCode(fasthttp.StatusNotModified)
		return
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetBody(a.body)
}

// etagMatches reports whether an If-None-Match list names etag (or is *).
func etagMatches(list, etag string) bool {
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(t), "W/"))
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

// serveMetrics serves the Prometheus text of the server's metrics. They
// describe the whole deployment (every tenant's traffic), so with
// authentication on only the admin key reads them; a tenant's console shows
// health, version and storage instead.
func (c *Console) serveMetrics(ctx *fasthttp.RequestCtx) {
	h := &ctx.Response.Header
	h.Set("Cache-Control", "no-store")
	if !ctx.IsGet() && !ctx.IsHead() {
		h.Set("Allow", "GET, HEAD")
		writeError(ctx, fasthttp.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s; allowed: GET, HEAD", ctx.Method(), MetricsPath))
		return
	}
	if c.metrics == nil {
		writeError(ctx, fasthttp.StatusNotFound, "this server serves no metrics")
		return
	}
	if c.adminKey != "" {
		key := []byte(service.PresentedKey(string(ctx.Request.Header.Peek("X-API-Key")), string(ctx.Request.Header.Peek("Authorization"))))
		if len(key) == 0 {
			writeError(ctx, fasthttp.StatusUnauthorized, "missing API key: send X-API-Key or Authorization: Bearer")
			return
		}
		if subtle.ConstantTimeCompare(key, []byte(c.adminKey)) != 1 {
			if c.keyValid == nil || !c.keyValid(string(key)) {
				writeError(ctx, fasthttp.StatusUnauthorized, "invalid API key")
				return
			}
			writeError(ctx, fasthttp.StatusForbidden, "the server's metrics need the admin key")
			return
		}
	}
	c.metrics(ctx)
}

func writeError(ctx *fasthttp.RequestCtx, status int, detail string) {
	b, _ := json.Marshal(map[string]string{"detail": detail})
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.SetContentType("application/json")
	ctx.SetStatusCode(status)
	ctx.SetBody(b)
}
