package bench

import (
	"encoding/json"
	"fmt"
	"github.com/loci-memory/loci/embed/crossenc"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/embed"
	"github.com/loci-memory/loci/embed/glove"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/httpd"
	"github.com/loci-memory/loci/service"
	"github.com/loci-memory/loci/wal"
	"github.com/valyala/fasthttp"
)

// server is the real HTTP server over a real engine in a scratch directory,
// listening on a loopback port.
type server struct {
	dir  string
	keep bool // dir was given: not removed at close
	db   *engine.DB
	srv  *httpd.Server
	addr string
	// openSeconds is how long engine.Open took: a restart's figure.
	openSeconds float64
}

// Embedding chooses the semantic channel of a benchmark's server: Embedder
// nil means lexical only. A server embeds in the background, as loci serve
// does.
type Embedding struct {
	Embedder embed.Embedder
}

func (e Embedding) options(o *engine.Options) {
	if e.Embedder == nil {
		o.NoEmbedder = true
		return
	}
	o.Embedder, o.EmbedInBackground = e.Embedder, true
}

// Name is the embedder's model name, or "none".
func (e Embedding) Name() string {
	if e.Embedder == nil {
		return engine.EmbedderNone
	}
	return e.Embedder.Model()
}

// startServerWith starts a server whose semantic channel is emb's (nil:
// GloVe, inline), in a fresh temporary directory.
func startServerWith(prefix string, sync wal.SyncPolicy, emb *Embedding) (*server, error) {
	return startServerIn("", prefix, sync, emb)
}

// startServerIn is startServerWith in dir, which is kept at close (""
// means a temporary directory named by prefix, removed at close).
func startServerIn(dir, prefix string, sync wal.SyncPolicy, emb *Embedding) (*server, error) {
	return startServerLogging(dir, prefix, sync, emb, nil)
}

// startServerLogging is startServerIn whose HTTP server logs to log (nil:
// warnings and errors only, so no access log), as loci serve does with
// LOG_LEVEL=info.
func startServerLogging(dir, prefix string, sync wal.SyncPolicy, emb *Embedding, log *slog.Logger) (*server, error) {
	if log == nil {
		log = quietLogger()
	}
	keep := dir != ""
	if !keep {
		var err error
		if dir, err = os.MkdirTemp("", prefix); err != nil {
			return nil, err
		}
	}
	removeDir := func() {
		if !keep {
			os.RemoveAll(dir)
		}
	}
	ctl := control.New(time.Now)
	opts := engine.Options{Sync: sync, Control: ctl, Logger: quietLogger(), TokenRows: EvalLateInteraction.Rows,
		TokenRowsMaxWorkspaceSpans: EvalLateInteraction.MaxSpans}
	if emb != nil {
		emb.options(&opts)
	} else {
		opts.Embedder = glove.New()
	}
	opened := time.Now()
	db, err := engine.Open(dir, opts)
	if err != nil {
		removeDir()
		return nil, err
	}
	openSeconds := time.Since(opened).Seconds()
	ctl.Attach(db.AppendControl)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		db.Close()
		removeDir()
		return nil, err
	}
	rr, err := crossenc.Default()
	if err != nil {
		db.Close()
		removeDir()
		return nil, err
	}
	s := &server{dir: dir, keep: keep, db: db, addr: ln.Addr().String(), openSeconds: openSeconds,
		srv: httpd.New(service.New(db, ctl, service.Config{Logger: log, Reranker: rr,
			LateInteraction: EvalLateInteraction.Model, LateInteractionDepth: EvalLateInteraction.Depth,
			LateInteractionMaxSpans: EvalLateInteraction.MaxSpans}), httpd.Config{Version: "bench", MaxRequestBytes: 64 << 20, Logger: log})}
	go s.srv.Serve(ln)
	return s, nil
}

func (s *server) close() {
	s.srv.Shutdown()
	s.db.Close()
	if !s.keep {
		os.RemoveAll(s.dir)
	}
}

