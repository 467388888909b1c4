package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/embed/glove"
	"github.com/loci-memory/loci/engine"
)

// exportFormat and exportVersion name the JSON Lines format of
// docs/format/export.md.
const (
	exportFormat  = "loci-export"
	exportVersion = 1
)

// exportLine is every field a line of an export may have; kind says which
// apply (header, artifact, feedback, end).
type exportLine struct {
	Kind string `json:"kind"`

	// header
	Format      string `json:"format,omitempty"`
	Version     int    `json:"version,omitempty"`
	Tenant      string `json:"tenant,omitempty"`
	Workspace   string `json:"workspace,omitempty"`
	DataVersion uint64 `json:"data_version,omitempty"`
	Embedder    string `json:"embedder,omitempty"`
	EmbedderDim int    `json:"embedder_dim,omitempty"`
	ExportedAt  string `json:"exported_at,omitempty"`
	LociVersion string `json:"loci_version,omitempty"`

	// artifact
	ArtifactID     string            `json:"artifact_id,omitempty"`
	ArtifactType   string            `json:"artifact_type,omitempty"`
	ActorID        string            `json:"actor_id,omitempty"`
	SessionID      string            `json:"session_id,omitempty"`
	ThreadID       string            `json:"thread_id,omitempty"`
	IdempotencyKey string            `json:"idempotency_key,omitempty"`
	TimestampUS    *int64            `json:"timestamp_us,omitempty"`
	IngestedAtUS   *int64            `json:"ingested_at_us,omitempty"`
	Permissions    *exportPerms      `json:"permissions,omitempty"`
	Metadata       map[string]string `json:"metadata,omitempty"`
	ContentHash    string            `json:"content_hash,omitempty"`
	RawPayloadJSON *string           `json:"raw_payload_json,omitempty"`
	SpanIDs        []string          `json:"span_ids,omitempty"`

	// feedback (artifact_id, actor_id and span_ids as above)
	FeedbackID      string `json:"feedback_id,omitempty"`
	Action          string `json:"action,omitempty"`
	Reason          string `json:"reason,omitempty"`
	ConflictID      string `json:"conflict_id,omitempty"`
	PreferredSpanID string `json:"preferred_span_id,omitempty"`
	CreatedAtUS     *int64 `json:"created_at_us,omitempty"`

	// end
	Artifacts *int `json:"artifacts,omitempty"`
	Events    *int `json:"feedback,omitempty"`
}

