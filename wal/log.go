package wal

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loci-memory/loci/vfs"
)

// ErrClosed is returned by calls on a closed Log.
var ErrClosed = errors.New("wal: closed")

// Entry is one record to append. Apply, when non-nil, is called by the log's
// applier goroutine once the entry's batch is durable (per policy), in log
// order, before Append returns. Every Apply runs on that one goroutine,
// which also wakes the appenders, so it must be quick and must not call the
// Log's Append, Rotate, Sync or Close.
type Entry struct {
	Type    uint8
	Payload []byte
	Apply   func(seq uint64)
}

// Stats are counters of a Log's activity since Open.
type Stats struct {
	Batches uint64 // groups of records written with one write call
	Records uint64 // records written
	Bytes   uint64 // framed bytes written
	Syncs   uint64 // fsyncs of log files
}

// Log is an open write-ahead log. Its methods are safe for concurrent use.
type Log struct {
	dir    string
	minSeq uint64 // lower bound of sequence numbers, from Open
	opts   Options
	logger *slog.Logger
	fs     vfs.FS

	mu      sync.Mutex
	pending []*batch // oldest first; only the last may be unsealed
	free    []*batch // processed batches, kept for their buffers
	nextSeq uint64
	closed  bool
	err     error // the last write or fsync failure, until a write succeeds again

	kick     chan struct{} // wakes the writer; capacity 1
	exited   chan struct{} // closed when the writer goroutine returns
	closeErr error         // set by the writer before exited is closed

	index atomic.Int64 // index of the current file

	batches, records, bytes, syncs atomic.Uint64
	obs                            syncObserving // see SetSyncObserver

	// Owned by the writer goroutine (and by Open before it starts it).
	f      vfs.File
	size   int64 // bytes in f
	good   int64 // bytes of f holding acknowledged records: the size to go back to after a failure
	broken bool  // a write or fsync of f failed: cut f back to good and fsync before writing
	dirty  bool  // f has writes not yet fsynced
	// refused is the size of the last batch a write failed for, while the
	// log fails: the idle check (probe) writes as much, so that the log is
	// not declared healthy while that batch would still not fit.
	refused  int
	lastSync time.Time
	syncFile func(vfs.File) error // File.Sync; replaced by tests
}

// batch is a group of records the writer handles with one write and at most
// one fsync, plus the control requests (Sync, Rotate, Close) that follow
// them. A batch carrying Rotate or Close is sealed: later requests go into
// a new batch, so that they are written to the new file or refused.
type batch struct {
	buf     []byte  // framed records
	applies []apply // Apply callbacks, in seq order
	appends []call  // the Append calls of the batch, in seq order
	records int
	urgent  bool // an Append (not AppendDeferred) is in the batch
	sync    bool
	rotate  bool
	swap    func(newIndex int)
	close   bool
	done    *completion
}

type apply struct {
	seq uint64
	fn  func(seq uint64)
}

// call is one Append of a batch: its Apply callbacks end at applies[end],
// and it is woken through c as soon as they have run, before the rest of
// the batch is applied.
type call struct {
	end int
	c   *completion
}

// completion is how a batch's outcome reaches its waiters: one per Append
// call, and one per batch for Sync, Rotate and Close. It is allocated, not
// reused, so a waiter can read it after the batch itself has been recycled.
type completion struct {
	done   chan struct{}
	err    error // of the batch's records, for Append, Sync and Close
	rotErr error // of the batch's records or its rotation, for Rotate
	index  int   // new file index, for Rotate
}

func (b *batch) sealed() bool { return b.rotate || b.close }

// maxKeptBuffer is the largest batch buffer kept for reuse; a larger one,
// left by a burst of big records, is dropped rather than pinned forever.
const maxKeptBuffer = 16 << 20