// quietLogger keeps the engine's and server's routine messages out of a
// benchmark's output; warnings and errors still reach stderr.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// Level is one concurrency level of an HTTP benchmark.
type Level struct {
	Concurrency  int     `json:"concurrency"`
	Requests     int     `json:"requests"`
	RequestsPerS float64 `json:"requests_per_s"`
	P50ms        float64 `json:"p50_ms"`
	P90ms        float64 `json:"p90_ms"`
	P99ms        float64 `json:"p99_ms"`
	MaxMs        float64 `json:"max_ms"`
	// Refused counts the 503s retried (loadFrom's retryBusy).
	Refused int `json:"refused_503,omitempty"`
}

// load sends the bodies to path with conc concurrent clients (each request
// one keep-alive connection's round trip) and measures every request;
// report (nil: none) hears how many are done.
func load(addr, path string, bodies [][]byte, conc int, want int, report func(done int)) (Level, error) {
	return loadFrom(addr, path, len(bodies), func(i int) []byte { return bodies[i] }, conc, want, false, report)
}

// loadFrom is load of n bodies made by body(i) as the clients go (body is
// called concurrently, outside the timed round trip): for loads whose
// bodies would not fit in memory at once. With retryBusy, a 503 (the
// server's back-pressure: nothing was stored) is sent again after its
// Retry-After, as a client should, and the request's latency includes the
// wait; Level.Refused counts them.
func loadFrom(addr, path string, n int, body func(i int) []byte, conc int, want int, retryBusy bool, report func(done int)) (Level, error) {
	if report == nil {
		report = func(int) {}
	}
	var done, refused atomic.Int64
	client := &fasthttp.HostClient{Addr: addr, MaxConns: conc, ReadTimeout: time.Minute, WriteTimeout: time.Minute}
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				b := body(i)
				req.Reset()
				req.SetRequestURI("http://" + addr + path)
				req.Header.SetMethod("POST")
				req.Header.SetContentType("application/json")
				req.SetBody(b)
				t := time.Now()
				err := client.Do(req, resp)
				for retryBusy && err == nil && resp.StatusCode() == fasthttp.StatusServiceUnavailable {
					refused.Add(1)
					wait, perr := strconv.Atoi(string(resp.Header.Peek("Retry-After")))
					if perr != nil || wait <= 0 {
						wait = 1
					}
					time.Sleep(time.Duration(wait) * time.Second)
					err = client.Do(req, resp)
				}
				lat[i] = time.Since(t)
				if err == nil && resp.StatusCode() != want {
					err = fmt.Errorf("%s: status %d: %s", path, resp.StatusCode(), resp.Body())
				}
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				report(int(done.Add(1)))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return Level{}, firstErr
	}
	slices.Sort(lat)
	ms := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Nanoseconds()) / 1e6 }
	return Level{Concurrency: conc, Requests: n, RequestsPerS: float64(n) / elapsed.Seconds(),
		P50ms: ms(0.5), P90ms: ms(0.9), P99ms: ms(0.99), MaxMs: ms(1), Refused: int(refused.Load())}, nil
}

// PackHTTPConfig sets up `loci bench pack`.
type PackHTTPConfig struct {
	Spans       int    // at least this many spans in one workspace
	Requests    int    // timed requests per concurrency level
	Concurrency []int  // levels; the first is the headline figure
	MaxTokens   int    // budget of each pack
	Seed        uint64 // data order and query sample
	Data        string // shared data directory for real texts and questions ("" = synthetic)
	Sync        wal.SyncPolicy
	// Repeats lets a request repeat an earlier one byte for byte. Questions
	// are drawn with replacement, so then about half the packs at one
	// client repeat an earlier request, whose receipt is already stored
	// and is not written again. By default every request is made distinct
	// by its actor_id (every artifact here is public, so the evidence is
	// the same): each pack stores a new receipt, as a new question does.
	Repeats bool
	// Embedding is the server's semantic channel; the workspace is fully
	// embedded before timing starts.
	Embedding Embedding
	// AccessLog, when set, is a file the server writes its log to at level
	// info in JSON, as loci serve with LOG_FORMAT=json: one access line
	// per request (the Prometheus metrics are always kept).
	AccessLog string
	// Dir, when set, is the data directory, kept after the run. A
	// workspace an earlier run built there (of at least Spans spans, with
	// the same embedder: the engine refuses another) is reused as it is,
	// which saves the build (minutes with the encoder); the requests stay
	// distinct from the earlier runs'.
	Dir string
	// Progress, if set, receives a line at most every few seconds while a
	// long phase runs (loci bench and loci eval print it to stderr).
	Progress func(string)
	// RerankDepth, when positive, is each request's rerank_depth: the
	// relevance model rereads that many candidates. NoRerank sends
	// rerank_depth 0 rather than leaving it out.
	RerankDepth int
	NoRerank    bool
	// Profile, when set, sends the requests to POST /v2/context-pack with
	// that serving profile; empty is v1.
	Profile string
	// Workspaces, with Dir, are workspaces of the default tenant that an
	// earlier run or loci import left there, each of at least Spans spans:
	// each timed request goes to one of them, drawn with Seed (a node that
	// holds more spans than one workspace). Empty: the one workspace
	// "bench", built when it is not there.
	Workspaces []string
	// Backlog, when positive, is how many artifacts (bench.Corpus) are
	// ingested into the workspace "backlog" after the warm-up and before
	// the timed requests, so that the background embedder works while they
	// are served: packs beside an embedding backlog, as after a bulk ingest.
	Backlog int
}

