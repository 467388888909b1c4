package retrieval

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/loci-memory/loci/engine"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// openTest opens an engine in dir, quiet unless opts sets a logger.
func openTest(t *testing.T, dir string, opts engine.Options) *engine.DB {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	db, err := engine.Open(dir, opts)
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
