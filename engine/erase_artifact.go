package engine

// Erasing one artifact. An erase artifact record (record.TypeEraseArtifact)
// names the artifact and the seq of the record that stored it. Applying it,
// in log order on the WAL writer or at replay:
//
//   - adds (workspace, seq, id) to the erased index, which DB.hidden
//     consults, so every read (by id, by idempotency key, listings, packs'
//     pinned spans, flushes, compaction) hides the artifact at once;
//   - removes the artifact from the active and frozen heads, rebuilding the
//     head workspace's indexes without its spans, so search statistics
//     never count it;
//   - advances the workspace's data version (and its newest artifact time,
//     if it was the newest), so packs change version.
//
// Segments are immutable: a segment workspace holding an erased artifact is
// searched through a view (a lexical index and vectors rebuilt without the
// erased spans, cached per segment), so BM25 statistics are those of the
// visible spans whatever the layout, and compaction rewrites the segment
// without it (holdsHidden tells it to). The erased entries ride in the
// workspace's version in the manifest until no segment holds them.

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/engine/artmeta"
	"github.com/loci-memory/loci/engine/manifest"
	"github.com/loci-memory/loci/engine/record"
	"github.com/loci-memory/loci/invindex"
	"github.com/loci-memory/loci/segment"
	"github.com/loci-memory/loci/vecindex"
	"github.com/loci-memory/loci/wal"
)

// erasedIndex holds the erased artifacts a segment may still hold, by
// workspace and seq. Guarded by DB.mu.
type erasedIndex struct {
	byWS map[wsKey]map[uint64]uuid.UUID
	gen  map[wsKey]uint64 // bumped at every change of a workspace's set: views check it
}

func newErasedIndex() *erasedIndex {
	return &erasedIndex{byWS: map[wsKey]map[uint64]uuid.UUID{}, gen: map[wsKey]uint64{}}
}

func (x *erasedIndex) add(k wsKey, e manifest.ErasedArtifact) {
	m := x.byWS[k]
	if m == nil {
		m = map[uint64]uuid.UUID{}
		x.byWS[k] = m
	}
	m[e.Seq] = e.ID
	x.gen[k]++
}

// has reports whether the artifact of k stored at seq was erased.
func (x *erasedIndex) has(k wsKey, seq uint64) bool {
	if x == nil || len(x.byWS) == 0 {
		return false
	}
	_, ok := x.byWS[k][seq]
	return ok
}

func (x *erasedIndex) dropWorkspace(k wsKey) {
	if _, ok := x.byWS[k]; ok {
		delete(x.byWS, k)
		x.gen[k]++
	}
}

// clone copies the index for a reader that works without DB.mu (compaction).
func (x *erasedIndex) clone() *erasedIndex {
	c := newErasedIndex()
	for k, m := range x.byWS {
		c.byWS[k] = maps.Clone(m)
	}
	return c
}

// heldErased is a cached answer of holdsErased, valid while the erased
// index's generation of the workspace is gen.
type heldErased struct {
	gen  uint64
	held bool
}

// holdsErased reports whether workspace wi of s holds an artifact of its
// DB's erased index. Every pack asks it of every segment, and the answer
// costs a lookup per erased artifact of the workspace, so it is kept until
// the workspace's erased set changes (pruning removes only artifacts no
// segment holds, so it changes no answer). Callers hold the DB's mu.
func (s *liveSegment) holdsErased(wi int) bool {
	x := s.erased
	if x == nil || len(x.byWS) == 0 {
		return false
	}
	info := s.Workspace(wi)
	gen := x.gen[wsKey{info.Tenant, info.Workspace}]
	s.viewMu.Lock()
	defer s.viewMu.Unlock()
	if h, ok := s.held[wi]; ok && h.gen == gen {
		return h.held
	}
	held := x.holds(s, wi)
	if s.held == nil {
		s.held = map[int]heldErased{}
	}
	s.held[wi] = heldErased{gen, held}
	return held
}

// holds reports whether workspace wi of s holds an erased artifact.
func (x *erasedIndex) holds(s *liveSegment, wi int) bool {
	if x == nil || len(x.byWS) == 0 {
		return false
	}
	info := s.Workspace(wi)
	for seq, id := range x.byWS[wsKey{info.Tenant, info.Workspace}] {
		if seq < info.MinSeq || seq > info.MaxSeq {
			continue
		}
		if r, ok := s.FindArtifact(id); ok && r.WS == wi && r.Seq == seq {
			return true
		}
	}
	return false
}

