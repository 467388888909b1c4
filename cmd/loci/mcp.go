package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/mcpd"
	"github.com/loci-memory/loci/service"
	"github.com/loci-memory/loci/text"
)

// runMCP serves the Model Context Protocol over stdin and stdout for one
// client (an MCP host starts `loci mcp` as its subprocess), with the engine
// embedded: it opens the data directory itself, so no `loci serve` may run
// on it at the same time (the directory's lock refuses a second opener; a
// shared server offers the same tools at POST /mcp instead). Every call acts
// for the tenant of LOCI_API_KEY, held to its plan like an API request, or
// for the built-in tenant when API_KEY (the admin key) is unset. Logs go to
// stderr: stdout carries the protocol only.
func runMCP(args []string) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	data := fs.String("data", envOr("LOCI_DATA_DIR", "./loci-data"), "data directory (env LOCI_DATA_DIR)")
	embedderName := fs.String("embedder", defaultEmbedderName(), "the semantic channel's embedder: "+embedderNames+" (env LOCI_EMBEDDER)")
	rerankerName := fs.String("reranker", envOr("LOCI_RERANKER", rerankerCrossEnc), "the relevance model of packs with rerank_depth: "+rerankerNames+" (env LOCI_RERANKER)")
	late := lateFlags(fs)
	tokenizer := fs.String("tokenizer", envOr("TOKENIZER", "o200k_base"), "token counting encoding: o200k_base | cl100k_base (env TOKENIZER)")
	logLevel := fs.String("log-level", envOr("LOG_LEVEL", "warn"), "lowest level logged to stderr: debug | info | warn | error (env LOG_LEVEL)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: loci mcp [flags]\n\nServes MCP over stdio with the engine embedded. Flags:\n")
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), `
Environment only:
  LOCI_API_KEY  the tenant key every call acts for (needed when API_KEY is set)
  API_KEY       the operator's admin key of this data directory; unset: authentication off
`)
	}
	if done, err := parseFlags(fs, args); done {
		return err
	}
	counter, err := text.BPEByName(*tokenizer)
	if err != nil {
		return fmt.Errorf("TOKENIZER: %w", err)
	}
	log, err := newLogger(os.Stderr, "text", *logLevel)
	if err != nil {
		return err
	}
	opts := engine.Options{TokenCounter: counter, Logger: log}
	if err := embedderOptions(*embedderName, &opts); err != nil {
		return err
	}
	rr, err := reranker(*rerankerName)
	if err != nil {
		return err
	}
	scfg := service.Config{AdminKey: os.Getenv("API_KEY"), Logger: log, Reranker: rr}
	if err := late.apply(&opts, &scfg); err != nil {
		return err
	}
	a, err := openApp(*data, opts, nil, scfg)
	if err != nil {
		return err
	}
	db, svc := a.db, a.svc
	svc.Start()
	p, err := svc.Authenticate(service.Credentials{APIKey: os.Getenv("LOCI_API_KEY")})
	if err != nil {
		svc.Stop()
		db.Close()
		if errors.Is(err, service.ErrNoKey) {
			return errors.New("authentication is on (API_KEY is set): set LOCI_API_KEY to the key of the tenant to act for")
		}
		return fmt.Errorf("LOCI_API_KEY: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	log.Info("loci mcp: serving on stdio", "data", *data, "tenant", p.TenantID, "embedder", *embedderName)
	serveErr := mcpd.New(svc, mcpd.Options{Version: version, Principal: &p, Logger: log}).ServeStdio(ctx, os.Stdin, os.Stdout)
	if errors.Is(serveErr, context.Canceled) {
		serveErr = nil
	}
	// The client has gone: stop the service's background work, then close
	// the engine (which syncs the WAL); everything acknowledged is durable.
	svc.Stop()
	return errors.Join(serveErr, db.Close())
}
