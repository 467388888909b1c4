package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/embed"
	"github.com/loci-memory/loci/engine/manifest"
	"github.com/loci-memory/loci/engine/record"
	"github.com/loci-memory/loci/vecindex"
	"github.com/loci-memory/loci/wal"
)

// Background embedding (Options.EmbedInBackground).
//
// An ingest is acknowledged once its artifact record is durable and lexically
// indexed; its spans enter the head with zero vectors and the artifact is
// queued. One worker takes queued artifacts in log order, embeds their spans
// in one Embed call, and appends one vectors record per artifact. Applying a
// vectors record fills the artifact's rows in the head and advances the
// workspace's data version, so a pack stays a pure function of the durable
// log: the same data version means the same vectors.
//
// A frozen head is written as a segment only when none of its artifacts is
// waiting (flushHead waits), so segments are immutable with their vectors.
// A vectors record whose artifact is already in a segment (replay after the
// flush that wrote it) changes nothing but the data version, exactly as it
// did live. After a crash, artifacts in the replayed heads without a vectors
// record are queued again.

// embedBatchSpans bounds the spans of one Embed call of the worker.
const embedBatchSpans = 256

// embedRetryBackoff is the first pause before asking an unavailable embedder
// again; each further pause is four times longer, up to embedRetryMax
// (tests shorten both).
var (
	embedRetryBackoff = 250 * time.Millisecond
	embedRetryMax     = 30 * time.Second
)

// An embedder that is unavailable (embed.ErrUnavailable: down, slow,
// rate limited, or a remote call past embedTimeout) is asked again, with
// back-off, for as long as the engine runs: the artifacts stay pending and
// the backlog grows until ingest is refused (waitForRoom). Only an embedder
// that rejects the input itself (any other error: the provider is up and
// said no, or a vector of the wrong dimension) settles an artifact as
// failed, and then only that artifact: a rejected batch is retried one
// artifact at a time.

// errEmbedderMismatch marks a data directory whose vectors are of another
// embedder than the one configured.
var errEmbedderMismatch = errors.New(`the data directory's vectors are of another embedder: start with that embedder, or rebuild the vectors with "loci reindex --embedder NAME"`)

// EmbedderNone is the recorded embedder of a lexical-only data directory.
const EmbedderNone = "none"

// embedderName is the name recorded for an embedder (EmbedderNone for nil).
func embedderName(e embed.Embedder) string {
	if e == nil {
		return EmbedderNone
	}
	return e.Model()
}

// backgroundEmbedding is the worker's state. queue is guarded by DB.mu (it
// is appended to when records are applied); the rest by its own fields.
type backgroundEmbedding struct {
	queue []pendingEmbed

	tickMu sync.Mutex
	tick   chan struct{} // closed and replaced whenever an artifact settles

	wake    chan struct{} // cap 1: work was queued
	halting chan struct{} // closed first thing in Close
	haltMu  sync.Once
	done    chan struct{} // closed when the worker returns (or never started)
	started bool

	onEmbedded atomic.Pointer[func(tenant string, id uuid.UUID)] // see DB.OnEmbedded

	foreground     atomic.Int32 // ingests and reads (Views) running now, not counting waits for room (see embedPaced)
	lastForeground atomic.Int64 // Unix ns when the latest of them ended
	waiters        atomic.Int32 // WaitEmbedded calls waiting now

	failMu  sync.Mutex
	failing error // the embedder's last error while it is retried; nil once it answers
}

// failure is the embedder's last error while it is retried, or nil.
func (b *backgroundEmbedding) failure() error {
	b.failMu.Lock()
	defer b.failMu.Unlock()
	return b.failing
}

// noteFailure records that the embedder is unavailable (err) or answers
// again (nil), for EmbeddingStatus.
func (b *backgroundEmbedding) noteFailure(err error) {
	b.failMu.Lock()
	defer b.failMu.Unlock()
	b.failing = err
}

// pendingEmbed is a queued artifact and the head that holds it.
type pendingEmbed struct {
	ha *headArtifact
	h  *head
}

func (b *backgroundEmbedding) init() {
	b.tick = make(chan struct{})
	b.wake = make(chan struct{}, 1)
	b.halting = make(chan struct{})
	b.done = make(chan struct{})
}