// Open opens or creates the log in dir (creating dir). It deletes files with
// index < first, leftovers of an interrupted checkpoint, then replays every
// record of the files >= first in order through replay; the payload is valid
// only during the call, and an error from replay aborts Open. If no file >=
// first exists, Open creates file first. The files must be consecutive from
// first: a missing one is an error.
//
// A torn or corrupt record or file header at the end of the last file, with
// no valid record anywhere after it, is what a crash during a write leaves:
// replay ends there, the file is truncated to that offset and fsynced, and a
// warning naming file, offset and reason is logged. Damage followed by a
// valid record cannot be a torn write (a crash only garbles the end of the
// last file): it is returned as a *CorruptionError naming file and offset,
// whose Next is the offset of that record, and nothing is changed. Damage in
// an earlier file is always returned as a *CorruptionError. So is a sequence
// number that does not increase, in any file, since it has a valid checksum
// and cannot be a torn write.
//
// The next sequence number is max(last replayed seq + 1, minSeq, 1).
// Appends go to the last file, or to a new one if it is already full.
func Open(dir string, first int, minSeq uint64, opts Options, replay func(Record) error) (*Log, error) {
	if first < 1 {
		return nil, fmt.Errorf("wal: first file index %d, want >= 1", first)
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	fsys := opts.FS
	_, statErr := fsys.Stat(dir)
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if errors.Is(statErr, os.ErrNotExist) {
		// The new directory's entry in its parent must be durable before
		// anything acknowledged is written in it.
		if err := fsys.SyncDir(filepath.Dir(dir)); err != nil {
			return nil, err
		}
	}
	indexes, err := files(fsys, dir)
	if err != nil {
		return nil, err
	}
	var keep []int
	removed := false
	for _, index := range indexes {
		if index >= first {
			keep = append(keep, index)
			continue
		}
		if err := fsys.Remove(filepath.Join(dir, FileName(index))); err != nil {
			return nil, err
		}
		removed = true
	}
	if removed {
		if err := fsys.SyncDir(dir); err != nil {
			return nil, err
		}
	}
	for i, index := range keep {
		if want := first + i; index != want {
			return nil, fmt.Errorf("wal: %s: log file %s is missing", dir, FileName(want))
		}
	}

	l := &Log{
		dir:      dir,
		minSeq:   minSeq,
		opts:     opts,
		logger:   opts.Logger,
		fs:       fsys,
		kick:     make(chan struct{}, 1),
		exited:   make(chan struct{}),
		syncFile: vfs.File.Sync,
	}
	if opts.Sync != SyncAlways {
		l.logger.Warn(fmt.Sprintf("wal: fsync policy %s: acknowledged writes can be lost on power failure; benchmarks only", opts.Sync),
			"dir", dir)
	}

	var last uint64
	replayed := false
	if len(keep) == 0 {
		if l.f, err = createFile(fsys, dir, first, l.sync); err != nil {
			return nil, err
		}
		l.size = fileHeaderSize
		l.index.Store(int64(first))
	} else {
		for i, index := range keep {
			if err := l.replayFile(index, i == len(keep)-1, &last, &replayed, replay); err != nil {
				if l.f != nil {
					l.f.Close()
				}
				return nil, err
			}
		}
	}
	l.nextSeq = max(minSeq, 1)
	if replayed && last+1 > l.nextSeq {
		l.nextSeq = last + 1
	}
	if l.size >= opts.FileSize {
		if err := l.rotate(); err != nil {
			l.f.Close()
			return nil, err
		}
	}
	l.good = l.size
	l.lastSync = time.Now()
	go l.run()
	return l, nil
}

// replayFile replays one file. For the last file it also repairs a damaged
// tail and leaves the file open for appending in l.f.
func (l *Log) replayFile(index int, isLast bool, last *uint64, replayed *bool, replay func(Record) error) error {
	path := filepath.Join(l.dir, FileName(index))
	flag := os.O_RDONLY
	if isLast {
		flag = os.O_RDWR
	}
	f, err := l.fs.OpenFile(path, flag, 0)
	if err != nil {
		return err
	}
	if isLast {
		l.f = f // closed by Open on error
		l.index.Store(int64(index))
	} else {
		defer f.Close()
	}
	r, err := newReader(f, path)
	if err != nil {
		return err
	}

	var damage *CorruptionError
	if err := r.readFileHeader(); err != nil {
		if !errors.As(err, &damage) {
			return err
		}
	}
	for damage == nil {
		off := r.off
		rec, err := r.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if !errors.As(err, &damage) {
				return err
			}
			break
		}
		if *replayed && rec.Seq <= *last {
			return seqError(path, off, rec.Seq, *last)
		}
		if err := replay(rec); err != nil {
			return fmt.Errorf("wal: replay %s at offset %d: %w", path, off, err)
		}
		*last, *replayed = rec.Seq, true
	}
	if damage != nil {
		after := *last
		if !*replayed && l.minSeq > 0 {
			after = l.minSeq - 1
		}
		next, err := validFrameAfter(f, r.size, damage.Offset, after)
		if err != nil {
			return fmt.Errorf("wal: read %s after offset %d: %w", path, damage.Offset, err)
		}
		if next != 0 {
			return notTorn(damage, next)
		}
		if !isLast {
			return damage
		}
	}
	if !isLast {
		return nil
	}

	l.size = r.off
	if damage != nil {
		l.logger.Warn("wal: truncating damaged tail of last log file",
			"file", path, "offset", damage.Offset, "reason", damage.Reason,
			"dropped_bytes", r.size-damage.Offset)
		if err := f.Truncate(damage.Offset); err != nil {
			return fmt.Errorf("wal: truncate %s to %d: %w", path, damage.Offset, err)
		}
		if damage.Offset == 0 {
			if _, err := f.WriteAt(fileHeader(), 0); err != nil {
				return fmt.Errorf("wal: rewrite header of %s: %w", path, err)
			}
			l.size = fileHeaderSize
		}
		if err := l.sync(f); err != nil {
			return fmt.Errorf("wal: sync %s: %w", path, err)
		}
	}
	if _, err := f.Seek(l.size, io.SeekStart); err != nil {
		return err
	}
	return nil
}