// PackHTTPResult is what `loci bench pack --json` prints: the headline
// fields are those of the first concurrency level.
type PackHTTPResult struct {
	Spans        int     `json:"spans"`
	Artifacts    int     `json:"artifacts"`
	Concurrency  int     `json:"concurrency"`
	P50ms        float64 `json:"p50_ms"`
	P99ms        float64 `json:"p99_ms"`
	RequestsPerS float64 `json:"requests_per_s"`
	MaxTokens    int     `json:"max_tokens"`
	Levels       []Level `json:"levels"`
	Fsync        string  `json:"fsync"`
	BuildSeconds float64 `json:"build_seconds"`
	Dataset      string  `json:"dataset"`
	// DistinctRequests is false when requests may repeat earlier ones
	// (PackHTTPConfig.Repeats), skipping the receipt's write.
	DistinctRequests bool `json:"distinct_requests"`
	// Receipts is how many receipts the workspace holds at the end: one per
	// distinct request, warm-up included.
	Receipts int `json:"receipts"`
	// Embedder is the semantic channel's model ("none": lexical only).
	Embedder string `json:"embedder"`
	// BuildTextsServed and BuildTextsEmbedded: the span texts the build
	// asked vectors for, and the distinct ones among them that the embedder
	// computed (the others were copies, see buildMemo); 0 when reused.
	BuildTextsServed   int `json:"build_texts_served,omitempty"`
	BuildTextsEmbedded int `json:"build_texts_embedded,omitempty"`
	// Reused is true when the workspace was an earlier run's (Dir).
	Reused bool `json:"reused_workspace"`
	// AccessLog is true when the server wrote an access log line per
	// request (PackHTTPConfig.AccessLog).
	AccessLog bool `json:"access_log"`
	// RerankDepth is each request's rerank_depth (0: not sent, or 0).
	RerankDepth int `json:"rerank_depth"`
	// LateDepth is the late depth of the packs (0: none), LateMaxSpans the
	// server's limit when the packs leave late_depth out and the server
	// decides (0: each request sent late_depth), and TokenRowSeconds how
	// long building the segments' token rows took before timing
	// (EvalLateInteraction).
	LateDepth       int     `json:"late_depth,omitempty"`
	LateMaxSpans    int     `json:"late_max_spans,omitempty"`
	TokenRowSeconds float64 `json:"token_row_seconds,omitempty"`
	// Profile is the v2 serving profile asked for ("": v1 requests).
	Profile string `json:"profile,omitempty"`
	// Workspaces is how many workspaces the requests were spread over
	// (Spans and Artifacts are their sums).
	Workspaces int `json:"workspaces"`
	// Backlog is PackHTTPConfig.Backlog; BacklogLeft, the artifacts still
	// waiting for the embedder when the last timed request was answered (0
	// means the backlog did not last the whole run).
	Backlog     int `json:"backlog,omitempty"`
	BacklogLeft int `json:"backlog_left,omitempty"`
}

