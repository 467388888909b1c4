package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/loci-memory/loci/cluster"
	"github.com/loci-memory/loci/console"
	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/httpd"
	"github.com/loci-memory/loci/service"
	"github.com/loci-memory/loci/telemetry"
	"github.com/loci-memory/loci/text"
	"github.com/loci-memory/loci/wal"
)

// setting is a flag whose default comes from an environment variable, then a
// built-in default: flags beat the environment, which beats defaults.
func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func runServe(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", envOr("LOCI_ADDR", "127.0.0.1:3000"), "listen address (env LOCI_ADDR)")
	data := fs.String("data", envOr("LOCI_DATA_DIR", "./loci-data"), "data directory (env LOCI_DATA_DIR)")
	fsync := fs.String("fsync", envOr("LOCI_FSYNC", "always"), "WAL fsync policy: always | batch | off (batch and off lose acknowledged writes on power failure; benchmarks only; in cluster mode the default is batch, since acknowledged writes are stored by JetStream) (env LOCI_FSYNC)")
	maxBody := fs.String("max-request-size", envOr("MAX_REQUEST_SIZE_BYTES", strconv.Itoa(10<<20)), "maximum request body in bytes (env MAX_REQUEST_SIZE_BYTES)")
	flushMB := fs.Int("flush-threshold-mb", 64, "flush the in-memory head to a segment at this size")
	embedderName := fs.String("embedder", defaultEmbedderName(), "the semantic channel's embedder: "+embedderNames+"; a data directory keeps the one it was built with (loci reindex changes it) (env LOCI_EMBEDDER)")
	tokenizer := fs.String("tokenizer", envOr("TOKENIZER", "o200k_base"), "token counting encoding: o200k_base | cl100k_base (env TOKENIZER)")
	// The admin key's default is not taken from the environment here, so that
	// --help cannot print it.
	apiKey := fs.String("api-key", "", "operator admin key; empty turns authentication off (env API_KEY)")
	openReg := fs.String("open-registration", envOr("OPEN_REGISTRATION", "false"), "let anyone register a free tenant: true | false (env OPEN_REGISTRATION)")
	async := fs.String("async-indexing", envOr("ASYNC_INDEXING", "false"), "index v1 ingests in the background: true | false (env ASYNC_INDEXING)")
	syncReceipts := fs.String("sync-receipts", envOr("LOCI_SYNC_RECEIPTS", "false"), "answer a context pack only once its receipt is fsynced: true | false; by default the receipt is written before the answer and fsynced right after it, so that a power failure in that moment can lose it (the same request on the same data stores it again) (env LOCI_SYNC_RECEIPTS)")
	workers := fs.Int("index-workers", 2, "background indexing workers")
	maxConns := fs.String("max-conns", envOr("LOCI_MAX_CONNS", strconv.Itoa(httpd.DefaultMaxConns)), "connections served at once; more get 503 (env LOCI_MAX_CONNS)")
	maxConnsPerIP := fs.String("max-conns-per-ip", envOr("LOCI_MAX_CONNS_PER_IP", strconv.Itoa(httpd.DefaultMaxConnsPerIP)), "connections open from one client address; more get 429; 0: no cap (env LOCI_MAX_CONNS_PER_IP)")
	readTimeout := fs.String("read-timeout", envOr("LOCI_READ_TIMEOUT", "30s"), "time to read one request, headers and body (env LOCI_READ_TIMEOUT)")
	writeTimeout := fs.String("write-timeout", envOr("LOCI_WRITE_TIMEOUT", "30s"), "time to write one response (env LOCI_WRITE_TIMEOUT)")
	idleTimeout := fs.String("idle-timeout", envOr("LOCI_IDLE_TIMEOUT", "60s"), "time a kept-alive connection may wait for its next request (env LOCI_IDLE_TIMEOUT)")
	registerLimit := fs.String("register-limit", envOr("LOCI_REGISTER_LIMIT", "5"), "open registrations per client address per --register-window; 0: no limit (env LOCI_REGISTER_LIMIT)")
	registerWindow := fs.String("register-window", envOr("LOCI_REGISTER_WINDOW", "1h"), "window of --register-limit (env LOCI_REGISTER_WINDOW)")
	receiptsPerWS := fs.String("receipts-per-workspace", envOr("LOCI_RECEIPTS_PER_WORKSPACE", strconv.Itoa(engine.DefaultReceiptsPerWorkspace)), "decision receipts kept per workspace, newest first; older ones are dropped at compaction (env LOCI_RECEIPTS_PER_WORKSPACE)")
	jobRetention := fs.String("job-retention", envOr("LOCI_JOB_RETENTION", control.DefaultJobRetentionAge.String()), "finished asynchronous jobs are removed after this long (env LOCI_JOB_RETENTION)")
	maxFinishedJobs := fs.String("max-finished-jobs", envOr("LOCI_MAX_FINISHED_JOBS", strconv.Itoa(control.DefaultMaxFinishedJobs)), "finished jobs kept per tenant, newest first (env LOCI_MAX_FINISHED_JOBS)")
	maxUnfinishedJobs := fs.String("max-unfinished-jobs", envOr("LOCI_MAX_UNFINISHED_JOBS", strconv.Itoa(control.DefaultMaxUnfinishedJobs)), "unfinished jobs per tenant; more get 429 (env LOCI_MAX_UNFINISHED_JOBS)")
	adminAddr := fs.String("admin-addr", envOr("LOCI_ADMIN_ADDR", ""), "admin listener HOST:PORT serving /metrics and /debug/pprof/; empty: none. Keep it on loopback or a private network: it has no authentication (env LOCI_ADMIN_ADDR)")
	bodyBudget := fs.String("max-body-bytes-in-flight", envOr("LOCI_MAX_BODY_BYTES_IN_FLIGHT", strconv.Itoa(httpd.DefaultMaxBodyBytesInFlight)), "request body bytes the server reads or holds at once, across connections (at least --max-request-size); a request over it gets 503 with Retry-After. Bodies are read only after the API key is checked (env LOCI_MAX_BODY_BYTES_IN_FLIGHT)")
	allowedOrigins := fs.String("allowed-origins", envOr("LOCI_ALLOWED_ORIGINS", ""), "comma-separated origins (scheme://host[:port]) whose web pages may call the API cross-origin (CORS), or *; requests with any other Origin but the server's own get 403 (env LOCI_ALLOWED_ORIGINS)")
	allowedHosts := fs.String("allowed-hosts", envOr("LOCI_ALLOWED_HOSTS", ""), "comma-separated host names the server answers besides loopback names and addresses when it listens on loopback (a reverse proxy's name, say), or *; other Host headers get 403, a defence against DNS rebinding; when set, applies on any listener (env LOCI_ALLOWED_HOSTS)")
	logFormat := fs.String("log-format", envOr("LOG_FORMAT", "text"), "log format: text | json (env LOG_FORMAT)")
	logLevel := fs.String("log-level", envOr("LOG_LEVEL", "info"), "lowest level logged: debug | info | warn | error; info includes one access log line per request (env LOG_LEVEL)")
	clusterNATS := fs.String("cluster-nats", envOr("LOCI_CLUSTER_NATS", ""), "cluster mode: the NATS JetStream servers, comma-separated URLs such as nats://10.0.0.1:4222; empty: a single node (env LOCI_CLUSTER_NATS)")
	clusterNode := fs.String("cluster-node", envOr("LOCI_CLUSTER_NODE", ""), "cluster mode: this node's id, unique in the cluster (default: the host name) (env LOCI_CLUSTER_NODE)")
	clusterShards := fs.String("cluster-shards", envOr("LOCI_CLUSTER_SHARDS", strconv.Itoa(cluster.DefaultShards)), "cluster mode: the number of shards, fixed when the cluster is created (env LOCI_CLUSTER_SHARDS)")
	clusterReplicas := fs.String("cluster-stream-replicas", envOr("LOCI_CLUSTER_STREAM_REPLICAS", strconv.Itoa(cluster.DefaultStreamReplicas)), "cluster mode: copies JetStream keeps of every write (at most the number of NATS servers) (env LOCI_CLUSTER_STREAM_REPLICAS)")
	clusterNodeReplicas := fs.String("cluster-replicas", envOr("LOCI_CLUSTER_REPLICAS", "0"), "cluster mode: how many nodes serve each shard (requests for the others are forwarded); 0: every node serves every shard; fixed when the cluster is created (env LOCI_CLUSTER_REPLICAS)")
	clusterAdvertise := fs.String("cluster-advertise", envOr("LOCI_CLUSTER_ADVERTISE", ""), "cluster mode: the API address other nodes and clients reach this node at (default: --addr) (env LOCI_CLUSTER_ADVERTISE)")
	rerankerName := fs.String("reranker", envOr("LOCI_RERANKER", rerankerCrossEnc), "the relevance model that rereads the best candidates of packs that set rerank_depth: "+rerankerNames+" (env LOCI_RERANKER)")
	late := lateFlags(fs)
	maxUnfinishedJobBytes := fs.String("max-unfinished-job-bytes", envOr("LOCI_MAX_UNFINISHED_JOB_BYTES", strconv.FormatInt(control.DefaultMaxUnfinishedJobBytes, 10)), "bytes of unfinished job inputs per tenant; more get 429 (env LOCI_MAX_UNFINISHED_JOB_BYTES)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: loci serve [flags]\n\nFlags (each also read from the environment variable named in its text):\n")
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), `
Environment only:
  EMBEDDINGS_URL, EMBEDDINGS_MODEL, EMBEDDINGS_API_KEY, EMBEDDINGS_DIM, EMBEDDINGS_TIMEOUT
        the OpenAI-compatible embeddings endpoint of --embedder openai (the default
        embedder when EMBEDDINGS_URL is set and LOCI_EMBEDDER is not); EMBEDDINGS_TIMEOUT
        bounds one request (default 10s)
`)
	}
	if done, err := parseFlags(fs, args); done {
		return err
	}
	apiKeySet := false
	fs.Visit(func(f *flag.Flag) { apiKeySet = apiKeySet || f.Name == "api-key" })
	if !apiKeySet {
		*apiKey = os.Getenv("API_KEY")
	}
	conns, err := nonNegative("LOCI_MAX_CONNS", *maxConns)
	if err != nil {
		return err
	}
	connsPerIP, err := nonNegative("LOCI_MAX_CONNS_PER_IP", *maxConnsPerIP)
	if err != nil {
		return err
	}
	if connsPerIP == 0 {
		connsPerIP = -1 // httpd: negative is no cap, zero the default
	}
	regLimit, err := nonNegative("LOCI_REGISTER_LIMIT", *registerLimit)
	if err != nil {
		return err
	}
	if regLimit == 0 {
		regLimit = -1
	}
	var positive [4]int
	for i, d := range []struct{ name, v string }{{"LOCI_RECEIPTS_PER_WORKSPACE", *receiptsPerWS}, {"LOCI_MAX_FINISHED_JOBS", *maxFinishedJobs},
		{"LOCI_MAX_UNFINISHED_JOBS", *maxUnfinishedJobs}, {"LOCI_MAX_UNFINISHED_JOB_BYTES", *maxUnfinishedJobBytes}} {
		if positive[i], err = strconv.Atoi(d.v); err != nil || positive[i] <= 0 {
			return fmt.Errorf("%s: %q is not a positive integer", d.name, d.v)
		}
	}
	jobAge, err := time.ParseDuration(*jobRetention)
	if err != nil || jobAge <= 0 {
		return fmt.Errorf("LOCI_JOB_RETENTION: %q is not a positive duration such as 24h", *jobRetention)
	}
	var timeouts [4]time.Duration
	for i, d := range []struct{ name, v string }{{"LOCI_READ_TIMEOUT", *readTimeout}, {"LOCI_WRITE_TIMEOUT", *writeTimeout},
		{"LOCI_IDLE_TIMEOUT", *idleTimeout}, {"LOCI_REGISTER_WINDOW", *registerWindow}} {
		if timeouts[i], err = time.ParseDuration(d.v); err != nil || timeouts[i] <= 0 {
			return fmt.Errorf("%s: %q is not a positive duration such as 30s or 1h", d.name, d.v)
		}
	}
	fsyncSet := false
	fs.Visit(func(f *flag.Flag) { fsyncSet = fsyncSet || f.Name == "fsync" })
	if _, inEnv := os.LookupEnv("LOCI_FSYNC"); !fsyncSet && !inEnv && *clusterNATS != "" {
		// In a cluster, acknowledged means stored by a JetStream quorum; a
		// node's WAL is a cache of the streams that a restart re-fetches,
		// so it need not be fsynced per write.
		*fsync = "batch"
	}
	policy, err := wal.ParseSyncPolicy(*fsync)
	if err != nil {
		return err
	}
	limit, err := strconv.Atoi(*maxBody)
	if err != nil || limit <= 0 {
		return fmt.Errorf("MAX_REQUEST_SIZE_BYTES: %q is not a positive integer", *maxBody)
	}
	counter, err := text.BPEByName(*tokenizer)
	if err != nil {
		return fmt.Errorf("TOKENIZER: %w", err)
	}
	openRegistration, err := strconv.ParseBool(*openReg)
	if err != nil {
		return fmt.Errorf("OPEN_REGISTRATION: %q is not true or false", *openReg)
	}
	inFlight, err := strconv.ParseInt(*bodyBudget, 10, 64)
	if err != nil || inFlight <= 0 {
		return fmt.Errorf("LOCI_MAX_BODY_BYTES_IN_FLIGHT: %q is not a positive integer", *bodyBudget)
	}
	origins, err := httpd.ParseAllowedOrigins(*allowedOrigins)
	if err != nil {
		return fmt.Errorf("LOCI_ALLOWED_ORIGINS: %w", err)
	}
	hosts, err := httpd.ParseAllowedHosts(*allowedHosts)
	if err != nil {
		return fmt.Errorf("LOCI_ALLOWED_HOSTS: %w", err)
	}
	asyncIndexing, err := strconv.ParseBool(*async)
	if err != nil {
		return fmt.Errorf("ASYNC_INDEXING: %q is not true or false", *async)
	}
	syncReceiptsOn, err := strconv.ParseBool(*syncReceipts)
	if err != nil {
		return fmt.Errorf("LOCI_SYNC_RECEIPTS: %q is not true or false", *syncReceipts)
	}
	if *workers < 1 {
		return fmt.Errorf("--index-workers: must be at least 1, got %d", *workers)
	}
	var clusterCfg *cluster.Config
	if *clusterNATS != "" {
		if clusterCfg, err = clusterConfig(*clusterNATS, *clusterNode, *clusterShards, *clusterReplicas, *clusterNodeReplicas, *clusterAdvertise, *addr); err != nil {
			return err
		}
		if asyncIndexing {
			return errors.New("ASYNC_INDEXING: asynchronous indexing is not available in cluster mode (--cluster-nats)")
		}
	}
	engineOpts := engine.Options{Sync: policy, FlushThreshold: int64(*flushMB) << 20, TokenCounter: counter,
		ReceiptsPerWorkspace: positive[0], SyncReceipts: syncReceiptsOn}
	if err := embedderOptions(*embedderName, &engineOpts); err != nil {
		return err
	}
	rr, err := reranker(*rerankerName)
	if err != nil {
		return err
	}
	log, err := newLogger(os.Stderr, *logFormat, *logLevel)
	if err != nil {
		return err
	}
	if apiKeySet && *apiKey != "" {
		// The command line is visible to every user of the machine (ps,
		// /proc/PID/cmdline); the key itself is never logged.
		log.Warn("loci: --api-key on the command line is visible to other users of this machine (ps); set API_KEY in the environment instead")
	}
	raiseFileLimit(log)
	metrics := telemetry.New(version)
	admin, err := startAdmin(*adminAddr, metrics, log)
	if err != nil {
		return err
	}
	defer admin.stop()
	// Signals are caught before anything answers: a SIGTERM that arrives
	// once /health has said ok (or while the engine recovers) must stop
	// the server cleanly, not kill it with the default action.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	// Listen first: while the engine recovers, /health answers 503 "starting".
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	// The console's metrics endpoint tells an invalid key (401) from a
	// tenant's key (403) by the server's keys, once the server exists.
	var server atomic.Pointer[httpd.Server]
	ui, err := console.New(console.Config{AdminKey: *apiKey, Metrics: metrics,
		KeyValid: func(k string) bool { s := server.Load(); return s != nil && s.KeyValid(k) }})
	if err != nil {
		return err
	}
	hcfg := httpd.Config{Version: version, MaxRequestBytes: limit, Logger: log,
		MaxConns: conns, MaxConnsPerIP: connsPerIP, ReadTimeout: timeouts[0], WriteTimeout: timeouts[1], IdleTimeout: timeouts[2],
		Metrics: metrics, Console: ui.Serve,
		AllowedOrigins: origins, AllowedHosts: hosts, MaxBodyBytesInFlight: inFlight}
	scfg := service.Config{AdminKey: *apiKey, OpenRegistration: openRegistration, AsyncIndexing: asyncIndexing,
		IndexWorkers: *workers, RegisterLimit: regLimit, RegisterWindow: timeouts[3], Logger: log, Reranker: rr}
	if err := late.apply(&engineOpts, &scfg); err != nil {
		return err
	}
	ctl := control.New(time.Now)
	ctl.SetJobRetention(control.JobRetention{Age: jobAge, MaxFinished: positive[1], MaxUnfinished: positive[2],
		MaxUnfinishedBytes: int64(positive[3])})
	engineOpts.Logger = log
	if clusterCfg != nil {
		engineOpts.Control = ctl
		clusterCfg.Engine, clusterCfg.Control, clusterCfg.Dir, clusterCfg.Logger = engineOpts, ctl, *data, log
		return serveCluster(*clusterCfg, ln, hcfg, scfg, &server, sig, log)
	}
	srv := httpd.NewStarting(hcfg)
	server.Store(srv)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	a, err := openApp(*data, engineOpts, ctl, scfg)
	if err != nil {
		srv.Shutdown()
		return err
	}
	srv.Start(a.svc)
	log.Info("loci: serving", "addr", ln.Addr().String(), "data", *data, "fsync", policy.String(), "version", version,
		"auth", *apiKey != "", "async_indexing", asyncIndexing, "embedder", *embedderName)

	if err := waitForStop(sig, served, log); err != nil {
		srv.Shutdown()
		a.db.Close()
		return err
	}
	// Stop accepting, finish in-flight requests (and the service's
	// background work), then close the engine (which syncs the WAL):
	// nothing acknowledged is lost.
	shutdownErr := srv.Shutdown()
	stopErr := a.stop(log)
	log.Info("loci: stopped")
	return errors.Join(shutdownErr, stopErr)
}

