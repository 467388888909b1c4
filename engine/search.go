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
	// view replaces a segment part's indexes while it holds erased
	// artifacts; its doc i is the segment's doc view.docs[i].
	view *partView
}

// lexPart returns the part's lexical index.
func (p partSource) lexPart() invindex.Part {
	switch {
	case p.hw != nil:
		return p.hw.lex
	case p.view != nil:
		return p.view.lex
	}
	return p.seg.parts[p.ws].lex
}

// vecPart returns the part's vectors, or nil when it has none.
func (p partSource) vecPart() vecindex.Part {
	switch {
	case p.hw != nil:
		if p.hw.vec != nil {
			return p.hw.vec
		}
	case p.view != nil:
		if p.view.vec != nil {
			return p.view.vec
		}
	case p.seg.parts[p.ws].vec != nil:
		return p.seg.parts[p.ws].vec
	}
	return nil
}

// numDocs returns the number of the part's documents.
func (p partSource) numDocs() int {
	switch {
	case p.hw != nil:
		return len(p.hw.refs)
	case p.view != nil:
		return len(p.view.docs)
	}
	return p.seg.Workspaces()[p.ws].Spans
}

// segDoc returns the segment's span number of a segment part's document.
func (p partSource) segDoc(doc uint32) int {
	if p.view != nil {
		return int(p.view.docs[doc])
	}
	return int(doc)
}

// ids returns the span and artifact ids of a document, without its text.
func (p partSource) ids(doc uint32) (span, art uuid.UUID, err error) {
	if p.hw != nil {
		ref := p.hw.refs[doc]
		return ref.ha.spans[ref.i].ID, ref.ha.a.ID, nil
	}
	span, art, ok := p.seg.SpanIDs(p.ws, p.segDoc(doc))
	if !ok {
		return span, art, fmt.Errorf("segment %s: workspace %d has no span %d", p.seg.Path(), p.ws, doc)
	}
	return span, art, nil
}

// workspaceSources returns the parts holding visible data of workspace k:
// segments in Seq order, then frozen heads, then the active head. An erase
// of the workspace hides its older data in a part all at once, so a part is
// either wholly visible or wholly hidden; a segment part holding erased
// artifacts is searched through its view without them (heads drop them when
// the erasure is applied). Callers hold mu.
func (db *DB) workspaceSources(k wsKey) []partSource {
	var out []partSource
	for _, s := range db.segments {
		wi, ok := s.FindWorkspace(k.Tenant, k.Workspace)
		if !ok || db.tombstoned(k, s.Workspaces()[wi].MaxSeq) {
			continue
		}
		src := partSource{seg: s, ws: wi}
		if s.holdsErased(wi) {
			v, err := s.view(wi)
			if err != nil {
				db.log.Error("engine: search view without erased artifacts; part left out", "err", err)
				continue
			}
			if len(v.docs) == 0 {
				continue
			}
			src.view = v
		}
		out = append(out, src)
	}
	hs := db.headsNewestFirst()
	for i := len(hs) - 1; i >= 0; i-- {
		w := hs[i].workspaces[k]
		if w == nil || len(w.refs) == 0 || db.tombstoned(k, w.artifacts[len(w.artifacts)-1].a.Seq) {
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
		n += src.numDocs()
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
		parts[i] = src.lexPart()
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
		p := src.vecPart()
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
