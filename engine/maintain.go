package engine

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/engine/artmeta"
	"github.com/loci-memory/loci/engine/manifest"
	"github.com/loci-memory/loci/engine/record"
	"github.com/loci-memory/loci/internal/codec"
	"github.com/loci-memory/loci/invindex"
	"github.com/loci-memory/loci/segment"
)

// maintenanceRetry is how often failed background work is retried, and
// deferred compaction reconsidered.
const maintenanceRetry = time.Second

// compactionQuiet: while ingests arrived within this long, background
// compaction waits (unless its debt reaches twice the usual run or erased
// data waits), so bursts of writes do not share the CPU with merges.
const compactionQuiet = 2 * time.Second

func (db *DB) kickMaintenance() {
	select {
	case db.kick <- struct{}{}:
	default:
	}
}

// maintain is the background goroutine: it flushes a full head and compacts,
// retrying after failures (a full disk, say) without blocking ingest.
func (db *DB) maintain() {
	defer close(db.done)
	retry := time.NewTicker(maintenanceRetry)
	defer retry.Stop()
	for {
		select {
		case <-db.stop:
			return
		case <-db.kick:
		case <-retry.C:
			if db.maintenanceErr() == nil && !db.compactionDue() {
				continue
			}
		}
		db.maintMu.Lock()
		db.mu.RLock()
		full := db.head.bytes >= db.opts.FlushThreshold || len(db.frozen) > 0 || db.head.erasures > 0
		db.mu.RUnlock()
		var err error
		if full {
			err = db.flushLocked()
		}
		if err == nil {
			minRun := db.opts.CompactionMinSegments
			if db.writing() {
				minRun *= 2 // defer ordinary merges while writes arrive
			}
			err = db.compactLocked(minRun)
		}
		if err != nil && !errors.Is(err, ErrClosed) {
			// ErrClosed: Close stopped the embedder a flush waited for;
			// the head stays in the log for the next open.
			db.log.Error("engine: background maintenance failed; will retry", "err", err)
		}
		db.errMu.Lock()
		db.maintErr = err
		db.errMu.Unlock()
		db.maintMu.Unlock()
		if err != nil { // stalled ingests must see the failure, not wait for a flush that will not come
			db.stallMu.Lock()
			db.flushed.Broadcast()
			db.stallMu.Unlock()
		}
	}
}

// warmSketches builds, in the background after Open, the sketches that
// searches of the segments found at open will need
// (vecindex.SegVectors.BuildSketch), as a flush or compaction builds them
// for the segments it writes: otherwise the first search of each large
// workspace after a restart builds them (about 1 µs a row: 1-2 s at a
// million spans, in that request). One part at a time under maintMu, so a
// flush waits for one part at most, and a segment compacted away meanwhile
// is skipped; Close stops it between parts.
func (db *DB) warmSketches() {
	defer close(db.warmed)
	db.mu.RLock()
	segs := slices.Clone(db.segments)
	db.mu.RUnlock()
	for _, ls := range segs {
		for wi, p := range ls.parts {
			if p.vec == nil {
				continue
			}
			select {
			case <-db.stop:
				return
			default:
			}
			db.maintMu.Lock()
			db.mu.RLock()
			live := slices.Contains(db.segments, ls)
			db.mu.RUnlock()
			if live {
				w := ls.Workspace(wi)
				p.vec.BuildSketch(func() int { return db.workspaceSpans(w.Tenant, w.Workspace) })
			}
			db.maintMu.Unlock()
		}
	}
}

// writing reports whether ingests arrived within compactionQuiet.
func (db *DB) writing() bool {
	return time.Since(time.Unix(0, db.lastWrite.Load())) < compactionQuiet
}

// compactionDue reports whether deferred compaction can run now: writes
// went quiet and a run is worth merging.
func (db *DB) compactionDue() bool {
	if db.writing() {
		return false
	}
	db.mu.RLock()
	defer db.mu.RUnlock()
	lo, _ := db.planCompaction(db.segments, db.opts.CompactionMinSegments)
	return lo >= 0
}

