// Package httpd is Loci's HTTP API (v1 and v2) on fasthttp: routing, JSON
// decoding and encoding, and the handlers, which decode a request into the
// service's typed request, call the service with the caller's Principal and
// encode its typed response. Authentication, plans, rate limits, usage,
// ingest, jobs, artifacts, workspaces, feedback, receipts and context packs
// are the service package's, and the service is built by the caller
// (cmd/loci wires the application); httpd maps the kinds of its errors
// (service.Classify) to status codes in one table (wireErrors, fail.go).
// Every response carries X-Request-ID and every error is {"detail": ...}.
package httpd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/service"
	"github.com/loci-memory/loci/telemetry"
	"github.com/valyala/fasthttp"
)

// Config configures a Server; zero fields take their defaults. Who may call
// (the admin key, registration, rate limits) is the service's configuration.
type Config struct {
	// Cluster, when set, is the cluster this node belongs to (cluster
	// mode): responses carry its data version, requests may ask for one.
	Cluster         Cluster
	Version         string
	MaxRequestBytes int // default 10 MiB
	Logger          *slog.Logger

	// MaxConns caps the connections served at once (default
	// DefaultMaxConns); one over the cap gets 503 and is closed.
	MaxConns int
	// MaxConnsPerIP caps the connections open from one client address
	// (default DefaultMaxConnsPerIP; negative: no cap); one over the cap
	// gets 429 and is closed.
	MaxConnsPerIP int
	// ReadTimeout bounds reading one request, headers and body (default
	// 30 s); WriteTimeout bounds writing one response (default 30 s);
	// IdleTimeout bounds the wait for the next request on a kept-alive
	// connection (default 60 s). Together they close idle and slow
	// connections, which would otherwise hold descriptors forever.
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// Metrics receives the request, pack, ingest and rate-limit series, and
	// reads the engine's state at scrape time (default: metrics of this
	// server alone, served by nobody). Serve them on an admin listener with
	// telemetry.AdminHandler, never on the public one.
	Metrics *telemetry.Metrics
	// Console, when set, serves every method on /ui and /ui/... (the web
	// console, package console), before routing and while starting.
	Console fasthttp.RequestHandler
	// AllowedOrigins lists the origins (scheme://host[:port]) whose pages
	// may call the server cross-origin, or "*"; any other Origin but the
	// server's own is refused (403). AllowedHosts lists the host names a
	// server listening on loopback answers besides loopback ones, or "*";
	// when set, it applies on any listener. See browser.go.
	AllowedOrigins, AllowedHosts []string
	// MaxBodyBytesInFlight bounds the request body bytes the server reads
	// or holds at once (default DefaultMaxBodyBytesInFlight, at least
	// MaxRequestBytes); a request that would pass it gets 503 with
	// Retry-After. Bodies are read only once a request is authenticated.
	MaxBodyBytesInFlight int64
}

// Connection defaults: below the file limits of a server (`loci serve`
// raises the soft limit to the hard one), far above what one agent host
// needs. Past the limits, connections are refused, never the server stopped.
const (
	DefaultMaxConns      = 10000
	DefaultMaxConnsPerIP = 1000
)

// Cluster is what the HTTP layer needs of a cluster node (cluster.Node).
type Cluster interface {
	// DataVersion is what the node has applied, sent as X-Loci-Data-Version.
	DataVersion() string
	// WaitDataVersion waits until the node has applied a version a client
	// sent as X-Loci-Min-Data-Version: engine.ErrUnavailable when it does
	// not in time, another error when the version is malformed.
	WaitDataVersion(ctx context.Context, version string) error
	// Status describes the cluster for /health.
	Status(ctx context.Context) any
	// Stalled is why the node cannot serve reads at the data versions
	// clients send (an applier behind the log and not moving), or nil:
	// /health answers 503 "lagging" with it.
	Stalled() error
	// ForwardSecret marks requests one node forwards to another (the
	// same on every node; see forward.go).
	ForwardSecret() string
}