type exportPerms struct {
	Visibility    string   `json:"visibility,omitempty"`
	AllowedActors []string `json:"allowed_actors,omitempty"`
	DeniedActors  []string `json:"denied_actors,omitempty"`
	RBACTags      []string `json:"rbac_tags,omitempty"`
}

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
	ctl := control.New(time.Now)
	opts.Control = ctl
	db, err := engine.Open(dir, opts)
	if err != nil {
		return nil, err
	}
	ctl.Attach(db.AppendControl)
	return db, nil
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
	bw := bufio.NewWriterSize(w, 1<<20)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	sum, err := db.ExportWorkspace(*tenant, *ws, func(h engine.WorkspaceExport) error {
		if h.DataVersion == 0 {
			return fmt.Errorf("workspace %q of tenant %q has no data in %s", *ws, *tenant, *data)
		}
		return enc.Encode(exportLine{Kind: "header", Format: exportFormat, Version: exportVersion, Tenant: *tenant, Workspace: *ws,
			DataVersion: h.DataVersion, Embedder: h.Embedder, EmbedderDim: h.EmbedderDim,
			ExportedAt: time.Now().UTC().Format(time.RFC3339), LociVersion: version})
	}, func(it engine.ExportItem) error {
		if it.Feedback != nil {
			return enc.Encode(feedbackLine(it.Feedback))
		}
		return enc.Encode(artifactLine(it.Artifact, it.SpanIDs))
	})
	if err == nil {
		a, fb := sum.Artifacts, sum.Feedback
		err = enc.Encode(exportLine{Kind: "end", Artifacts: &a, Events: &fb})
	}
	if err == nil {
		err = bw.Flush()
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

func artifactLine(a *artifact.Artifact, spanIDs []uuid.UUID) exportLine {
	ts, ing := a.Timestamp, a.IngestedAt
	l := exportLine{Kind: "artifact", ArtifactID: a.ID.String(), ArtifactType: a.Type, ActorID: a.ActorID,
		SessionID: a.SessionID, ThreadID: a.ThreadID, IdempotencyKey: a.IdempotencyKey,
		TimestampUS: &ts, IngestedAtUS: &ing, ContentHash: hex.EncodeToString(a.ContentHash[:])}
	p := a.Permissions
	if p.Visibility != "" || len(p.AllowedActors)+len(p.DeniedActors)+len(p.RBACTags) > 0 {
		l.Permissions = &exportPerms{Visibility: p.Visibility, AllowedActors: p.AllowedActors, DeniedActors: p.DeniedActors, RBACTags: p.RBACTags}
	}
	if a.Payload != nil {
		s := string(a.Payload)
		l.RawPayloadJSON = &s
	}
	l.Metadata = a.Metadata
	l.SpanIDs = uuidStrings(spanIDs)
	return l
}

func feedbackLine(e *engine.ExportedFeedback) exportLine {
	at := e.CreatedAt
	l := exportLine{Kind: "feedback", FeedbackID: e.ID.String(), ActorID: e.ActorID, Action: e.Action,
		ArtifactID: e.ArtifactID.String(), SpanIDs: uuidStrings(e.Spans), Reason: e.Reason, ConflictID: e.ConflictID,
		CreatedAtUS: &at}
	if e.Preferred != uuid.Nil {
		l.PreferredSpanID = e.Preferred.String()
	}
	return l
}

func uuidStrings(ids []uuid.UUID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return out
}

// importBatch bounds one engine.Import call (one WAL group).
const (
	importBatchItems = 1024
	importBatchBytes = 16 << 20
)

// runImport reads an export into a stopped data directory.
func runImport(args []string) error {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	data := fs.String("data", envOr("LOCI_DATA_DIR", "./loci-data"), "data directory to import into (created if missing); the server must be stopped (env LOCI_DATA_DIR)")
	in := fs.String("in", "", "JSON Lines file written by loci export (required)")
	tenant := fs.String("tenant", "", "tenant to import into (default: the export's)")
	ws := fs.String("workspace", "", "workspace to import into (default: the export's); it must hold no data yet")
	name := fs.String("embedder", "", "embedder to build vectors with (default: the export's; identical packs need the same)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: loci import --data DIR --in FILE.jsonl [--tenant T --workspace W]\n\n"+
			"Stores an export's artifacts and feedback events with their ids and timestamps, in their order,\n"+
			"into a workspace that holds no data yet, and gives it the export's data version, so identical\n"+
			"context-pack requests give identical packs and receipt ids (docs/format/export.md). It applies\n"+
			"whole or not at all: a file refused anywhere, or an import killed before it commits, leaves the\n"+
			"directory as it was.\n\nFlags:\n")
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
	r := bufio.NewReaderSize(f, 1<<20)
	lineNo := 0
	next := func() (*exportLine, error) {
		b, err := r.ReadBytes('\n')
		if len(b) == 0 && err != nil {
			if errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("ends after line %d without its end line: the export is incomplete", lineNo)
			}
			return nil, err
		}
		lineNo++
		var l exportLine
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
		return &l, nil
	}
	h, err := next()
	if err != nil {
		return fmt.Errorf("import: %s: %w; nothing was imported", *in, err)
	}
	if h.Kind != "header" || h.Format != exportFormat {
		return fmt.Errorf("import: %s line 1 is not a %s header", *in, exportFormat)
	}
	if h.Version != exportVersion {
		return fmt.Errorf("import: %s is export format version %d; this loci reads version %d", *in, h.Version, exportVersion)
	}
	if *tenant == "" {
		*tenant = h.Tenant
	}
	if *ws == "" {
		*ws = h.Workspace
	}
	if *name == "" {
		*name = embedderNameFor(h.Embedder)
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
	arts, events, err := importLines(stage.Dir(), *name, *tenant, *ws, next, func() int { return lineNo })
	if err == nil {
		err = engine.SetImportedVersion(stage.Dir(), *tenant, *ws, h.DataVersion)
	}
	if err == nil {
		err = trailing(r)
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

// importLines imports the lines next gives (line: the number of the last
// one), up to the end line, into the closed data directory dir (the
// import's staging copy) in batches, and flushes it; it returns the counts
// read.
func importLines(dir, embedderName, tenant, ws string, next func() (*exportLine, error), line func() int) (arts, events int, err error) {
	db, err := openOffline(dir, embedderName, true)
	if err != nil {
		return 0, 0, err
	}
	defer func() {
		if cerr := db.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close: %w", cerr)
		}
	}()
	var batch []engine.ImportItem
	var batchBytes int
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := db.Import(tenant, ws, batch); err != nil {
			return fmt.Errorf("before line %d: %w", line()+1, err)
		}
		batch, batchBytes = batch[:0], 0
		return nil
	}
	for {
		l, err := next()
		if err != nil {
			return arts, events, err
		}
		if l.Kind == "end" {
			if l.Artifacts == nil || l.Events == nil || *l.Artifacts != arts || *l.Events != events {
				return arts, events, fmt.Errorf("the end line counts do not match the %d artifacts and %d feedback events read", arts, events)
			}
			break
		}
		it, size, err := importItem(l)
		if err != nil {
			return arts, events, fmt.Errorf("line %d: %w", line(), err)
		}
		if it.Artifact != nil {
			arts++
		} else {
			events++
		}
		batch = append(batch, it)
		if batchBytes += size; len(batch) >= importBatchItems || batchBytes >= importBatchBytes {
			if err := flush(); err != nil {
				return arts, events, err
			}
		}
	}
	if err := flush(); err != nil {
		return arts, events, err
	}
	if err := db.Flush(); err != nil {
		return arts, events, fmt.Errorf("flush: %w", err)
	}
	return arts, events, nil
}

// trailing refuses anything but white space after the end line.
func trailing(r *bufio.Reader) error {
	for {
		c, err := r.ReadByte()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return fmt.Errorf("data after the end line")
		}
	}
}