// stallFactor: ingest waits while unflushed heads hold more than this many
// times FlushThreshold, so memory stays bounded when ingest outruns flushing.
const stallFactor = 4

// roomWait bounds how long an ingest waits for room (a var: tests shorten
// it). A head is flushed only once the background embedder has embedded
// its artifacts, so the wait can be as long as the embedding backlog:
// past roomWait the write is refused with a BackpressureError (HTTP 503
// with Retry-After) instead of holding the client without bound.
var roomWait = 10 * time.Second

// ErrBackpressure marks an ingest refused because the unflushed data is at
// its limit (BackpressureError). Nothing of the write was stored.
var ErrBackpressure = errors.New("engine: ingest refused for back-pressure")

// BackpressureError says why an ingest was refused: how much waits for a
// flush and how many artifacts for the embedder (and its last error when
// it is unavailable). It wraps ErrBackpressure.
type BackpressureError struct {
	UnflushedBytes int64
	Backlog        int   // artifacts waiting for the background embedder
	Embedder       error // the embedder's last error while it is retried, or nil
}

func (e *BackpressureError) Error() string {
	msg := fmt.Sprintf("the server is catching up: %d bytes wait to be written to segments", e.UnflushedBytes)
	if e.Backlog > 0 {
		msg += fmt.Sprintf(" and %d artifacts wait for the embedder", e.Backlog)
		if e.Embedder != nil {
			msg += ", which is unavailable" // its error is in /health and the log, not for every client
		}
	}
	return msg + "; the write was refused and nothing was stored: retry after the Retry-After seconds"
}

func (e *BackpressureError) Unwrap() error { return ErrBackpressure }

// unflushedLocked is the memory held by the active and frozen heads, and
// their artifacts waiting for the embedder. Callers hold mu.
func (db *DB) unflushedLocked() (bytes int64, backlog int) {
	bytes, backlog = db.head.bytes, db.head.unembedded
	for _, h := range db.frozen {
		bytes += h.bytes
		backlog += h.unembedded
	}
	return bytes, backlog
}

// backpressureLocked is the refusal an ingest would get now (after its
// wait), or nil when the heads are below the stall limit. Callers hold mu.
func (db *DB) backpressureLocked() *BackpressureError {
	if db.opts.DisableBackground {
		return nil
	}
	used, backlog := db.unflushedLocked()
	if used < stallFactor*db.opts.FlushThreshold {
		return nil
	}
	return &BackpressureError{UnflushedBytes: used, Backlog: backlog, Embedder: db.embedding.failure()}
}

// waitForRoom blocks an ingest while the heads are over the stall limit and
// background flushing runs to bring them down, for at most roomWait; then it
// refuses the ingest (BackpressureError). When flushing is failing it
// returns the failure at once instead of letting memory grow without bound.
func (db *DB) waitForRoom() error {
	if db.opts.DisableBackground {
		return nil
	}
	deadline := time.Now().Add(roomWait)
	// The wait below is a sync.Cond: wake it when the time is up.
	timer := time.AfterFunc(roomWait, func() {
		db.stallMu.Lock()
		db.flushed.Broadcast()
		db.stallMu.Unlock()
	})
	defer timer.Stop()
	db.stallMu.Lock()
	defer db.stallMu.Unlock()
	for {
		db.mu.RLock()
		refusal := db.backpressureLocked()
		db.mu.RUnlock()
		if refusal == nil || db.closing.Load() {
			return nil
		}
		if failing := db.maintenanceErr(); failing != nil {
			return fmt.Errorf("engine: ingest refused: %d bytes await a flush, and flushing fails: %w", refusal.UnflushedBytes, failing)
		}
		if !time.Now().Before(deadline) {
			return refusal
		}
		db.kickMaintenance()
		db.flushed.Wait()
	}
}