// Server serves a service over HTTP.
type Server struct {
	// client forwards requests to other nodes (cluster mode, forward.go).
	client *fasthttp.Client
	// svc decides who a caller is and whether it may be served, and serves
	// every route: tenants, keys, plans, usage, ingest, jobs (it runs the
	// indexing workers), artifacts, workspaces, feedback, context packs.
	svc *service.Service
	// mcpHandler serves POST /mcp (see mcp.go).
	mcpHandler fasthttp.RequestHandler
	cfg        Config
	log        *slog.Logger
	start      time.Time
	srv        *fasthttp.Server
	router     router
	metrics    *telemetry.Metrics
	// unmatched holds the series of requests that matched no route, by
	// method (unknown methods share "OTHER"), so that neither raw paths nor
	// invented methods create series.
	unmatched map[string]*telemetry.Route
	// console holds the series of the console's requests (route "/ui/*"),
	// by method: GET, HEAD, and OTHER for the rest (which it refuses).
	console map[string]*route

	// base is the parent of every request's context; Shutdown cancels it,
	// so that requests waiting for work (a pack's admission) give up.
	base     context.Context
	stopBase context.CancelFunc

	ready atomic.Bool // Start ran

	// bodies is the budget of request body bytes held at once (body.go).
	bodies bodyBudget

	// hostGuard: the server listens on loopback, so requests must name a
	// loopback host (checkHost); listenAddr is the listener's IP (net.IP).
	hostGuard  atomic.Bool
	listenAddr atomic.Value
}

// DefaultTenant is the tenant every request acts as when authentication is
// off, and the tenant of requests made with the admin key.
const DefaultTenant = service.DefaultTenant

// New returns a server for svc, ready to serve: NewStarting, then Start.
func New(svc *service.Service, cfg Config) *Server {
	s := NewStarting(cfg)
	s.Start(svc)
	return s
}

// NewStarting returns a server that can accept connections before the
// service exists (the engine recovers, a cluster node catches up): until
// Start, /health answers 503 "starting" and every other route 503 with
// Retry-After.
func NewStarting(cfg Config) *Server {
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = 10 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.MaxConnsPerIP == 0 {
		cfg.MaxConnsPerIP = DefaultMaxConnsPerIP
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = 30 * time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 60 * time.Second
	}
	if cfg.MaxBodyBytesInFlight <= 0 {
		cfg.MaxBodyBytesInFlight = DefaultMaxBodyBytesInFlight
	}
	cfg.MaxBodyBytesInFlight = max(cfg.MaxBodyBytesInFlight, int64(cfg.MaxRequestBytes))
	s := &Server{cfg: cfg, log: cfg.Logger, start: time.Now()}
	s.bodies.limit = cfg.MaxBodyBytesInFlight
	s.router = s.routes()
	if cfg.Metrics == nil {
		cfg.Metrics = telemetry.New(cfg.Version)
	}
	s.metrics = cfg.Metrics
	for _, rt := range s.router.routes {
		rt.metrics = s.metrics.Route(rt.method, rt.pattern)
	}
	s.unmatched = map[string]*telemetry.Route{}
	for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "OTHER"} {
		s.unmatched[m] = s.metrics.Route(m, telemetry.UnmatchedRoute)
	}
	if cfg.Console != nil {
		s.console = map[string]*route{}
		for _, m := range []string{"GET", "HEAD", "OTHER"} {
			s.console[m] = &route{method: m, pattern: "/ui/*", metrics: s.metrics.Route(m, "/ui/*")}
		}
	}
	s.base, s.stopBase = context.WithCancel(context.Background())
	s.srv = &fasthttp.Server{
		Handler:            s.handle,
		ErrorHandler:       s.transportError,
		Name:               "loci",
		MaxRequestBodySize: cfg.MaxRequestBytes,
		// Bodies are streamed and read by readBody, after authentication
		// (body.go). fasthttp reads the first min(Content-Length,
		// MaxRequestBodySize) bytes before the handler runs; HeaderReceived
		// makes that one byte (the limit itself is checked by dispatch and
		// readBody), and multipart bodies are not pre-parsed.
		StreamRequestBody: true,
		HeaderReceived: func(*fasthttp.RequestHeader) fasthttp.RequestConfig {
			return fasthttp.RequestConfig{MaxRequestBodySize: 1}
		},
		DisablePreParseMultipartForm: true,
		Concurrency:                  cfg.MaxConns,
		ReadTimeout:                  cfg.ReadTimeout,
		WriteTimeout:                 cfg.WriteTimeout,
		IdleTimeout:                  cfg.IdleTimeout,
		NoDefaultServerHeader:        true,
		NoDefaultContentType:         true,
		NoDefaultDate:                true,
		Logger:                       fasthttpLogger{cfg.Logger},
	}
	return s
}

