package wal

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loci-memory/loci/vfs"
)

// TestAppendDeferred: under SyncAlways a deferred append is applied and
// returns while its fsync is still held; an urgent append behind it waits
// for that fsync and its own; both are in the file after a reopen.
func TestAppendDeferred(t *testing.T) {
	dir := t.TempDir()
	opts, _ := testOptions()
	l, _ := mustOpen(t, dir, 1, 0, opts)
	gate := make(chan struct{})
	var held atomic.Int32
	l.syncFile = func(f vfs.File) error {
		held.Add(1)
		<-gate
		return f.Sync()
	}
	applied := false
	if _, err := l.AppendDeferred(Entry{Type: 1, Payload: []byte("receipt"), Apply: func(uint64) { applied = true }}); err != nil {
		t.Fatalf("AppendDeferred: %v", err)
	}
	if !applied {
		t.Fatal("AppendDeferred returned before its record was applied")
	}
	waitFor(t, "the idle log to fsync the deferred batch", func() bool { return held.Load() == 1 })

	done := make(chan error, 1)
	go func() {
		_, err := l.Append(Entry{Type: 1, Payload: []byte("ingest")})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Append returned (%v) while the deferred batch's fsync was held", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatalf("Append: %v", err)
	}
	mustClose(t, l)
	l, recs := mustOpen(t, dir, 1, 0, opts)
	defer mustClose(t, l)
	if len(recs) != 2 || string(recs[0].Payload) != "receipt" || string(recs[1].Payload) != "ingest" {
		t.Fatalf("after reopen: %v", recs)
	}
}

// TestAppendDeferredSyncedBeforeNextWrite: a deferred batch is fsynced
// before the writer writes the next one (at most one unsynced batch): with
// the idle fsync failing, the next append fails and the deferred record is
// cut off; a later append succeeds, and a reopen finds the records before
// and after, with sequence numbers still increasing.
func TestAppendDeferredSyncedBeforeNextWrite(t *testing.T) {
	dir := t.TempDir()
	opts, _ := testOptions()
	opts.RetryInterval = time.Millisecond
	l, _ := mustOpen(t, dir, 1, 0, opts)
	mustAppend(t, l, []byte("before"))
	eio := errors.New("injected EIO")
	var calls atomic.Int32
	l.syncFile = func(f vfs.File) error {
		if calls.Add(1) == 1 {
			return eio
		}
		return f.Sync()
	}
	if _, err := l.AppendDeferred(Entry{Type: 1, Payload: []byte("receipt")}); err != nil {
		t.Fatalf("AppendDeferred: %v", err)
	}
	waitFor(t, "the deferred batch's fsync to fail and the log to recover", func() bool { return calls.Load() >= 2 && l.Err() == nil })
	mustAppend(t, l, []byte("after"))
	mustClose(t, l)
	l, recs := mustOpen(t, dir, 1, 0, opts)
	defer mustClose(t, l)
	if len(recs) != 2 || string(recs[0].Payload) != "before" || string(recs[1].Payload) != "after" {
		t.Fatalf("after reopen: %v", recs)
	}
	if recs[1].Seq <= recs[0].Seq {
		t.Fatalf("sequence numbers %d then %d", recs[0].Seq, recs[1].Seq)
	}
}

// TestAppendDeferredOneUnsynced: deferred appends in a row never leave two
// written batches unsynced: every write after the first finds the file
// fsynced.
func TestAppendDeferredOneUnsynced(t *testing.T) {
	opts, _ := testOptions()
	l, _ := mustOpen(t, t.TempDir(), 1, 0, opts)
	defer mustClose(t, l)
	var unsyncedAtWrite atomic.Int32
	f := l.f
	l.f = &writeWatch{File: f, dirty: func() bool { return l.dirty }, onDirtyWrite: func() { unsyncedAtWrite.Add(1) }}
	for i := range 50 {
		if _, err := l.AppendDeferred(Entry{Type: 1, Payload: payloadFor(uint64(i), 100)}); err != nil {
			t.Fatalf("AppendDeferred %d: %v", i, err)
		}
	}
	if n := unsyncedAtWrite.Load(); n != 0 {
		t.Fatalf("%d batches were written while an earlier one was unsynced", n)
	}
}

// writeWatch reports a write to a file that holds unsynced bytes.
type writeWatch struct {
	vfs.File
	dirty        func() bool
	onDirtyWrite func()
}

func (w *writeWatch) Write(p []byte) (int, error) {
	if w.dirty() {
		w.onDirtyWrite()
	}
	return w.File.Write(p)
}
