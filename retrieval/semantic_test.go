package retrieval

import (
	"context"
	"errors"
	"testing"

	"github.com/loci-memory/loci/embed"
	"github.com/loci-memory/loci/embed/glove"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/internal/enginetest"
)

// queryEmbedder is GloVe at ingest (several texts) and answers a query (one
// text) with err, or with a vector of the wrong length when short is set.
type queryEmbedder struct {
	embed.Embedder
	err   error
	short bool
}

func (e *queryEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 1 && texts[0] == "monarch crown" {
		if e.short {
			return [][]float32{{1}}, nil
		}
		if e.err != nil {
			return nil, e.err
		}
	}
	return e.Embedder.Embed(ctx, texts)
}

// TestSearchSemantic: the semantic channel alone embeds the query, finds by
// meaning, and says embed.ErrUnavailable exactly when there is no semantic
// channel now (no embedder, one that is down, a malformed answer); an
// error the embedder gives for the input itself passes through unmarked.
func TestSearchSemantic(t *testing.T) {
	rejected := errors.New("input too long")
	for _, tt := range []struct {
		name            string
		opts            engine.Options
		wantHits        int
		wantErr         error
		wantUnavailable bool
	}{
		{"glove", engine.Options{Embedder: glove.New()}, 1, nil, false},
		{"no embedder", engine.Options{NoEmbedder: true}, 0, nil, true},
		{"embedder down", engine.Options{Embedder: &queryEmbedder{Embedder: glove.New(), err: embed.ErrUnavailable}}, 0, nil, true},
		{"malformed vector", engine.Options{Embedder: &queryEmbedder{Embedder: glove.New(), short: true}}, 0, nil, true},
		{"input rejected", engine.Options{Embedder: &queryEmbedder{Embedder: glove.New(), err: rejected}}, 0, rejected, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.DisableBackground = true
			db := enginetest.Open(t, t.TempDir(), tt.opts)
			defer db.Close()
			king, err := db.Ingest("t", enginetest.Chat("ws", "The king and the queen greeted the royal guests."))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Ingest("t", enginetest.Chat("ws", "Deploy the payment service on Friday.")); err != nil {
				t.Fatal(err)
			}
			hits, err := SearchSemantic(context.Background(), db, "t", "ws", "monarch crown", 1)
			if errors.Is(err, embed.ErrUnavailable) != tt.wantUnavailable || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) ||
				(err == nil) != (!tt.wantUnavailable && tt.wantErr == nil) {
				t.Fatalf("err = %v, want unavailable %v, wrapping %v", err, tt.wantUnavailable, tt.wantErr)
			}
			if len(hits) != tt.wantHits || (len(hits) > 0 && hits[0].ArtifactID != king.ArtifactID) {
				t.Fatalf("hits %+v, want %d, the first the king's", hits, tt.wantHits)
			}
		})
	}
}
