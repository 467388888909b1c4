package engine

import (
	"fmt"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/engine/record"
	"github.com/loci-memory/loci/segment"
	"github.com/loci-memory/loci/wal"
)

// hidden reports whether an artifact of workspace k with sequence number seq
// was erased: with its workspace, or on its own. Callers hold mu.
func (db *DB) hidden(k wsKey, seq uint64) bool {
	return db.tombstoned(k, seq) || db.erased.has(k, seq)
}

// tombstoned reports whether the erasure of workspace k hides what was
// stored at seq. Callers hold mu.
func (db *DB) tombstoned(k wsKey, seq uint64) bool {
	t, ok := db.tombstones[k]
	return ok && seq < t
}

// heads returns the heads newest first. Callers hold mu.
func (db *DB) headsNewestFirst() []*head {
	hs := make([]*head, 0, 1+len(db.frozen))
	hs = append(hs, db.head)
	for i := len(db.frozen) - 1; i >= 0; i-- {
		hs = append(hs, db.frozen[i])
	}
	return hs
}

// findIdempotent looks up an idempotency key. Callers hold idemMu (not mu).
// A damaged entry is an error, not a miss: a miss would store a duplicate.
func (db *DB) findIdempotent(k idemKey) (*artifact.Artifact, []artifact.Span, bool, error) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	ha, s, ref, ok := db.locateKey(k)
	switch {
	case !ok:
		return nil, nil, false, nil
	case ha != nil:
		return ha.a, ha.spans, true, nil
	}
	a, err := s.Artifact(ref)
	if err != nil {
		return nil, nil, false, fmt.Errorf("engine: idempotency key %q: %w", k.key, err)
	}
	spans, err := s.ArtifactSpans(ref)
	if err != nil {
		return nil, nil, false, fmt.Errorf("engine: idempotency key %q: %w", k.key, err)
	}
	return a, spans, true, nil
}

// locateKey finds the visible artifact that holds an idempotency key, reading
// only the key indexes: in a head (ha set) or a segment. Callers hold mu.
func (db *DB) locateKey(k idemKey) (ha *headArtifact, seg *liveSegment, ref segment.Ref, ok bool) {
	for _, h := range db.headsNewestFirst() {
		if w := h.workspaces[k.ws]; w != nil {
			if ha := w.idem[k.key]; ha != nil && !db.hidden(k.ws, ha.a.Seq) {
				return ha, nil, segment.Ref{}, true
			}
		}
	}
	for i := len(db.segments) - 1; i >= 0; i-- {
		s := db.segments[i]
		ws, ok := s.FindWorkspace(k.ws.Tenant, k.ws.Workspace)
		if !ok {
			continue
		}
		if ref, ok := s.FindIdempotencyKey(ws, k.key); ok && !db.hidden(k.ws, ref.Seq) {
			return nil, s, ref, true
		}
	}
	return nil, nil, segment.Ref{}, false
}

// locate finds an artifact by id for tenant: in a head (ha set) or a segment.
// Callers hold mu.
func (db *DB) locate(tenant string, id uuid.UUID) (ha *headArtifact, seg *liveSegment, ref segment.Ref, ok bool) {
	for _, h := range db.headsNewestFirst() {
		if ha := h.byID[id]; ha != nil {
			k := wsKey{ha.a.Tenant, ha.a.Workspace}
			if ha.a.Tenant != tenant || db.hidden(k, ha.a.Seq) {
				return nil, nil, segment.Ref{}, false
			}
			return ha, nil, segment.Ref{}, true
		}
	}
	for i := len(db.segments) - 1; i >= 0; i-- {
		s := db.segments[i]
		r, found := s.FindArtifact(id)
		if !found {
			continue
		}
		w := s.Workspace(r.WS)
		if w.Tenant != tenant || db.hidden(wsKey{w.Tenant, w.Workspace}, r.Seq) {
			return nil, nil, segment.Ref{}, false
		}
		return nil, s, r, true
	}
	return nil, nil, segment.Ref{}, false
}

