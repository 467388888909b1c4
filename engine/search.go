package engine

import (
	"fmt"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
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
// (artifact.TieKey: text checksum, then time, newer first), then ingest order,
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

// SearchSemantic returns the top k spans of a workspace by cosine
// similarity to the query vector q (int8 codes with scale qscale, as
// vecindex.Quantize makes them from an embedding by the engine's
// embedder), best first, ties as SearchLexical's; spans without a vector
// of the engine's model are not candidates. The scan is exact, or IVF for
// a workspace as large as the vecindex policy says (vecindex.SearchAuto):
// either way the answer does not depend on the layout. q must have the
// embedder's dimension (none without an embedder: no span is a candidate
// then). Embedding the query is
// retrieval's (retrieval.SearchSemantic): the engine embeds only what it
// stores.
func (db *DB) SearchSemantic(tenant, ws string, q []int8, qscale float32, k int) ([]SearchHit, error) {
	if _, dim := db.embedModel(); len(q) != dim {
		return nil, fmt.Errorf("engine: semantic search: query vector of %d values, want %d", len(q), dim)
	}
	var out []SearchHit
	err := db.View(tenant, ws, func(v *View) error {
		parts, at := v.VectorParts()
		var err error
		out, err = resolveHits(v, vecindex.SearchAuto(parts, v.Spans(), q, qscale, k), func(h vecindex.Hit) (int, uint32, float64) {
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