// changed returns a channel closed at the next settlement: an embedded
// batch, or token rows computed (tokenrows.go).
func (b *backgroundEmbedding) changed() <-chan struct{} {
	b.tickMu.Lock()
	defer b.tickMu.Unlock()
	return b.tick
}

func (b *backgroundEmbedding) signal() {
	b.tickMu.Lock()
	close(b.tick)
	b.tick = make(chan struct{})
	b.tickMu.Unlock()
}

func (b *backgroundEmbedding) halt() {
	b.haltMu.Do(func() { close(b.halting) })
}

// queueEmbedding queues a pending artifact. Callers hold mu.
func (db *DB) queueEmbedding(ha *headArtifact, h *head, live bool) {
	db.embedding.queue = append(db.embedding.queue, pendingEmbed{ha, h})
	if live {
		select {
		case db.embedding.wake <- struct{}{}:
		default:
		}
	}
}

// startEmbedding starts the worker after recovery (when queued artifacts of
// the replayed heads wait for it).
func (db *DB) startEmbedding() {
	if !db.opts.EmbedInBackground || db.opts.Embedder == nil {
		close(db.embedding.done)
		return
	}
	db.embedding.started = true
	db.embedding.wake <- struct{}{}
	go db.embedWorker()
}

// stopEmbedding waits for the worker to return; Close has halted it.
func (db *DB) stopEmbedding() {
	db.embedding.halt()
	<-db.embedding.done
}

func (db *DB) embedWorker() {
	defer close(db.embedding.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-db.embedding.halting:
			cancel()
		case <-db.embedding.done:
		}
	}()
	for {
		batch := db.takeEmbedBatch()
		if len(batch) == 0 {
			select {
			case <-db.embedding.halting:
				return
			case <-db.embedding.wake:
				continue
			}
		}
		recs := db.embedBatch(ctx, batch)
		if ctx.Err() != nil {
			return
		}
		if err := db.appendVectors(recs); err != nil {
			if errors.Is(err, ErrClosed) {
				return
			}
			// The WAL cannot write now (a full disk): put the batch back
			// and try again later; the artifacts stay pending.
			db.log.Warn("engine: writing vectors failed; will retry", "artifacts", len(recs), "err", err)
			db.mu.Lock()
			db.embedding.queue = append(batch, db.embedding.queue...)
			db.mu.Unlock()
			select {
			case <-db.embedding.halting:
				return
			case <-time.After(time.Second):
			}
		}
	}
}

// takeEmbedBatch dequeues pending artifacts, in log order, up to
// embedBatchSpans spans (at least one artifact). Artifacts no longer pending
// are skipped; ones whose workspace was erased are settled here, without a
// record: replay hides them the same way.
func (db *DB) takeEmbedBatch() []pendingEmbed {
	db.mu.Lock()
	defer db.mu.Unlock()
	q := db.embedding.queue
	var batch []pendingEmbed
	spans, settled := 0, false
	i := 0
	for ; i < len(q); i++ {
		p := q[i]
		if p.ha.embed != embedPending {
			continue
		}
		if db.hidden(wsKey{p.ha.a.Tenant, p.ha.a.Workspace}, p.ha.a.Seq) {
			p.h.settle(p.ha, embedDropped)
			settled = true
			continue
		}
		if len(batch) > 0 && spans+len(p.ha.spans) > embedBatchSpans {
			break
		}
		batch = append(batch, p)
		spans += len(p.ha.spans)
	}
	clear(q[:i])
	db.embedding.queue = q[i:]
	if len(db.embedding.queue) == 0 {
		db.embedding.queue = nil // let the old array go
	}
	if settled {
		db.embedding.signal()
	}
	return batch
}

