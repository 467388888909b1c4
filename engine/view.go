package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/embed"
	"github.com/loci-memory/loci/engine/manifest"
	"github.com/loci-memory/loci/invindex"
	"github.com/loci-memory/loci/text"
	"github.com/loci-memory/loci/vecindex"
)

// View is a consistent read of one workspace for retrieval (package
// retrieval): its data version, its visible parts with their lexical and
// vector indexes, the spans and artifacts behind their documents, and its
// feedback marks. It is valid only inside the function given to DB.View,
// which holds the engine's read lock; everything it returns is immutable or
// a copy, so it stays usable after the function returns, but the View itself
// must not be used then.
//
// Parts are numbered as LexicalParts returns them: segments in sequence
// order, then frozen heads, then the active head (see workspaceSources). A
// part hidden by an erasure is left out whole; a segment part holding erased
// artifacts is read through its view without them.
type View struct {
	db      *DB
	version manifest.DataVersion
	srcs    []partSource
	fb      *feedbackState
	// arts caches artifact metadata read for Doc and Span, so each
	// artifact is read once per View.
	arts map[uuid.UUID]*artifact.Artifact
}

// View calls fn with a View of workspace ws of tenant, under the engine's
// read lock: writers wait until fn returns, so fn should only read and
// copy (the packer runs after it, without the lock). fn may start
// goroutines that use the View if it waits for them before returning.
func (db *DB) View(tenant, ws string, fn func(v *View) error) error {
	if err := db.enter(); err != nil {
		return err
	}
	defer db.leave()
	db.embedding.enterForeground() // the embedder yields (embedPaced)
	defer db.embedding.leaveForeground()
	db.mu.RLock()
	defer db.mu.RUnlock()
	k := wsKey{tenant, ws}
	return fn(&View{db: db, version: db.versions[k], srcs: db.workspaceSources(k), fb: db.feedback[k],
		arts: map[uuid.UUID]*artifact.Artifact{}})
}

// DataVersion is the workspace's data version (DB.DataVersion) as the View
// sees it.
func (v *View) DataVersion() uint64 { return v.version.Seq }

// Newest is the newest visible artifact time of the workspace (Unix µs), the
// default as_of of packs: math.MinInt64 once the workspace holds no visible
// artifact, 0 when it was never written.
func (v *View) Newest() int64 { return v.version.Newest }

// Spans counts the workspace's visible spans (the same whatever the layout).
func (v *View) Spans() int {
	n := 0
	for _, src := range v.srcs {
		n += src.numDocs()
	}
	return n
}

// LexicalParts returns the BM25 index of every part, in part order.
func (v *View) LexicalParts() []invindex.Part {
	parts := make([]invindex.Part, len(v.srcs))
	for i, src := range v.srcs {
		parts[i] = src.lexPart()
	}
	return parts
}

// VectorParts returns the vectors of the parts that have vectors of the
// engine's embedder (model and dimension; another model's vectors are never
// compared), and at[i], the number of the part of parts[i]. Without an
// embedder there are none.
func (v *View) VectorParts() (parts []vecindex.Part, at []int) {
	model, dim := v.db.embedModel()
	for i, src := range v.srcs {
		p := src.vecPart()
		if p != nil && p.Model() == model && p.Dim() == dim {
			parts, at = append(parts, p), append(at, i)
		}
	}
	return parts, at
}

// DocIDs returns the span and artifact ids of document doc of part, without
// reading the span's text.
func (v *View) DocIDs(part int, doc uint32) (span, art uuid.UUID, err error) {
	return v.srcs[part].ids(doc)
}

// Doc returns the span at document doc of part and its artifact; ok is
// false when the artifact's metadata does not hold every pair of filter
// (MetadataMatches; a nil filter matches everything).
func (v *View) Doc(part int, doc uint32, filter map[string]string) (sp artifact.Span, a *artifact.Artifact, ok bool, err error) {
	src := v.srcs[part]
	if src.hw != nil {
		ref := src.hw.refs[doc]
		sp, a = ref.ha.spans[ref.i], ref.ha.a
	} else {
		if sp, err = src.seg.Span(src.ws, src.segDoc(doc)); err != nil {
			return sp, nil, false, fmt.Errorf("engine: view: %w", err)
		}
		if a, err = v.artifact(sp.ArtifactID); err != nil {
			return sp, nil, false, err
		}
	}
	return sp, a, MetadataMatches(a.Metadata, filter), nil
}

