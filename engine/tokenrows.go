package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/embed"
	"github.com/loci-memory/loci/engine/manifest"
	"github.com/loci-memory/loci/segment"
	"github.com/loci-memory/loci/tokenrows"
	"github.com/loci-memory/loci/vfs"
)

// Token rows (Options.TokenRows).
//
// A background worker gives every live segment a token-row file
// (docs/format/tokenrows.md): for each of the segment's spans, workspace
// by workspace in span order, the rows TokenRower.Rows computes from its
// text. Packs read them (View.TokenRows) to score candidates by late
// interaction without a model pass each. The rows are a pure function of
// the text, so a file is a cache: a span whose rows are not computed yet
// or a damaged document costs its rows' computation at pack time, never
// another answer. With Options.TokenRowsMaxWorkspaceSpans, the spans
// of larger workspaces get empty documents (real rows always hold [CLS]
// and [SEP]), which read as not stored.
//
// The head's spans get their rows from the same worker, first: kept in
// memory with their artifact (counted in the head's bytes, so the flush
// threshold bounds them), read by View.TokenRows, and handed to the flushed
// segment (carryTokenRows), where View.TokenRows reads them until the
// worker has written its file from them: they are computed once, and a
// pack right after a flush does not compute them again. A compaction
// copies its inputs' rows, from their files or from what they carried.
//
// The files live in tokenrows/<model>/, apart from segments/ (whose open
// removes every file its manifest does not list). A file is named after
// its segment; files of segments no longer live (compacted, rewritten by
// an erasure) and directories of another model are removed by the worker
// (Reindex, which copies its segments' files, removes the old ones
// itself), so a file never outlives its segment for long, and erased text
// leaves the rows with the segment that held it.

// TokenRower computes the token rows of a span's text. Rows must be a
// pure function of text, of RowBytes bytes a row.
type TokenRower interface {
	Model() string
	RowBytes() int
	Rows(text string) ([]byte, error)
}

// tokenRowDir is the directory of the token-row files, under the data
// directory.
const tokenRowDir = manifest.TokenRowDir

// segmentRows is a live segment's open token-row file: the rows of
// workspace ws's span i are document base[ws] + i.
type segmentRows struct {
	f    *tokenrows.File
	base []int
}

// tokenRowWorker is the worker's state. queue and carry are guarded by
// DB.mu, the rest by their own fields.
type tokenRowWorker struct {
	// queue holds the head artifacts whose rows are still to compute, in
	// log order, with the head that held each.
	queue []pendingEmbed
	// carry holds, by span id, the rows of the spans of flushed heads until
	// their segment's file is written, so that they are not computed again.
	carry map[uuid.UUID][]byte
	// computing is how many head artifacts taken from queue the worker is
	// computing now (Stats counts them as pending).
	computing int
	// carryLimit bounds the rows segments carry without a file: past it,
	// the worker builds those files before it computes more head rows
	// (headTokenRows). Options.FlushThreshold, one head's worth.
	carryLimit int64

	wake    chan struct{} // cap 1
	halting chan struct{}
	haltMu  sync.Once
	done    chan struct{}
	built   atomic.Int64 // files written since Open
	copied  atomic.Int64 // files compaction made of its inputs' (copyTokenRows)
	// writing names the files compaction is writing (copyTokenRows), which
	// a pass must not take for stale. Guarded by DB.mu.
	writing map[string]bool
	passMu  sync.Mutex // one pass at a time (the worker, BuildTokenRows)
}

func (w *tokenRowWorker) init() {
	w.carry = map[uuid.UUID][]byte{}
	w.writing = map[string]bool{}
	w.wake = make(chan struct{}, 1)
	w.halting = make(chan struct{})
	w.done = make(chan struct{})
}

func (w *tokenRowWorker) kick() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *tokenRowWorker) halt() { w.haltMu.Do(func() { close(w.halting) }) }

// errHalted ends a pass when the engine closes.
var errHalted = errors.New("engine: closing")