// Start makes the server serve svc (built by the caller: cmd/loci's
// wiring). It starts the service's background work (the usage writer and
// the indexing workers, which resume unfinished jobs); Shutdown stops it.
// In cluster mode (Config.Cluster), requests for shards this node does not
// serve are forwarded (forward.go).
func (s *Server) Start(svc *service.Service) {
	if s.cfg.Cluster != nil {
		s.client = newForwardClient()
	}
	s.svc = svc
	s.svc.Start()
	s.metrics.WatchJobs(s.svc.JobBacklog)
	s.metrics.WatchEngines(s.svc.Engines())
	s.metrics.WatchPacks(s.svc.Packer())
	s.mcpHandler = s.newMCPHandler()
	s.ready.Store(true) // publishes the fields above to the handlers
}

// Serve accepts connections on ln until Shutdown. Temporary accept errors
// (file descriptors exhausted) are retried, never returned: load must not
// stop the server.
func (s *Server) Serve(ln net.Listener) error {
	perIP := s.cfg.MaxConnsPerIP
	if perIP < 0 {
		perIP = 0
	}
	if ta, ok := ln.Addr().(*net.TCPAddr); ok {
		s.listenAddr.Store(ta.IP)
		if ta.IP.IsLoopback() {
			s.hostGuard.Store(true)
		}
	}
	gl := newGuardedListener(ln, perIP, s.log)
	gl.refused = func() { s.metrics.RateLimited(telemetry.RateConnections) }
	return s.srv.Serve(gl)
}

// Shutdown stops accepting connections, cancels requests waiting for work
// (a context pack waiting for a slot answers 503), waits for in-flight
// requests, then stops the service's background work (a job being indexed
// finishes; pending jobs resume at the next start; the last usage counts
// are written). The caller then closes the engine.
func (s *Server) Shutdown() error {
	s.stopBase()
	err := s.srv.Shutdown()
	if !s.ready.Load() {
		return err
	}
	s.svc.Stop()
	return err
}

// unreadMethod is the method logged for a request whose headers fasthttp
// could not read.
const unreadMethod = "-"

// fasthttpLogger sends fasthttp's own messages to the log. A connection
// whose request could not be read was answered 4xx (transportError) and
// has its access log line: fasthttp's message about it is Info, like the
// access line, so that LOG_LEVEL=warn keeps only 5xx and real trouble
// (accept errors, the connection limit), which stays Warn.
type fasthttpLogger struct{ log *slog.Logger }

func (l fasthttpLogger) Printf(format string, args ...any) {
	level := slog.LevelWarn
	if strings.HasPrefix(format, "error when serving connection") {
		level = slog.LevelInfo
	}
	l.log.Log(context.Background(), level, "httpd: "+fmt.Sprintf(format, args...))
}

// call is one request being served: its principal, path parameters and the
// usage it adds beyond the request count.
type call struct {
	who    service.Principal
	params map[string]string
	usage  service.UsageDelta
}

// served is what observing a request needs to know of how it was served.
type served struct {
	route       *route // nil: no route matched
	call        *call  // nil: refused before a handler ran
	tenant      string
	planLimited bool  // refused by the tenant's rate limit
	budget      int64 // bytes taken from the body budget (readBody)
	// unread: fasthttp could not read the request's headers, so its
	// method is unknown (fasthttp's default, GET, is not the client's).
	unread bool
}

// handle serves one request, then counts it in the metrics and writes its
// access log line.
func (s *Server) handle(ctx *fasthttp.RequestCtx) {
	start := time.Now()
	var sv served
	s.dispatch(ctx, &sv)
	closeUnread(ctx)
	s.bodies.give(sv.budget)
	s.observe(ctx, &sv, time.Since(start))
}