// Append appends the entries as one contiguous group, with consecutive
// sequence numbers in one batch, and returns the first sequence number once
// the group is durable per the sync policy and every Apply has run.
// Concurrent Appends are group-committed. If the batch cannot be written or
// fsynced (a full disk, say), Append returns the error, which wraps the
// system's (errors.Is(err, syscall.ENOSPC) for a full disk); the entries are
// not applied and their sequence numbers are never used. The log then cuts
// its file back to the last acknowledged record before it writes again, so
// a failed batch never reappears, in part or whole, after a restart, and a
// later batch succeeds as soon as the disk allows. Append with no entries
// returns 0 and nil at once. Append after Close returns ErrClosed.
func (l *Log) Append(entries ...Entry) (uint64, error) {
	return l.append(0, entries, true)
}

// AppendDeferred is Append for records whose durability may trail their
// acknowledgement by one fsync (receipts). Under SyncAlways, a batch holding
// only deferred records is written and applied, and the call returns, before
// it is fsynced; the writer fsyncs it at once when idle, and always before it
// writes another batch, so at most one written batch is ever unsynced and a
// crash can still tear only the last one. A crash or a failed fsync before
// that loses the batch, nothing else. Under SyncBatch and SyncOff it is
// Append.
func (l *Log) AppendDeferred(entries ...Entry) (uint64, error) {
	return l.append(0, entries, false)
}

// AppendAt is Append with sequence numbers chosen by the caller: the entries
// get first, first+1, ... It is for a log that mirrors another, ordered log
// (a cluster node applying a replicated stream, whose positions become the
// sequence numbers): first must be at least NextSeq, and gaps are allowed.
// If the batch fails, its numbers are given back (NextSeq returns to first
// when no later AppendAt took numbers meanwhile), so the caller can append
// the same records at the same numbers again.
func (l *Log) AppendAt(first uint64, entries ...Entry) (uint64, error) {
	if first == 0 {
		return 0, errors.New("wal: append at: sequence number 0 is invalid")
	}
	return l.append(first, entries, true)
}