// embedBatch embeds the batch's spans. An unavailable embedder is asked
// again until it answers or ctx ends; one that rejects the batch is asked
// artifact by artifact, and a rejected artifact's record says "no vectors".
func (db *DB) embedBatch(ctx context.Context, batch []pendingEmbed) []*record.Vectors {
	var texts []string
	for _, p := range batch {
		for i := range p.ha.spans {
			texts = append(texts, p.ha.spans[i].Text)
		}
	}
	vecs, err := db.embedRetrying(ctx, texts)
	if err != nil && ctx.Err() == nil && len(batch) > 1 {
		// One artifact's input may be what the embedder refuses: the
		// others must not fail with it.
		recs := make([]*record.Vectors, 0, len(batch))
		for i := range batch {
			recs = append(recs, db.embedBatch(ctx, batch[i:i+1])...)
		}
		return recs
	}
	if err != nil && ctx.Err() == nil {
		a := batch[0].ha.a
		db.log.Error("engine: the embedder rejected an artifact's text; it stays without vectors (lexical retrieval finds it)",
			"artifact", a.ID, "spans", len(texts), "err", err)
	}
	model, dim := db.embedModel()
	recs := make([]*record.Vectors, len(batch))
	base := 0
	for j, p := range batch {
		a := p.ha.a
		r := &record.Vectors{Tenant: a.Tenant, Workspace: a.Workspace, ArtifactID: a.ID, Spans: len(p.ha.spans)}
		if err == nil {
			r.Vecs = quantizeSpans(vecs[base:base+r.Spans], model, dim)
			if r.Vecs == nil {
				db.log.Warn("engine: embedder returned a vector of the wrong dimension; artifact stays without vectors", "artifact", a.ID, "want", dim)
			}
		}
		base += r.Spans
		recs[j] = r
	}
	return recs
}

// embedRetrying calls the embedder until it answers, rejects the input (a
// non-nil error that is not embed.ErrUnavailable), or ctx ends.
func (db *DB) embedRetrying(ctx context.Context, texts []string) ([][]float32, error) {
	backoff := embedRetryBackoff
	for attempt := 1; ; attempt++ {
		vecs, err := db.embedOnce(ctx, texts)
		if err == nil || ctx.Err() != nil || !errors.Is(err, embed.ErrUnavailable) {
			db.embedding.noteFailure(nil)
			return vecs, err
		}
		db.embedding.noteFailure(err)
		if attempt == 1 || backoff == embedRetryMax {
			db.log.Warn("engine: the embedder is unavailable; its artifacts stay pending and are retried", "texts", len(texts),
				"attempt", attempt, "next_try_in", backoff, "err", err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(backoff*4, embedRetryMax)
	}
}

// embedOnce is one Embed call. An embedder that computes in this process
// has no reason to time out (under CPU contention it is slow, not down);
// a remote one gets embedTimeout, and a call past it counts as unavailable.
func (db *DB) embedOnce(ctx context.Context, texts []string) ([][]float32, error) {
	_, local := db.opts.Embedder.(embed.InProcess)
	if !local {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, embedTimeout)
		defer cancel()
	}
	vecs, err := db.embedPaced(ctx, texts, local)
	switch {
	case err != nil && ctx.Err() == context.DeadlineExceeded && !errors.Is(err, embed.ErrUnavailable):
		err = fmt.Errorf("%w: no answer within %v: %w", embed.ErrUnavailable, embedTimeout, err)
	case err == nil && len(vecs) != len(texts):
		err = fmt.Errorf("%w: embedder returned %d vectors for %d texts", embed.ErrUnavailable, len(vecs), len(texts))
	}
	return vecs, err
}

// quantizeSpans quantizes one artifact's span vectors (nil if a vector has
// the wrong dimension).
func quantizeSpans(own [][]float32, model string, dim int) *record.SpanVectors {
	sv := &record.SpanVectors{Model: model, Dim: dim, Data: make([]int8, len(own)*dim), Scales: make([]float32, len(own))}
	for i, v := range own {
		if len(v) != dim {
			return nil
		}
		sv.Scales[i] = vecindex.Quantize(v, sv.Data[i*dim:(i+1)*dim])
	}
	return sv
}

// appendVectors writes the records as one WAL group.
func (db *DB) appendVectors(recs []*record.Vectors) error {
	if err := db.enter(); err != nil {
		return err
	}
	defer db.leave()
	entries := make([]wal.Entry, len(recs))
	for i, r := range recs {
		entries[i] = wal.Entry{
			Type:    uint8(record.TypeVectors),
			Payload: record.AppendVectors(nil, r),
			Apply:   func(seq uint64) { db.apply(record.TypeVectors, seq, nil, r) },
		}
	}
	_, err := db.wal.Append(entries...)
	return err
}

// applyVectors applies a vectors record: the artifact's rows get the vectors
// if it is in a head, has none yet, and they are of the engine's model.
// Whatever it finds, the record advances the workspace's data version.
func (db *DB) applyVectors(r *record.Vectors, seq uint64) {
	if f := db.embedding.onEmbedded.Load(); f != nil {
		defer (*f)(r.Tenant, r.ArtifactID) // runs last, after mu is released
	}
	model, dim := db.embedModel()
	db.mu.Lock()
	defer db.mu.Unlock()
	if h, ha := db.headArtifact(r.ArtifactID); ha != nil && ha.a.Tenant == r.Tenant && ha.a.Workspace == r.Workspace &&
		ha.vecs == nil && len(ha.spans) == r.Spans && (ha.embed == embedPending || ha.embed == embedNone) {
		switch {
		case r.Vecs == nil:
			h.settle(ha, embedFailed)
		case r.Vecs.Model == model && r.Vecs.Dim == dim:
			h.setVectors(ha, r.Vecs)
			h.settle(ha, embedDone)
		}
		// Vectors of another model (written before a reindex) leave it
		// pending: the worker embeds it again.
	}
	db.head.note(seq)
	db.head.bytes += int64(r.Spans) * 8
	db.touch(wsKey{r.Tenant, r.Workspace}, seq, math.MinInt64)
	db.embedding.signal()
}

// OnEmbedded registers f to hear of every vectors record applied from now
// on: f(tenant, id) runs once the artifact's vectors are readable (or the
// embedder gave up on it, or it was erased meanwhile), on the WAL writer
// goroutine, after the DB's lock is released, in log order. f must return
// quickly and must not call the DB's write methods (the WAL writer would
// wait for itself). A nil f removes the hook. Benchmarks use it to measure
// the lag from acknowledgement to embedded.
func (db *DB) OnEmbedded(f func(tenant string, id uuid.UUID)) {
	if f == nil {
		db.embedding.onEmbedded.Store(nil)
		return
	}
	db.embedding.onEmbedded.Store(&f)
}

// headArtifact finds an artifact in the active or a frozen head. Callers
// hold mu.
func (db *DB) headArtifact(id uuid.UUID) (*head, *headArtifact) {
	if ha := db.head.byID[id]; ha != nil {
		return db.head, ha
	}
	for i := len(db.frozen) - 1; i >= 0; i-- {
		if ha := db.frozen[i].byID[id]; ha != nil {
			return db.frozen[i], ha
		}
	}
	return nil, nil
}

// waitEmbedded blocks a flush until no artifact of the frozen head h waits
// for the background embedder. Callers hold maintMu.
func (db *DB) waitEmbedded(h *head) error {
	for {
		ch := db.embedding.changed()
		db.mu.RLock()
		n := h.unembedded
		db.mu.RUnlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-db.embedding.halting:
			return ErrClosed
		}
	}
}

