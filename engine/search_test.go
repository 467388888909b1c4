package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/loci-memory/loci/embed"
)

func TestSearchChannels(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, Options{DisableBackground: true})
	docs := []string{
		"The quarterly budget for the data platform was approved at 4000 dollars.",
		"Our cat sleeps on the sofa all afternoon and ignores the dog.",
		"Deploy the payment service on Friday after the database migration.",
		"The king and the queen greeted the royal guests at the palace.",
	}
	ids := map[string]string{}
	for i, d := range docs {
		r, err := db.Ingest("t", chat("ws", d))
		if err != nil {
			t.Fatal(err)
		}
		if !r.Embedded {
			t.Fatal("artifact not embedded with the default embedder")
		}
		ids[r.ArtifactID.String()] = fmt.Sprint(i)
		if i == 1 {
			db.Flush() // spread over a segment and the head
		}
	}
	top := func(hits []SearchHit) string {
		if len(hits) == 0 {
			return "none"
		}
		return ids[hits[0].ArtifactID.String()]
	}
	lex, err := db.SearchLexical("t", "ws", "when is the deploy of the payments service?", 10)
	if err != nil || top(lex) != "2" {
		t.Fatalf("lexical: top %s, %v", top(lex), err)
	}
	if sp, err := db.Span("t", lex[0].ArtifactID, lex[0].SpanID); err != nil || sp.ID != lex[0].SpanID {
		t.Fatalf("Span of a hit: %v", err)
	}
	for i := 1; i < len(lex); i++ {
		if lex[i].Score > lex[i-1].Score {
			t.Fatal("lexical hits not ordered by score")
		}
	}
	// No word in common with document 3, but close in meaning.
	sem, err := searchSemantic(db, "t", "ws", "monarch crown princess", 10)
	if err != nil || top(sem) != "3" {
		t.Fatalf("semantic: top %s, %v", top(sem), err)
	}
	// Other tenants see nothing; erased workspaces answer nothing.
	if h, _ := db.SearchLexical("other", "ws", "budget", 10); len(h) != 0 {
		t.Fatal("lexical search crossed tenants")
	}
	if h, _ := searchSemantic(db, "other", "ws", "budget", 10); len(h) != 0 {
		t.Fatal("semantic search crossed tenants")
	}
	// A query vector of another dimension than the embedder's is refused.
	if _, err := db.SearchSemantic("t", "ws", make([]int8, 8), 1, 10); err == nil || !strings.Contains(err.Error(), "query vector of 8 values, want 100") {
		t.Fatalf("query vector of the wrong dimension: %v", err)
	}
	db.EraseWorkspace("t", "ws")
	if h, _ := db.SearchLexical("t", "ws", "budget", 10); len(h) != 0 {
		t.Fatal("erased workspace still searchable")
	}
	db.Close()
}

// failingEmbedder is a remote embedder that is down.
type failingEmbedder struct{}

func (failingEmbedder) Model() string { return "test:down:8" }
func (failingEmbedder) Dim() int      { return 8 }
func (failingEmbedder) Embed(context.Context, []string) ([][]float32, error) {
	return nil, fmt.Errorf("connection refused: %w", embed.ErrUnavailable)
}

func TestEmbedderUnavailable(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, Options{DisableBackground: true, Embedder: failingEmbedder{}})
	r, err := db.Ingest("t", chat("ws", "the deploy moved to Friday"))
	if err != nil {
		t.Fatalf("ingest must not fail when embeddings are unavailable: %v", err)
	}
	if r.Embedded || !r.Indexed {
		t.Fatalf("result %+v", r)
	}
	if h, err := db.SearchLexical("t", "ws", "deploy", 5); err != nil || len(h) != 1 {
		t.Fatalf("lexical: %v %v", h, err)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	// Reopened with a working embedder of another model: refused, so the
	// two models' vectors never mix (loci reindex rebuilds them).
	if _, err := testOpen(dir, Options{DisableBackground: true, Logger: quietLogger()}); !errors.Is(err, errEmbedderMismatch) {
		t.Fatalf("reopened with another embedder: %v", err)
	}
}

func TestNoEmbedder(t *testing.T) {
	db := openTest(t, t.TempDir(), Options{DisableBackground: true, NoEmbedder: true})
	defer db.Close()
	if _, err := db.Ingest("t", chat("ws", "hello there")); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if h, err := db.SearchSemantic("t", "ws", nil, 0, 5); err != nil || len(h) != 0 {
		t.Fatalf("semantic without embedder: %v %v", h, err)
	}
	if h, _ := db.SearchLexical("t", "ws", "hello", 5); len(h) != 1 {
		t.Fatal("lexical without embedder")
	}
}