// append appends entries from first, or from NextSeq when first is 0;
// urgent: not deferred (AppendDeferred).
func (l *Log) append(at uint64, entries []Entry, urgent bool) (uint64, error) {
	for i := range entries {
		if entries[i].Type == 0 {
			return 0, errors.New("wal: append: record type 0 is invalid")
		}
		if len(entries[i].Payload) > MaxPayload {
			return 0, fmt.Errorf("wal: append: payload of %d bytes exceeds maximum %d", len(entries[i].Payload), MaxPayload)
		}
	}
	l.mu.Lock()
	if err := l.usable(); err != nil || len(entries) == 0 {
		l.mu.Unlock()
		return 0, err
	}
	first := l.nextSeq
	if at != 0 {
		if at < first {
			l.mu.Unlock()
			return 0, fmt.Errorf("wal: append at %d: sequence numbers below %d are taken", at, first)
		}
		first = at
	}
	b := l.tail()
	for i := range entries {
		e := &entries[i]
		seq := first + uint64(i)
		b.buf = appendRecord(b.buf, e.Type, seq, e.Payload)
		if e.Apply != nil {
			b.applies = append(b.applies, apply{seq, e.Apply})
		}
	}
	b.records += len(entries)
	b.urgent = b.urgent || urgent
	l.nextSeq = first + uint64(len(entries))
	c := &completion{done: make(chan struct{})}
	b.appends = append(b.appends, call{end: len(b.applies), c: c})
	l.mu.Unlock()

	<-c.done
	if c.err != nil {
		if at != 0 {
			l.mu.Lock()
			if l.nextSeq == first+uint64(len(entries)) {
				l.nextSeq = first
			}
			l.mu.Unlock()
		}
		return 0, c.err
	}
	return first, nil
}

// Rotate ends the current file, fsynced, and starts file index+1, whose
// header and directory entry are fsynced. swap, if non-nil, is called on the
// applier goroutine with the new index after every entry appended before
// Rotate was called has been written, synced and applied, and before any
// later entry is applied. Rotate returns the new index.
func (l *Log) Rotate(swap func(newIndex int)) (int, error) {
	l.mu.Lock()
	if err := l.usable(); err != nil {
		l.mu.Unlock()
		return 0, err
	}
	b := l.tail()
	b.rotate, b.swap = true, swap
	c := b.done
	l.mu.Unlock()

	<-c.done
	return c.index, c.rotErr
}

// Sync fsyncs everything appended so far. It is useful with SyncBatch and
// SyncOff; under SyncAlways there is nothing left to sync.
func (l *Log) Sync() error {
	l.mu.Lock()
	if err := l.usable(); err != nil {
		l.mu.Unlock()
		return err
	}
	b := l.tail()
	b.sync = true
	c := b.done
	l.mu.Unlock()

	<-c.done
	return c.err
}

// Close writes and fsyncs every append queued before it, then closes the
// file. Appends that were queued complete normally (or fail, as Append
// says); later ones return ErrClosed. Close fails only if the file cannot be
// left holding exactly the acknowledged records (cut back after a failed
// write, and fsynced), or cannot be closed: a write that failed for lack of
// space, once cut away, is no reason to. Close is idempotent.
func (l *Log) Close() error {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		l.tail().close = true
	}
	l.mu.Unlock()
	<-l.exited
	return l.closeErr
}

// Err returns the error of the last failed write or fsync while the log
// cannot write (a full disk, a failing device), or nil. It becomes nil
// again once a write at least as large as the refused batch succeeds: an
// Append, or the check the log makes every Options.RetryInterval while it
// fails (which writes that much). Smaller appends may succeed meanwhile.
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// CurrentIndex returns the index of the file appends go to.
func (l *Log) CurrentIndex() int { return int(l.index.Load()) }

// NextSeq returns the sequence number the next appended record will get.
func (l *Log) NextSeq() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nextSeq
}

// Dir returns the log's directory.
func (l *Log) Dir() string { return l.dir }

// Stats returns the log's activity counters.
func (l *Log) Stats() Stats {
	return Stats{
		Batches: l.batches.Load(),
		Records: l.records.Load(),
		Bytes:   l.bytes.Load(),
		Syncs:   l.syncs.Load(),
	}
}

// RemoveBefore deletes the files with an index below index, never the
// current file, then fsyncs the directory. It is how a checkpoint drops the
// files it has made redundant.
func (l *Log) RemoveBefore(index int) error {
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return ErrClosed
	}
	index = min(index, l.CurrentIndex())
	indexes, err := files(l.fs, l.dir)
	if err != nil {
		return err
	}
	removed := false
	for _, i := range indexes {
		if i >= index {
			break
		}
		if err := l.fs.Remove(filepath.Join(l.dir, FileName(i))); err != nil {
			return err
		}
		removed = true
	}
	if !removed {
		return nil
	}
	return l.fs.SyncDir(l.dir)
}