// modelDirName is the directory name of a model's rows: the model name
// with every byte outside [A-Za-z0-9._-] replaced by '_'.
func modelDirName(model string) string {
	b := []byte(model)
	for i, c := range b {
		ok := c == '.' || c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !ok {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] == '.' {
		b = append([]byte("m"), b...)
	}
	return string(b)
}

// tokenRowPath is the token-row file of segment path.
func (db *DB) tokenRowPath(segPath string) string {
	return filepath.Join(db.dir, tokenRowDir, modelDirName(db.opts.TokenRows.Model()), manifest.TokenRowFile(filepath.Base(segPath)))
}

// openTokenRows attaches the token-row files the segments already have,
// before maintenance starts: a compaction copies only rows its inputs have
// attached, and one that ran before the worker's first pass would leave
// its segment's rows to compute again.
func (db *DB) openTokenRows() {
	for _, s := range db.segments {
		if r, err := db.openSegmentRows(s); err == nil {
			s.rows.Store(r) // missing or damaged: the worker sees to it
		}
	}
}

// openSegmentRows opens s's token-row file and checks that it fits s: one
// document per span, rows of the TokenRower's size.
func (db *DB) openSegmentRows(s *liveSegment) (*segmentRows, error) {
	return openRowsOf(db.tokenRowPath(s.Path()), s, db.opts.TokenRows.RowBytes())
}

// openRowsOf opens the token-row file at path as s's and checks that it
// fits s: one document per span, rows of rowBytes bytes (0: any).
func openRowsOf(path string, s *liveSegment, rowBytes int) (*segmentRows, error) {
	f, err := tokenrows.Open(path)
	if err != nil {
		return nil, err
	}
	base, n := rowBases(s.Segment)
	if f.Docs() != n || rowBytes > 0 && f.RowBytes() != rowBytes {
		err := fmt.Errorf("%s: %d documents of %d bytes, the segment has %d spans", path, f.Docs(), f.RowBytes(), n)
		f.Close()
		return nil, err
	}
	return &segmentRows{f: f, base: base}, nil
}

// startTokenRows opens the segments' token-row files and starts the
// worker after recovery.
func (db *DB) startTokenRows() {
	if db.opts.TokenRows != nil {
		db.openTokenRows()
	}
	if db.opts.TokenRows == nil || db.opts.DisableBackground {
		close(db.tokenRows.done)
		return
	}
	db.tokenRows.kick()
	go func() {
		defer close(db.tokenRows.done)
		for {
			select {
			case <-db.tokenRows.halting:
				return
			case <-db.tokenRows.wake:
			}
			if err := db.syncTokenRows(1); err != nil && !errors.Is(err, errHalted) {
				db.log.Warn("engine: token rows", "err", err)
				select { // try again later, not at once
				case <-db.tokenRows.halting:
					return
				case <-time.After(10 * time.Second):
					db.tokenRows.kick()
				}
			}
		}
	}()
}

// BuildTokenRows gives every live segment its token-row file now, on
// GOMAXPROCS goroutines, without yielding to requests (tests, evaluations,
// tools). It returns how many files it wrote. Without Options.TokenRows
// it does nothing.
func (db *DB) BuildTokenRows() (int, error) {
	if db.opts.TokenRows == nil {
		return 0, nil
	}
	if err := db.enter(); err != nil {
		return 0, err
	}
	defer db.leave()
	before := db.tokenRows.built.Load()
	err := db.syncTokenRows(runtime.GOMAXPROCS(0))
	return int(db.tokenRows.built.Load() - before), err
}

// TokenRowsPending is how many live segments have no token-row file yet,
// plus the head artifacts whose rows are still to compute (0 without
// Options.TokenRows). Stats reports it.
func (db *DB) TokenRowsPending() int { return db.Stats().TokenRowsPending }

// syncTokenRows removes the files of segments no longer live and of other
// models, then opens or builds the file of each live segment without one,
// oldest first.
func (db *DB) syncTokenRows(par int) error {
	db.tokenRows.passMu.Lock()
	defer db.tokenRows.passMu.Unlock()
	root := filepath.Join(db.dir, tokenRowDir)
	dir := filepath.Join(root, modelDirName(db.opts.TokenRows.Model()))
	if err := db.opts.FS.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("token rows: %w", err)
	}
	if err := db.removeStaleTokenRows(root, dir); err != nil {
		return err
	}
	for {
		yielded, err := db.headTokenRows(par)
		if err != nil {
			return err
		}
		db.mu.RLock()
		live := slices.Clone(db.segments)
		db.mu.RUnlock()
		for _, s := range live {
			if s.rows.Load() != nil {
				continue
			}
			select {
			case <-db.tokenRows.halting:
				return errHalted
			default:
			}
			if err := db.segmentTokenRows(s, par); err != nil {
				return err
			}
		}
		if !yielded {
			break // the queue emptied
		}
	}
	db.mu.Lock()
	if len(db.tokenRows.carry) > 0 && !slices.ContainsFunc(db.segments, func(s *liveSegment) bool { return s.rows.Load() == nil }) {
		// What is left belongs to no segment waiting for its file (its
		// artifact was erased, say).
		clear(db.tokenRows.carry)
	}
	db.mu.Unlock()
	return nil
}