// ArtifactErasure says what erasing an artifact made unreadable.
type ArtifactErasure struct {
	Workspace string
	Spans     int
	Seq       uint64 // the erase record's seq
}

// EraseArtifact makes one artifact of tenant and its spans unreadable at
// once, durably (a WAL record applied in log order); compaction then
// removes the bytes. An id that is not the tenant's, not stored or already
// erased is ErrNotFound, and nothing is written. The artifact's
// idempotency key is free again afterwards.
func (db *DB) EraseArtifact(tenant string, id uuid.UUID) (ArtifactErasure, error) {
	if err := db.enter(); err != nil {
		return ArtifactErasure{}, err
	}
	defer db.leave()
	db.mu.RLock()
	ha, s, ref, ok := db.locate(tenant, id)
	var rec record.EraseArtifact
	var spans int
	var err error
	switch {
	case !ok:
		err = ErrNotFound
	case ha != nil:
		rec = record.EraseArtifact{Tenant: tenant, Workspace: ha.a.Workspace, ArtifactID: id, ArtifactSeq: ha.a.Seq}
		spans = len(ha.spans)
	default:
		var sp []artifact.Span
		if sp, err = s.ArtifactSpans(ref); err == nil {
			w := s.Workspace(ref.WS)
			rec = record.EraseArtifact{Tenant: tenant, Workspace: w.Workspace, ArtifactID: id, ArtifactSeq: ref.Seq}
			spans = len(sp)
		}
	}
	db.mu.RUnlock()
	if err != nil {
		return ArtifactErasure{}, err
	}
	res := ArtifactErasure{Workspace: rec.Workspace, Spans: spans}
	applied := false
	err = db.append(wal.Entry{Type: uint8(record.TypeEraseArtifact), Payload: record.EncodeEraseArtifact(&rec), Apply: func(seq uint64) {
		res.Seq = seq
		applied = db.applyEraseArtifact(&rec, seq)
	}})
	if err != nil {
		return ArtifactErasure{}, fmt.Errorf("engine: erase artifact: %w", err)
	}
	db.kickMaintenance() // flush (the WAL holds its bytes), then compaction
	if !applied {
		return ArtifactErasure{}, ErrNotFound // a concurrent erasure came first
	}
	return res, nil
}

// applyEraseArtifact applies an erase record; it reports whether it hid
// anything. An artifact that is no longer visible (erased meanwhile, or
// already compacted away before a crash replays the record) changes
// nothing, the data version included, on the live path and at replay alike.
func (db *DB) applyEraseArtifact(r *record.EraseArtifact, seq uint64) bool {
	k := wsKey{r.Tenant, r.Workspace}
	db.mu.Lock()
	ha, s, ref, ok := db.locate(r.Tenant, r.ArtifactID)
	var ts int64
	switch {
	case !ok:
	case ha != nil:
		ok = ha.a.Workspace == r.Workspace && ha.a.Seq == r.ArtifactSeq
		ts = ha.a.Timestamp
	default:
		a, err := s.artifactMeta(r.ArtifactID, ref)
		ok = err == nil && a.Workspace == r.Workspace && ref.Seq == r.ArtifactSeq
		if ok {
			ts = a.Timestamp
		}
	}
	if !ok {
		db.mu.Unlock()
		return false
	}
	e := manifest.ErasedArtifact{Seq: r.ArtifactSeq, ID: r.ArtifactID}
	db.erased.add(k, e)
	for _, h := range db.headsNewestFirst() {
		if x := h.byID[r.ArtifactID]; x != nil {
			h.dropArtifacts(k, []*headArtifact{x})
		}
	}
	db.head.erasures++ // flush soon: the WAL holds the artifact's bytes
	db.head.note(seq)
	v, exists := db.versions[k]
	if !exists {
		v = manifest.DataVersion{Tenant: k.Tenant, Workspace: k.Workspace, Newest: math.MinInt64}
	}
	list := append(slices.Clip(v.Erased), e) // a new array: manifest.DataVersion values are copied
	slices.SortFunc(list, func(a, b manifest.ErasedArtifact) int { return cmp.Compare(a.Seq, b.Seq) })
	v.Erased = list
	db.versions[k] = v
	db.touch(k, seq, math.MinInt64)
	if v := db.versions[k]; v.Newest == ts {
		v.Newest = db.newestVisibleLocked(k)
		db.versions[k] = v
	}
	db.pruneErased()
	db.mu.Unlock()
	db.embedding.signal() // a queued artifact is dropped
	return true
}

