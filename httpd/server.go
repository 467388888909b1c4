// Package httpd is Loci's HTTP front end on fasthttp. Until the API routes
// land it serves GET /health; every response carries X-Request-ID and every
// error is {"detail": ...}.
package httpd

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine"
	"github.com/valyala/fasthttp"
)

// Config configures a Server.
type Config struct {
	Version         string
	MaxRequestBytes int // default 10 MiB
	Logger          *slog.Logger
}

// Server serves one engine.
type Server struct {
	db     *engine.DB
	cfg    Config
	log    *slog.Logger
	start  time.Time
	srv    *fasthttp.Server
	routes map[string]route // path -> handler
}

// New returns a server for db.
func New(db *engine.DB, cfg Config) *Server {
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = 10 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{db: db, cfg: cfg, log: cfg.Logger, start: time.Now()}
	s.routes = map[string]route{
		"/health": {fasthttp.MethodGet, s.health},
	}
	s.srv = &fasthttp.Server{
		Handler:               s.handle,
		Name:                  "loci",
		MaxRequestBodySize:    cfg.MaxRequestBytes,
		ReadTimeout:           30 * time.Second,
		WriteTimeout:          30 * time.Second,
		IdleTimeout:           120 * time.Second,
		NoDefaultServerHeader: true,
		NoDefaultContentType:  true,
	}
	return s
}

// Serve accepts connections on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error { return s.srv.Serve(ln) }

// Shutdown stops accepting connections and waits for in-flight requests.
func (s *Server) Shutdown() error { return s.srv.Shutdown() }

type route struct {
	method string
	h      func(*fasthttp.RequestCtx)
}

func (s *Server) handle(ctx *fasthttp.RequestCtx) {
	ctx.Response.Header.Set("X-Request-ID", requestID(ctx))
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("httpd: panic serving request", "path", string(ctx.Path()), "panic", p, "stack", string(debug.Stack()))
			ctx.Response.Reset()
			ctx.Response.Header.Set("X-Request-ID", requestID(ctx))
			writeJSON(ctx, fasthttp.StatusInternalServerError, map[string]string{"detail": "internal error", "request_id": requestID(ctx)})
		}
	}()
	r, ok := s.routes[string(ctx.Path())]
	if !ok {
		writeError(ctx, fasthttp.StatusNotFound, fmt.Sprintf("no route for %s", ctx.Path()))
		return
	}
	if string(ctx.Method()) != r.method {
		ctx.Response.Header.Set("Allow", r.method)
		writeError(ctx, fasthttp.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s; allowed: %s", ctx.Method(), ctx.Path(), r.method))
		return
	}
	r.h(ctx)
}

func (s *Server) health(ctx *fasthttp.RequestCtx) {
	body := map[string]any{
		"status":   "ok",
		"version":  s.cfg.Version,
		"uptime_s": int64(time.Since(s.start).Seconds()),
		"storage":  s.db.Stats(),
	}
	status := fasthttp.StatusOK
	if err := s.db.Health(); err != nil {
		status = fasthttp.StatusServiceUnavailable
		body["status"] = "degraded"
		body["reason"] = err.Error()
	}
	writeJSON(ctx, status, body)
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