// Flush writes the head to a segment now and moves the WAL checkpoint past it.
func (db *DB) Flush() error {
	if err := db.enter(); err != nil {
		return err
	}
	defer db.leave()
	db.maintMu.Lock()
	defer db.maintMu.Unlock()
	return db.flushLocked()
}

// Compact flushes, then merges every run of small segments and rewrites every
// segment holding erased data, so erased bytes are gone from disk afterwards.
func (db *DB) Compact() error {
	if err := db.enter(); err != nil {
		return err
	}
	defer db.leave()
	db.maintMu.Lock()
	defer db.maintMu.Unlock()
	if err := db.flushLocked(); err != nil {
		return err
	}
	// An explicit compaction retries failed runs at once: its caller wants
	// erased bytes gone now, or the error.
	db.compactFail.ForgetAll()
	return db.compactLocked(2)
}

// flushLocked freezes the active head at a WAL rotation and writes every
// frozen head to a segment. Callers hold maintMu.
func (db *DB) flushLocked() error {
	db.mu.RLock()
	empty := db.head.records == 0
	db.mu.RUnlock()
	if !empty {
		_, err := db.wal.Rotate(func(newIndex int) {
			db.mu.Lock()
			h := db.head
			h.walIndex = newIndex
			h.ckptVersions, h.ckptRetention = db.checkpointStateLocked()
			db.frozen = append(db.frozen, h)
			db.head = newHead()
			db.mu.Unlock()
			if db.opts.Control != nil { // the swap runs between WAL batches: the snapshot matches the rotation
				db.controlSnap = db.opts.Control.SnapshotControl()
			}
		})
		if err != nil {
			return fmt.Errorf("engine: flush: rotate wal: %w", err)
		}
	}
	if db.controlSnap != nil {
		if err := db.writeControlSnapshot(db.controlSnap); err != nil {
			return fmt.Errorf("engine: flush: control snapshot: %w", err)
		}
		db.controlSnap = nil
	}
	for {
		db.mu.RLock()
		if len(db.frozen) == 0 {
			db.mu.RUnlock()
			return nil
		}
		h := db.frozen[0]
		db.mu.RUnlock()
		if err := db.waitEmbedded(h); err != nil {
			return fmt.Errorf("engine: flush: %w", err)
		}
		db.mu.RLock()
		data, err := h.segmentData(db.hidden)
		db.mu.RUnlock()
		if err != nil {
			return fmt.Errorf("engine: flush: %w", err)
		}
		if err := db.flushHead(h, data); err != nil {
			return err
		}
	}
}

// flushHead writes one frozen head as a segment and commits it in a new
// manifest whose checkpoint is past the head's WAL files.
func (db *DB) flushHead(h *head, data []segment.WorkspaceData) error {
	start := time.Now()
	m := db.manifest
	m.Segments = append([]manifest.Segment(nil), m.Segments...)
	var ls *liveSegment
	if len(data) > 0 {
		var err error
		if ls, err = db.writeSegment(&m, data); err != nil {
			return fmt.Errorf("engine: flush: %w", err)
		}
		m.Segments = append(m.Segments, ls.entry)
	}
	m.Checkpoint = h.walIndex
	// The state replay starts from is the one at the rotation, when the WAL
	// files before h.walIndex held exactly the records applied: records
	// applied since are replayed on top of it. A later snapshot would have
	// them applied twice, out of order (an older retention applied to a
	// newer artifact time erases what the live engine kept).
	m.Versions, m.Retention = h.ckptVersions, h.ckptRetention
	if h.maxSeq > m.LastSeq {
		m.LastSeq = h.maxSeq
	}
	committed, err := db.commitManifest(&m, ls)
	if !committed {
		return fmt.Errorf("engine: flush: %w", err)
	}
	db.mu.Lock()
	if ls != nil {
		db.segments = append(db.segments, ls)
		if err := db.receipts.place(ls); err != nil {
			db.log.Error("engine: indexing receipts of a new segment", "err", err)
		}
	}
	db.frozen = db.frozen[1:]
	if ls != nil && db.opts.TokenRows != nil {
		ls.carried.Store(db.carryTokenRows(h))
	}
	db.mu.Unlock()
	if ls != nil {
		db.tokenRows.kick()
	}
	db.stallMu.Lock()
	db.flushed.Broadcast()
	db.stallMu.Unlock()
	if err != nil {
		// The manifest is in place but maybe not durable: the WAL files it
		// checkpoints stay until a later manifest is.
		return fmt.Errorf("engine: flush: %w", err)
	}
	if err := db.wal.RemoveBefore(m.Checkpoint); err != nil {
		db.log.Warn("engine: removing checkpointed wal files failed; retried at next flush", "err", err)
	}
	db.log.Info("engine: flushed head", "artifacts", len(h.byID), "bytes", h.bytes, "wal_checkpoint", m.Checkpoint, "took", time.Since(start).Round(time.Microsecond))
	return nil
}