// usable reports why the log takes no new requests. l.mu must be held. A
// failed log still takes them: the writer repairs the file first.
func (l *Log) usable() error {
	if l.closed {
		return ErrClosed
	}
	return nil
}

// tail returns the batch new requests join: the last queued batch unless it
// is sealed, else a new one, in which case the writer is woken. l.mu must be
// held.
func (l *Log) tail() *batch {
	if n := len(l.pending); n > 0 && !l.pending[n-1].sealed() {
		return l.pending[n-1]
	}
	var b *batch
	if n := len(l.free); n > 0 {
		b, l.free = l.free[n-1], l.free[:n-1]
	} else {
		b = new(batch)
	}
	b.done = &completion{done: make(chan struct{})}
	l.pending = append(l.pending, b)
	select {
	case l.kick <- struct{}{}:
	default:
	}
	return b
}

// run is the writer goroutine. It writes and fsyncs one batch after
// another and hands each, once durable, to the applier goroutine, which
// applies its records and wakes its waiters: so the fsync of a batch
// overlaps with the applying of the one before, and neither waits for the
// other's work. Records are still applied one at a time, in log order, and
// only once durable; the applier follows the writer by at most one batch.
func (l *Log) run() {
	written := make(chan writtenBatch, 1)
	applied := make(chan struct{})
	go l.applier(written, applied)
	defer func() {
		close(written)
		<-applied
		close(l.exited)
	}()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		b := l.next(timer)
		closing := b.close
		written <- l.process(b)
		if closing {
			return
		}
		if l.size >= l.opts.FileSize && !l.broken {
			// Rotate now, after the batch's appenders are woken, so that
			// creating the new file overlaps with them queueing more.
			if err := l.rotate(); err != nil {
				l.fail(err)
			}
		}
	}
}

// next waits for and dequeues the oldest queued batch. While it waits it
// runs SyncBatch's background fsync and, after a failure, the periodic
// check whether the log can write again.
func (l *Log) next(timer *time.Timer) *batch {
	l.mu.Lock()
	for len(l.pending) == 0 {
		failing := l.err != nil
		l.mu.Unlock()
		wait, action := time.Duration(-1), func() {}
		switch {
		case failing:
			wait, action = l.opts.RetryInterval, l.probe
		case l.opts.Sync == SyncBatch && l.dirty:
			wait, action = max(l.opts.SyncInterval-time.Since(l.lastSync), 0), l.backgroundSync
		case l.opts.Sync == SyncAlways && l.dirty && !l.broken:
			wait, action = 0, l.backgroundSync // a deferred batch (AppendDeferred)
		}
		switch {
		case wait < 0:
			<-l.kick
		case wait == 0:
			action()
		default:
			timer.Reset(wait)
			select {
			case <-l.kick:
				timer.Stop()
			case <-timer.C:
				action()
			}
		}
		l.mu.Lock()
	}
	b := l.pending[0]
	copy(l.pending, l.pending[1:])
	l.pending[len(l.pending)-1] = nil
	l.pending = l.pending[:len(l.pending)-1]
	l.mu.Unlock()
	return b
}

// writtenBatch is a batch the writer is done with, and its outcome, on its
// way to the applier.
type writtenBatch struct {
	b           *batch
	err, rotErr error
	index       int // the new file's index after a rotation
}

