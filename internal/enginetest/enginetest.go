// Package enginetest is the engine test kit of the packages above engine
// (tests only): an engine opened in a directory with a test embedder and a
// quiet log, one with its control state attached, and the inputs and
// ingests their tests share. The engine's own tests (package engine) cannot
// import it and keep theirs.
package enginetest

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/embed/glove"
	"github.com/loci-memory/loci/engine"
)

// Quiet returns a logger that writes nothing.
func Quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// OpenErr is engine.Open with what tests choose when they choose nothing:
// the built-in GloVe embedder, offline and deterministic (the engine has no
// default; the program chooses), unless opts names one or NoEmbedder; a
// quiet log unless opts sets a logger.
func OpenErr(dir string, opts engine.Options) (*engine.DB, error) {
	if opts.Embedder == nil && !opts.NoEmbedder {
		opts.Embedder = glove.New()
	}
	if opts.Logger == nil {
		opts.Logger = Quiet()
	}
	return engine.Open(dir, opts)
}

// Open is OpenErr failing the test on an error. The caller closes the
// engine (tests reopen directories).
func Open(t testing.TB, dir string, opts engine.Options) *engine.DB {
	t.Helper()
	db, err := OpenErr(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return db
}

// OpenControlled opens the engine at dir (Open) with ctl as its control
// state, attached to it, as cmd/loci wires them: control writes go to the
// engine's WAL.
func OpenControlled(t testing.TB, dir string, opts engine.Options, ctl *control.Store) *engine.DB {
	t.Helper()
	opts.Control = ctl
	db := Open(t, dir, opts)
	ctl.Attach(db.AppendControl)
	return db
}

// Chat is a chat turn of alice in ws (1 March 2026, noon UTC).
func Chat(ws, content string) engine.IngestInput {
	return engine.IngestInput{Workspace: ws, ActorID: "alice", Type: "chat_turn",
		Payload:   []byte(fmt.Sprintf(`{"role":"user","content":%q}`, content)),
		Timestamp: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

// MustIngest ingests in for tenant and fails the test on an error or an
// artifact without spans.
func MustIngest(t testing.TB, db *engine.DB, tenant string, in engine.IngestInput) engine.IngestResult {
	t.Helper()
	r, err := db.Ingest(tenant, in)
	if err != nil {
		t.Fatalf("ingest: %v", err)
	}
	if len(r.SpanIDs) == 0 {
		t.Fatalf("ingest of %s: no spans", in.Payload)
	}
	return r
}