// workspaceSpans is about how many spans a workspace holds in the live
// segments and the heads (erasures and a compaction's inputs not
// subtracted): a hint for which sketch its parts need, nothing more.
func (db *DB) workspaceSpans(tenant, ws string) int {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return db.workspaceSpansLocked(tenant, ws)
}

// WorkspaceSpans is about how many spans a workspace holds (erasures and
// a compaction's inputs not subtracted, filters not applied): a hint for
// what a read is likely to cost, never for what it returns.
func (db *DB) WorkspaceSpans(tenant, ws string) int { return db.workspaceSpans(tenant, ws) }

// workspaceSpansLocked is workspaceSpans for callers that hold mu.
func (db *DB) workspaceSpansLocked(tenant, ws string) int {
	n := 0
	for _, h := range append([]*head{db.head}, db.frozen...) {
		if w := h.workspaces[wsKey{tenant, ws}]; w != nil {
			n += w.spans
		}
	}
	for _, ls := range db.segments {
		if wi, ok := ls.FindWorkspace(tenant, ws); ok {
			n += ls.SpanCount(wi)
		}
	}
	return n
}

// writeSegment writes and opens a new segment, taking its id from m.
func (db *DB) writeSegment(m *manifest.Manifest, data []segment.WorkspaceData) (*liveSegment, error) {
	id := m.NextSegmentID
	m.NextSegmentID++
	// Never reuse an id, even if this attempt fails. Stats and exports read
	// the manifest under mu.
	db.mu.Lock()
	db.manifest.NextSegmentID = m.NextSegmentID
	db.mu.Unlock()
	dir := filepath.Join(db.dir, segmentDir)
	info, err := segment.WriteFS(db.opts.FS, dir, id, data)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, segment.FileName(id))
	ls, err := openLiveSegment(path, manifest.Segment{ID: id, Size: info.Size, MinSeq: info.MinSeq, MaxSeq: info.MaxSeq}, db.erased)
	if err != nil {
		db.opts.FS.Remove(path) // no manifest names it: garbage
		return nil, err
	}
	// The semantic scan's sketches are built here, on the maintainer,
	// before any reader sees the segment: otherwise the first pack after
	// every flush and compaction would build them (tens of milliseconds).
	// Which sketch a part needs depends on its workspace's size (IVF).
	for wi, p := range ls.parts {
		if p.vec != nil {
			w := ls.Workspace(wi)
			p.vec.BuildSketch(func() int { return max(w.Spans, db.workspaceSpans(w.Tenant, w.Workspace)) })
		}
	}
	return ls, nil
}