// Embedding states of an artifact, as EmbeddingState reports them.
const (
	EmbeddingNone     = "none"     // no embedder: lexical retrieval only
	EmbeddingPending  = "pending"  // acknowledged, waiting for the background embedder
	EmbeddingEmbedded = "embedded" // its spans have vectors (or it has no spans)
	EmbeddingFailed   = "failed"   // the embedder gave up on it: lexical retrieval only
)

// EmbeddingState says whether an artifact's spans have vectors yet.
// Artifacts in segments are embedded (a head is written as a segment only
// once its artifacts are settled), or failed when their rows are zero.
func (db *DB) EmbeddingState(tenant string, id uuid.UUID) (string, error) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	ha, _, _, ok := db.locate(tenant, id)
	switch {
	case !ok:
		return "", ErrNotFound
	case db.opts.Embedder == nil:
		return EmbeddingNone, nil
	case ha == nil:
		return EmbeddingEmbedded, nil
	}
	return headEmbeddingState(ha), nil
}

func headEmbeddingState(ha *headArtifact) string {
	switch {
	case ha.embed == embedPending:
		return EmbeddingPending
	case ha.vecs != nil || len(ha.spans) == 0:
		return EmbeddingEmbedded
	}
	return EmbeddingFailed
}

// WaitEmbedded blocks until none of the tenant's artifacts ids waits for the
// background embedder, nor, with Options.TokenRows, for the token rows of
// a workspace whose rows are stored (rowsWantedLocked), or ctx ends (its
// error is returned). Unknown ids do not wait. Rows are a cache that packs
// compute when it misses, so waiting for them changes no answer; it spares
// the packs that follow the model passes (docs/pack.md § Late interaction).
func (db *DB) WaitEmbedded(ctx context.Context, tenant string, ids []uuid.UUID) error {
	if err := db.enter(); err != nil {
		return err
	}
	defer db.leave()
	db.embedding.waiters.Add(1) // a client waits for vectors: the embedder does not yield (embedPaced)
	defer db.embedding.waiters.Add(-1)
	for {
		ch := db.embedding.changed()
		waiting := false
		db.mu.RLock()
		for _, id := range ids {
			if db.indexPendingLocked(tenant, id) {
				waiting = true
				break
			}
		}
		db.mu.RUnlock()
		if !waiting {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-db.embedding.halting:
			return ErrClosed
		}
	}
}