// process writes and syncs one batch and carries out its control requests,
// on the writer goroutine; the applier does the rest.
func (l *Log) process(b *batch) writtenBatch {
	var err error
	if l.broken {
		err = l.repair()
	}
	if err == nil && l.dirty && l.opts.Sync == SyncAlways {
		// A deferred batch is still unsynced: fsync it before writing
		// this one, so that a crash can tear only the last batch.
		if err = l.sync(l.f); err == nil {
			l.good = l.size
		}
	}
	if err == nil && len(b.buf) > 0 {
		err = l.write(b.buf)
		l.obs.written(b.records, err)
		if err != nil {
			l.refused = len(b.buf)
		}
	}
	if err == nil && l.dirty && l.needSync(b) {
		err = l.sync(l.f)
	}
	if err == nil && !(l.dirty && l.opts.Sync == SyncAlways) {
		l.good = l.size // acknowledged from here on
	}
	// The batch's records are acknowledged whatever becomes of a rotation
	// requested with them: only Rotate's caller sees its failure.
	index, rotErr := 0, err
	if err == nil && b.rotate {
		if rotErr = l.rotate(); rotErr == nil {
			index = l.CurrentIndex()
		}
	}
	if rotErr != nil {
		l.fail(rotErr)
	} else if (len(b.buf) > 0 || b.rotate) && len(b.buf) >= l.refused {
		// A smaller write fitting (a control record) does not show that
		// the refused batch would: the failure stays until one as large
		// fits, or the idle check (probe) finds room for it.
		l.recovered()
	}
	if b.close {
		l.closeErr = l.closeFile(err)
	}
	if err == nil && b.records > 0 {
		l.batches.Add(1)
		l.records.Add(uint64(b.records))
		l.bytes.Add(uint64(len(b.buf)))
	}
	return writtenBatch{b: b, err: err, rotErr: rotErr, index: index}
}

// applier applies the records of each durable batch in order, waking each
// Append as soon as its records are applied, calls a rotation's swap after
// them (so before any record of a later batch is applied), and wakes the
// batch's other waiters. It closes done when written is closed and drained.
func (l *Log) applier(written <-chan writtenBatch, done chan<- struct{}) {
	defer close(done)
	for w := range written {
		b := w.b
		start := 0
		for _, cl := range b.appends {
			if w.err == nil {
				for _, a := range b.applies[start:cl.end] {
					a.fn(a.seq)
				}
			}
			start = cl.end
			cl.c.err = w.err
			close(cl.c.done)
		}
		if w.rotErr == nil && b.rotate && b.swap != nil {
			b.swap(w.index)
		}
		l.complete(b, w.err, w.rotErr, w.index)
	}
}

// closeFile closes the file at Close. After a failure it first cuts the
// file back to its acknowledged records; only if that fails does Close
// report an error.
func (l *Log) closeFile(failed error) error {
	var err error
	if l.broken {
		if err = l.repair(); err == nil {
			l.logger.Warn("wal: closed after a failed write; the file holds every acknowledged record",
				"file", l.f.Name(), "size", l.good, "failure", failed)
		}
	}
	if cerr := l.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("wal: close %s: %w", l.f.Name(), cerr)
	}
	return err
}

// needSync reports whether batch b must be fsynced before it is
// acknowledged.
func (l *Log) needSync(b *batch) bool {
	if b.sync || b.rotate || b.close {
		return true
	}
	switch l.opts.Sync {
	case SyncAlways:
		return b.urgent
	case SyncBatch:
		return time.Since(l.lastSync) >= l.opts.SyncInterval
	}
	return false
}

// write appends buf to the file. On failure the file may hold part of buf:
// the log is broken until repair cuts it off.
func (l *Log) write(buf []byte) error {
	n, err := l.f.Write(buf)
	l.size += int64(n)
	if n > 0 {
		l.dirty = true
	}
	if err != nil {
		l.broken = true
		return fmt.Errorf("wal: write %s at offset %d: %w", l.f.Name(), l.size-int64(n), err)
	}
	return nil
}

// sync fsyncs f. On failure the log is broken: the kernel may have dropped
// the dirty pages, and a later fsync that succeeds would falsely vouch for
// them, so nothing written since the last good fsync is trusted; repair cuts
// it off before the file is fsynced again.
func (l *Log) sync(f vfs.File) error {
	l.syncs.Add(1)
	start := time.Now()
	err := l.syncFile(f)
	l.synced(f, start, err)
	if err != nil {
		if f == l.f {
			l.broken = true
		}
		return fmt.Errorf("wal: sync %s: %w", f.Name(), err)
	}
	if f == l.f {
		l.dirty = false
		l.lastSync = time.Now()
	}
	return nil
}