// commitManifest writes m with the current tombstones that still hide data.
// m's versions and retention are the caller's: those of m's checkpoint
// (flushHead takes them at the WAL rotation; a compaction keeps the last
// manifest's), never the live ones, which may include records after it.
// committed says whether m replaced the manifest: if it did not (a full disk,
// say) the new segment is closed and its file removed, so a retry leaves no
// garbage. If m replaced it but the directory fsync failed, committed is
// true and err non-nil: m is in force, but what it made redundant must stay
// until a later manifest is durable.
func (db *DB) commitManifest(m *manifest.Manifest, added *liveSegment) (committed bool, err error) {
	db.mu.RLock()
	m.Tombstones = m.Tombstones[:0:0]
	for k, seq := range db.tombstones {
		m.Tombstones = append(m.Tombstones, manifest.Tombstone{Tenant: k.Tenant, Workspace: k.Workspace, Seq: seq})
	}
	db.mu.RUnlock()
	if err := manifest.Write(db.opts.FS, db.dir, m); err != nil && !errors.Is(err, codec.ErrRenamedNotSynced) {
		if added != nil {
			added.Close()
			if rerr := db.opts.FS.Remove(added.Path()); rerr != nil {
				db.log.Warn("engine: removing a segment no manifest names failed; removed at next open", "file", added.Path(), "err", rerr)
			}
		}
		return false, err
	} else if err != nil {
		db.setManifest(m)
		return true, err
	}
	db.setManifest(m)
	return true, nil
}

// setManifest makes m the manifest in force. The maintainer (holding
// maintMu) is the only writer and reads it without mu; Stats and exports
// read it under mu.
func (db *DB) setManifest(m *manifest.Manifest) {
	db.mu.Lock()
	db.manifest = *m
	db.mu.Unlock()
}

// compactLocked merges runs of at least minRun small contiguous segments and
// rewrites segments holding erased data, one run at a time. Merging only
// neighbours keeps segments in Seq order. A run that fails is remembered and
// its segments left alone for a while (compactionRetry), so the runs after
// it still compact and it is not retried at every maintenance tick; the
// error reports the runs that failed in this call. Callers hold maintMu.
func (db *DB) compactLocked(minRun int) error {
	var errs []error
	for {
		db.mu.RLock()
		segs := append([]*liveSegment(nil), db.segments...)
		lo, hi := db.planCompaction(segs, minRun)
		db.mu.RUnlock()
		if lo < 0 {
			return errors.Join(errs...)
		}
		err := db.compactRun(segs, lo, hi)
		db.countCompaction(err) // engine/observe.go
		if err != nil {
			ids := make([]uint64, 0, hi-lo)
			for _, s := range segs[lo:hi] {
				ids = append(ids, s.entry.ID)
			}
			wait := db.compactFail.Failed(ids, time.Now())
			db.log.Warn("engine: compaction failed; its segments are left alone for a while", "segments", ids, "retry_in", wait, "err", err)
			errs = append(errs, fmt.Errorf("engine: compaction: %w", err))
		}
	}
}

// planCompaction returns the first run segs[lo:hi] worth rewriting, or -1:
// manifest.PlanRun over the segments' sizes and erased data, leaving out
// the segments of runs whose compaction failed recently.
// Callers hold mu.
func (db *DB) planCompaction(segs []*liveSegment, minRun int) (lo, hi int) {
	erased := func(s *liveSegment) bool {
		for wi := range s.Workspaces() {
			if holdsHidden(s, wi, db.hidden) {
				return true
			}
		}
		return db.receiptsExpired(s)
	}
	plan := make([]manifest.PlanSegment, len(segs))
	for i, s := range segs {
		plan[i] = manifest.PlanSegment{ID: s.entry.ID, Size: s.entry.Size, Erased: erased(s)}
	}
	failed := db.compactFail.Blocked(plan, time.Now())
	return manifest.PlanRun(plan, failed, manifest.PlanBounds{
		MinRun:      minRun,
		MaxSegment:  db.opts.CompactionMaxBytes,
		MaxRunBytes: db.opts.CompactionMaxBytes,
	})
}