// indexPendingLocked reports whether the tenant's artifact id waits for
// the background embedder or for its token rows (WaitEmbedded). An
// artifact flushed before its rows were computed waits for its segment's
// file; one whose rows its head had computed does not (View.TokenRows
// reads them from the segment's carried rows). Callers hold mu.
func (db *DB) indexPendingLocked(tenant string, id uuid.UUID) bool {
	rows := db.opts.TokenRows != nil && !db.opts.DisableBackground
	if _, ha := db.headArtifact(id); ha != nil {
		if ha.a.Tenant != tenant {
			return false
		}
		return ha.embed == embedPending ||
			rows && ha.rows == nil && len(ha.spans) > 0 && db.rowsWantedLocked(tenant, ha.a.Workspace)
	}
	if !rows {
		return false
	}
	_, s, ref, ok := db.locate(tenant, id)
	if !ok || s == nil {
		return false
	}
	// carried before rows, as View.TokenRows reads them.
	if c := s.carried.Load(); s.rows.Load() != nil || c != nil && c.arts[id] {
		return false
	}
	return db.rowsWantedLocked(tenant, s.Workspace(ref.WS).Workspace)
}

// EmbeddingBacklog is the number of artifacts waiting for the background
// embedder.
func (db *DB) EmbeddingBacklog() int {
	db.mu.RLock()
	defer db.mu.RUnlock()
	_, n := db.unflushedLocked()
	return n
}

// checkEmbedder refuses a data directory whose vectors are of another
// embedder than the configured one: mixing two models' vectors would make
// semantic scores meaningless without a word. The recorded embedder is the
// manifest's (directories made before it was recorded: whatever their
// segments hold), and every segment must agree with it. Unless the
// directory is opened for reindexing, a new recording is written at once.
func (db *DB) checkEmbedder() error {
	want := embedderName(db.opts.Embedder)
	_, wantDim := db.embedModel()
	if db.opts.Reindex {
		return nil
	}
	have := db.manifest.Embedder
	if have != "" && (have != want || db.manifest.EmbedderDim != wantDim) {
		return fmt.Errorf("engine: %s was indexed with embedder %q (dim %d), but the configured embedder is %q (dim %d): %w",
			db.dir, have, db.manifest.EmbedderDim, want, wantDim, errEmbedderMismatch)
	}
	for _, s := range db.segments {
		for wi, p := range s.parts {
			if p.vec == nil && s.Workspace(wi).Spans == 0 {
				continue // receipts or feedback only: nothing to embed
			}
			got, gotDim := EmbedderNone, 0
			if p.vec != nil {
				got, gotDim = p.vec.Model(), p.vec.Dim()
			}
			if got != want || gotDim != wantDim {
				return fmt.Errorf("engine: segment %s (workspace %d) holds vectors of embedder %q (dim %d), but the configured embedder is %q (dim %d): %w",
					s.Path(), wi, got, gotDim, want, wantDim, errEmbedderMismatch)
			}
		}
	}
	if have == "" {
		m := db.manifest
		m.Embedder, m.EmbedderDim = want, wantDim
		if err := manifest.Write(db.opts.FS, db.dir, &m); err != nil {
			return fmt.Errorf("engine: record the embedder in %s: %w", manifest.FileName, err)
		}
		db.manifest = m
	}
	return nil
}

// ReindexProgress reports Reindex's progress: segments rewritten of all, and
// spans embedded so far.
type ReindexProgress func(segmentsDone, segments, spans int)