// observe counts a served request and logs it: one access log line (request
// id, tenant, method, route pattern, status, duration, bytes in and out; never
// a key or a body) and a handful of atomic adds.
func (s *Server) observe(ctx *fasthttp.RequestCtx, sv *served, d time.Duration) {
	status := ctx.Response.StatusCode()
	method := string(ctx.Method())
	if sv.unread {
		method = unreadMethod
	}
	var rm *telemetry.Route
	pattern := telemetry.UnmatchedRoute
	if sv.route != nil {
		rm, pattern = sv.route.metrics, sv.route.pattern
	}
	if rm == nil { // no route, or one added after NewStarting (tests)
		if rm = s.unmatched[method]; rm == nil {
			rm = s.unmatched["OTHER"]
		}
	}
	rm.Observe(status, d)
	if sv.call != nil {
		if u := &sv.call.usage; u.Artifacts > 0 {
			s.metrics.Ingested(u.Artifacts, u.RawBytes)
		}
		if u := &sv.call.usage; u.Packs > 0 && status == fasthttp.StatusOK {
			s.metrics.PackServed(d, u.Tokens)
		}
	}
	if status == fasthttp.StatusTooManyRequests && !sv.planLimited && sv.route != nil && sv.route.register {
		s.metrics.RateLimited(telemetry.RateRegistration)
	}
	s.accessLog(ctx, method, pattern, sv.tenant, status, d)
}

// accessLog writes a request's access log line: Info, or Warn for a 5xx.
// One slog call with typed attributes; disabled levels cost a check.
func (s *Server) accessLog(ctx *fasthttp.RequestCtx, method, route, tenant string, status int, d time.Duration) {
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelWarn
	}
	if !s.log.Enabled(context.Background(), level) {
		return
	}
	s.log.LogAttrs(context.Background(), level, "http request",
		slog.String("request_id", requestID(ctx)),
		slog.String("tenant", tenant),
		slog.String("method", method),
		slog.String("route", route),
		slog.Int("status", status),
		slog.Float64("duration_ms", float64(d.Microseconds())/1000),
		slog.Int("bytes_in", bytesIn(ctx)),
		slog.Int("bytes_out", len(ctx.Response.Body())))
}

// bytesIn is the size of the request body as read: 0 for one refused
// before it was read (reading it for the log would hold it in memory).
func bytesIn(ctx *fasthttp.RequestCtx) int {
	if bodyPending(ctx) {
		return 0
	}
	return len(ctx.Request.Body())
}