// artifactAndSpans returns an artifact of tenant and its spans, or
// ErrNotFound; for callers already inside enter.
func (db *DB) artifactAndSpans(tenant string, id uuid.UUID) (*artifact.Artifact, []artifact.Span, error) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	ha, s, ref, ok := db.locate(tenant, id)
	switch {
	case !ok:
		return nil, nil, ErrNotFound
	case ha != nil:
		return ha.a, append([]artifact.Span(nil), ha.spans...), nil
	}
	a, err := s.Artifact(ref)
	if err != nil {
		return nil, nil, fmt.Errorf("engine: artifact %s: %w", id, err)
	}
	spans, err := s.ArtifactSpans(ref)
	if err != nil {
		return nil, nil, fmt.Errorf("engine: spans of artifact %s: %w", id, err)
	}
	return a, spans, nil
}

// Artifact returns an artifact of tenant by id, or ErrNotFound (also for
// another tenant's id, so ids do not leak). The result must not be modified.
func (db *DB) Artifact(tenant string, id uuid.UUID) (*artifact.Artifact, error) {
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.leave()
	db.mu.RLock()
	defer db.mu.RUnlock()
	ha, s, ref, ok := db.locate(tenant, id)
	switch {
	case !ok:
		return nil, ErrNotFound
	case ha != nil:
		return ha.a, nil
	}
	a, err := s.Artifact(ref)
	if err != nil {
		return nil, fmt.Errorf("engine: artifact %s: %w", id, err)
	}
	return a, nil
}

// ArtifactSpans returns an artifact's spans in order, or ErrNotFound.
func (db *DB) ArtifactSpans(tenant string, id uuid.UUID) ([]artifact.Span, error) {
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.leave()
	db.mu.RLock()
	defer db.mu.RUnlock()
	ha, s, ref, ok := db.locate(tenant, id)
	switch {
	case !ok:
		return nil, ErrNotFound
	case ha != nil:
		return append([]artifact.Span(nil), ha.spans...), nil
	}
	spans, err := s.ArtifactSpans(ref)
	if err != nil {
		return nil, fmt.Errorf("engine: spans of artifact %s: %w", id, err)
	}
	return spans, nil
}

// WorkspaceContent returns every visible artifact of a workspace in ingest
// (Seq) order, with their spans in the same order. The answer does not depend
// on where the data lives (head, segments, before or after compaction).
func (db *DB) WorkspaceContent(tenant, ws string) ([]*artifact.Artifact, []artifact.Span, error) {
	if err := db.enter(); err != nil {
		return nil, nil, err
	}
	defer db.leave()
	db.mu.RLock()
	defer db.mu.RUnlock()
	k := wsKey{tenant, ws}
	var arts []*artifact.Artifact
	var spans []artifact.Span
	for _, s := range db.segments {
		w, ok := s.FindWorkspace(tenant, ws)
		if !ok {
			continue
		}
		skip := map[uuid.UUID]bool{}
		err := s.Artifacts(w, func(a *artifact.Artifact) error {
			if db.hidden(k, a.Seq) {
				skip[a.ID] = true
			} else {
				arts = append(arts, a)
			}
			return nil
		})
		if err == nil {
			err = s.Spans(w, func(sp artifact.Span) error {
				if !skip[sp.ArtifactID] {
					spans = append(spans, sp)
				}
				return nil
			})
		}
		if err != nil {
			return nil, nil, fmt.Errorf("engine: workspace %q: %w", ws, err)
		}
	}
	hs := db.headsNewestFirst()
	for i := len(hs) - 1; i >= 0; i-- {
		w := hs[i].workspaces[k]
		if w == nil {
			continue
		}
		for _, ha := range w.artifacts {
			if !db.hidden(k, ha.a.Seq) {
				arts = append(arts, ha.a)
				spans = append(spans, ha.spans...)
			}
		}
	}
	return arts, spans, nil
}