// newestVisibleLocked returns the newest timestamp of k's visible artifacts
// (math.MinInt64: none). Callers hold mu.
func (db *DB) newestVisibleLocked(k wsKey) int64 {
	newest := int64(math.MinInt64)
	err := db.eachArtifactMeta(k, func(a *artifact.Artifact) error {
		newest = max(newest, a.Timestamp)
		return nil
	})
	if err != nil {
		db.log.Error("engine: newest artifact time after an erasure", "workspace", k.Workspace, "err", err)
	}
	return newest
}

// pruneErased forgets erased artifacts no segment holds any more (they were
// compacted away, or erased before they reached one). Not while a head is
// being flushed: its segment may still bring one in. Callers hold mu.Lock.
func (db *DB) pruneErased() {
	if len(db.frozen) > 0 || len(db.erased.byWS) == 0 {
		return
	}
	for k, m := range db.erased.byWS {
		v := db.versions[k]
		var keep []manifest.ErasedArtifact
		for _, e := range v.Erased {
			if db.segmentHolds(k, e) {
				keep = append(keep, e)
			} else {
				delete(m, e.Seq)
			}
		}
		if len(keep) != len(v.Erased) {
			v.Erased = keep
			db.versions[k] = v
		}
		if len(m) == 0 {
			delete(db.erased.byWS, k)
		}
	}
}

// segmentHolds reports whether a segment holds the erased artifact e of k.
func (db *DB) segmentHolds(k wsKey, e manifest.ErasedArtifact) bool {
	for _, s := range db.segments {
		if r, ok := s.FindArtifact(e.ID); ok && r.Seq == e.Seq {
			w := s.Workspace(r.WS)
			if w.Tenant == k.Tenant && w.Workspace == k.Workspace {
				return true
			}
		}
	}
	return false
}

// dropArtifacts removes artifacts of one workspace from a head (active or
// frozen) and rebuilds the workspace's indexes once without their spans:
// the lexical index through the section encoding and the merge compaction
// uses (the index re-indexing the rest would build), vectors copied row by
// row. So a retention cutoff that erases many artifacts rebuilds once, not
// once per artifact. The workspace is replaced, not modified, so sections a
// flush built from it stay valid.
func (h *head) dropArtifacts(k wsKey, has []*headArtifact) {
	if len(has) == 0 {
		return
	}
	drop := make(map[*headArtifact]bool, len(has))
	for _, ha := range has {
		delete(h.byID, ha.a.ID)
		h.bytes -= artifactFootprint(ha.a, ha.spans) + ha.rowBytes
		h.settle(ha, embedDropped)
		drop[ha] = true
	}
	w := h.workspaces[k]
	if w == nil {
		return
	}
	if !slices.ContainsFunc(w.artifacts, func(a *headArtifact) bool { return !drop[a] }) {
		delete(h.workspaces, k)
		return
	}
	nw := &headWorkspace{key: k, idem: map[string]*headArtifact{}, lex: invindex.NewMemIndex()}
	if w.vec != nil {
		nw.vec = vecindex.NewMemVectors(w.vec.Model(), w.vec.Dim())
	}
	keep := make([]bool, len(w.refs))
	for doc, ref := range w.refs {
		keep[doc] = !drop[ref.ha]
	}
	if err := copyLexical(nw.lex, w.lex, keep); err != nil {
		// Cannot happen for a valid index; analyze the texts again.
		nw.lex = invindex.NewMemIndex()
		for doc, ref := range w.refs {
			if keep[doc] {
				nw.lex.Add(w.lex.Key(uint32(doc)), invindex.Analyze(ref.ha.spans[ref.i].Text, nil))
			}
		}
	}
	for _, a := range w.artifacts {
		if drop[a] {
			continue
		}
		old := a.firstDoc
		a.firstDoc = uint32(len(nw.refs))
		for i := range a.spans {
			nw.refs = append(nw.refs, spanRef{a, i})
			if nw.vec != nil {
				nw.vec.AddFrom(w.vec, old+uint32(i))
			}
		}
		nw.artifacts = append(nw.artifacts, a)
		nw.indexMeta(a)
		nw.spans += len(a.spans)
		if a.a.IdempotencyKey != "" {
			nw.idem[a.a.IdempotencyKey] = a
		}
	}
	h.workspaces[k] = nw
}

// copyLexical appends to dst the docs of src for which keep is true.
func copyLexical(dst, src *invindex.MemIndex, keep []bool) error {
	secs, err := src.Sections()
	if err != nil {
		return err
	}
	seg, err := invindex.OpenSegIndex(secs, src.Key)
	if err != nil {
		return err
	}
	return dst.AppendIndex(seg, func(doc uint32) bool { return keep[doc] })
}