// dispatch routes, authenticates, rate-limits, reads the body and runs the
// handler, noting in sv what observe needs.
func (s *Server) dispatch(ctx *fasthttp.RequestCtx, sv *served) {
	ctx.Response.Header.Set("X-Request-ID", requestID(ctx))
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("httpd: panic serving request", "path", string(ctx.Path()), "panic", p, "request_id", requestID(ctx), "stack", string(debug.Stack()))
			ctx.Response.Reset()
			ctx.Response.Header.Set("X-Request-ID", requestID(ctx))
			writeJSON(ctx, fasthttp.StatusInternalServerError, map[string]string{"detail": "internal error", "request_id": requestID(ctx)})
		}
	}()
	// Route on the path as sent, never on fasthttp's decoded and normalised
	// ctx.Path(): see splitPath.
	rawPath := string(ctx.Request.URI().PathOriginal())
	if s.cfg.Console != nil && (rawPath == "/" || rawPath == "/ui" || strings.HasPrefix(rawPath, "/ui/")) { // "/": redirected to /ui
		if sv.route = s.console[string(ctx.Method())]; sv.route == nil {
			sv.route = s.console["OTHER"]
		}
		if s.declaredTooLarge(ctx) {
			return
		}
		if !s.guardBrowser(ctx) {
			s.cfg.Console(ctx)
		}
		return
	}
	segs, err := splitPath(rawPath)
	if err != nil {
		writeError(ctx, fasthttp.StatusBadRequest, err.Error())
		return
	}
	rt, params, allowed := s.router.match(string(ctx.Method()), segs)
	sv.route = rt // before any refusal, so that the log and metrics name the route
	if s.declaredTooLarge(ctx) {
		return
	}
	if s.guardBrowser(ctx) { // counted under the route it was sent to
		return
	}
	if rt == nil {
		if allowed != "" {
			ctx.Response.Header.Set("Allow", allowed)
			writeError(ctx, fasthttp.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s; allowed: %s", ctx.Method(), rawPath, allowed))
			return
		}
		writeError(ctx, fasthttp.StatusNotFound, fmt.Sprintf("no route for %s", rawPath))
		return
	}
	if err := checkJSONBody(ctx); err != nil {
		writeError(ctx, fasthttp.StatusUnsupportedMediaType, err.Error())
		return
	}
	if !s.ready.Load() {
		ctx.Response.Header.Set("Retry-After", "1")
		if rt.pattern == "/health" {
			writeJSON(ctx, fasthttp.StatusServiceUnavailable, map[string]any{"status": "starting", "version": s.cfg.Version,
				"uptime_s": int64(time.Since(s.start).Seconds()), "reason": "recovering the data directory"})
			return
		}
		writeError(ctx, fasthttp.StatusServiceUnavailable, "the service is starting (recovering the data directory); retry shortly")
		return
	}
	c := &call{params: params}
	sv.call = c
	cl := s.cfg.Cluster
	if rt.pattern == "/mcp" {
		// MCP authenticates inside; in a cluster it reads and reports data
		// versions as the API does.
		if cl != nil && !s.awaitDataVersion(ctx, cl) {
			return
		}
		if !s.mcpBody(ctx, sv) {
			return
		}
		rt.h(ctx, c)
		if cl != nil && ctx.UserValue(ctxForwarded) == nil && ctx.Response.StatusCode() == fasthttp.StatusOK {
			ctx.Response.Header.Set("X-Loci-Data-Version", cl.DataVersion())
		}
		return
	}
	if rt.public {
		rt.h(ctx, c)
		return
	}
	marked, forwarded := s.forwarded(ctx)
	if marked && !forwarded {
		writeError(ctx, fasthttp.StatusForbidden, forwardHeader+" is for the cluster's nodes: send the request without it")
		return
	}
	if s.cfg.Cluster != nil && len(ctx.Request.Header.Peek(shardsHeader)) > 0 && !forwarded {
		writeError(ctx, fasthttp.StatusForbidden, shardsHeader+" is for the cluster's nodes: send the request without it")
		return
	}
	// The wait comes before the key is checked: keys live in the control
	// stream, and a key registered (or revoked) on another node is known
	// here only once this node has applied the version the client saw.
	if cl != nil && !s.awaitDataVersion(ctx, cl) {
		return
	}
	p, err := s.svc.Authenticate(service.Credentials{APIKey: requestKey(&ctx.Request.Header), Registering: rt.register})
	if err != nil {
		s.serviceFail(ctx, err)
		return
	}
	c.who = p
	sv.tenant = p.TenantID
	q, err := s.svc.Admit(p, service.AdmitRequest{Endpoint: rt.name, V2: rt.v2, Forwarded: forwarded})
	if q.Limit > 0 {
		ctx.Response.Header.Set("X-RateLimit-Limit", strconv.Itoa(q.Limit))
		ctx.Response.Header.Set("X-RateLimit-Remaining", strconv.Itoa(q.Remaining))
	}
	if err != nil {
		var rl *service.RateLimitedError
		if errors.As(err, &rl) {
			sv.planLimited = true
			s.metrics.RateLimited(telemetry.RatePlan)
		}
		s.serviceFail(ctx, err)
		return
	}
	if err := s.readBody(ctx, sv); err != nil {
		s.bodyFail(ctx, err)
		return
	}
	if cl != nil {
		rt.h(ctx, c)
		if ctx.UserValue(ctxForwarded) != nil {
			// Served, and metered, by the node it was forwarded to; its
			// answer carries that node's data version.
			return
		}
		ctx.Response.Header.Set("X-Loci-Data-Version", cl.DataVersion())
		if forwarded && len(ctx.Request.Header.Peek(shardsHeader)) > 0 {
			return // a part of a listing, metered by the node that gathers it
		}
	} else {
		rt.h(ctx, c)
	}
	s.svc.Meter(p, rt.name, c.usage)
}

// awaitDataVersion waits until the node has applied the request's
// X-Loci-Min-Data-Version, if it has one; when it cannot, it answers 503
// with Retry-After (or 400 for a malformed version) and returns false.
func (s *Server) awaitDataVersion(ctx *fasthttp.RequestCtx, cl Cluster) bool {
	v := ctx.Request.Header.Peek("X-Loci-Min-Data-Version")
	if len(v) == 0 {
		return true
	}
	if err := cl.WaitDataVersion(s.base, string(v)); err != nil {
		if service.Classify(err).Kind == service.KindUnavailable {
			ctx.Response.Header.Set("Retry-After", "1")
			writeError(ctx, fasthttp.StatusServiceUnavailable, err.Error())
		} else {
			badRequest(ctx, err)
		}
		return false
	}
	return true
}

