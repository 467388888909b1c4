package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/httpd"
	"github.com/loci-memory/loci/text"
	"github.com/loci-memory/loci/vecindex"
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
	fsync := fs.String("fsync", envOr("LOCI_FSYNC", "always"), "WAL fsync policy: always | batch | off (batch and off lose acknowledged writes on power failure; benchmarks only) (env LOCI_FSYNC)")
	maxBody := fs.String("max-request-size", envOr("MAX_REQUEST_SIZE_BYTES", strconv.Itoa(10<<20)), "maximum request body in bytes (env MAX_REQUEST_SIZE_BYTES)")
	flushMB := fs.Int("flush-threshold-mb", 64, "flush the in-memory head to a segment at this size")
	tokenizer := fs.String("tokenizer", envOr("TOKENIZER", "o200k_base"), "token counting encoding: o200k_base | cl100k_base (env TOKENIZER)")
	// The admin key's default is not taken from the environment here, so that
	// --help cannot print it.
	apiKey := fs.String("api-key", "", "operator admin key; empty turns authentication off (env API_KEY)")
	openReg := fs.String("open-registration", envOr("OPEN_REGISTRATION", "false"), "let anyone register a free tenant: true | false (env OPEN_REGISTRATION)")
	async := fs.String("async-indexing", envOr("ASYNC_INDEXING", "false"), "index v1 ingests in the background: true | false (env ASYNC_INDEXING)")
	workers := fs.Int("index-workers", 2, "background indexing workers")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: loci serve [flags]\n\nFlags (each also read from the environment variable named in its text):\n")
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), `
Environment only:
  EMBEDDINGS_URL, EMBEDDINGS_MODEL, EMBEDDINGS_API_KEY, EMBEDDINGS_DIM
        an OpenAI-compatible embeddings endpoint instead of the built-in GloVe embedder
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
	asyncIndexing, err := strconv.ParseBool(*async)
	if err != nil {
		return fmt.Errorf("ASYNC_INDEXING: %q is not true or false", *async)
	}
	if *workers < 1 {
		return fmt.Errorf("--index-workers: must be at least 1, got %d", *workers)
	}
	embedder, err := embedderFromEnv()
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	// Listen first: while the engine recovers, /health answers 503 "starting".
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := httpd.NewStarting(httpd.Config{Version: version, MaxRequestBytes: limit, Logger: log, APIKey: *apiKey,
		OpenRegistration: openRegistration, AsyncIndexing: asyncIndexing, IndexWorkers: *workers})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	ctl := control.New(time.Now)
	db, err := engine.Open(*data, engine.Options{Sync: policy, FlushThreshold: int64(*flushMB) << 20, Logger: log,
		TokenCounter: counter, Embedder: embedder, Control: ctl})
	if err != nil {
		srv.Shutdown()
		return err
	}
	ctl.Attach(db.AppendControl)
	srv.Start(db, ctl)
	log.Info("loci: serving", "addr", ln.Addr().String(), "data", *data, "fsync", policy.String(), "version", version,
		"auth", *apiKey != "", "async_indexing", asyncIndexing)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case s := <-sig:
		log.Info("loci: shutting down", "signal", s.String())
	case err := <-served:
		if err != nil {
			srv.Shutdown()
			db.Close()
			return err
		}
	}
	// Stop accepting, finish in-flight requests, then close the engine
	// (which syncs the WAL): nothing acknowledged is lost.
	shutdownErr := srv.Shutdown()
	flushErr := db.Flush() // the next start replays no WAL
	closeErr := db.Close()
	log.Info("loci: stopped")
	return errors.Join(shutdownErr, flushErr, closeErr)
}

// embedderFromEnv returns the OpenAI-compatible embedder when EMBEDDINGS_URL
// is set, else nil (the engine's built-in GloVe embedder). Without
// EMBEDDINGS_DIM the dimension is probed at start, so the provider must
// answer then; with it, the service starts regardless and a provider that is
// down only degrades packs to lexical retrieval, with a note.
func embedderFromEnv() (vecindex.Embedder, error) {
	cfg, ok, err := vecindex.OpenAIConfigFromEnv()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := vecindex.NewOpenAI(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("EMBEDDINGS_URL: %w (set EMBEDDINGS_DIM to start without asking the provider)", err)
	}
	return e, nil
}
