package engine

import (
	"context"
	"testing"

	"github.com/google/uuid"
)

// Context packs are built by package retrieval, which imports engine, so
// engine's own test files cannot import it. Storage tests that check what a
// pack sees (erasure, retention, metadata, background embedding, crashes,
// receipts) pack through probePack, which packprobe_ext_test.go (package
// engine_test, in the same test binary) sets at init to retrieval's packer.

// PackProbe is a context pack request of the engine's tests.
type PackProbe struct {
	Workspace string
	Query     string
	MaxTokens int
	Metadata  map[string]string
}

// PackOutcome is what the engine's tests read of a pack: its context text,
// the spans it cites and excludes, the whole result as JSON (to compare
// packs) and its receipt id.
type PackOutcome struct {
	ContextText string
	Citations   []PackedSpan
	Exclusions  []PackedSpan
	JSON        []byte
	ReceiptID   uuid.UUID
}

// PackedSpan is a span a pack cites or excludes (ContentHash: citations only).
type PackedSpan struct {
	ArtifactID, SpanID uuid.UUID
	ContentHash        string
}

var probePack func(ctx context.Context, db *DB, tenant string, req PackProbe) (*PackOutcome, error)

// SetProbePack sets the packer of the engine's tests.
func SetProbePack(f func(ctx context.Context, db *DB, tenant string, req PackProbe) (*PackOutcome, error)) {
	probePack = f
}

func mustPack(t *testing.T, db *DB, tenant string, req PackProbe) *PackOutcome {
	t.Helper()
	pr, err := probePack(context.Background(), db, tenant, req)
	if err != nil {
		t.Fatalf("pack %+v: %v", req, err)
	}
	return pr
}