// headTokenRows computes the rows of the queued head artifacts, a chunk
// of spans at a time, and gives them to their artifacts while these are
// still in a live head. It returns once the queue is empty, or, yielded,
// when the rows carried by segments without a file pass carryLimit and
// no client waits for rows: under sustained ingest the queue does not
// empty and every flush leaves rows carried, so the segments' files come
// first (syncTokenRows, writeTokenRows), and memory stays bounded.
func (db *DB) headTokenRows(par int) (yielded bool, err error) {
	settled := false // placeholders given since the last signal
	for {
		if err := db.writeCarriedRows(); err != nil {
			return false, err
		}
		db.mu.Lock()
		if db.embedding.waiters.Load() == 0 && db.carriedBytesLocked() > db.tokenRows.carryLimit {
			db.mu.Unlock()
			if settled {
				db.embedding.signal() // WaitEmbedded checks again
			}
			return true, nil
		}
		var batch []pendingEmbed
		var texts []string
		q := db.tokenRows.queue
		for len(q) > 0 && len(texts) < tokenRowChunk {
			pe := q[0]
			q = q[1:]
			if !db.liveHead(pe.h) || pe.h.byID[pe.ha.a.ID] != pe.ha || pe.ha.rows != nil {
				continue // flushed (its segment's file computes them) or erased
			}
			if !db.rowsWantedLocked(pe.ha.a.Tenant, pe.ha.a.Workspace) {
				pe.ha.rows = make([][]byte, len(pe.ha.spans)) // not stored
				settled = true
				continue
			}
			batch = append(batch, pe)
			for _, sp := range pe.ha.spans {
				texts = append(texts, sp.Text)
			}
		}
		db.tokenRows.queue = q
		db.tokenRows.computing = len(batch)
		db.mu.Unlock()
		if len(batch) == 0 {
			if settled {
				db.embedding.signal() // WaitEmbedded checks again
			}
			return false, nil
		}
		p := par
		if p == 1 && db.embedding.waiters.Load() > 0 {
			p = runtime.GOMAXPROCS(0) // a client waits for these rows (WaitEmbedded)
		}
		rows, err := db.computeRows(texts, p)
		db.mu.Lock()
		db.tokenRows.computing = 0
		if err != nil {
			db.mu.Unlock()
			return false, err
		}
		for _, pe := range batch {
			ha := pe.ha
			own := rows[:len(ha.spans)]
			rows = rows[len(ha.spans):]
			if !db.liveHead(pe.h) || pe.h.byID[ha.a.ID] != ha {
				continue
			}
			ha.rows = own
			for _, r := range own {
				ha.rowBytes += int64(len(r)) + 24
			}
			pe.h.bytes += ha.rowBytes
		}
		db.mu.Unlock()
		db.embedding.signal() // WaitEmbedded checks again
		settled = false
	}
}

