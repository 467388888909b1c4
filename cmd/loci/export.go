package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/loci-memory/loci/embed/glove"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/export"
)

// embedderNameFor names the built-in embedder whose vectors a data directory
// records (docs/format/manifest.md § The embedder): "" and "none" are none,
// otherwise the built-in with that model, else the OpenAI-compatible one.
func embedderNameFor(model string) string {
	switch {
	case model == "" || model == engine.EmbedderNone:
		return embedderNone
	case model == glove.Model:
		return embedderGloVe
	case strings.Contains(strings.ToLower(model), "minilm"):
		return embedderMiniLM
	}
	return embedderOpenAI
}

// openOffline opens a stopped data directory for export or import, with the
// control state (a directory holding one refuses to open without it) and
// background maintenance off.
func openOffline(dir, embedderName string, inline bool) (*engine.DB, error) {
	opts := engine.Options{DisableBackground: true,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if err := embedderOptions(embedderName, &opts); err != nil {
		return nil, err
	}
	opts.EmbedInBackground = !inline
	db, _, err := openEngine(dir, opts, nil)
	return db, err
}

// runExport writes a workspace's artifacts and feedback as JSON Lines.
func runExport(args []string) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	data := fs.String("data", envOr("LOCI_DATA_DIR", "./loci-data"), "data directory; the server must be stopped (export a running server's backup instead) (env LOCI_DATA_DIR)")
	tenant := fs.String("tenant", "default", "tenant id (default: the tenant of a server without authentication)")
	ws := fs.String("workspace", "", "workspace id (required)")
	out := fs.String("out", "", "JSON Lines file to create (required; - for standard output)")
	name := fs.String("embedder", "", "embedder to open the directory with (default: the one it records)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: loci export --data DIR --tenant T --workspace W --out FILE.jsonl\n\n"+
			"Writes the workspace's artifacts (ids, timestamps, types, session, thread, actor, permissions,\n"+
			"raw payload, idempotency key, span ids) and feedback events as JSON Lines in the order they\n"+
			"were written (docs/format/export.md). loci import reads it back. The server must be stopped;\n"+
			"to export from a running server, export its backup (loci backup).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if done, err := parseFlags(fs, args); done {
		return err
	}
	if *ws == "" || *out == "" {
		fs.Usage()
		return exitCode(2)
	}
	if _, err := os.Stat(filepath.Join(*data, "MANIFEST")); err != nil {
		return fmt.Errorf("export: %s is not a Loci data directory: %w", *data, err)
	}
	if *name == "" {
		model, _, err := engine.RecordedEmbedder(*data)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		*name = embedderNameFor(model)
	}
	start := time.Now()
	db, err := openOffline(*data, *name, false)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer db.Close()
	// Artifacts still waiting for vectors after a crash are embedded first,
	// as the server does at start, so the export is of a settled version.
	for db.EmbeddingBacklog() > 0 {
		time.Sleep(20 * time.Millisecond)
	}
	var w io.Writer = os.Stdout
	if *out != "-" {
		f, err := os.OpenFile(*out, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		defer f.Close()
		w = f
		defer func() {
			if err := f.Sync(); err != nil {
				fmt.Fprintln(os.Stderr, "loci: export: sync:", err)
			}
		}()
	}
	sum, err := export.Write(w, db, *tenant, *ws, export.Header{Tenant: *tenant, Workspace: *ws,
		ExportedAt: time.Now().UTC().Format(time.RFC3339), LociVersion: version})
	if errors.Is(err, export.ErrNoData) {
		err = fmt.Errorf("workspace %q of tenant %q has no data in %s", *ws, *tenant, *data)
	}
	if err != nil {
		if *out != "-" {
			os.Remove(*out) // an incomplete export is no export
		}
		return fmt.Errorf("export: %w", err)
	}
	fmt.Fprintf(os.Stderr, "exported %d artifacts and %d feedback events of %s/%s (data version %d) to %s in %s\n",
		sum.Artifacts, sum.Feedback, *tenant, *ws, sum.DataVersion, *out, time.Since(start).Round(time.Millisecond))
	return nil
}

// runImport reads an export into a stopped data directory.
func runImport(args []string) error {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	data := fs.String("data", envOr("LOCI_DATA_DIR", "./loci-data"), "data directory to import into (created if missing); the server must be stopped (env LOCI_DATA_DIR)")
	in := fs.String("in", "", "JSON Lines file written by loci export (required)")
	tenant := fs.String("tenant", "", "tenant to import into (default: the export's)")
	ws := fs.String("workspace", "", "workspace to import into (default: the export's); it must hold no data yet")
	name := fs.String("embedder", "", "embedder to build vectors with (default: the export's; identical packs need the same)")
	vectors := fs.Bool("vectors", false, "store the span vectors the file carries (written by loci embed with the directory's embedder) instead of embedding")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: loci import --data DIR --in FILE.jsonl [--tenant T --workspace W] [--vectors]\n\n"+
			"Stores an export's artifacts and feedback events with their ids and timestamps, in their order,\n"+
			"into a workspace that holds no data yet, and gives it the export's data version, so identical\n"+
			"context-pack requests give identical packs and receipt ids (docs/format/export.md). It applies\n"+
			"whole or not at all: a file refused anywhere, or an import killed before it commits, leaves the\n"+
			"directory as it was. With --vectors, every artifact line must carry its span vectors (loci embed)\n"+
			"made by the embedder the directory records, which the header must name: they are checked and\n"+
			"stored, and nothing is embedded.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if done, err := parseFlags(fs, args); done {
		return err
	}
	if *in == "" {
		fs.Usage()
		return exitCode(2)
	}
	start := time.Now()
	f, err := os.Open(*in)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	r := export.NewReader(f)
	h, isHeader, err := r.Header()
	if err != nil {
		return fmt.Errorf("import: %s: %w; nothing was imported", *in, err)
	}
	if !isHeader || h.Format != export.Format {
		return fmt.Errorf("import: %s line 1 is not a %s header", *in, export.Format)
	}
	if h.Version != export.Version {
		return fmt.Errorf("import: %s is export format version %d; this loci reads version %d", *in, h.Version, export.Version)
	}
	if *tenant == "" {
		*tenant = h.Tenant
	}
	if *ws == "" {
		*ws = h.Workspace
	}
	if *name == "" {
		*name = embedderNameFor(h.Embedder)
		if *vectors {
			// Open with the directory's embedder, so that a file of
			// another is refused by the check below, which names both.
			if model, _, err := engine.RecordedEmbedder(*data); err == nil && model != "" {
				*name = embedderNameFor(model)
			}
		}
	}
	if err := engine.CheckImportedVersion(h.DataVersion); err != nil {
		return fmt.Errorf("import: %s line 1: %w; nothing was imported", *in, err)
	}
	// Open and close the directory first: it is created if missing, and an
	// unfinished import's staging directory is removed.
	db, err := openOffline(*data, *name, true)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	v := db.DataVersion(*tenant, *ws)
	if err := db.Close(); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if *vectors {
		if err := checkVectorsHeader(*data, h); err != nil {
			return fmt.Errorf("import: %s line 1: %w; nothing was imported", *in, err)
		}
	}
	if v != 0 {
		return fmt.Errorf("import: workspace %q of tenant %q in %s already holds data (data version %d); import into a new workspace (--workspace)", *ws, *tenant, *data, v)
	}
	// Everything is written to a staging copy, committed only when the
	// whole file was read and imported: a refused record, or a kill,
	// leaves the directory as it was.
	stage, err := engine.StageImport(*data)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer stage.Close()
	r.Vectors = *vectors
	arts, events, err := importLines(stage.Dir(), *name, *tenant, *ws, r)
	if err == nil {
		err = engine.SetImportedVersion(stage.Dir(), *tenant, *ws, h.DataVersion)
	}
	if err == nil {
		err = r.Trailing()
	}
	if err != nil {
		return fmt.Errorf("import: %s: %w; nothing was imported", *in, err)
	}
	if err := stage.Commit(); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	fmt.Fprintf(os.Stderr, "imported %d artifacts and %d feedback events into %s/%s of %s (data version %d) in %s\n",
		arts, events, *tenant, *ws, *data, h.DataVersion, time.Since(start).Round(time.Millisecond))
	return nil
}

