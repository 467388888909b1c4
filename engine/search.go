package engine

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/embed"
	"github.com/loci-memory/loci/invindex"
	"github.com/loci-memory/loci/vecindex"
)

// SearchHit is a span found by a retrieval channel, with its score. Span
// returns the span itself.
type SearchHit struct {
	SpanID     uuid.UUID
	ArtifactID uuid.UUID
	Score      float64
}

// SearchLexical returns the top k spans of a workspace for query by BM25 with
// statistics of the whole workspace: best first, ties by content
// (pack.TieKey: text checksum, then time, newer first), then ingest order,
// never by span ids (hashes of random artifact ids). Scores do not depend on where spans live
// (head or segments, before or after compaction or restart).
func (db *DB) SearchLexical(tenant, ws, query string, k int) ([]SearchHit, error) {
	return db.SearchLexicalTerms(tenant, ws, invindex.QueryTerms(invindex.Analyze(query, nil)), k)
}

// SearchLexicalTerms is SearchLexical for analysed query terms (a context
// pack's lexical channel uses invindex.AnalyzeQuestion).
func (db *DB) SearchLexicalTerms(tenant, ws string, terms []invindex.Term, k int) ([]SearchHit, error) {
	var out []SearchHit
	err := db.View(tenant, ws, func(v *View) error {
		var err error
		out, err = resolveHits(v, invindex.Search(v.LexicalParts(), terms, k, db.opts.BM25), func(h invindex.Hit) (int, uint32, float64) {
			return h.Part, h.Doc, h.Score
		})
		return err
	})
	return out, err
}

// SearchSemantic embeds query and returns the top k spans of a workspace by
// cosine similarity of int8 vectors, exact (a flat scan's answer), best
// first, ties as SearchLexical's; spans without a vector of the engine's model are
// not candidates. An error wrapping embed.ErrUnavailable means the
// embedder cannot answer: callers fall back to lexical retrieval.
func (db *DB) SearchSemantic(ctx context.Context, tenant, ws, query string, k int) ([]SearchHit, error) {
	if db.opts.Embedder == nil {
		return nil, fmt.Errorf("engine: no embedder configured: %w", embed.ErrUnavailable)
	}
	vecs, err := db.opts.Embedder.Embed(ctx, []string{query})
	if err != nil {
		return nil, fmt.Errorf("engine: embed query: %w", err)
	}
	_, dim := db.embedModel()
	if len(vecs) != 1 || len(vecs[0]) != dim {
		return nil, fmt.Errorf("engine: embedder returned a malformed query vector: %w", embed.ErrUnavailable)
	}
	q := make([]int8, dim)
	qscale := vecindex.Quantize(vecs[0], q)
	var out []SearchHit
	err = db.View(tenant, ws, func(v *View) error {
		parts, at := v.VectorParts()
		var err error
		out, err = resolveHits(v, vecindex.Search(parts, q, qscale, k), func(h vecindex.Hit) (int, uint32, float64) {
			return at[h.Part], h.Doc, h.Score
		})
		return err
	})
	return out, err
}

func resolveHits[H any](v *View, hits []H, at func(H) (int, uint32, float64)) ([]SearchHit, error) {
	out := make([]SearchHit, len(hits))
	for i, h := range hits {
		part, doc, score := at(h)
		span, art, err := v.DocIDs(part, doc)
		if err != nil {
			return nil, fmt.Errorf("engine: search: %w", err)
		}
		out[i] = SearchHit{SpanID: span, ArtifactID: art, Score: score}
	}
	return out, nil
}

// Span returns a span of tenant by its artifact's and its own id, or
// ErrNotFound.
func (db *DB) Span(tenant string, artifactID, spanID uuid.UUID) (artifact.Span, error) {
	spans, err := db.ArtifactSpans(tenant, artifactID)
	if err != nil {
		return artifact.Span{}, err
	}
	for _, sp := range spans {
		if sp.ID == spanID {
			return sp, nil
		}
	}
	return artifact.Span{}, ErrNotFound
}