// writeCarriedRows writes the file of each live segment without one whose
// flushed head carried the rows of all its spans: a copy, no model pass.
// headTokenRows calls it before each chunk, so that under sustained
// ingest, when its queue does not empty, carried rows go to disk at the
// next chunk instead of staying in memory until the queue empties.
func (db *DB) writeCarriedRows() error {
	db.mu.RLock()
	var ready []*liveSegment
	for _, s := range db.segments {
		if c := s.carried.Load(); c != nil && s.rows.Load() == nil && carriesAll(s, c.spans) {
			ready = append(ready, s)
		}
	}
	db.mu.RUnlock()
	for _, s := range ready {
		if err := db.segmentTokenRows(s, 1); err != nil {
			return err
		}
	}
	return nil
}

// carriedBytesLocked is the size of the rows held for live segments
// without a file (liveSegment.carried). Callers hold mu.
func (db *DB) carriedBytesLocked() int64 {
	var n int64
	for _, s := range db.segments {
		if c := s.carried.Load(); c != nil && s.rows.Load() == nil {
			n += c.bytes
		}
	}
	return n
}

// rowsWantedLocked reports whether the worker computes the rows of a
// workspace's spans: always, unless Options.TokenRowsMaxWorkspaceSpans
// is positive and the workspace holds more spans than that. Callers hold
// mu.
func (db *DB) rowsWantedLocked(tenant, ws string) bool {
	limit := db.opts.TokenRowsMaxWorkspaceSpans
	return limit <= 0 || db.workspaceSpansLocked(tenant, ws) <= limit
}

// liveHead reports whether h is the active head or a frozen one. Callers
// hold mu.
func (db *DB) liveHead(h *head) bool { return h == db.head || slices.Contains(db.frozen, h) }

// carryTokenRows keeps the rows of the flushed head h for its segment's
// file, and returns them by span id (liveSegment.carried). Callers hold mu.
func (db *DB) carryTokenRows(h *head) *carriedRows {
	c := &carriedRows{spans: make(map[uuid.UUID][]byte), arts: make(map[uuid.UUID]bool)}
	for id, ha := range h.byID {
		if ha.rows == nil {
			continue // not computed yet: the worker computes them for the file
		}
		for i, r := range ha.rows {
			db.tokenRows.carry[ha.spans[i].ID] = r
			c.spans[ha.spans[i].ID] = r
		}
		c.bytes += ha.rowBytes
		c.arts[id] = true
	}
	return c
}

// removeStaleTokenRows removes, under root, the directories of other
// models and, in dir, every file that is neither a live segment's nor one
// a compaction is writing. Which segments are live is read after the
// directory, so that a file listed whose segment has just been swapped in
// stays.
func (db *DB) removeStaleTokenRows(root, dir string) error {
	models, err := db.opts.FS.ReadDir(root)
	if err != nil {
		return fmt.Errorf("token rows: %w", err)
	}
	for _, e := range models {
		if p := filepath.Join(root, e.Name()); p != dir {
			if err := vfs.RemoveDir(db.opts.FS, p); err != nil {
				return fmt.Errorf("token rows: %w", err)
			}
		}
	}
	entries, err := db.opts.FS.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("token rows: %w", err)
	}
	keep := map[string]bool{}
	db.mu.RLock()
	for _, s := range db.segments {
		keep[filepath.Base(db.tokenRowPath(s.Path()))] = true
	}
	for p := range db.tokenRows.writing {
		keep[filepath.Base(p)] = true
	}
	compacting := len(db.tokenRows.writing) > 0
	db.mu.RUnlock()
	for _, e := range entries {
		if keep[e.Name()] || strings.HasPrefix(e.Name(), "tokenrows-") && compacting {
			continue // a compaction's temporary file
		}
		if err := db.opts.FS.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("token rows: %w", err)
		}
	}
	return nil
}