// compactRun merges segs[lo:hi] into one segment (none if everything in them
// was erased) and swaps it in.
func (db *DB) compactRun(segs []*liveSegment, lo, hi int) error {
	start := time.Now()
	run := segs[lo:hi]
	data, err := db.mergeData(run, nil)
	if err != nil {
		return err
	}
	m := db.manifest
	var ls *liveSegment
	if len(data) > 0 {
		if ls, err = db.writeSegment(&m, data); err != nil {
			return err
		}
		db.copyTokenRows(ls, run)
		defer db.releaseTokenRows(ls)
	}
	var entries []manifest.Segment
	for _, s := range segs[:lo] {
		entries = append(entries, s.entry)
	}
	if ls != nil {
		entries = append(entries, ls.entry)
	}
	for _, s := range segs[hi:] {
		entries = append(entries, s.entry)
	}
	m.Segments = entries
	committed, err := db.commitManifest(&m, ls)
	if !committed {
		return err
	}
	durable := err == nil
	db.mu.Lock()
	live := append([]*liveSegment(nil), db.segments[:lo]...)
	if ls != nil {
		live = append(live, ls)
		if err := db.receipts.place(ls); err != nil {
			db.log.Error("engine: indexing receipts of a compacted segment", "err", err)
		}
	}
	db.segments = append(live, db.segments[hi:]...)
	db.mu.Unlock()
	db.tokenRows.kick() // the new segment's rows; the old ones' files go
	// No reader holds the old segments any more: readers hold mu.RLock for
	// as long as they touch a segment, and the swap above took mu.Lock.
	var inBytes int64
	for _, s := range run {
		inBytes += s.entry.Size
		s.Close()
		if !durable { // the old manifest naming them may be what a crash leaves; the next open removes them
			continue
		}
		if err := db.opts.FS.Remove(s.Path()); err != nil {
			db.log.Warn("engine: removing compacted segment failed", "file", s.Path(), "err", err)
		}
	}
	var outBytes int64
	if ls != nil {
		outBytes = ls.entry.Size
	}
	db.log.Info("engine: compacted", "inputs", len(run), "in_bytes", inBytes, "out_bytes", outBytes, "took", time.Since(start).Round(time.Microsecond))
	return err
}

