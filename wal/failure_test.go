package wal

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/loci-memory/loci/vfs"
)

// TestWriteFailure: a file that can no longer be written or cut back keeps
// every later append failing, Close reports it, and a reopen finds exactly
// the acknowledged records.
func TestWriteFailure(t *testing.T) {
	dir := t.TempDir()
	opts, lb := testOptions()
	l, _ := mustOpen(t, dir, 1, 0, opts)
	mustAppend(t, l, []byte("kept"))
	l.f.Close() // every later write, truncate and fsync fails

	_, err := l.Append(Entry{Type: 1, Payload: []byte("lost")})
	if err == nil {
		t.Fatal("Append succeeded on a closed file")
	}
	if !errors.Is(l.Err(), err) {
		t.Fatalf("Err() = %v, want %v", l.Err(), err)
	}
	for range 3 {
		if _, err2 := l.Append(Entry{Type: 1, Payload: []byte("x")}); err2 == nil || l.Err() == nil {
			t.Fatalf("later Append: %v, Err %v; want both failing", err2, l.Err())
		}
	}
	if _, err2 := l.Rotate(nil); err2 == nil {
		t.Fatal("Rotate on a failed log succeeded")
	}
	if err2 := l.Close(); err2 == nil {
		t.Fatal("Close of a log that cannot cut its file back returned nil")
	}
	if !strings.Contains(lb.String(), "level=ERROR") {
		t.Errorf("failure was not logged: %s", lb.String())
	}
	l, recs := mustOpen(t, dir, 1, 0, opts)
	defer mustClose(t, l)
	if len(recs) != 1 || string(recs[0].Payload) != "kept" {
		t.Fatalf("after reopen: %d records", len(recs))
	}
}

// TestSyncFailureRecovers: a batch whose fsync fails is refused and never
// applied, the file is cut back before the next write, and the next append
// succeeds; after a reopen the failed record is gone and the later one is
// there.
func TestSyncFailureRecovers(t *testing.T) {
	dir := t.TempDir()
	opts, _ := testOptions()
	l, _ := mustOpen(t, dir, 1, 0, opts)
	mustAppend(t, l, []byte("before"))
	var calls atomic.Int32
	eio := errors.New("injected EIO")
	l.syncFile = func(f vfs.File) error {
		if calls.Add(1) == 1 {
			return eio
		}
		return f.Sync()
	}
	applied := false
	if _, err := l.Append(Entry{Type: 1, Payload: []byte("failed"), Apply: func(uint64) { applied = true }}); !errors.Is(err, eio) {
		t.Fatalf("Append: %v, want %v", err, eio)
	}
	if applied {
		t.Fatal("Apply ran for a batch that failed to sync")
	}
	if !errors.Is(l.Err(), eio) {
		t.Fatalf("Err() = %v, want %v", l.Err(), eio)
	}
	mustAppend(t, l, []byte("after"))
	if err := l.Err(); err != nil {
		t.Fatalf("Err() after a good append: %v", err)
	}
	mustClose(t, l)
	l, recs := mustOpen(t, dir, 1, 0, opts)
	defer mustClose(t, l)
	if len(recs) != 2 || string(recs[0].Payload) != "before" || string(recs[1].Payload) != "after" {
		t.Fatalf("after reopen: %v", recs)
	}
}

// TestBackgroundSyncFailure: under SyncBatch a failed background fsync
// shows in Err until the idle log's check finds it can write again.
func TestBackgroundSyncFailure(t *testing.T) {
	opts, _ := testOptions()
	opts.Sync = SyncBatch
	opts.SyncInterval = time.Millisecond
	opts.RetryInterval = time.Millisecond
	l, _ := mustOpen(t, t.TempDir(), 1, 0, opts)
	var failing atomic.Bool
	failing.Store(true)
	eio := errors.New("injected EIO")
	l.syncFile = func(f vfs.File) error {
		if failing.Load() {
			return eio
		}
		return f.Sync()
	}
	// The fsync runs in the background, or inline if the interval has
	// already passed when the batch is written.
	if _, err := l.Append(Entry{Type: 1}); err != nil && !errors.Is(err, eio) {
		t.Fatalf("Append: %v", err)
	}
	waitFor(t, "the background fsync to fail", func() bool { return errors.Is(l.Err(), eio) })
	failing.Store(false)
	waitFor(t, "the log to find it can write", func() bool { return l.Err() == nil })
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestDiskFull fills a disk (an Inject with a byte budget) at different
// points of a batch: the append fails with ENOSPC and leaves nothing, Err
// names the cause until space is back, the log then writes again without a
// restart, Close succeeds even on a full disk, and a reopen finds exactly
// the acknowledged records: none lost, none of the failed ones, and no
// garbage that would make replay refuse the file.
func TestDiskFull(t *testing.T) {
	for _, room := range []int64{0, 1, recordHeaderSize, recordHeaderSize + 10, 120} {
		for _, closeFull := range []bool{false, true} {
			t.Run(fmt.Sprintf("room=%d,closeFull=%v", room, closeFull), func(t *testing.T) {
				dir := t.TempDir()
				fsys := vfs.NewInject(vfs.Default)
				opts, _ := testOptions()
				opts.FS = fsys
				opts.RetryInterval = time.Millisecond
				l, _ := mustOpen(t, dir, 1, 0, opts)
				var acked []string
				appendOK := func(p string) {
					t.Helper()
					mustAppend(t, l, []byte(p))
					acked = append(acked, p)
				}
				appendOK("one")
				appendOK("two")
				fsys.SetSpace(room)
				big := strings.Repeat("x", 100)
				for i := range 3 {
					_, err := l.Append(Entry{Type: 1, Payload: []byte(big)}, Entry{Type: 1, Payload: []byte(fmt.Sprint("failed ", i))})
					if !errors.Is(err, syscall.ENOSPC) {
						t.Fatalf("Append on a full disk: %v, want ENOSPC", err)
					}
					if !errors.Is(l.Err(), syscall.ENOSPC) {
						t.Fatalf("Err() on a full disk: %v", l.Err())
					}
				}
				if closeFull {
					if err := l.Close(); err != nil {
						t.Fatalf("Close on a full disk: %v", err)
					}
				} else {
					fsys.SetSpace(-1)
					waitFor(t, "the log to find space", func() bool { return l.Err() == nil })
					appendOK("three")
					mustClose(t, l)
				}
				opts.FS = vfs.Default
				l, recs := mustOpen(t, dir, 1, 0, opts)
				defer mustClose(t, l)
				var got []string
				for _, r := range recs {
					got = append(got, string(r.Payload))
				}
				if fmt.Sprint(got) != fmt.Sprint(acked) {
					t.Fatalf("after reopen: %q, want %q", got, acked)
				}
			})
		}
	}
}