// partView is a segment workspace's search part without its erased spans:
// document i of lex and vec is document docs[i] of the segment workspace.
type partView struct {
	gen  uint64
	lex  *invindex.MemIndex
	vec  *vecindex.MemVectors // nil: the part has no vectors
	docs []uint32
}

// view returns workspace wi's part without the erased spans, built once per
// change of the workspace's erased set. Callers hold DB.mu (shared at least).
func (s *liveSegment) view(wi int) (*partView, error) {
	info := s.Workspace(wi)
	k := wsKey{info.Tenant, info.Workspace}
	gen := s.erased.gen[k]
	s.viewMu.Lock()
	defer s.viewMu.Unlock()
	if v := s.views[wi]; v != nil && v.gen == gen {
		return v, nil
	}
	erasedIDs := map[uuid.UUID]bool{}
	for _, id := range s.erased.byWS[k] {
		erasedIDs[id] = true
	}
	n := s.SpanCount(wi)
	keep := make([]bool, n)
	v := &partView{gen: gen, lex: invindex.NewMemIndex()}
	for doc := range keep {
		_, art, ok := s.SpanIDs(wi, doc)
		if !ok {
			return nil, fmt.Errorf("segment %s: workspace %d has no span %d", s.Path(), wi, doc)
		}
		if keep[doc] = !erasedIDs[art]; keep[doc] {
			v.docs = append(v.docs, uint32(doc))
		}
	}
	p := s.parts[wi]
	if err := v.lex.AppendIndex(p.lex, func(doc uint32) bool { return keep[doc] }); err != nil {
		return nil, fmt.Errorf("segment %s: workspace %d: %w", s.Path(), wi, err)
	}
	if p.vec != nil {
		v.vec = vecindex.NewMemVectors(p.vec.Model(), p.vec.Dim())
		for _, doc := range v.docs {
			v.vec.AddFrom(p.vec, doc)
		}
	}
	if s.views == nil {
		s.views = map[int]*partView{}
	}
	s.views[wi] = v
	return v, nil
}

// eachArtifactMeta calls fn with the metadata of every visible artifact of
// k (Payload may be set for head artifacts; fn must not modify it): segments
// in seq order, then frozen heads, then the active head, so in seq order.
// Callers hold mu.
func (db *DB) eachArtifactMeta(k wsKey, fn func(a *artifact.Artifact) error) error {
	for _, s := range db.segments {
		wi, ok := s.FindWorkspace(k.Tenant, k.Workspace)
		if !ok {
			continue
		}
		info := s.Workspace(wi)
		if db.tombstoned(k, info.MaxSeq) {
			continue
		}
		if err := segmentMeta(s, wi, func(a *artifact.Artifact) error {
			if db.hidden(k, a.Seq) {
				return nil
			}
			return fn(a)
		}); err != nil {
			return fmt.Errorf("engine: workspace %q: %w", k.Workspace, err)
		}
	}
	hs := db.headsNewestFirst()
	for i := len(hs) - 1; i >= 0; i-- {
		w := hs[i].workspaces[k]
		if w == nil {
			continue
		}
		for _, ha := range w.artifacts {
			if db.hidden(k, ha.a.Seq) {
				continue
			}
			if err := fn(ha.a); err != nil {
				return err
			}
		}
	}
	return nil
}

// segmentMeta calls fn with the metadata of every artifact of workspace wi
// of s in seq order, from its ARTIFACT_META rows (no decompression), or
// decoding the entries of a segment written before that section existed.
func segmentMeta(s *liveSegment, wi int, fn func(a *artifact.Artifact) error) error {
	sec, ok := s.Section(wi, segment.KindArtifactMeta)
	if !ok {
		return s.Artifacts(wi, func(a *artifact.Artifact) error {
			a.Payload = nil
			return fn(a)
		})
	}
	n := s.Workspace(wi).Artifacts
	for ord := 0; ord < n; ord++ {
		row, err := artmeta.RowAt(sec, n, ord)
		if err != nil {
			return fmt.Errorf("segment %s: workspace %d: %w", s.Path(), wi, err)
		}
		a, _, err := artifact.DecodeArtifact(row)
		if err != nil {
			return fmt.Errorf("segment %s: workspace %d: ARTIFACT_META row %d: %w", s.Path(), wi, ord, err)
		}
		if err := fn(&a); err != nil {
			return err
		}
	}
	return nil
}