// PackHTTP builds one workspace of cfg.Spans spans deterministically
// through the engine (flushed and compacted), serves it with the real HTTP
// server on loopback, and times POST /v1/context-pack at each concurrency
// level with keep-alive clients. Each pack stores its receipt (durably,
// per cfg.Sync), as in production.
func PackHTTP(cfg PackHTTPConfig) (*PackHTTPResult, error) {
	if cfg.Spans <= 0 {
		cfg.Spans = 100_000
	}
	if cfg.Requests <= 0 {
		cfg.Requests = 2000
	}
	if len(cfg.Concurrency) == 0 {
		cfg.Concurrency = []int{1, 8, 64}
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = 2048
	}
	start := time.Now()
	p := newProgress(cfg.Progress)
	var log *slog.Logger
	if cfg.AccessLog != "" {
		f, err := os.Create(cfg.AccessLog)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		log = slog.New(slog.NewJSONHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	// The build embeds each distinct text once (buildMemo); the timed
	// requests embed their queries with the embedder itself.
	emb := cfg.Embedding
	var memo *buildMemo
	if emb.Embedder != nil {
		emb.Embedder, memo = withBuildMemo(emb.Embedder)
	}
	s, err := startServerLogging(cfg.Dir, "loci-bench-pack-", cfg.Sync, &emb, log)
	if err != nil {
		return nil, err
	}
	defer s.close()
	next, real, err := benchCorpus(cfg.Data, cfg.Seed)
	if err != nil {
		return nil, err
	}
	res := &PackHTTPResult{MaxTokens: cfg.MaxTokens, Fsync: cfg.Sync.String(), DistinctRequests: !cfg.Repeats, AccessLog: cfg.AccessLog != "",
		RerankDepth: cfg.RerankDepth, Profile: cfg.Profile}
	wss := cfg.Workspaces
	if len(wss) == 0 {
		wss = []string{"bench"}
	}
	res.Workspaces = len(wss)
	found, err := s.db.Workspaces(httpd.DefaultTenant)
	if err != nil {
		return nil, err
	}
	for _, ws := range wss {
		i := slices.IndexFunc(found, func(w engine.WorkspaceSummary) bool { return w.Workspace == ws })
		switch {
		case i >= 0 && found[i].Spans >= cfg.Spans:
			res.Spans += found[i].Spans
			res.Artifacts += found[i].Artifacts
		case i >= 0:
			return nil, fmt.Errorf("%s holds workspace %q of %d spans, fewer than the %d asked for: use another directory", cfg.Dir, ws, found[i].Spans, cfg.Spans)
		case len(cfg.Workspaces) > 0:
			return nil, fmt.Errorf("%s holds no workspace %q (--workspaces names workspaces already there)", cfg.Dir, ws)
		}
	}
	if res.Spans > 0 {
		res.Reused = true
	} else {
		if res.Spans, res.Artifacts, err = fillWorkspace(s.db, httpd.DefaultTenant, next, cfg.Spans, p); err != nil {
			return nil, err
		}
		stop := p.during("embedding and flushing the workspace")
		err = s.db.Flush() // waits for the embedder
		stop()
		if err != nil {
			return nil, err
		}
		stop = p.during("compacting the workspace")
		err = s.db.Compact()
		stop()
		if err != nil {
			return nil, err
		}
	}
	if memo != nil {
		res.BuildTextsServed, res.BuildTextsEmbedded = memo.stop()
	}
	if EvalLateInteraction.Rows != nil {
		stop := p.during("building the segments' token rows")
		t0 := time.Now()
		_, err := s.db.BuildTokenRows()
		stop()
		if err != nil {
			return nil, err
		}
		res.TokenRowSeconds = time.Since(t0).Seconds()
	}
	res.LateDepth, res.LateMaxSpans = evalLateDepth(), EvalLateInteraction.MaxSpans
	res.BuildSeconds = time.Since(start).Seconds()
	// Requests differ from those of earlier runs in the same directory.
	receipts := func() (int, error) {
		n := 0
		for _, ws := range wss {
			page, err := s.db.ListReceipts(httpd.DefaultTenant, ws, "", 0, 1)
			if err != nil {
				return 0, err
			}
			n += page.Total
		}
		return n, nil
	}
	before, err := receipts()
	if err != nil {
		return nil, err
	}
	res.Embedder = cfg.Embedding.Name()
	pick := rand.New(rand.NewPCG(cfg.Seed, 11))

	const warmup = 200
	queries := sampleQueries(real, rand.New(rand.NewPCG(cfg.Seed, 7)), warmup+len(cfg.Concurrency)*cfg.Requests)
	switch {
	case res.Reused && real != nil && len(wss) > 1:
		res.Dataset = fmt.Sprintf("the %d workspaces %s found in %s (%d spans in all), each request to one drawn with seed %d; queries: the real questions of %s, sampled with seed %d",
			len(wss), strings.Join(wss, ","), cfg.Dir, res.Spans, cfg.Seed, cfg.Data, cfg.Seed)
	case res.Reused && real != nil:
		res.Dataset = fmt.Sprintf("the workspace found in %s (%d spans); queries: the real questions of %s, sampled with seed %d", cfg.Dir, res.Spans, cfg.Data, cfg.Seed)
	case real != nil:
		res.Dataset = fmt.Sprintf("real texts of %s (%d distinct texts in seeded orders) in one workspace, flushed and compacted; queries: their real questions, sampled with seed %d", cfg.Data, real.Texts(), cfg.Seed)
	default:
		res.Dataset = fmt.Sprintf("synthetic (bench.Corpus seed %d) in one workspace, flushed and compacted; queries of 3-8 vocabulary words", cfg.Seed)
	}
	sent := 0
	bodies := func(n int) [][]byte {
		out := make([][]byte, 0, n)
		for ; n > 0 && len(queries) > 0; n-- {
			ws := wss[0]
			if len(wss) > 1 {
				ws = wss[pick.IntN(len(wss))]
			}
			req := map[string]any{"workspace_id": ws, "query": queries[0], "max_tokens": cfg.MaxTokens}
			switch {
			case cfg.RerankDepth > 0:
				req["rerank_depth"] = cfg.RerankDepth
			case cfg.NoRerank:
				req["rerank_depth"] = 0
			}
			sendLateDepth(req)
			if cfg.Profile != "" {
				req["profile"] = cfg.Profile
			}
			if !cfg.Repeats {
				req["actor_id"] = fmt.Sprintf("bench-%d", before+sent)
			}
			b, _ := json.Marshal(req)
			out = append(out, b)
			queries = queries[1:]
			sent++
		}
		return out
	}
	// Warm up: page in the segments and the first receipts.
	path := "/v1/context-pack"
	if cfg.Profile != "" {
		path = "/v2/context-pack"
	}
	if _, err := load(s.addr, path, bodies(warmup), 1, 200, nil); err != nil {
		return nil, err
	}
	if cfg.Backlog > 0 {
		if err := ingestBacklog(s.db, cfg.Seed, cfg.Backlog); err != nil {
			return nil, err
		}
		res.Backlog = cfg.Backlog
	}
	for _, c := range cfg.Concurrency {
		lv, err := load(s.addr, path, bodies(cfg.Requests), c, 200,
			p.counter(fmt.Sprintf("timing requests at concurrency %d", c), cfg.Requests))
		if err != nil {
			return nil, err
		}
		res.Levels = append(res.Levels, lv)
	}
	if cfg.Backlog > 0 {
		res.BacklogLeft = s.db.EmbeddingBacklog()
	}
	if res.Receipts, err = receipts(); err != nil {
		return nil, err
	}
	first := res.Levels[0]
	res.Concurrency, res.P50ms, res.P99ms, res.RequestsPerS = first.Concurrency, first.P50ms, first.P99ms, first.RequestsPerS
	return res, nil
}

// ingestBacklog ingests n artifacts of bench.Corpus(seed) into the
// workspace "backlog" of the default tenant, in batches of 100, leaving
// them to the background embedder.
func ingestBacklog(db *engine.DB, seed uint64, n int) error {
	corpus := NewCorpus(seed + 1)
	for done := 0; done < n; {
		batch := make([]engine.IngestInput, 0, 100)
		for ; len(batch) < cap(batch) && done < n; done++ {
			batch = append(batch, corpus.Next("backlog"))
		}
		if _, err := db.IngestBatch(httpd.DefaultTenant, batch); err != nil {
			return fmt.Errorf("backlog: %w", err)
		}
	}
	return nil
}

// IngestHTTPConfig sets up `loci bench ingest --http`.
type IngestHTTPConfig struct {
	Artifacts int // total artifacts
	Batch     int // artifacts per POST /v2/ingest
	Writers   int // concurrent clients
	Seed      uint64
	Sync      wal.SyncPolicy
	// Embedding is the server's semantic channel (embedded in the
	// background: acknowledgements do not wait for it).
	Embedding Embedding
	// Progress, if set, receives a line at most every few seconds while a
	// long phase runs (loci bench and loci eval print it to stderr).
	Progress func(string)
}

// IngestHTTPResult is what `loci bench ingest --http --json` prints.
type IngestHTTPResult struct {
	Artifacts     int     `json:"artifacts"`
	Batch         int     `json:"batch"`
	Fsync         string  `json:"fsync"`
	Seconds       float64 `json:"seconds"`
	ArtifactsPerS float64 `json:"artifacts_per_s"`
	Level
	Dataset string `json:"dataset"`
	// TokenRows is the late-interaction model whose token rows the
	// server's engine computed in the background ("": none), and
	// TokenRowsPending what it had left at the last acknowledgement.
	TokenRows        string `json:"token_rows,omitempty"`
	TokenRowsPending int    `json:"token_rows_pending,omitempty"`
}

// IngestHTTP sends generated artifacts to POST /v2/ingest (synchronous
// indexing: each response means stored, indexed and durable) in batches
// from concurrent keep-alive clients, and reports artifacts per second and
// request latency.
func IngestHTTP(cfg IngestHTTPConfig) (*IngestHTTPResult, error) {
	if cfg.Artifacts <= 0 || cfg.Batch <= 0 || cfg.Writers <= 0 {
		return nil, fmt.Errorf("artifacts, batch and writers must be positive")
	}
	s, err := startServerWith("loci-bench-ingest-http-", cfg.Sync, &cfg.Embedding)
	if err != nil {
		return nil, err
	}
	defer s.close()
	corpus := NewCorpus(cfg.Seed)
	var bodies [][]byte
	var payload int64
	for done := 0; done < cfg.Artifacts; done += cfg.Batch {
		n := min(cfg.Batch, cfg.Artifacts-done)
		ws := fmt.Sprintf("ws-%d", len(bodies)%8)
		items := make([]map[string]any, n)
		for i := range items {
			in := corpus.Next(ws)
			payload += int64(len(in.Payload))
			items[i] = map[string]any{"artifact_type": in.Type, "raw_payload": json.RawMessage(in.Payload),
				"timestamp": in.Timestamp.UTC().Format(time.RFC3339Nano), "session_id": in.SessionID}
		}
		b, err := json.Marshal(map[string]any{"workspace_id": ws, "actor_id": "bench", "artifacts": items})
		if err != nil {
			return nil, err
		}
		bodies = append(bodies, b)
	}
	start := time.Now()
	lv, err := load(s.addr, "/v2/ingest", bodies, cfg.Writers, 201,
		newProgress(cfg.Progress).counter(fmt.Sprintf("ingesting %d artifacts: requests of %d", cfg.Artifacts, cfg.Batch), len(bodies)))
	if err != nil {
		return nil, err
	}
	elapsed := time.Since(start).Seconds()
	var rows string
	if tr := EvalLateInteraction.Rows; tr != nil {
		rows = tr.Model()
	}
	return &IngestHTTPResult{Artifacts: cfg.Artifacts, Batch: cfg.Batch, Fsync: cfg.Sync.String(),
		Seconds: elapsed, ArtifactsPerS: float64(cfg.Artifacts) / elapsed, Level: lv,
		TokenRows: rows, TokenRowsPending: s.db.TokenRowsPending(),
		Dataset: fmt.Sprintf("synthetic (bench.Corpus seed %d): 70%% chat turns, 20%% JSON tool results, 10%% documents; mean payload %d bytes; 8 workspaces", cfg.Seed, payload/int64(cfg.Artifacts))}, nil
}