// repair cuts the file back to its acknowledged records and fsyncs it, so
// that no byte of a failed batch can be replayed after a restart, and the
// next batch follows the last good record directly (garbage before it would
// make replay refuse the file). Truncation frees space, so it works on a
// full disk.
func (l *Log) repair() error {
	if err := l.f.Truncate(l.good); err != nil {
		return fmt.Errorf("wal: cut %s back to %d bytes after a failed write: %w", l.f.Name(), l.good, err)
	}
	if _, err := l.f.Seek(l.good, io.SeekStart); err != nil {
		return fmt.Errorf("wal: seek %s to %d: %w", l.f.Name(), l.good, err)
	}
	l.size, l.dirty = l.good, true
	if err := l.sync(l.f); err != nil {
		return err
	}
	l.broken = false
	return nil
}

// probeSize is the least the idle check after a failure writes: a page;
// maxProbeSize the most (a refused batch larger than that is retried by
// its next append).
const (
	probeSize    = 4096
	maxProbeSize = 64 << 20
)

// probe is the idle log's check, after a failure, whether it can write
// again: it repairs the file, writes zeros past its end, as many as the
// refused batch needed (at least a page: a page fitting on a full disk
// made /health say ok while every write of that size was still refused),
// fsyncs and cuts them off again. A crash in between leaves zeros after the
// last record, which replay cuts as a torn tail.
func (l *Log) probe() {
	err := func() error {
		if l.broken {
			if err := l.repair(); err != nil {
				return err
			}
		}
		l.broken = true // from here the file holds bytes to cut off
		if _, err := l.f.WriteAt(make([]byte, min(max(l.refused, probeSize), maxProbeSize)), l.good); err != nil {
			return fmt.Errorf("wal: write %s at offset %d: %w", l.f.Name(), l.good, err)
		}
		l.dirty = true
		if err := l.sync(l.f); err != nil {
			return err
		}
		return l.repair()
	}()
	if err != nil {
		l.fail(err)
		return
	}
	l.recovered()
}

// backgroundSync is SyncBatch's periodic fsync.
func (l *Log) backgroundSync() {
	if !l.dirty || l.broken {
		return
	}
	if err := l.sync(l.f); err != nil {
		l.fail(err)
		return
	}
	l.good = l.size
}

// rotate fsyncs and closes the current file and starts the next one. If the
// new file cannot be made, appends go on in the current one.
func (l *Log) rotate() error {
	if l.dirty {
		if err := l.sync(l.f); err != nil {
			return err
		}
	}
	index := l.CurrentIndex() + 1
	f, err := createFile(l.fs, l.dir, index, l.sync)
	if err != nil {
		return err
	}
	old := l.f
	l.f, l.size, l.good, l.dirty = f, fileHeaderSize, fileHeaderSize, false
	l.index.Store(int64(index))
	if err := old.Close(); err != nil {
		return fmt.Errorf("wal: close %s: %w", old.Name(), err)
	}
	return nil
}

// fail records err as the reason the log cannot write, logging the first
// failure of a run.
func (l *Log) fail(err error) {
	l.mu.Lock()
	first := l.err == nil
	l.err = err
	l.mu.Unlock()
	if first {
		l.logger.Error("wal: write failed; appends fail until it works again", "dir", l.dir, "err", err)
	}
}

// recovered clears the failure once a write has succeeded.
func (l *Log) recovered() {
	l.refused = 0
	l.mu.Lock()
	was := l.err
	l.err = nil
	l.mu.Unlock()
	if was != nil {
		l.logger.Info("wal: writing again after a failure", "dir", l.dir, "failure", was)
	}
}

// complete hands the batch's outcome to its waiters and recycles it.
func (l *Log) complete(b *batch, err, rotErr error, index int) {
	c := b.done
	c.err, c.rotErr, c.index = err, rotErr, index
	if cap(b.buf) > maxKeptBuffer {
		b.buf = nil
	}
	clear(b.applies)
	clear(b.appends)
	*b = batch{buf: b.buf[:0], applies: b.applies[:0], appends: b.appends[:0]}
	l.mu.Lock()
	l.free = append(l.free, b)
	l.mu.Unlock()
	close(c.done)
}