// copyTokenRows gives out, the segment a compaction wrote from run, its
// token-row file made of the rows of run's files, before out is
// published, so that a compaction costs a copy, not a model pass a span.
// When an input has no file yet, or a row does not read, it leaves out to
// the worker. Callers hold maintMu (no input closes meanwhile), and call
// releaseTokenRows(out) once out is swapped in or discarded: until then
// the worker leaves its file alone.
func (db *DB) copyTokenRows(out *liveSegment, run []*liveSegment) {
	if db.opts.TokenRows == nil {
		return
	}
	src := make([]rowSource, len(run))
	for i, in := range run {
		// carried before rows, as View.TokenRows reads them.
		carried := in.carried.Load()
		if src[i].file = in.rows.Load(); src[i].file != nil {
			continue
		}
		if carried == nil || !carriesAll(in, carried.spans) {
			return
		}
		src[i].carried = carried.spans
	}
	path := db.tokenRowPath(out.Path())
	db.mu.Lock()
	db.tokenRows.writing[path] = true
	db.mu.Unlock()
	err := db.writeCopiedRows(path, db.opts.TokenRows.RowBytes(), out, run, src)
	var r *segmentRows
	if err == nil {
		r, err = db.openSegmentRows(out)
	}
	if err != nil {
		db.log.Warn("engine: token rows of a compacted segment; the worker computes them", "file", path, "err", err)
		return
	}
	out.rows.Store(r)
	db.tokenRows.copied.Add(1)
}

// rowSource is where a compaction input's rows are: its file, or, while
// the worker has not written that yet, the rows its head carried.
type rowSource struct {
	file    *segmentRows
	carried map[uuid.UUID][]byte
}

// carriesAll reports whether carried holds the rows of every span of s
// (nil for a span its workspace does not get rows for).
func carriesAll(s *liveSegment, carried map[uuid.UUID][]byte) bool {
	for ws := range s.Workspaces() {
		for i := range s.SpanCount(ws) {
			id, ok := s.SpanID(ws, i)
			if _, held := carried[id]; !ok || !held {
				return false
			}
		}
	}
	return true
}

// writeCopiedRows writes out's token-row file at path from the rows of
// run's sources (src[i] is run[i]'s), found by span id, rows of rowBytes.
func (db *DB) writeCopiedRows(path string, rowBytes int, out *liveSegment, run []*liveSegment, src []rowSource) error {
	type place struct {
		r    *segmentRows // nil: rows
		doc  int
		rows []byte
	}
	at := map[uuid.UUID]place{}
	for k, in := range run {
		r := src[k].file
		for ws := range in.Workspaces() {
			for i := range in.SpanCount(ws) {
				id, ok := in.SpanID(ws, i)
				switch {
				case !ok:
				case r != nil:
					at[id] = place{r: r, doc: r.base[ws] + i}
				default:
					at[id] = place{rows: src[k].carried[id]}
				}
			}
		}
	}
	if err := db.opts.FS.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	_, n := rowBases(out.Segment)
	var order spanOrder
	return tokenrows.Write(db.opts.FS, path, rowBytes, n, func(int) ([]byte, error) {
		ws, i := order.next(out.Segment)
		id, ok := out.SpanID(ws, i)
		p, found := at[id]
		if !ok || !found {
			return nil, fmt.Errorf("span %d of workspace %d has no rows in the inputs", i, ws)
		}
		if p.r == nil {
			return p.rows, nil
		}
		return p.r.f.Rows(p.doc)
	})
}

