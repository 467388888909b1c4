// Package engine is Loci's storage engine: it owns every piece of durable state.
// Writes go to the WAL (group commit), are applied to an in-memory head in log
// order, and the head is flushed to immutable mmap'd segments listed by an
// atomically replaced manifest. Recovery is manifest + WAL replay. Background
// compaction merges small segments and purges erased workspaces.
package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/embed"
	"github.com/loci-memory/loci/engine/artmeta"
	"github.com/loci-memory/loci/engine/manifest"
	"github.com/loci-memory/loci/engine/record"
	"github.com/loci-memory/loci/invindex"
	"github.com/loci-memory/loci/segment"
	"github.com/loci-memory/loci/text"
	"github.com/loci-memory/loci/vfs"
	"github.com/loci-memory/loci/wal"
)

// Random ids (artifacts, jobs) come from uuid's buffered pool, enabled
// once before anything runs: enabling it writes a global that every
// uuid.New reads, so doing it in Open raced with ids being drawn (several
// engines opened while requests are served, in cluster mode).
func init() { uuid.EnableRandPool() }

// Options configures a DB. Zero fields take production defaults, except
// the embedder: the engine knows no concrete embedder, so the caller
// chooses one (Embedder) or none (NoEmbedder), and Open refuses neither.
type Options struct {
	// Sync is the WAL fsync policy. SyncAlways (the default) makes every
	// acknowledged write durable; the others are for benchmarks only.
	Sync wal.SyncPolicy
	// SyncReceipts makes StoreReceipt return only once its receipt is
	// fsynced. By default (false) a receipt is written to the WAL file and
	// applied before StoreReceipt returns, and fsynced right after
	// (wal.Log.AppendDeferred): the fsync is off a pack's path. A process
	// crash cannot lose it (the bytes are in the file); a power failure
	// before that fsync loses that receipt only, and the same request on
	// the same data version stores it again under the same id.
	SyncReceipts bool
	// WALFileSize rotates WAL files at this size (default 64 MiB).
	WALFileSize int64
	// FlushThreshold flushes the head to a segment once its in-memory size
	// reaches this many bytes (default 64 MiB).
	FlushThreshold int64
	// CompactionMinSegments merges a run of at least this many small segments (default 4).
	CompactionMinSegments int
	// CompactionMaxBytes: segments at least this large are not merged further,
	// unless they hold erased data, and a merged run's inputs total at most
	// this much (default 512 MiB).
	CompactionMaxBytes int64
	// DisableBackground turns off automatic flushes and compactions (tests and
	// tools call Flush and Compact themselves).
	DisableBackground bool
	// TokenCounter counts span tokens at indexing and pack tokens (default:
	// the exact o200k_base BPE counter, text.O200kBase).
	TokenCounter text.TokenCounter
	// Embedder embeds span texts at ingest; its model names the vectors
	// stored. NoEmbedder turns the semantic channel off. One of the two is
	// required (cmd/loci chooses, by --embedder).
	Embedder   embed.Embedder
	NoEmbedder bool
	// EmbedInBackground acknowledges ingests once they are durable and
	// lexically indexed, and embeds their spans on a background worker that
	// writes the vectors to the WAL as records of their own (each advances
	// the workspace's data version). Off: spans are embedded on the
	// ingesting goroutine and the vectors travel in the artifact record.
	EmbedInBackground bool
	// Reindex opens a directory whose vectors are of another embedder than
	// Embedder, for DB.Reindex (loci reindex). Otherwise Open refuses it.
	Reindex bool
	// BM25 parameters of the lexical channel (default invindex.DefaultBM25).
	BM25 invindex.BM25
	// Logger receives recovery and maintenance messages (default slog.Default()).
	Logger *slog.Logger
	// Now returns the current time (default time.Now); ingest uses it for
	// default timestamps.
	Now func() time.Time
	// Control is the service's control-plane state (tenants, keys, usage,
	// jobs), made durable through the WAL and snapshotted at flushes. Nil:
	// none; a data directory holding control state then refuses to open.
	Control ControlState
	// FS is the file system the WAL, segments, manifest and CONTROL are
	// written through (default vfs.Default, the OS); tests put a strict or
	// error-injecting one here.
	FS vfs.FS
	// ReceiptsPerWorkspace is the receipt retention: each workspace keeps
	// its newest this many receipts (by seq); older ones are no longer
	// served and compaction drops them (default DefaultReceiptsPerWorkspace).
	ReceiptsPerWorkspace int
	// Replicated makes the engine a replica of a replicated log (cluster
	// mode): its writes go through the Replicator given to SetReplicator,
	// and its WAL takes only the log's records, at the log's sequence
	// numbers (ApplyReplicated), so every replica numbers them alike.
	// Vectors are computed by the writing node and travel in the artifact
	// record (EmbedInBackground is ignored), and an artifact or receipt
	// whose id is already stored is not stored again, so that writes
	// published twice (by two nodes) leave every replica as one would.
	Replicated bool
	// TokenRows, when set, gives every segment a file of its spans' token
	// rows, built by a background worker, for packs' late interaction
	// (View.TokenRows; engine/tokenrows.go). Nil: none.
	TokenRows TokenRower
	// TokenRowsMaxWorkspaceSpans, when positive, limits the rows the worker
	// computes to the spans of workspaces that hold at most this many spans
	// when it reaches them; the others' documents are stored empty (not
	// stored: a pack that asks computes them). Packs run late interaction
	// by default only in such workspaces (retrieval.PackRequest.LateMaxSpans),
	// so large workspaces do not pay the rows' disk and model passes. The
	// worker counts as workspaceSpans does (erasures not subtracted until a
	// compaction), a pack counts visible spans: the two may differ near the
	// limit, which costs such a pack model passes, never another answer.
	TokenRowsMaxWorkspaceSpans int
	// WALRetryInterval is how often a WAL whose writes failed (a full disk)
	// checks, while idle, whether it can write again (default 1s).
	WALRetryInterval time.Duration
}