// Reindex rebuilds every vector of the data directory with the configured
// embedder and records it, for a directory opened with Options.Reindex
// (loci reindex). The heads are flushed first (the background worker
// embeds what they hold), then every segment is rewritten with vectors
// computed from its span texts; one manifest then swaps in all new segments
// and the new embedder at once, so a crash leaves the old directory whole
// (the next open removes the unlisted new files) or the new one.
func (db *DB) Reindex(ctx context.Context, progress ReindexProgress) error {
	if !db.opts.Reindex {
		return errors.New("engine: Reindex needs a directory opened with Options.Reindex")
	}
	if db.opts.Embedder != nil && !db.opts.EmbedInBackground {
		return errors.New("engine: Reindex needs Options.EmbedInBackground (the heads are embedded by the worker)")
	}
	if err := db.Flush(); err != nil {
		return err
	}
	if err := db.enter(); err != nil {
		return err
	}
	defer db.leave()
	db.maintMu.Lock()
	defer db.maintMu.Unlock()
	db.mu.RLock()
	old := append([]*liveSegment(nil), db.segments...)
	db.mu.RUnlock()
	model, dim := db.embedModel()
	spans := 0
	reembed := func(texts []string) (*vectorRows, error) {
		rows := newVectorRows(model, dim)
		for lo := 0; lo < len(texts); lo += embedBatchSpans {
			chunk := texts[lo:min(lo+embedBatchSpans, len(texts))]
			vecs, err := db.opts.Embedder.Embed(ctx, chunk)
			if err == nil && len(vecs) != len(chunk) {
				err = fmt.Errorf("embedder returned %d vectors for %d texts", len(vecs), len(chunk))
			}
			if err != nil {
				return nil, err
			}
			for _, v := range vecs {
				if len(v) != dim {
					return nil, fmt.Errorf("embedder returned a vector of %d values, want %d", len(v), dim)
				}
				q := make([]int8, dim)
				rows.add(q, vecindex.Quantize(v, q))
			}
			spans += len(chunk)
		}
		return rows, nil
	}
	if db.opts.Embedder == nil {
		reembed = func([]string) (*vectorRows, error) { return nil, nil }
	}
	m := db.manifest
	var added []*liveSegment
	discard := func() {
		for _, ls := range added {
			db.releaseTokenRows(ls)
			ls.Close()
			db.opts.FS.Remove(ls.Path())
			db.removeRowFiles(ls)
		}
	}
	for i, s := range old {
		data, err := db.mergeData([]*liveSegment{s}, reembed)
		if err == nil && len(data) > 0 {
			var ls *liveSegment
			if ls, err = db.writeSegment(&m, data); err == nil {
				added = append(added, ls)
				db.reindexTokenRows(ls, s)
			}
		}
		if err != nil {
			discard()
			return fmt.Errorf("engine: reindex: segment %s: %w", s.Path(), err)
		}
		if progress != nil {
			progress(i+1, len(old), spans)
		}
	}
	m.Segments = make([]manifest.Segment, len(added))
	for i, ls := range added {
		m.Segments[i] = ls.entry
	}
	m.Embedder, m.EmbedderDim = embedderName(db.opts.Embedder), dim
	committed, err := db.commitManifest(&m, nil)
	if !committed {
		discard()
		return fmt.Errorf("engine: reindex: %w", err)
	}
	db.mu.Lock()
	db.segments = added
	for _, ls := range added {
		if perr := db.receipts.place(ls); perr != nil {
			db.log.Error("engine: indexing receipts of a reindexed segment", "err", perr)
		}
	}
	db.mu.Unlock()
	for _, ls := range added {
		db.releaseTokenRows(ls)
	}
	for _, s := range old {
		s.Close()
		if err == nil {
			db.opts.FS.Remove(s.Path())
			db.removeRowFiles(s)
		}
	}
	db.tokenRows.kick()
	return err
}

// Pacing. Acknowledgements do not wait for the embedder, but an in-process
// embedder computes on the same cores as ingest and packs: run flat out, it
// took about half the ingest rate from a burst and doubled a pack's latency
// (docs/benchmarks.md § Ingest first). So while ingests or reads (Views)
// run, or one ended within foregroundLinger, and the unflushed heads are
// below half the stall limit, the worker embeds one text at a time on one
// goroutine and then, unless a core is idle (idleCore), rests as long as
// that text took: at least about a quarter of two cores, so embedding
// keeps moving (the backlog drains at that pace under any load) while
// requests keep the rest, and up to one core when requests leave it idle
// (a trickle of ingests embeds at the pace of one core, not a quarter of
// two; docs/benchmarks.md § Paced workers do not rest beside an idle
// core). Past half the stall limit,
// or once requests have stopped, it goes back to batches on every core; an
// ingest waiting for room (waitForRoom) does not count, so an ingest held
// by the embedding backlog never slows the embedder that frees it, and
// while a client waits for vectors (WaitEmbedded, v2 ingest's
// wait_for_embedding) it does not yield at all. A remote
// embedder is not paced: it does not compute here. The vectors are the same
// either way (an embedder gives the same bits alone or batched).