// reindexTokenRows gives out, the segment Reindex rewrote from in, the
// token-row files in has, copied by span id: rows depend on a span's text
// alone, not on the embedder. Without Options.TokenRows it copies the
// files of every model directory (the directory may be served with late
// interaction again); with it, the model's only (the worker removes the
// others). A file that does not open or fit in is left to the worker.
// Callers hold maintMu and call releaseTokenRows(out) once out is swapped
// in or discarded.
func (db *DB) reindexTokenRows(out, in *liveSegment) {
	root := filepath.Join(db.dir, tokenRowDir)
	var dirs []string
	if db.opts.TokenRows != nil {
		dirs = []string{modelDirName(db.opts.TokenRows.Model())}
		db.mu.Lock()
		db.tokenRows.writing[db.tokenRowPath(out.Path())] = true
		db.mu.Unlock()
	} else {
		entries, err := db.opts.FS.ReadDir(root)
		if err != nil {
			return // none, or unreadable: nothing to carry
		}
		for _, e := range entries {
			if e.IsDir() {
				dirs = append(dirs, e.Name())
			}
		}
	}
	name := manifest.TokenRowFile(filepath.Base(in.Path()))
	for _, d := range dirs {
		src, err := openRowsOf(filepath.Join(root, d, name), in, 0)
		if err != nil {
			continue
		}
		path := filepath.Join(root, d, manifest.TokenRowFile(filepath.Base(out.Path())))
		err = db.writeCopiedRows(path, src.f.RowBytes(), out, []*liveSegment{in}, []rowSource{{file: src}})
		src.f.Close()
		if err != nil {
			db.log.Warn("engine: token rows of a reindexed segment; the worker computes them", "file", path, "err", err)
			continue
		}
		if db.opts.TokenRows != nil {
			if r, err := db.openSegmentRows(out); err == nil {
				out.rows.Store(r)
			}
		}
		db.tokenRows.copied.Add(1)
	}
}

// removeRowFiles removes s's token-row files of every model directory
// (Reindex: what a worker would remove as stale, removed at once, since
// loci reindex runs without one).
func (db *DB) removeRowFiles(s *liveSegment) {
	root := filepath.Join(db.dir, tokenRowDir)
	entries, err := db.opts.FS.ReadDir(root)
	if err != nil {
		return
	}
	name := manifest.TokenRowFile(filepath.Base(s.Path()))
	for _, e := range entries {
		if e.IsDir() {
			db.opts.FS.Remove(filepath.Join(root, e.Name(), name))
		}
	}
}

// releaseTokenRows ends what copyTokenRows began for out.
func (db *DB) releaseTokenRows(out *liveSegment) {
	if db.opts.TokenRows == nil {
		return
	}
	db.mu.Lock()
	delete(db.tokenRows.writing, db.tokenRowPath(out.Path()))
	db.mu.Unlock()
}

// segmentTokenRows opens s's token-row file, building it first when there
// is none or it does not fit s, and attaches it to s if s is still live.
func (db *DB) segmentTokenRows(s *liveSegment, par int) error {
	r, err := db.openSegmentRows(s)
	if err != nil {
		path := db.tokenRowPath(s.Path())
		if !errors.Is(err, os.ErrNotExist) {
			db.log.Warn("engine: token rows: building the file again", "file", path, "err", err)
		}
		_, n := rowBases(s.Segment)
		if err := db.writeTokenRows(s, path, n, par); err != nil {
			if errors.Is(err, segment.ErrClosed) {
				return nil // compacted away meanwhile; the next pass removes what is left
			}
			return err
		}
		db.tokenRows.built.Add(1)
		if r, err = db.openSegmentRows(s); err != nil {
			return fmt.Errorf("token rows: %w", err)
		}
	}
	db.mu.Lock()
	if slices.Contains(db.segments, s) {
		s.rows.Store(r)
		s.carried.Store(nil) // after rows: View.TokenRows reads them in the other order
		r = nil
	}
	db.mu.Unlock()
	// WaitEmbedded checks again.
	db.embedding.signal()
	if r != nil { // no longer live: its file goes at the next pass
		r.f.Close()
		db.tokenRows.kick()
	}
	return nil
}

