package retrieval

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/loci-memory/loci/embed/glove"
	"github.com/loci-memory/loci/engine"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// openEngine is engine.Open with the embedder retrieval tests use when
// they choose none: the built-in GloVe, offline and deterministic (the
// engine has no default; the program chooses).
func openEngine(dir string, opts engine.Options) (*engine.DB, error) {
	if opts.Embedder == nil && !opts.NoEmbedder {
		opts.Embedder = glove.New()
	}
	return engine.Open(dir, opts)
}

// openTest opens an engine in dir, quiet unless opts sets a logger.
func openTest(t *testing.T, dir string, opts engine.Options) *engine.DB {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	db, err := openEngine(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return db
}

// chat is a chat turn of alice in ws.
func chat(ws, content string) engine.IngestInput {
	return engine.IngestInput{Workspace: ws, ActorID: "alice", Type: "chat_turn",
		Payload:   []byte(fmt.Sprintf(`{"role":"user","content":%q}`, content)),
		Timestamp: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}