// transportError answers requests fasthttp could not read: an oversized
// body is 413, anything else 400, both as JSON.
func (s *Server) transportError(ctx *fasthttp.RequestCtx, err error) {
	ctx.Response.Header.Set("X-Request-ID", requestID(ctx))
	defer func() {
		// fasthttp stamps a request's time once it is read whole: a
		// request it could not read has none, and its duration is 0
		// rather than the time since year 1.
		var d time.Duration
		if t := ctx.Time(); !t.IsZero() {
			d = time.Since(t)
		}
		s.observe(ctx, &served{unread: len(ctx.Request.Header.RawHeaders()) == 0}, d)
	}()
	if errors.Is(err, fasthttp.ErrBodyTooLarge) {
		// fasthttp refuses by Content-Length before reading the body and
		// then closes the connection: drain what the client still sends,
		// so that it reads this answer instead of a reset (lingerOnClose).
		lingerOnClose(ctx.Conn())
		writeError(ctx, fasthttp.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds the limit of %d bytes (MAX_REQUEST_SIZE_BYTES)", s.cfg.MaxRequestBytes))
		return
	}
	writeError(ctx, fasthttp.StatusBadRequest, "malformed HTTP request: "+err.Error())
}

// health answers whether the service can serve writes. Status, version and
// uptime are public (load balancers probe without a key); the engine's
// counters and the reason for a degraded state describe the deployment, so
// with authentication on they need a valid key (admin or tenant).
func (s *Server) health(ctx *fasthttp.RequestCtx, _ *call) {
	body := map[string]any{
		"status":   "ok",
		"version":  s.cfg.Version,
		"uptime_s": int64(time.Since(s.start).Seconds()),
	}
	detailed := s.mayReadHealth(ctx)
	if detailed {
		body["storage"] = s.svc.StorageStats()
		if s.cfg.Cluster != nil {
			body["cluster"] = s.cfg.Cluster.Status(s.base)
		}
	}
	status := fasthttp.StatusOK
	if err := s.svc.Health(); err != nil {
		status = fasthttp.StatusServiceUnavailable
		body["status"] = "degraded"
		body["reason"] = "storage unavailable; details need an API key"
		if detailed {
			body["reason"] = err.Error()
		}
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			body["reason"] = "no space left on device: writes are refused until space is freed"
			if detailed {
				body["reason"] = body["reason"].(string) + " (" + err.Error() + ")"
			}
			ctx.Response.Header.Set("Retry-After", strconv.Itoa(diskFullRetrySeconds))
		}
	} else if s.cfg.Cluster != nil {
		// Behind the cluster's log and not moving: reads at the data
		// versions clients send would time out here.
		if err := s.cfg.Cluster.Stalled(); err != nil {
			status = fasthttp.StatusServiceUnavailable
			body["status"], body["reason"] = "lagging", "this node is behind the cluster's log; details need an API key"
			if detailed {
				body["reason"] = err.Error()
			}
			ctx.Response.Header.Set("Retry-After", "1")
		}
	}
	writeJSON(ctx, status, body)
}

// KeyValid reports whether key is the admin key or a live tenant key (true
// for any key when authentication is off); false while the server starts.
// The console's metrics endpoint uses it to answer an invalid key 401.
func (s *Server) KeyValid(key string) bool {
	return s.ready.Load() && s.svc.KeyValid(key)
}

// mayReadHealth reports whether the /health caller may see the engine's
// counters: authentication is off, or the request carries a valid key.
func (s *Server) mayReadHealth(ctx *fasthttp.RequestCtx) bool {
	return s.svc.KeyValid(requestKey(&ctx.Request.Header))
}

// requestID returns the client's X-Request-ID if it is sane, else a new UUID,
// remembered for the rest of the request.
func requestID(ctx *fasthttp.RequestCtx) string {
	if v, ok := ctx.UserValue("request_id").(string); ok {
		return v
	}
	id := string(ctx.Request.Header.Peek("X-Request-ID"))
	if !saneRequestID(id) {
		id = uuid.NewString()
	}
	ctx.SetUserValue("request_id", id)
	return id
}

func saneRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

func writeError(ctx *fasthttp.RequestCtx, status int, detail string) {
	writeJSON(ctx, status, map[string]string{"detail": detail})
}

func writeJSON(ctx *fasthttp.RequestCtx, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = fasthttp.StatusInternalServerError, []byte(`{"detail":"internal error: response encoding failed"}`)
	}
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
}