// FirstSpan returns the first span (ordinal 0) of the artifact of sp, the
// span at document doc of part (sp itself when it is the first): what a
// reader of a later span needs of its artifact's start, such as the speaker
// a chat turn's text begins with. An artifact's spans are stored together
// in ordinal order, so it is one read.
func (v *View) FirstSpan(part int, doc uint32, sp artifact.Span) (artifact.Span, error) {
	if sp.Ordinal == 0 {
		return sp, nil
	}
	src := v.srcs[part]
	if src.hw != nil {
		return src.hw.refs[doc].ha.spans[0], nil
	}
	first, err := src.seg.Span(src.ws, src.segDoc(doc)-int(sp.Ordinal))
	if err != nil {
		return first, fmt.Errorf("engine: view: %w", err)
	}
	if first.ArtifactID != sp.ArtifactID || first.Ordinal != 0 {
		return first, fmt.Errorf("engine: view: the span %d before span %s is not the first of artifact %s", sp.Ordinal, sp.ID, sp.ArtifactID)
	}
	return first, nil
}

// Span returns span spanID of artifact artID (a pinned span) and its
// artifact; ok is false when either is gone (erased, or not the tenant's)
// or the artifact does not match filter.
func (v *View) Span(artID, spanID uuid.UUID, filter map[string]string) (sp artifact.Span, a *artifact.Artifact, ok bool, err error) {
	a, err = v.artifact(artID)
	if errors.Is(err, ErrNotFound) {
		return sp, nil, false, nil
	}
	if err != nil {
		return sp, nil, false, err
	}
	if !MetadataMatches(a.Metadata, filter) {
		return sp, nil, false, nil
	}
	ha, s, ref, found := v.db.locate(a.Tenant, artID)
	if !found {
		return sp, nil, false, nil
	}
	var spans []artifact.Span
	if ha != nil {
		spans = ha.spans
	} else if spans, err = s.ArtifactSpans(ref); err != nil {
		return sp, nil, false, fmt.Errorf("engine: view: %w", err)
	}
	for _, sp := range spans {
		if sp.ID == spanID {
			return sp, a, true, nil
		}
	}
	return sp, nil, false, nil
}

// NumDocs returns the number of documents of part (LexicalParts' order).
func (v *View) NumDocs(part int) int { return v.srcs[part].numDocs() }

// DocTime returns the time (Unix µs) of the artifact of document doc of
// part, without reading the span's text: retrieval finds the spans of the
// times a query names with it.
func (v *View) DocTime(part int, doc uint32) (int64, error) {
	src := v.srcs[part]
	if src.hw != nil {
		return src.hw.refs[doc].ha.a.Timestamp, nil
	}
	_, art, err := src.ids(doc)
	if err != nil {
		return 0, fmt.Errorf("engine: view: %w", err)
	}
	a, err := v.artifact(art)
	if err != nil {
		return 0, err
	}
	return a.Timestamp, nil
}

// artifact returns an artifact's metadata by id (cached), or ErrNotFound.
// It does not check visibility: Doc's documents are visible by
// construction, and Span checks with locate.
func (v *View) artifact(id uuid.UUID) (*artifact.Artifact, error) {
	if a := v.arts[id]; a != nil {
		return a, nil
	}
	for _, h := range v.db.headsNewestFirst() {
		if ha := h.byID[id]; ha != nil {
			v.arts[id] = ha.a
			return ha.a, nil
		}
	}
	// Only the segments that hold the workspace's visible parts, newest
	// first: an artifact of the workspace is in no other (on a node of ten
	// 1M-span workspaces, searching every segment's id index was 7% of a
	// pack's CPU).
	for i := len(v.srcs) - 1; i >= 0; i-- {
		s := v.srcs[i].seg
		if s == nil {
			continue
		}
		if ref, ok := s.FindArtifact(id); ok {
			a, err := s.artifactMeta(id, ref)
			if err != nil {
				return nil, fmt.Errorf("engine: view: %w", err)
			}
			v.arts[id] = a
			return a, nil
		}
	}
	return nil, ErrNotFound
}

// Marks returns the effective feedback marks of a span of the workspace
// (zero when it has none).
func (v *View) Marks(spanID uuid.UUID) SpanMarks { return v.fb.marks(spanID) }

// Pinned returns the workspace's pinned spans, first pinned first.
func (v *View) Pinned() []uuid.UUID { return v.fb.pinned() }

// Embedder returns the engine's embedder (nil without one): it embeds span
// texts at ingest, so queries must be embedded by it too.
func (db *DB) Embedder() embed.Embedder { return db.opts.Embedder }

// TokenCounter returns the tokenizer that counted the spans' tokens.
func (db *DB) TokenCounter() text.TokenCounter { return db.opts.TokenCounter }

// BM25 returns the parameters of the lexical channel.
func (db *DB) BM25() invindex.BM25 { return db.opts.BM25 }

// Now returns the engine's clock (Options.Now).
func (db *DB) Now() time.Time { return db.opts.Now() }

// Logger returns the engine's logger.
func (db *DB) Logger() *slog.Logger { return db.log }

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
	return p.seg.Workspace(p.ws).Spans
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
		if !ok || db.tombstoned(k, s.Workspace(wi).MaxSeq) {
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