// waitForStop waits for SIGINT or SIGTERM (nil: stop cleanly) or for the
// listener to fail (its error).
func waitForStop(sig <-chan os.Signal, served <-chan error, log *slog.Logger) error {
	select {
	case s := <-sig:
		log.Info("loci: shutting down", "signal", s.String())
		return nil
	case err := <-served:
		return err
	}
}

// diskFull reports whether err comes from a full disk or an exhausted quota.
func diskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// nonNegative parses setting name's value v as an integer >= 0.
func nonNegative(name, v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s: %q is not a non-negative integer", name, v)
	}
	return n, nil
}

// raiseFileLimit raises the soft limit on open files to the hard limit:
// every connection holds a descriptor, and the usual soft limit of 1024 is
// exhausted by a modest number of idle clients. The Go runtime already does
// this at start on Linux; doing it here too keeps it explicit and logged
// (soft_before is what this call found).
func raiseFileLimit(log *slog.Logger) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		log.Warn("loci: cannot read the open file limit", "err", err)
		return
	}
	soft := lim.Cur
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			log.Warn("loci: cannot raise the open file limit", "soft", soft, "hard", lim.Max, "err", err)
			return
		}
	}
	log.Info("loci: open file limit", "soft_before", soft, "soft", lim.Cur, "hard", lim.Max)
}