func (o *Options) setDefaults() {
	if o.WALFileSize <= 0 {
		o.WALFileSize = 64 << 20
	}
	if o.FlushThreshold <= 0 {
		o.FlushThreshold = 64 << 20
	}
	if o.CompactionMinSegments < 2 {
		o.CompactionMinSegments = 4
	}
	if o.CompactionMaxBytes <= 0 {
		o.CompactionMaxBytes = 512 << 20
	}
	if o.ReceiptsPerWorkspace <= 0 {
		o.ReceiptsPerWorkspace = DefaultReceiptsPerWorkspace
	}
	if o.TokenCounter == nil {
		o.TokenCounter = text.O200kBase()
	}
	if o.NoEmbedder {
		o.Embedder = nil
	}
	if o.Replicated {
		o.EmbedInBackground = false
	}
	if o.BM25 == (invindex.BM25{}) {
		o.BM25 = invindex.DefaultBM25
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.FS == nil {
		o.FS = vfs.Default
	}
}

// errNoEmbedderChosen is Open's answer to Options that name no embedder:
// a programming error, not a state of the data directory.
var errNoEmbedderChosen = errors.New("engine: no embedder chosen: set Options.Embedder, or Options.NoEmbedder for lexical retrieval only")

// Errors callers test for.
var (
	ErrClosed   = errors.New("engine: closed")
	ErrNotFound = errors.New("not found")
)

// InvalidError is bad input: nothing was changed. Field names the offending field.
type InvalidError struct {
	Field  string
	Reason string
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Reason }

const (
	walDir     = manifest.WALDir
	segmentDir = manifest.SegmentDir
)

// DB is an open data directory. All methods are safe for concurrent use.
type DB struct {
	// Maintenance counts (MaintenanceCounts) and the compaction runs that
	// failed and wait before they are planned again (engine/manifest/plan.go).
	maint       maintenanceCounters
	compactFail manifest.FailedRuns

	dir  string
	opts Options
	log  *slog.Logger
	lock *os.File
	wal  *wal.Log
	repl atomic.Pointer[Replicator] // replicated mode: where writes go (SetReplicator)

	// mu guards the read state below. The WAL writer applies records under
	// mu.Lock; nothing may hold mu while waiting for the WAL.
	mu         sync.RWMutex
	head       *head
	frozen     []*head        // flushing heads, oldest first
	segments   []*liveSegment // ascending Seq order
	tombstones map[wsKey]uint64
	erased     *erasedIndex                   // erased artifacts a segment may still hold (erase_artifact.go)
	feedback   map[wsKey]*feedbackState       // effective feedback state per workspace
	versions   map[wsKey]manifest.DataVersion // data version and newest artifact time per workspace
	retention  map[wsKey]manifest.Retention   // retention days and cutoff per workspace (retention.go)
	receipts   *receiptStore
	manifest   manifest.Manifest // last written

	// controlSnap is a control snapshot taken at a WAL rotation and not yet
	// written; no checkpoint may pass that rotation before it is. Guarded by maintMu.
	controlSnap []byte

	idemMu   sync.Mutex
	inflight map[idemKey]*inflightIngest

	// maintMu serialises flushes and compactions (and the manifest writes they make).
	maintMu sync.Mutex

	errMu    sync.Mutex // guards maintErr alone, so it can be read during a flush
	maintErr error      // last background failure, reported by Health

	// flushed is broadcast after every flush, waking ingests stalled by a
	// head that outgrew the flusher (see waitForRoom).
	stallMu sync.Mutex
	flushed *sync.Cond

	// The close gate: operations count themselves in (enter) and out
	// (leave); Close marks the DB closed and waits for the count to drop to
	// zero. Unlike a RWMutex held shared, entering twice in one call chain
	// cannot deadlock against a waiting Close.
	gateMu  sync.Mutex
	closed  bool
	ops     int         // operations in flight
	idle    *sync.Cond  // broadcast when ops drops to zero after close
	closing atomic.Bool // set first thing in Close, so stalled ingests give up

	lastWrite atomic.Int64 // Unix ns of the latest ingest, for deferring compaction

	embedding backgroundEmbedding // see embedder.go
	tokenRows tokenRowWorker      // see tokenrows.go

	kick   chan struct{} // wakes the background maintainer
	stop   chan struct{}
	done   chan struct{}
	warmed chan struct{} // closed when warmSketches has returned
}

type liveSegment struct {
	*segment.Segment
	entry manifest.Segment
	parts []segParts // per workspace of the segment

	// erased is the owning DB's index of erased artifacts (nil outside a
	// DB); views caches this segment's search parts without them.
	erased *erasedIndex
	viewMu sync.Mutex
	views  map[int]*partView
	held   map[int]heldErased // holdsErased's answers per workspace, by generation

	// meta caches artifact metadata (payload dropped) read at pack time:
	// segments are immutable, so entries never go stale. Capped, not evicted.
	metaMu sync.Mutex
	meta   map[uuid.UUID]*artifact.Artifact
	// metaIdx holds each workspace's metadata index (metaIndex), built on
	// the first pack that filters by metadata.
	metaIdx map[int]metaDocs
	// timeIdx holds each workspace's artifacts by time (timeIndex), built
	// on the first pack with a since/until window.
	timeIdx map[int]timeRuns
	// rows is the segment's token-row file once the worker has opened it
	// (tokenrows.go); closed with the segment.
	rows atomic.Pointer[segmentRows]
	// carried holds, by span id, the rows the flushed head had computed
	// for this segment's spans, until rows is open: packs read them there
	// meanwhile (View.TokenRows), rather than compute them at query time
	// while the file waits for the worker. Immutable once set.
	carried atomic.Pointer[carriedRows]
}

// carriedRows are the token rows a flushed head had computed, handed to
// its segment (carryTokenRows).
type carriedRows struct {
	spans map[uuid.UUID][]byte // by span id; nil: a workspace without rows
	arts  map[uuid.UUID]bool   // the artifacts whose every span is in spans
	bytes int64                // the rows' size, as the head counted them
}

// Close closes the segment and its token-row file.
func (ls *liveSegment) Close() error {
	ls.closeRows()
	return ls.Segment.Close()
}

// metaCacheCap bounds a segment's metadata cache (about 200 bytes each).
const metaCacheCap = 1 << 17

// artifactMeta returns an artifact's metadata (Payload nil) by ref,
// decoding the entry once.
func (ls *liveSegment) artifactMeta(id uuid.UUID, ref segment.Ref) (*artifact.Artifact, error) {
	ls.metaMu.Lock()
	a := ls.meta[id]
	ls.metaMu.Unlock()
	if a != nil {
		return a, nil
	}
	var err error
	if sec, ok := ls.Section(ref.WS, segment.KindArtifactMeta); ok {
		// The workspace's ARTIFACT_META row: no decompression.
		var row []byte
		if row, err = artmeta.RowAt(sec, ls.Workspace(ref.WS).Artifacts, ref.Ordinal); err == nil {
			a, err = artmeta.DecodeRow(row, id, ref.Seq)
		}
		if err != nil {
			return nil, fmt.Errorf("segment %s: workspace %d: %w", ls.Path(), ref.WS, err)
		}
	} else if a, err = ls.Artifact(ref); err != nil {
		return nil, err
	}
	a.Payload = nil
	ls.metaMu.Lock()
	if ls.meta == nil {
		ls.meta = map[uuid.UUID]*artifact.Artifact{}
	}
	if len(ls.meta) < metaCacheCap {
		ls.meta[id] = a
	}
	ls.metaMu.Unlock()
	return a, nil
}

// openManifestSegments opens the segments a manifest lists, in its order,
// on every core: opening checks the checksums of the index sections, which
// reads most of a segment's pages, so a large directory's restart is bound
// by that reading. On an error it closes what it opened and returns the
// error of the first failing segment in manifest order, as a serial open
// would.
func openManifestSegments(dir string, entries []manifest.Segment, erased *erasedIndex) ([]*liveSegment, error) {
	segs := make([]*liveSegment, len(entries))
	err := eachOnCores(len(entries), func(i int) error {
		e := entries[i]
		path := filepath.Join(dir, segmentDir, segment.FileName(e.ID))
		st, err := os.Stat(path)
		switch {
		case err != nil:
			return fmt.Errorf("engine: segment listed in manifest: %w", err)
		case st.Size() != e.Size:
			return fmt.Errorf("engine: segment %s is %d bytes, manifest says %d", path, st.Size(), e.Size)
		}
		if segs[i], err = openLiveSegment(path, e, erased); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		return nil
	})
	if err != nil {
		for _, ls := range segs {
			if ls != nil {
				ls.Close()
			}
		}
		return nil, err
	}
	return segs, nil
}

// openLiveSegment opens a segment file and its index parts; erased is the
// DB's index of erased artifacts (nil outside a DB).
func openLiveSegment(path string, e manifest.Segment, erased *erasedIndex) (*liveSegment, error) {
	s, err := segment.Open(path)
	if err != nil {
		return nil, err
	}
	parts, err := openSegmentParts(s)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.ReleasePages() // setting the parts up read their term dictionaries and lengths
	return &liveSegment{Segment: s, entry: e, parts: parts, erased: erased}, nil
}

// embedModel returns the model name and dimension of the engine's embedder
// ("" and 0 without one).
func (db *DB) embedModel() (string, int) {
	if db.opts.Embedder == nil {
		return "", 0
	}
	return db.opts.Embedder.Model(), db.opts.Embedder.Dim()
}

// Open opens or creates the data directory dir. It takes an exclusive lock on
// it: a second process gets an error naming the holder.
func Open(dir string, opts Options) (*DB, error) {
	if opts.Embedder == nil && !opts.NoEmbedder {
		return nil, errNoEmbedderChosen
	}
	opts.setDefaults()
	_, statErr := opts.FS.Stat(filepath.Join(dir, segmentDir))
	if err := opts.FS.MkdirAll(filepath.Join(dir, segmentDir), 0o755); err != nil {
		return nil, fmt.Errorf("engine: create data directory: %w", err)
	}
	if errors.Is(statErr, os.ErrNotExist) { // its entry must be durable before a segment is
		if err := opts.FS.SyncDir(dir); err != nil {
			return nil, fmt.Errorf("engine: create data directory: %w", err)
		}
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	if err := removeImportStaging(dir); err != nil {
		lock.Close()
		return nil, fmt.Errorf("engine: remove an unfinished import: %w", err)
	}
	db := &DB{
		dir: dir, opts: opts, log: opts.Logger, lock: lock,
		head: newHead(), tombstones: map[wsKey]uint64{}, erased: newErasedIndex(), inflight: map[idemKey]*inflightIngest{},
		feedback: map[wsKey]*feedbackState{}, versions: map[wsKey]manifest.DataVersion{}, retention: map[wsKey]manifest.Retention{}, receipts: newReceiptStore(opts.ReceiptsPerWorkspace),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), warmed: make(chan struct{}),
	}
	db.flushed = sync.NewCond(&db.stallMu)
	db.idle = sync.NewCond(&db.gateMu)
	db.embedding.init()
	db.tokenRows.init()
	db.tokenRows.carryLimit = opts.FlushThreshold
	if err := db.recover(); err != nil {
		db.closeFiles()
		return nil, err
	}
	db.startEmbedding()
	db.startTokenRows()
	if opts.DisableBackground {
		close(db.done)
		close(db.warmed)
	} else {
		go db.maintain()
		go db.warmSketches()
		if db.head.bytes >= opts.FlushThreshold {
			db.kickMaintenance()
		}
	}
	return db, nil
}

// recover loads the manifest, opens its segments and replays the WAL.
func (db *DB) recover() error {
	m, err := manifest.Read(db.dir)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	if m == nil {
		if err := manifest.CheckMissing(db.dir); err != nil {
			return err
		}
		// A new data directory gets an empty manifest before anything else,
		// so that segment files without a manifest only ever mean damage.
		m = &manifest.Manifest{NextSegmentID: 1, Checkpoint: 1}
		if err := manifest.Write(db.opts.FS, db.dir, m); err != nil {
			return fmt.Errorf("engine: create %s: %w", manifest.FileName, err)
		}
	}
	db.manifest = *m
	for _, t := range m.Tombstones {
		db.tombstones[wsKey{t.Tenant, t.Workspace}] = t.Seq
	}
	for _, v := range m.Versions {
		k := wsKey{v.Tenant, v.Workspace}
		db.versions[k] = v
		for _, e := range v.Erased {
			db.erased.add(k, e)
		}
	}
	for _, r := range m.Retention {
		db.retention[wsKey{r.Tenant, r.Workspace}] = r
	}
	if err := db.removeOrphans(m); err != nil {
		return err
	}
	segs, err := openManifestSegments(db.dir, m.Segments, db.erased)
	if err != nil {
		return err
	}
	db.segments = segs
	if err := db.checkEmbedder(); err != nil {
		return err
	}
	if err := db.loadEvents(); err != nil {
		return err
	}
	if err := db.restoreControl(); err != nil {
		return err
	}
	db.mu.Lock()
	db.repairRetentionLocked() // on the checkpoint's state, before replay
	db.mu.Unlock()
	start := time.Now()
	var replayed int
	db.wal, err = wal.Open(filepath.Join(db.dir, walDir), m.Checkpoint, m.LastSeq+1, wal.Options{
		FileSize: db.opts.WALFileSize, Sync: db.opts.Sync, Logger: db.log, FS: db.opts.FS,
		RetryInterval: db.opts.WALRetryInterval,
	}, func(r wal.Record) error {
		replayed++
		return db.apply(record.Type(r.Type), r.Seq, r.Payload, nil)
	})
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	db.mu.Lock()
	db.pruneErased()
	db.mu.Unlock()
	db.log.Info("engine: recovered", "dir", db.dir, "segments", len(db.segments),
		"wal_records", replayed, "wal_replay", time.Since(start).Round(time.Microsecond))
	return nil
}

// removeOrphans deletes segment files the manifest does not list (written by
// a flush or compaction that crashed before its manifest) and stale temp files.
func (db *DB) removeOrphans(m *manifest.Manifest) error {
	live := map[string]bool{}
	for _, e := range m.Segments {
		live[segment.FileName(e.ID)] = true
	}
	dir := filepath.Join(db.dir, segmentDir)
	entries, err := db.opts.FS.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	removed := false
	for _, e := range entries {
		if live[e.Name()] || e.IsDir() {
			continue
		}
		db.log.Warn("engine: removing file not listed in manifest", "file", filepath.Join(dir, e.Name()))
		if err := db.opts.FS.Remove(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("engine: remove orphan: %w", err)
		}
		removed = true
	}
	if removed {
		// An orphan whose removal was lost would only be removed again, but
		// a segment id is never reused, so a stale file must not linger.
		if err := db.opts.FS.SyncDir(dir); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
	}
	db.opts.FS.Remove(filepath.Join(db.dir, manifest.FileName+".tmp"))
	return nil
}

// apply makes one durable record visible. It runs on the WAL writer (live)
// or during replay, always in log order. decoded carries the already decoded
// form on the live path so it is not decoded twice.
func (db *DB) apply(t record.Type, seq uint64, payload []byte, decoded any) error {
	switch t {
	case record.TypeArtifact:
		var ha *headArtifact
		if decoded != nil {
			ha = decoded.(*headArtifact)
		} else {
			a, spans, vecs, fence, err := record.DecodeArtifact(payload)
			if err != nil {
				return fmt.Errorf("seq %d: %w", seq, err)
			}
			ha = &headArtifact{a: a, spans: spans, vecs: vecs, fence: fence}
		}
		ha.a.Seq = seq
		model, dim := db.embedModel()
		if decoded == nil && ha.vecs != nil && (ha.vecs.Model != model || ha.vecs.Dim != dim) && !db.opts.EmbedInBackground && !db.opts.Reindex {
			return fmt.Errorf("seq %d: artifact %s has vectors of embedder %q (dim %d), not %q (dim %d): %w",
				seq, ha.a.ID, ha.vecs.Model, ha.vecs.Dim, embedderName(db.opts.Embedder), dim, errEmbedderMismatch)
		}
		db.mu.Lock()
		if db.opts.Replicated {
			if _, _, _, ok := db.locate(ha.a.Tenant, ha.a.ID); ok {
				db.mu.Unlock() // published twice: the first copy stands
				break
			}
			taken := false
			if ha.a.IdempotencyKey != "" {
				_, _, _, taken = db.locateKey(idemKey{wsKey{ha.a.Tenant, ha.a.Workspace}, ha.a.IdempotencyKey})
			}
			if taken {
				// A retry that the log stored besides the first copy (its
				// de-duplication can miss one across a leader change): the
				// first copy stands, on every replica alike, since they all
				// apply the log in one order; the appender answers with it.
				ha.keyTaken = true
				db.head.note(seq)
				db.mu.Unlock()
				break
			}
		}
		if db.fencedOut(wsKey{ha.a.Tenant, ha.a.Workspace}, ha.fence) {
			db.refuseFenced(ha, seq)
			db.mu.Unlock()
			if decoded != nil {
				db.kickMaintenance()
			}
			break
		}
		db.head.add(ha, model, dim, db.opts.EmbedInBackground)
		if ha.embed == embedPending {
			db.queueEmbedding(ha, db.head, decoded != nil)
		}
		if db.opts.TokenRows != nil {
			db.tokenRows.queue = append(db.tokenRows.queue, pendingEmbed{ha, db.head})
			if decoded != nil {
				db.tokenRows.kick()
			}
		}
		db.touch(wsKey{ha.a.Tenant, ha.a.Workspace}, seq, ha.a.Timestamp)
		db.retainLocked(wsKey{ha.a.Tenant, ha.a.Workspace}, seq, ha)
		over := db.head.bytes >= db.opts.FlushThreshold
		db.mu.Unlock()
		if over && decoded != nil {
			db.kickMaintenance()
		}
	case record.TypeEraseWorkspace:
		var k wsKey
		if decoded != nil {
			k = decoded.(wsKey)
		} else {
			tenant, ws, err := record.DecodeEraseWorkspace(payload)
			if err != nil {
				return fmt.Errorf("seq %d: %w", seq, err)
			}
			k = wsKey{tenant, ws}
		}
		db.mu.Lock()
		db.tombstones[k] = seq
		db.erased.dropWorkspace(k) // the tombstone hides them all now
		db.head.erase(k, seq)
		delete(db.feedback, k)
		delete(db.retention, k)
		db.receipts.erase(k)
		db.versions[k] = manifest.DataVersion{Tenant: k.Tenant, Workspace: k.Workspace, Seq: seq, Newest: math.MinInt64} // nothing visible: newest resets
		db.mu.Unlock()
		db.embedding.signal() // its pending artifacts are dropped
	case record.TypeEraseArtifact:
		r, ok := decoded.(*record.EraseArtifact)
		if !ok {
			var err error
			if r, err = record.DecodeEraseArtifact(payload); err != nil {
				return fmt.Errorf("seq %d: %w", seq, err)
			}
		}
		db.applyEraseArtifact(r, seq)
	case record.TypeRetention:
		r, ok := decoded.(*record.Retention)
		if !ok {
			var err error
			if r, err = record.DecodeRetention(payload); err != nil {
				return fmt.Errorf("seq %d: %w", seq, err)
			}
		}
		db.applyRetention(r, seq)
	case record.TypeVectors:
		r, ok := decoded.(*record.Vectors)
		if !ok {
			var err error
			if r, err = record.DecodeVectors(payload); err != nil {
				return fmt.Errorf("seq %d: %w", seq, err)
			}
		}
		db.applyVectors(r, seq)
	case record.TypeFeedback:
		var e *record.Feedback
		if decoded != nil {
			e = decoded.(*record.Feedback)
		} else {
			var err error
			if e, err = record.DecodeFeedback(payload); err != nil {
				return fmt.Errorf("seq %d: %w", seq, err)
			}
		}
		e.Seq = seq
		k := wsKey{e.Tenant, e.Workspace}
		db.mu.Lock()
		db.applyFeedback(k, e)
		db.head.feedback = append(db.head.feedback, e)
		db.head.note(seq)
		db.touch(k, seq, math.MinInt64)
		db.mu.Unlock()
	case record.TypeReceipt:
		var r *Receipt
		if decoded != nil {
			r = decoded.(*Receipt)
		} else {
			var err error
			if r, err = decodeReceiptRecord(payload, true); err != nil {
				return fmt.Errorf("seq %d: %w", seq, err)
			}
		}
		r.Seq = seq
		db.mu.Lock()
		if _, dup := db.receipts.byID[r.ID]; dup {
			db.mu.Unlock() // stored twice (a replicated log): the first stands
			break
		}
		db.receipts.add(r)
		db.head.receipts = append(db.head.receipts, r)
		db.head.bytes += r.footprint()
		db.head.note(seq)
		over := db.head.bytes >= db.opts.FlushThreshold
		db.mu.Unlock()
		if over && decoded != nil { // receipts fill the head like artifacts do
			db.kickMaintenance()
		}
	default:
		if isControlRecord(t) {
			return db.applyControl(t, seq, payload)
		}
		return fmt.Errorf("seq %d: unknown record type %s", seq, t)
	}
	return nil
}

// touch records a change of workspace k at seq, and an artifact time (none:
// math.MinInt64). Callers hold mu.
func (db *DB) touch(k wsKey, seq uint64, artifactTime int64) {
	v, ok := db.versions[k]
	if !ok {
		v = manifest.DataVersion{Tenant: k.Tenant, Workspace: k.Workspace, Newest: math.MinInt64}
	}
	v.Seq = seq
	if artifactTime != math.MinInt64 && (v.Newest == math.MinInt64 || artifactTime > v.Newest) {
		v.Newest = artifactTime
	}
	db.versions[k] = v
}

// Close waits for in-flight operations, stops background work, syncs the WAL
// and releases the directory. Acknowledged writes are durable before Close.
// Close does not flush: a head that could not be flushed (a full disk) stays
// in the WAL and is replayed at the next Open, so that is no reason to fail.
func (db *DB) Close() error {
	db.closing.Store(true)
	db.embedding.halt() // flushes and WaitEmbedded waiting for the worker give up
	db.tokenRows.halt()
	db.stallMu.Lock()
	db.flushed.Broadcast() // stalled ingests see closing and leave, so the wait below ends
	db.stallMu.Unlock()
	db.gateMu.Lock()
	if db.closed {
		db.gateMu.Unlock()
		return nil
	}
	db.closed = true
	for db.ops > 0 {
		db.idle.Wait()
	}
	db.gateMu.Unlock()
	if !db.opts.DisableBackground {
		close(db.stop)
	}
	<-db.done
	<-db.warmed
	db.stopEmbedding()
	<-db.tokenRows.done
	db.maintMu.Lock()
	defer db.maintMu.Unlock()
	return db.closeFiles()
}

func (db *DB) closeFiles() error {
	var errs []error
	if db.wal != nil {
		errs = append(errs, db.wal.Close())
	}
	db.mu.Lock()
	for _, s := range db.segments {
		errs = append(errs, s.Close())
	}
	db.segments = nil
	db.mu.Unlock()
	if db.lock != nil {
		errs = append(errs, db.lock.Close())
	}
	return errors.Join(errs...)
}

// enter marks an operation in flight; it fails once Close has begun.
func (db *DB) enter() error {
	db.gateMu.Lock()
	defer db.gateMu.Unlock()
	if db.closed {
		return ErrClosed
	}
	db.ops++
	return nil
}

// leave ends an operation begun by enter.
func (db *DB) leave() {
	db.gateMu.Lock()
	db.ops--
	if db.ops == 0 && db.closed {
		db.idle.Broadcast()
	}
	db.gateMu.Unlock()
}

// Dir returns the data directory.
func (db *DB) Dir() string { return db.dir }

// Health reports why the engine cannot serve writes, or nil: the WAL's last
// write failure while writes fail (wrapping the system's error, so
// errors.Is(err, syscall.ENOSPC) holds for a full disk), or the last failure
// of background flushing or compaction. Both clear by themselves once a
// write, or the retried maintenance, succeeds again.
func (db *DB) Health() error {
	if err := db.wal.Err(); err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	if err := db.maintenanceErr(); err != nil {
		return err
	}
	// Writes refused while the embedder is down do not resume by
	// themselves: that is a degraded service. (A backlog that an
	// answering embedder works off is only reported, in Stats.)
	db.mu.RLock()
	refusal := db.backpressureLocked()
	db.mu.RUnlock()
	if refusal != nil && refusal.Embedder != nil {
		return refusal
	}
	return nil
}

func (db *DB) maintenanceErr() error {
	db.errMu.Lock()
	defer db.errMu.Unlock()
	return db.maintErr
}

// Stats describes the engine's current state.
type Stats struct {
	Segments        int    `json:"segments"`
	SegmentBytes    int64  `json:"segment_bytes"`
	SketchBytes     int64  `json:"sketch_bytes"` // heap held by the semantic scan's sketches of segment vectors
	HeadBytes       int64  `json:"head_bytes"`
	HeadArtifacts   int    `json:"head_artifacts"`
	FrozenHeads     int    `json:"frozen_heads"`
	FrozenBytes     int64  `json:"frozen_bytes"`
	Tombstones      int    `json:"tombstones"`
	WALCheckpoint   int    `json:"wal_checkpoint"`
	WALCurrentIndex int    `json:"wal_current_file"`
	NextSeq         uint64 `json:"next_seq"`
	// EmbeddingBacklog counts the artifacts waiting for the background
	// embedder; EmbedderError is its last error while it is unavailable
	// and retried (empty when it answers).
	EmbeddingBacklog int    `json:"embedding_backlog"`
	EmbedderError    string `json:"embedder_error,omitempty"`
	// TokenRowsPending counts the segments without their token-row file
	// and the head artifacts whose rows are still to compute, those being
	// computed included (Options.TokenRows; omitted without).
	TokenRowsPending int `json:"token_rows_pending,omitempty"`
	// IngestRefused says why writes are refused for back-pressure now
	// (waitForRoom), empty when they are accepted.
	IngestRefused string `json:"ingest_refused,omitempty"`
}

// Add adds o's counts to s (several engines of one node, cluster mode);
// the WAL positions, which do not add up, become the larger of the two.
func (s *Stats) Add(o Stats) {
	s.Segments += o.Segments
	s.SegmentBytes += o.SegmentBytes
	s.SketchBytes += o.SketchBytes
	s.HeadBytes += o.HeadBytes
	s.HeadArtifacts += o.HeadArtifacts
	s.FrozenHeads += o.FrozenHeads
	s.FrozenBytes += o.FrozenBytes
	s.Tombstones += o.Tombstones
	s.WALCheckpoint = max(s.WALCheckpoint, o.WALCheckpoint)
	s.WALCurrentIndex = max(s.WALCurrentIndex, o.WALCurrentIndex)
	s.NextSeq = max(s.NextSeq, o.NextSeq)
	s.EmbeddingBacklog += o.EmbeddingBacklog
	s.TokenRowsPending += o.TokenRowsPending
	if s.EmbedderError == "" {
		s.EmbedderError = o.EmbedderError
	}
	if s.IngestRefused == "" {
		s.IngestRefused = o.IngestRefused
	}
}

func (db *DB) Stats() Stats {
	db.mu.RLock()
	defer db.mu.RUnlock()
	st := Stats{Segments: len(db.segments), HeadBytes: db.head.bytes, HeadArtifacts: len(db.head.byID),
		FrozenHeads: len(db.frozen), Tombstones: len(db.tombstones), WALCheckpoint: db.manifest.Checkpoint,
		WALCurrentIndex: db.wal.CurrentIndex(), NextSeq: db.wal.NextSeq()}
	for _, s := range db.segments {
		st.SegmentBytes += s.entry.Size
		for _, p := range s.parts {
			if p.vec != nil {
				st.SketchBytes += p.vec.SketchBytes()
			}
		}
	}
	for _, h := range db.frozen {
		st.FrozenBytes += h.bytes
	}
	_, st.EmbeddingBacklog = db.unflushedLocked()
	if db.opts.TokenRows != nil {
		st.TokenRowsPending = db.tokenRows.computing
		for _, pe := range db.tokenRows.queue {
			if pe.ha.rows == nil && db.liveHead(pe.h) && pe.h.byID[pe.ha.a.ID] == pe.ha {
				st.TokenRowsPending++
			}
		}
		for _, s := range db.segments {
			if s.rows.Load() == nil {
				st.TokenRowsPending++
			}
		}
	}
	if err := db.embedding.failure(); err != nil {
		st.EmbedderError = err.Error()
	}
	if err := db.backpressureLocked(); err != nil {
		st.IngestRefused = err.Error()
	}
	return st
}

// lockDir takes an exclusive advisory lock on dir/LOCK (manifest.Lock).
func lockDir(dir string) (*os.File, error) { return manifest.Lock(dir) }
