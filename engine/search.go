package engine

import (
	"context"
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

// partSource says where the documents of one searched part live.
type partSource struct {
	seg *liveSegment // segment part: workspace ws of seg
	ws  int
	hw  *headWorkspace // head part
}

// ids returns the span and artifact ids of a document, without its text.
func (p partSource) ids(doc uint32) (span, art uuid.UUID, err error) {
	if p.hw != nil {
		ref := p.hw.refs[doc]
		return ref.ha.spans[ref.i].ID, ref.ha.a.ID, nil
	}
	span, art, ok := p.seg.SpanIDs(p.ws, int(doc))
	if !ok {
		return span, art, fmt.Errorf("segment %s: workspace %d has no span %d", p.seg.Path(), p.ws, doc)
	}
	return span, art, nil
}

// workspaceSources returns the parts holding visible data of workspace k:
// segments in Seq order, then frozen heads, then the active head. An erase
// hides a workspace's older data in a part all at once, so a part is either
// wholly visible or wholly hidden. Callers hold mu.
func (db *DB) workspaceSources(k wsKey) []partSource {
	var out []partSource
	for _, s := range db.segments {
		wi, ok := s.FindWorkspace(k.Tenant, k.Workspace)
		if !ok || db.hidden(k, s.Workspaces()[wi].MaxSeq) {
			continue
		}
		out = append(out, partSource{seg: s, ws: wi})
	}
	hs := db.headsNewestFirst()
	for i := len(hs) - 1; i >= 0; i-- {
		w := hs[i].workspaces[k]
		if w == nil || len(w.refs) == 0 || db.hidden(k, w.artifacts[len(w.artifacts)-1].a.Seq) {
			continue
		}
		out = append(out, partSource{hw: w})
	}
	return out
}

// workspaceSpansLocked counts the visible spans of workspace k (the same
// whatever the layout). Callers hold mu.
func (db *DB) workspaceSpansLocked(k wsKey) int {
	n := 0
	for _, src := range db.workspaceSources(k) {
		if src.hw != nil {
			n += len(src.hw.refs)
		} else {
			n += src.seg.Workspaces()[src.ws].Spans
		}
	}
	return n
}

// SearchLexical returns the top k spans of a workspace for query by BM25 with
// statistics of the whole workspace: best first, ties by content
// (pack.TieKey: text checksum, then time, newer first), then ingest order,
// never by the random span ids. Scores do not depend on where spans live
// (head or segments, before or after compaction or restart).
func (db *DB) SearchLexical(tenant, ws, query string, k int) ([]SearchHit, error) {
	return db.SearchLexicalTerms(tenant, ws, invindex.QueryTerms(invindex.Analyze(query, nil)), k)
}

// SearchLexicalTerms is SearchLexical for analysed query terms (a context
// pack's lexical channel uses invindex.AnalyzeQuestion).
func (db *DB) SearchLexicalTerms(tenant, ws string, terms []invindex.Term, k int) ([]SearchHit, error) {
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.leave()
	db.mu.RLock()
	defer db.mu.RUnlock()
	srcs := db.workspaceSources(wsKey{tenant, ws})
	parts := make([]invindex.Part, len(srcs))
	for i, src := range srcs {
		if src.hw != nil {
			parts[i] = src.hw.lex
		} else {
			parts[i] = src.seg.parts[src.ws].lex
		}
	}
	return resolveHits(srcs, invindex.Search(parts, terms, k, db.opts.BM25), func(h invindex.Hit) (int, uint32, float64) {
		return h.Part, h.Doc, h.Score
	})
}

// SearchSemantic embeds query and returns the top k spans of a workspace by
// cosine similarity of int8 vectors, exact (a flat scan's answer), best
// first, ties as SearchLexical's; spans without a vector of the engine's model are
// not candidates. An error wrapping vecindex.ErrUnavailable means the
// embedder cannot answer: callers fall back to lexical retrieval.
func (db *DB) SearchSemantic(ctx context.Context, tenant, ws, query string, k int) ([]SearchHit, error) {
	if db.opts.Embedder == nil {
		return nil, fmt.Errorf("engine: no embedder configured: %w", vecindex.ErrUnavailable)
	}
	vecs, err := db.opts.Embedder.Embed(ctx, []string{query})
	if err != nil {
		return nil, fmt.Errorf("engine: embed query: %w", err)
	}
	model, dim := db.embedModel()
	if len(vecs) != 1 || len(vecs[0]) != dim {
		return nil, fmt.Errorf("engine: embedder returned a malformed query vector: %w", vecindex.ErrUnavailable)
	}
	q := make([]int8, dim)
	qscale := vecindex.Quantize(vecs[0], q)
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.leave()
	db.mu.RLock()
	defer db.mu.RUnlock()
	var srcs []partSource
	var parts []vecindex.Part
	for _, src := range db.workspaceSources(wsKey{tenant, ws}) {
		var p vecindex.Part
		if src.hw != nil {
			if src.hw.vec != nil {
				p = src.hw.vec
			}
		} else if v := src.seg.parts[src.ws].vec; v != nil {
			p = v
		}
		if p == nil || p.Model() != model || p.Dim() != dim {
			continue
		}
		srcs = append(srcs, src)
		parts = append(parts, p)
	}
	return resolveHits(srcs, vecindex.Search(parts, q, qscale, k), func(h vecindex.Hit) (int, uint32, float64) {
		return h.Part, h.Doc, h.Score
	})
}

func resolveHits[H any](srcs []partSource, hits []H, at func(H) (int, uint32, float64)) ([]SearchHit, error) {
	out := make([]SearchHit, len(hits))
	for i, h := range hits {
		part, doc, score := at(h)
		span, art, err := srcs[part].ids(doc)
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