// newLogger returns the server's logger: text or JSON lines on w, from
// level up (LOG_FORMAT, LOG_LEVEL).
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("LOG_LEVEL: %q is not debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("LOG_FORMAT: %q is not text or json", format)
}

// adminServer is the admin listener: /metrics and /debug/pprof/ on a
// net/http server of its own, apart from the public API.
type adminServer struct{ srv *http.Server }

// startAdmin serves the admin handler on addr; with addr empty it serves
// nothing. It listens before returning, so a bad address fails the start.
func startAdmin(addr string, m *telemetry.Metrics, log *slog.Logger) (*adminServer, error) {
	if addr == "" {
		return &adminServer{}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--admin-addr: %w", err)
	}
	a := &adminServer{srv: &http.Server{Handler: telemetry.AdminHandler(m), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}}
	go func() {
		if err := a.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("loci: admin listener stopped", "err", err)
		}
	}()
	log.Info("loci: admin listener (metrics, pprof)", "addr", ln.Addr().String())
	if host, _, err := net.SplitHostPort(ln.Addr().String()); err == nil {
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			log.Warn("loci: the admin listener is not on loopback: /metrics and /debug/pprof/ have no authentication; keep it on a private network", "addr", ln.Addr().String())
		}
	}
	return a, nil
}

// stop closes the admin listener and its connections (a CPU profile being
// taken is cut short).
func (a *adminServer) stop() {
	if a.srv != nil {
		a.srv.Close()
	}
}