// EraseResult counts what an erase made unreadable.
type EraseResult struct {
	Artifacts   int
	Spans       int
	Receipts    int
	MarkedSpans int    // spans whose feedback state was dropped
	Seq         uint64 // the erase record's seq: jobs accepted before it are fenced out (IngestInput.Fence)
}

// EraseWorkspace makes every artifact and span of a workspace unreadable at
// once (durably, through the WAL); compaction then removes the bytes. The
// workspace may be written again afterwards.
func (db *DB) EraseWorkspace(tenant, ws string) (EraseResult, error) {
	if err := db.enter(); err != nil {
		return EraseResult{}, err
	}
	defer db.leave()
	if err := CheckID("ws", ws, true); err != nil {
		return EraseResult{}, err
	}
	k := wsKey{tenant, ws}
	var res EraseResult
	err := db.append(wal.Entry{Type: uint8(record.TypeEraseWorkspace), Payload: record.EncodeEraseWorkspace(tenant, ws), Apply: func(seq uint64) {
		db.mu.RLock()
		res = db.countVisible(k)
		res.Receipts = len(db.receipts.byWS[k])
		if f := db.feedback[k]; f != nil {
			res.MarkedSpans = len(f.spans)
		}
		db.mu.RUnlock()
		res.Seq = seq
		db.apply(record.TypeEraseWorkspace, seq, nil, k)
	}})
	if err != nil {
		return EraseResult{}, fmt.Errorf("engine: erase workspace: %w", err)
	}
	db.kickMaintenance()
	return res, nil
}

// countVisible counts a workspace's visible artifacts and spans. Callers hold mu.
func (db *DB) countVisible(k wsKey) EraseResult {
	var r EraseResult
	for _, h := range db.headsNewestFirst() {
		if w := h.workspaces[k]; w != nil {
			for _, ha := range w.artifacts {
				if !db.hidden(k, ha.a.Seq) {
					r.Artifacts++
					r.Spans += len(ha.spans)
				}
			}
		}
	}
	for _, s := range db.segments {
		w, ok := s.FindWorkspace(k.Tenant, k.Workspace)
		if !ok {
			continue
		}
		info := s.Workspace(w)
		if db.tombstoned(k, info.MaxSeq) {
			continue // wholly erased with its workspace
		}
		if !db.tombstoned(k, info.MinSeq) {
			// Only single artifacts may be erased here: take them off.
			r.Artifacts += info.Artifacts
			r.Spans += info.Spans
			for seq, id := range db.erased.byWS[k] {
				if seq < info.MinSeq || seq > info.MaxSeq {
					continue
				}
				if ref, ok := s.FindArtifact(id); ok && ref.WS == w && ref.Seq == seq {
					r.Artifacts--
					if sp, err := s.ArtifactSpans(ref); err == nil {
						r.Spans -= len(sp)
					}
				}
			}
			continue
		}
		// Part of this segment's data was erased before: count the rest one by one.
		s.Artifacts(w, func(a *artifact.Artifact) error {
			if !db.hidden(k, a.Seq) {
				r.Artifacts++
				if ref, ok := s.FindArtifact(a.ID); ok {
					if sp, err := s.ArtifactSpans(ref); err == nil {
						r.Spans += len(sp)
					}
				}
			}
			return nil
		})
	}
	return r
}

// ArtifactByIdempotencyKey returns the id of the tenant's artifact stored
// in ws under key, if any (asynchronous ingest checks keys before it
// accepts a job).
func (db *DB) ArtifactByIdempotencyKey(tenant, ws, key string) (uuid.UUID, bool, error) {
	if err := db.enter(); err != nil {
		return uuid.Nil, false, err
	}
	defer db.leave()
	a, _, ok, err := db.findIdempotent(idemKey{wsKey{tenant, ws}, key})
	if !ok || err != nil {
		return uuid.Nil, false, err
	}
	return a.ID, true, nil
}