// checkVectorsHeader checks that the vectors of an export (header h) are
// of the embedder data directory dir records, as its model and dimension
// are spelled there.
func checkVectorsHeader(dir string, h export.Header) error {
	model, dim, err := engine.RecordedEmbedder(dir)
	if err != nil {
		return err
	}
	switch {
	case model == "" || model == engine.EmbedderNone:
		return fmt.Errorf("--vectors: the data directory records no embedder, so it takes no vectors")
	case h.Embedder != model || h.EmbedderDim != dim:
		return fmt.Errorf("--vectors: the file's vectors are of embedder %q, dimension %d; the data directory records %q, dimension %d (make them with loci embed --embedder %s)",
			h.Embedder, h.EmbedderDim, model, dim, embedderNameFor(model))
	}
	return nil
}

// runEmbed adds span vectors to an export, for loci import --vectors.
func runEmbed(args []string) error {
	fs := flag.NewFlagSet("embed", flag.ContinueOnError)
	in := fs.String("in", "", "JSON Lines file in the export format (required; - for standard input)")
	out := fs.String("out", "", "JSON Lines file to create (required; - for standard output)")
	name := fs.String("embedder", defaultEmbedderName(), "embedder: minilm | glove | openai, the one the target data directory records (env LOCI_EMBEDDER)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: loci embed --in FILE.jsonl --out FILE.jsonl [--embedder NAME]\n\n"+
			"Copies an export (loci export, or artifact lines written in its format) with every artifact's span\n"+
			"vectors, computed with the embedder on every core, its content_hash and span_ids filled in where\n"+
			"absent, and the embedder named in the header; loci import --vectors then stores them without\n"+
			"embedding. It needs no data directory: split a large file and run it on many machines, with the\n"+
			"embedder the target directory records (docs/format/export.md).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if done, err := parseFlags(fs, args); done {
		return err
	}
	if *in == "" || *out == "" {
		fs.Usage()
		return exitCode(2)
	}
	if *name == embedderNone {
		return fmt.Errorf("embed: --embedder none computes no vectors")
	}
	var opts engine.Options
	if err := embedderOptions(*name, &opts); err != nil {
		return fmt.Errorf("embed: %w", err)
	}
	start := time.Now()
	var r io.Reader = os.Stdin
	if *in != "-" {
		f, err := os.Open(*in)
		if err != nil {
			return fmt.Errorf("embed: %w", err)
		}
		defer f.Close()
		r = f
	}
	var w io.Writer = os.Stdout
	var f *os.File
	if *out != "-" {
		var err error
		if f, err = os.OpenFile(*out, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err != nil {
			return fmt.Errorf("embed: %w", err)
		}
		defer f.Close()
		w = f
	}
	last := start
	sum, err := export.Embed(context.Background(), export.NewReader(r), w, opts.Embedder, nil, func(s export.EmbedSummary) {
		if time.Since(last) >= 10*time.Second {
			last = time.Now()
			fmt.Fprintf(os.Stderr, "embed: %d artifacts, %d spans, %.0f spans/s\n", s.Artifacts, s.Spans, float64(s.Spans)/time.Since(start).Seconds())
		}
	})
	if err == nil && f != nil {
		err = f.Sync()
	}
	if err != nil {
		if f != nil {
			os.Remove(*out) // an incomplete file is no file
		}
		return fmt.Errorf("embed: %s: %w", *in, err)
	}
	el := time.Since(start)
	fmt.Fprintf(os.Stderr, "embedded %d spans of %d artifacts (and copied %d feedback events) with %s to %s in %s: %.0f artifacts/s, %.0f spans/s\n",
		sum.Spans, sum.Artifacts, sum.Feedback, opts.Embedder.Model(), *out, el.Round(time.Millisecond),
		float64(sum.Artifacts)/el.Seconds(), float64(sum.Spans)/el.Seconds())
	return nil
}

// importLines imports the export r reads, after its header and up to its
// end line, into the closed data directory dir (the import's staging copy),
// and flushes it; it returns the counts read.
func importLines(dir, embedderName, tenant, ws string, r *export.Reader) (arts, events int, err error) {
	db, err := openOffline(dir, embedderName, true)
	if err != nil {
		return 0, 0, err
	}
	defer func() {
		if cerr := db.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close: %w", cerr)
		}
	}()
	if arts, events, err = r.Import(db, tenant, ws); err != nil {
		return arts, events, err
	}
	if err := db.Flush(); err != nil {
		return arts, events, fmt.Errorf("flush: %w", err)
	}
	return arts, events, nil
}