// spanOrder walks a segment's spans in token-row document order:
// workspace by workspace, each workspace's spans in order.
type spanOrder struct{ ws, i int }

// next returns the workspace and number of the next span of s.
func (o *spanOrder) next(s *segment.Segment) (ws, i int) {
	for o.i >= s.SpanCount(o.ws) {
		o.ws, o.i = o.ws+1, 0
	}
	o.i++
	return o.ws, o.i - 1
}

// rowBases returns, per workspace of s, the document number of its first
// span, and the number of spans of s.
func rowBases(s *segment.Segment) ([]int, int) {
	ws := s.Workspaces()
	base := make([]int, len(ws))
	n := 0
	for i := range ws {
		base[i] = n
		n += s.SpanCount(i)
	}
	return base, n
}

// tokenRowChunk is how many spans a build reads and computes at a time.
const tokenRowChunk = 64

// writeTokenRows writes s's token-row file at path: the rows a flushed
// head carried (carryTokenRows), the others computed (computeRows), a
// chunk of spans at a time. Between chunks a paced build (par 1) computes
// the rows of new head artifacts first, unless s carried every row.
func (db *DB) writeTokenRows(s *liveSegment, path string, n, par int) error {
	tr := db.opts.TokenRows
	var order spanOrder
	var chunk [][]byte
	var used []uuid.UUID
	// wanted[ws]: whether workspace ws of s gets rows; the others' spans
	// are stored empty (rowsWantedLocked), unless a head carried theirs.
	wss := s.Workspaces()
	wanted := make([]bool, len(wss))
	db.mu.RLock()
	for i, w := range wss {
		wanted[i] = db.rowsWantedLocked(w.Tenant, w.Workspace)
	}
	db.mu.RUnlock()
	carried := s.carried.Load()
	allCarried := carried != nil && carriesAll(s, carried.spans)
	fill := func(d int) error {
		if par == 1 && !allCarried { // a copy yields to nothing
			if _, err := db.headTokenRows(1); err != nil {
				return err
			}
		}
		var texts []string
		var at []int // chunk index of each text
		chunk = chunk[:0]
		db.mu.RLock()
		for len(chunk) < tokenRowChunk && d+len(chunk) < n {
			ws, i := order.next(s.Segment)
			sp, err := s.Span(ws, i)
			if err != nil {
				db.mu.RUnlock()
				return err
			}
			r, ok := db.tokenRows.carry[sp.ID]
			if !ok && carried != nil {
				r, ok = carried.spans[sp.ID]
			}
			if ok {
				used = append(used, sp.ID)
			} else if wanted[ws] {
				texts = append(texts, sp.Text)
				at = append(at, len(chunk))
			}
			chunk = append(chunk, r)
		}
		db.mu.RUnlock()
		rows, err := db.computeRows(texts, par)
		if err != nil {
			return fmt.Errorf("token rows of a span of %s: %w", s.Path(), err)
		}
		for k, r := range rows {
			chunk[at[k]] = r
		}
		return nil
	}
	err := tokenrows.Write(db.opts.FS, path, tr.RowBytes(), n, func(d int) ([]byte, error) {
		if len(chunk) == 0 {
			if err := fill(d); err != nil {
				return nil, err
			}
		}
		r := chunk[0]
		chunk = chunk[1:]
		return r, nil
	})
	if err == nil {
		db.mu.Lock()
		for _, id := range used {
			delete(db.tokenRows.carry, id)
		}
		db.mu.Unlock()
	}
	return err
}

// pacedRows lets one background worker of the process compute at a time:
// a node of a cluster opens an engine per shard, and their workers
// together must not take more than the one core the embedder's rule
// leaves them.
var pacedRows = make(chan struct{}, 1)

