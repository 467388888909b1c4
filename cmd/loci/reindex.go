package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/loci-memory/loci/engine"
)

// runReindex rebuilds every vector of a data directory with another
// embedder and records it, so the server can start with that embedder.
// The server must be stopped (the directory is locked while it runs).
func runReindex(args []string) error {
	fs := flag.NewFlagSet("reindex", flag.ContinueOnError)
	data := fs.String("data", envOr("LOCI_DATA_DIR", "./loci-data"), "data directory (env LOCI_DATA_DIR); the server must be stopped")
	name := fs.String("embedder", "", "the embedder to rebuild the vectors with: "+embedderNames+" (required)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: loci reindex --data DIR --embedder NAME\n\n"+
			"Rebuilds every vector of the data directory with the named embedder and records it in the\n"+
			"directory, so that `loci serve --embedder NAME` can start on it. Lexical indexes, artifacts,\n"+
			"feedback, receipts and late-interaction token rows are carried over unchanged. A crash or Ctrl-C\n"+
			"leaves the directory as it was.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if done, err := parseFlags(fs, args); done {
		return err
	}
	if *name == "" {
		fs.Usage()
		return exitCode(2)
	}
	opts := engine.Options{DisableBackground: true, Reindex: true,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if err := embedderOptions(*name, &opts); err != nil {
		return err
	}
	if _, err := os.Stat(*data); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	db, _, err := openEngine(*data, opts, nil)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	fmt.Printf("reindexing %s with embedder %s (%s)\n", *data, *name, embedderModel(opts))
	err = db.Reindex(ctx, func(done, all, spans int) {
		fmt.Printf("  segment %d of %d rewritten, %d spans embedded, %s\n", done, all, spans, time.Since(start).Round(time.Millisecond))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("reindex failed; the directory is unchanged: %w", err)
	}
	fmt.Printf("done in %s: %s now holds vectors of %s; start the server with --embedder %s\n",
		time.Since(start).Round(time.Millisecond), *data, embedderModel(opts), *name)
	return nil
}

func embedderModel(o engine.Options) string {
	if o.Embedder == nil {
		return engine.EmbedderNone
	}
	return o.Embedder.Model()
}