// importItem converts an artifact or feedback line; size is its payload's.
func importItem(l *exportLine) (engine.ImportItem, int, error) {
	ids := func(field string, ss []string) ([]uuid.UUID, error) {
		out := make([]uuid.UUID, len(ss))
		for i, s := range ss {
			id, err := uuid.Parse(s)
			if err != nil {
				return nil, fmt.Errorf("%s[%d]: %w", field, i, err)
			}
			out[i] = id
		}
		return out, nil
	}
	one := func(field, s string) (uuid.UUID, error) {
		if s == "" {
			return uuid.Nil, nil
		}
		id, err := uuid.Parse(s)
		if err != nil {
			return uuid.Nil, fmt.Errorf("%s: %w", field, err)
		}
		return id, nil
	}
	switch l.Kind {
	case "artifact":
		id, err := one("artifact_id", l.ArtifactID)
		if err != nil {
			return engine.ImportItem{}, 0, err
		}
		spans, err := ids("span_ids", l.SpanIDs)
		if err != nil {
			return engine.ImportItem{}, 0, err
		}
		if l.TimestampUS == nil || l.IngestedAtUS == nil {
			return engine.ImportItem{}, 0, fmt.Errorf("artifact %s: timestamp_us and ingested_at_us are required", l.ArtifactID)
		}
		a := &artifact.Artifact{ID: id, Type: l.ArtifactType, ActorID: l.ActorID, SessionID: l.SessionID, ThreadID: l.ThreadID,
			IdempotencyKey: l.IdempotencyKey, Timestamp: *l.TimestampUS, IngestedAt: *l.IngestedAtUS, Metadata: l.Metadata}
		if p := l.Permissions; p != nil {
			a.Permissions = artifact.Permissions{Visibility: p.Visibility, AllowedActors: p.AllowedActors, DeniedActors: p.DeniedActors, RBACTags: p.RBACTags}
		}
		hash, err := hex.DecodeString(l.ContentHash)
		if err != nil || len(hash) != 32 {
			return engine.ImportItem{}, 0, fmt.Errorf("artifact %s: content_hash is not 64 hex digits", l.ArtifactID)
		}
		a.ContentHash = [32]byte(hash)
		if l.RawPayloadJSON != nil {
			a.Payload = []byte(*l.RawPayloadJSON)
		}
		return engine.ImportItem{Artifact: a, SpanIDs: spans}, len(a.Payload), nil
	case "feedback":
		var e engine.ExportedFeedback
		var err error
		if e.ID, err = one("feedback_id", l.FeedbackID); err == nil {
			if e.ArtifactID, err = one("artifact_id", l.ArtifactID); err == nil {
				if e.Preferred, err = one("preferred_span_id", l.PreferredSpanID); err == nil {
					e.Spans, err = ids("span_ids", l.SpanIDs)
				}
			}
		}
		if err != nil {
			return engine.ImportItem{}, 0, err
		}
		if l.CreatedAtUS == nil {
			return engine.ImportItem{}, 0, fmt.Errorf("feedback %s: created_at_us is required", l.FeedbackID)
		}
		e.ActorID, e.Action, e.Reason, e.ConflictID, e.CreatedAt = l.ActorID, l.Action, l.Reason, l.ConflictID, *l.CreatedAtUS
		return engine.ImportItem{Feedback: &e}, 0, nil
	}
	return engine.ImportItem{}, 0, fmt.Errorf("unknown kind %q (want artifact, feedback or end)", l.Kind)
}