// mergeData reads the visible content of a run of segments, workspace by
// workspace in Seq order, and rebuilds each workspace's index sections: the
// BM25 postings merged from the segments' (no text is analysed again),
// vectors copied row by row (a remote embedder cannot be asked again).
// Vectors of another model than the engine's become zero vectors. With
// reembed (loci reindex), vectors are computed again from the span texts.
func (db *DB) mergeData(run []*liveSegment, reembed func(texts []string) (*vectorRows, error)) ([]segment.WorkspaceData, error) {
	type merged struct {
		wd   segment.WorkspaceData
		lex  *invindex.MemIndex
		rows *vectorRows
		meta [][]byte // ARTIFACT_META rows of wd.Artifacts
	}
	var events []*record.Feedback
	var receipts []*Receipt
	byWS := map[wsKey]*merged{}
	var order []wsKey
	// Read without mu: only maintenance (holding maintMu, as we do) closes
	// segments, and holding mu for the whole read would stall the WAL writer.
	db.mu.RLock()
	tombstones := maps.Clone(db.tombstones)
	erased := db.erased.clone() // single erased artifacts (erase_artifact.go)
	db.mu.RUnlock()
	hidden := func(k wsKey, seq uint64) bool {
		t, ok := tombstones[k]
		return ok && seq < t || erased.has(k, seq)
	}
	model, dim := db.embedModel()
	for _, s := range run {
		for wi, w := range s.Workspaces() {
			k := wsKey{w.Tenant, w.Workspace}
			m := byWS[k]
			if m == nil {
				m = &merged{wd: segment.WorkspaceData{Tenant: k.Tenant, Workspace: k.Workspace}, lex: invindex.NewMemIndex(), rows: newVectorRows(model, dim)}
				byWS[k] = m
				order = append(order, k)
			}
			// Artifacts are copied as stored entries: no decompression, no
			// decoding, no compression.
			skip := map[uuid.UUID]bool{}
			metaSec, hasMeta := s.Section(wi, segment.KindArtifactMeta)
			ord := 0
			err := s.RawArtifacts(wi, func(a *artifact.Artifact, entry []byte) error {
				defer func() { ord++ }()
				if hidden(k, a.Seq) {
					skip[a.ID] = true
					return nil
				}
				// Metadata rows are copied too (checked against the table); a
				// segment written before ARTIFACT_META existed has its
				// entries decoded once.
				var row []byte
				if hasMeta {
					r, err := artmeta.RowAt(metaSec, s.Workspace(wi).Artifacts, ord)
					if err == nil {
						_, err = artmeta.DecodeRow(r, a.ID, a.Seq)
					}
					if err != nil {
						return fmt.Errorf("segment %s: workspace %d: %w", s.Path(), wi, err)
					}
					row = bytes.Clone(r) // r points into the mapping, which compaction unmaps
				} else {
					full, err := s.Artifact(segment.Ref{WS: wi, Ordinal: ord, Seq: a.Seq})
					if err != nil {
						return err
					}
					row = artmeta.Row(full)
				}
				m.meta = append(m.meta, row)
				m.wd.Artifacts = append(m.wd.Artifacts, a)
				m.wd.Entries = append(m.wd.Entries, entry)
				return nil
			})
			evs, ferr := readFeedbackSection(s, wi)
			if ferr != nil {
				return nil, ferr
			}
			events = append(events, evs...)
			if rb, ok := s.Section(wi, segment.KindReceipts); ok {
				rs, err := decodeReceiptSection(rb)
				if err != nil {
					return nil, fmt.Errorf("segment %s: workspace %d: %w", s.Path(), wi, err)
				}
				receipts = append(receipts, rs...)
			}
			vec := s.parts[wi].vec
			if vec != nil && (vec.Model() != model || vec.Dim() != dim) {
				vec = nil
			}
			doc := 0
			var keep []bool
			if err == nil {
				err = s.Spans(wi, func(sp artifact.Span) error {
					kept := !skip[sp.ArtifactID]
					keep = append(keep, kept)
					if kept {
						m.wd.Spans = append(m.wd.Spans, sp)
						if vec != nil {
							m.rows.addFrom(vec, doc)
						} else {
							m.rows.add(nil, 0)
						}
					}
					doc++
					return nil
				})
			}
			if err == nil {
				err = m.lex.AppendIndex(s.parts[wi].lex, func(d uint32) bool { return keep[d] })
			}
			if err != nil {
				return nil, err
			}
		}
	}
	var out []segment.WorkspaceData
	for _, k := range order {
		m := byWS[k]
		if len(m.wd.Artifacts) == 0 {
			continue // its feedback, if any, is attached below
		}
		lex, err := m.lex.Sections()
		if err != nil {
			return nil, fmt.Errorf("workspace %q: %w", k.Workspace, err)
		}
		if reembed != nil {
			texts := make([]string, len(m.wd.Spans))
			for i := range m.wd.Spans {
				texts[i] = m.wd.Spans[i].Text
			}
			if m.rows, err = reembed(texts); err != nil {
				return nil, fmt.Errorf("workspace %q: %w", k.Workspace, err)
			}
		}
		if m.wd.Sections, err = withVectorSection(lexicalSections(lex), m.wd.Spans, m.rows); err != nil {
			return nil, fmt.Errorf("workspace %q: %w", k.Workspace, err)
		}
		m.wd.Sections = append(m.wd.Sections, segment.Section{Kind: segment.KindArtifactMeta, Data: artmeta.Encode(m.meta)})
		out = append(out, m.wd)
	}
	out = withFeedbackSections(out, events, hidden)
	return attachReceipts(out, db.retainedReceipts(receipts), hidden), nil
}