// computeRows computes the rows of texts on par goroutines. With par 1 it
// yields to requests as the embedder does: while ingests or reads run, it
// rests after each text as long as the text took unless a core is idle
// (idleCore), and it does not start a text while an in-process embedder
// has artifacts to embed (embeddingFirst). It stops when the engine
// closes.
func (db *DB) computeRows(texts []string, par int) ([][]byte, error) {
	tr := db.opts.TokenRows
	out := make([][]byte, len(texts))
	errs := make([]error, len(texts))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(par, len(texts)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var rest *time.Timer
			defer func() {
				if rest != nil {
					rest.Stop()
				}
			}()
			for k := int(next.Add(1) - 1); k < len(texts); k = int(next.Add(1) - 1) {
				if par == 1 {
					if err := db.embeddingFirst(); err != nil {
						errs[k] = err
						return
					}
					select {
					case pacedRows <- struct{}{}:
					case <-db.tokenRows.halting:
						errs[k] = errHalted
						return
					}
				}
				t0 := time.Now()
				out[k], errs[k] = tr.Rows(texts[k])
				if par == 1 {
					<-pacedRows
				}
				if errs[k] != nil {
					return
				}
				select {
				case <-db.tokenRows.halting:
					errs[k] = errHalted
					return
				default:
				}
				if par == 1 && db.embedding.busy() && !idleCore() {
					if rest == nil {
						rest = time.NewTimer(time.Since(t0))
					} else {
						rest.Reset(time.Since(t0))
					}
					select {
					case <-db.tokenRows.halting:
						errs[k] = errHalted
						return
					case <-rest.C:
					}
				}
			}
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// embeddingFirst holds a paced rows computation while requests run
// (backgroundEmbedding.busy) and an in-process embedder has a backlog:
// the two background workers share the cores requests leave them, and
// the embedder's work comes first. A span without its vectors is missing
// from the semantic channel, so its packs differ; a span without its rows
// is scored the same, its pack computing them (rows are a cache). Paced
// side by side, each worker took about a quarter of two cores, so while
// both had work a burst of ingests kept one core (docs/benchmarks.md §
// The rows' worker yields to the embedder). It returns errHalted when
// the engine closes.
func (db *DB) embeddingFirst() error {
	if _, local := db.opts.Embedder.(embed.InProcess); !local {
		return nil
	}
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for db.embedding.busy() && db.EmbeddingBacklog() > 0 {
		if t == nil {
			t = time.NewTimer(foregroundLinger)
		} else {
			t.Reset(foregroundLinger)
		}
		select {
		case <-db.tokenRows.halting:
			return errHalted
		case <-t.C:
		}
	}
	return nil
}

// TokenRows returns a copy of the stored token rows of a document (from
// its segment's file, or the rows its head carried while the file waits
// for the worker), or nil when it has none stored (not computed yet, a
// damaged document, a span of a workspace past
// Options.TokenRowsMaxWorkspaceSpans): then the caller computes them.
func (v *View) TokenRows(part int, doc uint32) []byte {
	p := v.srcs[part]
	if p.hw != nil {
		ref := p.hw.refs[doc]
		if ref.ha.rows == nil {
			return nil
		}
		return append([]byte(nil), ref.ha.rows[ref.i]...)
	}
	// carried before rows: the worker opens the file, then drops carried.
	carried := p.seg.carried.Load()
	r := p.seg.rows.Load()
	if r == nil {
		if carried == nil {
			return nil
		}
		id, ok := p.seg.SpanID(p.ws, p.segDoc(doc))
		if !ok {
			return nil
		}
		return append([]byte(nil), carried.spans[id]...)
	}
	b, err := r.f.Rows(r.base[p.ws] + p.segDoc(doc))
	if err != nil {
		v.db.log.Warn("engine: token rows", "err", err)
		return nil
	}
	return append([]byte(nil), b...)
}

// closeRows closes the segment's token-row file, if open.
func (ls *liveSegment) closeRows() {
	if r := ls.rows.Swap(nil); r != nil {
		r.f.Close()
	}
}
