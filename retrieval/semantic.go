package retrieval

import (
	"context"
	"fmt"

	"github.com/loci-memory/loci/embed"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/vecindex"
)

// quantizedQuery embeds query with emb and quantizes it for the index:
// the one place a query becomes a vector. An error wrapping
// embed.ErrUnavailable means there is no semantic channel now (no
// embedder, or a malformed answer); other errors are the embedder's own,
// unwrapped.
func quantizedQuery(ctx context.Context, emb embed.Embedder, query string) ([]int8, float32, error) {
	if emb == nil {
		return nil, 0, fmt.Errorf("no embedder configured: %w", embed.ErrUnavailable)
	}
	vecs, err := emb.Embed(ctx, []string{query})
	if err != nil {
		return nil, 0, err
	}
	dim := emb.Dim()
	if len(vecs) != 1 || len(vecs[0]) != dim {
		return nil, 0, fmt.Errorf("embedder returned a malformed query vector: %w", embed.ErrUnavailable)
	}
	q := make([]int8, dim)
	return q, vecindex.Quantize(vecs[0], q), nil
}

// SearchSemantic embeds query with db's embedder and returns the top k
// spans of a workspace by cosine similarity, exact, best first
// (engine.DB.SearchSemantic): the semantic channel alone, for tools and
// benchmarks; packs search both channels at once (Packer.ContextPack). An
// error wrapping embed.ErrUnavailable means the embedder cannot answer:
// callers fall back to lexical retrieval.
func SearchSemantic(ctx context.Context, db *engine.DB, tenant, ws, query string, k int) ([]engine.SearchHit, error) {
	q, scale, err := quantizedQuery(ctx, db.Embedder(), query)
	if err != nil {
		return nil, fmt.Errorf("retrieval: embed query: %w", err)
	}
	return db.SearchSemantic(tenant, ws, q, scale, k)
}