// pacedChunk is how many texts the worker embeds per call between checks of
// the pacing rule when it runs unpaced.
const pacedChunk = 16

// embedPaced embeds texts, paced as above for an in-process embedder.
func (db *DB) embedPaced(ctx context.Context, texts []string, local bool) ([][]float32, error) {
	if !local {
		return db.opts.Embedder.Embed(ctx, texts)
	}
	out := make([][]float32, 0, len(texts))
	var rest *time.Timer
	defer func() {
		if rest != nil {
			rest.Stop()
		}
	}()
	for i := 0; i < len(texts); {
		j := min(len(texts), i+pacedChunk)
		paced := db.embedding.busy() && !db.pastSoftLimit()
		if paced {
			j = i + 1
		}
		t0 := time.Now()
		v, err := db.opts.Embedder.Embed(ctx, texts[i:j])
		if err != nil {
			return nil, err
		}
		out = append(out, v...)
		i = j
		if paced && i < len(texts) && !idleCore() {
			took := time.Since(t0)
			if rest == nil {
				rest = time.NewTimer(took)
			} else {
				rest.Reset(took)
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-rest.C:
			}
		}
	}
	return out, nil
}

// foregroundLinger: the embedder stays paced this long after the last
// ingest or read ended. Requests come back to back with gaps of a fraction
// of a millisecond; without it the worker, seeing none in such a gap, ran a
// batch on every core that the next request then waited behind (pack p99
// beside an embedding backlog, docs/benchmarks.md § Ingest first).
const foregroundLinger = 50 * time.Millisecond

// enterForeground and leaveForeground bracket an ingest or a read.
func (b *backgroundEmbedding) enterForeground() { b.foreground.Add(1) }

func (b *backgroundEmbedding) leaveForeground() {
	b.lastForeground.Store(time.Now().UnixNano())
	b.foreground.Add(-1)
}

// busy reports whether an ingest or a read runs, or ended within
// foregroundLinger, and nobody waits for vectors (WaitEmbedded: a client
// that asked for them is better served by the embedder at full speed).
func (b *backgroundEmbedding) busy() bool {
	if b.waiters.Load() > 0 {
		return false
	}
	return b.foreground.Load() > 0 || time.Since(time.Unix(0, b.lastForeground.Load())) < foregroundLinger
}

// idleCore reports whether a processor (GOMAXPROCS) is left idle by every
// goroutine but the caller: none runs on it and none waits to. A paced
// background worker that finds one does not rest after its text, so the
// cores requests leave idle (an ingest waiting for its fsync, a trickle of
// requests) embed rather than sleep; on cores that requests fill it keeps
// resting as long as it worked. The counts are the scheduler's own
// (runtime/metrics), read in under 100 ns (BenchmarkIdleCore); a Go
// without them reads as no idle core, the rule before it.
func idleCore() bool {
	s := idleSamples.Get().(*[2]metrics.Sample)
	defer idleSamples.Put(s)
	metrics.Read(s[:])
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return false
	}
	busy := s[0].Value.Uint64() + s[1].Value.Uint64() // the caller among them
	return busy < uint64(runtime.GOMAXPROCS(0))
}

var idleSamples = sync.Pool{New: func() any {
	return &[2]metrics.Sample{{Name: "/sched/goroutines/running:goroutines"}, {Name: "/sched/goroutines/runnable:goroutines"}}
}}

// pastSoftLimit reports whether the unflushed heads hold half the stall
// limit or more: then the embedder stops yielding to ingest.
func (db *DB) pastSoftLimit() bool {
	db.mu.RLock()
	used, _ := db.unflushedLocked()
	db.mu.RUnlock()
	return used >= stallFactor*db.opts.FlushThreshold/2
}
