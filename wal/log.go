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
)

// ErrClosed is returned by calls on a closed Log.
var ErrClosed = errors.New("wal: closed")

// Entry is one record to append. Apply, when non-nil, is called by the log's
// writer goroutine once the entry's batch is durable (per policy), in log
// order, before Append returns. Apply runs on the writer goroutine, so it
// must be quick and must not call the Log's Append, Rotate, Sync or Close.
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
	opts   Options
	logger *slog.Logger

	mu      sync.Mutex
	pending []*batch // oldest first; only the last may be unsealed
	free    []*batch // processed batches, kept for their buffers
	nextSeq uint64
	closed  bool
	err     error // sticky failure

	kick     chan struct{} // wakes the writer; capacity 1
	exited   chan struct{} // closed when the writer goroutine returns
	closeErr error         // set by the writer before exited is closed

	index atomic.Int64 // index of the current file

	batches, records, bytes, syncs atomic.Uint64

	// Owned by the writer goroutine (and by Open before it starts it).
	f        *os.File
	size     int64 // bytes in f
	dirty    bool  // f has writes not yet fsynced
	lastSync time.Time
	syncFile func(*os.File) error // (*os.File).Sync; replaced by tests
}

// batch is a group of records the writer handles with one write and at most
// one fsync, plus the control requests (Sync, Rotate, Close) that follow
// them. A batch carrying Rotate or Close is sealed: later requests go into
// a new batch, so that they are written to the new file or refused.
type batch struct {
	buf     []byte  // framed records
	applies []apply // Apply callbacks, in seq order
	records int
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

// completion is how a batch's outcome reaches its waiters. It is allocated
// per batch, not reused, so a waiter can read it after the batch itself has
// been recycled.
type completion struct {
	done  chan struct{}
	err   error
	index int // new file index, for Rotate
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
// A torn or corrupt record or file header in the last file is what a crash
// during a write leaves: replay ends there, the file is truncated to that
// offset and fsynced, and a warning naming file, offset and reason is
// logged. The same damage in an earlier file is returned as a
// *CorruptionError. So is a sequence number that does not increase, in any
// file, since it has a valid checksum and cannot be a torn write.
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
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	indexes, err := Files(dir)
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
		if err := os.Remove(filepath.Join(dir, FileName(index))); err != nil {
			return nil, err
		}
		removed = true
	}
	if removed {
		if err := syncDir(dir); err != nil {
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
		opts:     opts,
		logger:   opts.Logger,
		kick:     make(chan struct{}, 1),
		exited:   make(chan struct{}),
		syncFile: (*os.File).Sync,
	}
	if opts.Sync != SyncAlways {
		l.logger.Warn(fmt.Sprintf("wal: fsync policy %s: acknowledged writes can be lost on power failure; benchmarks only", opts.Sync),
			"dir", dir)
	}

	var last uint64
	replayed := false
	if len(keep) == 0 {
		if l.f, err = createFile(dir, first, l.sync); err != nil {
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
	f, err := os.OpenFile(path, flag, 0)
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
		if !errors.As(err, &damage) || !isLast {
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
			if !errors.As(err, &damage) || !isLast {
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
// Concurrent Appends are group-committed. After a write or fsync error the
// log is failed and this and every later Append return that error. Append
// with no entries returns 0 and nil at once (or the log's error). Append
// after Close returns ErrClosed.
func (l *Log) Append(entries ...Entry) (uint64, error) {
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
	b := l.tail()
	first := l.nextSeq
	for i := range entries {
		e := &entries[i]
		seq := first + uint64(i)
		b.buf = appendRecord(b.buf, e.Type, seq, e.Payload)
		if e.Apply != nil {
			b.applies = append(b.applies, apply{seq, e.Apply})
		}
	}
	b.records += len(entries)
	l.nextSeq += uint64(len(entries))
	c := b.done
	l.mu.Unlock()

	<-c.done
	if c.err != nil {
		return 0, c.err
	}
	return first, nil
}

// Rotate ends the current file, fsynced, and starts file index+1, whose
// header and directory entry are fsynced. swap, if non-nil, is called on the
// writer goroutine with the new index after every entry appended before
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
	return c.index, c.err
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
// file. Appends that were queued complete normally; later ones return
// ErrClosed. Close returns the log's sticky error if it has failed, and is
// idempotent.
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

// Err returns the error that failed the log, or nil.
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
	indexes, err := Files(l.dir)
	if err != nil {
		return err
	}
	removed := false
	for _, i := range indexes {
		if i >= index {
			break
		}
		if err := os.Remove(filepath.Join(l.dir, FileName(i))); err != nil {
			return err
		}
		removed = true
	}
	if !removed {
		return nil
	}
	return syncDir(l.dir)
}

// usable reports why the log takes no new requests. l.mu must be held.
func (l *Log) usable() error {
	if l.closed {
		return ErrClosed
	}
	return l.err
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

// run is the writer goroutine.
func (l *Log) run() {
	defer close(l.exited)
	var timer *time.Timer
	if l.opts.Sync == SyncBatch {
		timer = time.NewTimer(time.Hour)
		timer.Stop()
	}
	for {
		b := l.next(timer)
		closing := b.close
		l.process(b)
		if closing {
			return
		}
		if l.size >= l.opts.FileSize && l.Err() == nil {
			// Rotate now, after the batch's appenders are woken, so that
			// creating the new file overlaps with them queueing more.
			if err := l.rotate(); err != nil {
				l.fail(err)
			}
		}
	}
}

// next waits for and dequeues the oldest queued batch. Under SyncBatch it
// runs the background fsync while waiting.
func (l *Log) next(timer *time.Timer) *batch {
	l.mu.Lock()
	for len(l.pending) == 0 {
		l.mu.Unlock()
		if timer != nil && l.dirty && l.Err() == nil {
			if d := l.opts.SyncInterval - time.Since(l.lastSync); d > 0 {
				timer.Reset(d)
				select {
				case <-l.kick:
					timer.Stop()
				case <-timer.C:
					l.backgroundSync()
				}
			} else {
				l.backgroundSync()
			}
		} else {
			<-l.kick
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

// process writes, syncs and applies one batch, carries out its control
// requests and wakes its waiters.
func (l *Log) process(b *batch) {
	err := l.Err()
	if err == nil && len(b.buf) > 0 {
		err = l.write(b.buf)
	}
	if err == nil && l.dirty && l.needSync(b) {
		err = l.sync(l.f)
	}
	if err == nil {
		for _, a := range b.applies {
			a.fn(a.seq)
		}
	}
	index := 0
	if err == nil && b.rotate {
		if err = l.rotate(); err == nil {
			index = l.CurrentIndex()
			if b.swap != nil {
				b.swap(index)
			}
		}
	}
	if err != nil {
		l.fail(err)
	}
	if b.close {
		if cerr := l.f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("wal: close %s: %w", l.f.Name(), cerr)
		}
		if err == nil {
			err = l.Err() // a failure before this batch
		}
		l.closeErr = err
	}
	if err == nil && b.records > 0 {
		l.batches.Add(1)
		l.records.Add(uint64(b.records))
		l.bytes.Add(uint64(len(b.buf)))
	}
	l.complete(b, err, index)
}

// needSync reports whether batch b must be fsynced before it is
// acknowledged.
func (l *Log) needSync(b *batch) bool {
	if b.sync || b.rotate || b.close {
		return true
	}
	switch l.opts.Sync {
	case SyncAlways:
		return true
	case SyncBatch:
		return time.Since(l.lastSync) >= l.opts.SyncInterval
	}
	return false
}

func (l *Log) write(buf []byte) error {
	n, err := l.f.Write(buf)
	l.size += int64(n)
	if n > 0 {
		l.dirty = true
	}
	if err != nil {
		return fmt.Errorf("wal: write %s at offset %d: %w", l.f.Name(), l.size-int64(n), err)
	}
	return nil
}

// sync fsyncs f. After it fails the log must be failed, never synced again:
// the kernel may have dropped the dirty pages, and a later fsync that
// succeeds would falsely vouch for them.
func (l *Log) sync(f *os.File) error {
	l.syncs.Add(1)
	if err := l.syncFile(f); err != nil {
		return fmt.Errorf("wal: sync %s: %w", f.Name(), err)
	}
	if f == l.f {
		l.dirty = false
		l.lastSync = time.Now()
	}
	return nil
}

// backgroundSync is SyncBatch's periodic fsync.
func (l *Log) backgroundSync() {
	if l.Err() != nil || !l.dirty {
		return
	}
	if err := l.sync(l.f); err != nil {
		l.fail(err)
	}
}

// rotate fsyncs and closes the current file and starts the next one.
func (l *Log) rotate() error {
	if l.dirty {
		if err := l.sync(l.f); err != nil {
			return err
		}
	}
	index := l.CurrentIndex() + 1
	f, err := createFile(l.dir, index, l.sync)
	if err != nil {
		return err
	}
	old := l.f
	l.f, l.size, l.dirty = f, fileHeaderSize, false
	l.index.Store(int64(index))
	if err := old.Close(); err != nil {
		return fmt.Errorf("wal: close %s: %w", old.Name(), err)
	}
	return nil
}

// fail makes err the log's sticky error, unless it already has one.
func (l *Log) fail(err error) {
	l.mu.Lock()
	first := l.err == nil
	if first {
		l.err = err
	}
	l.mu.Unlock()
	if first {
		l.logger.Error("wal: log failed; every later append will fail", "dir", l.dir, "err", err)
	}
}

// complete hands the batch's outcome to its waiters and recycles it.
func (l *Log) complete(b *batch, err error, index int) {
	c := b.done
	c.err, c.index = err, index
	if cap(b.buf) > maxKeptBuffer {
		b.buf = nil
	}
	clear(b.applies)
	*b = batch{buf: b.buf[:0], applies: b.applies[:0]}
	l.mu.Lock()
	l.free = append(l.free, b)
	l.mu.Unlock()
	close(c.done)
}
