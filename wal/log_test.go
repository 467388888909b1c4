package wal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	sizes := []int{0, 1, 100, 4096, 1 << 20, 0, 3, 65536}
	sizes = append(sizes, repeat(100, 50)...)
	opts, _ := testOptions()
	l, recs := mustOpen(t, dir, 1, 0, opts)
	if len(recs) != 0 || l.NextSeq() != 1 || l.Dir() != dir || l.CurrentIndex() != 1 {
		t.Fatalf("new log: %d records, next seq %d, dir %s, index %d", len(recs), l.NextSeq(), l.Dir(), l.CurrentIndex())
	}
	// Mix single appends with multi-entry groups.
	for i := 0; i < len(sizes); {
		n := min(1+i%4, len(sizes)-i)
		first := l.NextSeq()
		var es []Entry
		for j := range n {
			es = append(es, Entry{Type: 1, Payload: payloadFor(first+uint64(j), sizes[i+j])})
		}
		seq, err := l.Append(es...)
		if err != nil || seq != first {
			t.Fatalf("Append: seq %d, %v; want %d", seq, err, first)
		}
		i += n
	}
	mustClose(t, l)

	l, recs = mustOpen(t, dir, 1, 0, opts)
	checkRecords(t, recs, 1, sizes)
	if got, want := l.NextSeq(), uint64(len(sizes)+1); got != want {
		t.Fatalf("after reopen NextSeq = %d, want %d", got, want)
	}
	more := []int{10, 0, 20}
	for _, n := range more {
		mustAppend(t, l, payloadFor(l.NextSeq(), n))
	}
	mustClose(t, l)
	l, recs = mustOpen(t, dir, 1, 0, opts)
	defer mustClose(t, l)
	checkRecords(t, recs, 1, append(sizes, more...))
}

func TestMinSeq(t *testing.T) {
	tests := []struct {
		name     string
		existing int    // records already in the log
		minSeq   uint64 // passed to the reopen
		want     uint64 // NextSeq after it
	}{
		{"empty, zero", 0, 0, 1},
		{"empty, 100", 0, 100, 100},
		{"10 records, below", 10, 5, 11},
		{"10 records, equal", 10, 11, 11},
		{"10 records, above", 10, 50, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeLog(t, repeat(tt.existing, 8)...)
			opts, _ := testOptions()
			l, _ := mustOpen(t, dir, 1, tt.minSeq, opts)
			if got := l.NextSeq(); got != tt.want {
				t.Fatalf("NextSeq = %d, want %d", got, tt.want)
			}
			if seq := mustAppend(t, l, payloadFor(tt.want, 8)); seq != tt.want {
				t.Fatalf("Append got seq %d, want %d", seq, tt.want)
			}
			mustClose(t, l)
			// The jump in seqs replays cleanly and is kept.
			l, recs := mustOpen(t, dir, 1, 0, opts)
			defer mustClose(t, l)
			if last := recs[len(recs)-1].Seq; last != tt.want || l.NextSeq() != tt.want+1 {
				t.Fatalf("after reopen: last seq %d, next %d; want %d, %d", last, l.NextSeq(), tt.want, tt.want+1)
			}
		})
	}
}

func TestGroupCommit(t *testing.T) {
	const goroutines, perGoroutine = 64, 20
	dir := t.TempDir()
	opts, _ := testOptions()
	l, _ := mustOpen(t, dir, 1, 0, opts)

	var mu sync.Mutex
	var applied []uint64
	record := func(seq uint64) {
		mu.Lock()
		applied = append(applied, seq)
		mu.Unlock()
	}

	// Hold the writer in the first Apply until every goroutine has queued an
	// append, so at least one batch is shared whatever the scheduling.
	release := make(chan struct{})
	firstDone := make(chan error)
	go func() {
		_, err := l.Append(Entry{Type: 1, Payload: []byte("first"), Apply: func(seq uint64) {
			record(seq)
			<-release
		}})
		firstDone <- err
	}()
	waitFor(t, "the first append to queue", func() bool { return l.NextSeq() == 2 })

	seqs := make([][]uint64, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				seq, err := l.Append(Entry{Type: 1, Payload: fmt.Appendf(nil, "g%d-%d", g, i), Apply: record})
				if err != nil {
					t.Errorf("Append: %v", err)
					return
				}
				seqs[g] = append(seqs[g], seq)
			}
		})
	}
	waitFor(t, "all goroutines to queue", func() bool { return l.NextSeq() == 2+goroutines })
	close(release)
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	mustClose(t, l)

	const total = 1 + goroutines*perGoroutine
	all := []uint64{1}
	for _, s := range seqs {
		if !slices.IsSorted(s) {
			t.Errorf("one goroutine's seqs are not increasing: %v", s)
		}
		all = append(all, s...)
	}
	slices.Sort(all)
	if len(slices.Compact(all)) != total || all[0] != 1 || all[len(all)-1] != total {
		t.Fatalf("seqs are not 1..%d exactly once", total)
	}
	if len(applied) != total {
		t.Fatalf("Apply called %d times, want %d", len(applied), total)
	}
	for i, seq := range applied {
		if seq != uint64(i+1) {
			t.Fatalf("Apply #%d got seq %d, want %d (applies out of order)", i, seq, i+1)
		}
	}
	st := l.Stats()
	if st.Records != total || st.Batches >= total || st.Syncs > st.Batches+2 {
		t.Fatalf("stats %+v: want %d records in fewer batches, about one sync per batch", st, total)
	}
	t.Logf("%d appends in %d batches", total, st.Batches)
}

// waitFor polls cond until it holds, failing the test after a generous
// deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func TestRotateByFileSize(t *testing.T) {
	dir := t.TempDir()
	opts, _ := testOptions()
	opts.FileSize = 1000
	l, _ := mustOpen(t, dir, 1, 0, opts)
	sizes := repeat(105, 83) // 100 bytes framed: 10 records fill a file
	for _, n := range sizes {
		mustAppend(t, l, payloadFor(l.NextSeq(), n))
	}
	if got := l.CurrentIndex(); got != 11 {
		t.Errorf("CurrentIndex = %d, want 11", got)
	}
	mustClose(t, l)

	indexes, err := Files(dir)
	if err != nil || !slices.Equal(indexes, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}) {
		t.Fatalf("Files = %v, %v", indexes, err)
	}
	for _, i := range indexes {
		want := int64(fileHeaderSize + 10*100)
		if i == 11 {
			want = fileHeaderSize + 5*100
		}
		if got := fileSize(t, walPath(dir, i)); got != want {
			t.Errorf("file %d is %d bytes, want %d", i, got, want)
		}
	}
	l, recs := mustOpen(t, dir, 1, 0, opts)
	checkRecords(t, recs, 1, sizes)
	if got := l.CurrentIndex(); got != 11 {
		t.Errorf("reopened CurrentIndex = %d, want 11", got)
	}
	mustClose(t, l)

	// With a smaller FileSize the last file is full: appends go to a new one.
	opts.FileSize = 500
	l, _ = mustOpen(t, dir, 1, 0, opts)
	seq := mustAppend(t, l, payloadFor(l.NextSeq(), 83))
	mustClose(t, l)
	if got := offsets(t, walPath(dir, 12)); len(got) != 1 || seq != 106 {
		t.Fatalf("file 12 has %d records; seq %d", len(got), seq)
	}
}

func TestRotate(t *testing.T) {
	dir := t.TempDir()
	opts, _ := testOptions()
	l, _ := mustOpen(t, dir, 1, 0, opts)

	var applied atomic.Uint64 // highest seq applied
	var ackedBefore uint64    // highest seq acknowledged before Rotate
	var atSwap uint64         // highest seq applied when swap ran
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var acked atomic.Uint64
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				seq, err := l.Append(Entry{Type: 1, Payload: []byte("x"), Apply: func(seq uint64) { applied.Store(seq) }})
				if err != nil {
					t.Errorf("Append: %v", err)
					return
				}
				for {
					old := acked.Load()
					if seq <= old || acked.CompareAndSwap(old, seq) {
						break
					}
				}
			}
		})
	}
	waitFor(t, "some appends", func() bool { return acked.Load() > 50 })
	ackedBefore = acked.Load()
	swapIndex := 0
	index, err := l.Rotate(func(newIndex int) {
		swapIndex = newIndex
		atSwap = applied.Load()
	})
	if err != nil || index != 2 || swapIndex != 2 || l.CurrentIndex() != 2 {
		t.Fatalf("Rotate = %d, %v; swap got %d; CurrentIndex %d; want 2", index, err, swapIndex, l.CurrentIndex())
	}
	waitFor(t, "appends after the rotation", func() bool { return acked.Load() > atSwap+50 })
	close(stop)
	wg.Wait()
	mustClose(t, l)

	if atSwap < ackedBefore {
		t.Fatalf("swap saw seqs applied up to %d, but %d was acknowledged before Rotate", atSwap, ackedBefore)
	}
	// File 1 holds exactly the records applied before swap, file 2 the rest.
	var maxOld, minNew uint64
	ScanFile(walPath(dir, 1), func(_ int64, r Record) error { maxOld = r.Seq; return nil })
	ScanFile(walPath(dir, 2), func(_ int64, r Record) error {
		if minNew == 0 {
			minNew = r.Seq
		}
		return nil
	})
	if maxOld != atSwap || minNew != atSwap+1 {
		t.Fatalf("file 1 ends at seq %d, file 2 starts at %d; swap saw %d applied", maxOld, minNew, atSwap)
	}
	if got := fileSize(t, walPath(dir, 2)); got <= fileHeaderSize {
		t.Fatalf("file 2 is empty")
	}
}

func TestRotateEmptyAndSequential(t *testing.T) {
	dir := t.TempDir()
	opts, _ := testOptions()
	l, _ := mustOpen(t, dir, 1, 0, opts)
	for want := 2; want <= 4; want++ {
		if got, err := l.Rotate(nil); err != nil || got != want {
			t.Fatalf("Rotate = %d, %v; want %d", got, err, want)
		}
	}
	mustAppend(t, l, []byte("in four"))
	mustClose(t, l)
	if got := offsets(t, walPath(dir, 4)); len(got) != 1 {
		t.Fatalf("file 4 has %d records, want 1", len(got))
	}
	for i := 1; i <= 3; i++ {
		if got := mustReadFile(t, walPath(dir, i)); !bytes.Equal(got, fileHeader()) {
			t.Fatalf("file %d = %q, want just the header", i, got)
		}
	}
}

func TestRemoveBefore(t *testing.T) {
	dir := t.TempDir()
	opts, _ := testOptions()
	l, _ := mustOpen(t, dir, 1, 0, opts)
	defer mustClose(t, l)
	for range 4 {
		mustAppend(t, l, []byte("r"))
		if _, err := l.Rotate(nil); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		before int
		want   []int
	}{
		{1, []int{1, 2, 3, 4, 5}},
		{3, []int{3, 4, 5}},
		{3, []int{3, 4, 5}},
		{100, []int{5}}, // never the current file
	}
	for _, tt := range tests {
		if err := l.RemoveBefore(tt.before); err != nil {
			t.Fatalf("RemoveBefore(%d): %v", tt.before, err)
		}
		if got, _ := Files(dir); !slices.Equal(got, tt.want) {
			t.Fatalf("after RemoveBefore(%d): files %v, want %v", tt.before, got, tt.want)
		}
	}
	mustAppend(t, l, []byte("still works"))
}

func TestOpenDeletesFilesBeforeFirst(t *testing.T) {
	dir := t.TempDir()
	opts, _ := testOptions()
	l, _ := mustOpen(t, dir, 1, 0, opts)
	for i := range 3 {
		mustAppend(t, l, payloadFor(l.NextSeq(), 10))
		if i < 2 {
			l.Rotate(nil)
		}
	}
	mustClose(t, l)

	l, recs := mustOpen(t, dir, 3, 0, opts)
	if got, _ := Files(dir); !slices.Equal(got, []int{3}) {
		t.Fatalf("files %v, want [3]", got)
	}
	checkRecords(t, recs, 3, []int{10})
	mustClose(t, l)

	// A first beyond every file starts a fresh file there.
	l, recs = mustOpen(t, dir, 7, 4, opts)
	defer mustClose(t, l)
	if got, _ := Files(dir); !slices.Equal(got, []int{7}) || len(recs) != 0 || l.CurrentIndex() != 7 || l.NextSeq() != 4 {
		t.Fatalf("files %v, %d records, index %d, next seq %d", got, len(recs), l.CurrentIndex(), l.NextSeq())
	}
}

func TestOpenMissingFile(t *testing.T) {
	tests := []struct {
		name  string
		files []int
		first int
	}{
		{"gap", []int{1, 2, 4}, 1},
		{"first missing", []int{4, 5}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, i := range tt.files {
				mustWriteFile(t, walPath(dir, i), fileHeader())
			}
			opts, _ := testOptions()
			_, err := Open(dir, tt.first, 0, opts, collect(new([]Record)))
			if err == nil || !strings.Contains(err.Error(), "missing") {
				t.Fatalf("Open: %v, want a missing file error", err)
			}
		})
	}
}

func TestOpenReplayError(t *testing.T) {
	dir := writeLog(t, 1, 2, 3)
	opts, _ := testOptions()
	boom := errors.New("boom")
	n := 0
	_, err := Open(dir, 1, 0, opts, func(Record) error {
		if n++; n == 2 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Open: %v, want the replay error", err)
	}
}

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"00000003.wal", "00000001.wal", "00000002.wal", "123456789.wal",
		"1.wal", "00000000.wal", "00000004.wal.tmp", "0000000x.wal", "-0000001.wal", "MANIFEST"} {
		mustWriteFile(t, filepath.Join(dir, name), nil)
	}
	if err := os.Mkdir(filepath.Join(dir, "00000005.wal"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := Files(dir)
	if want := []int{1, 2, 3, 123456789}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("Files = %v, %v; want %v", got, err, want)
	}
	if FileName(7) != "00000007.wal" {
		t.Fatalf("FileName(7) = %q", FileName(7))
	}
}

func TestSyncPolicy(t *testing.T) {
	for _, p := range []SyncPolicy{SyncAlways, SyncBatch, SyncOff} {
		got, err := ParseSyncPolicy(p.String())
		if err != nil || got != p {
			t.Errorf("ParseSyncPolicy(%q) = %v, %v", p.String(), got, err)
		}
	}
	if _, err := ParseSyncPolicy("sometimes"); err == nil {
		t.Error("ParseSyncPolicy accepted an unknown name")
	}
	if got := SyncPolicy(9).String(); got != "SyncPolicy(9)" {
		t.Errorf("String of unknown policy = %q", got)
	}
	if _, err := Open(t.TempDir(), 1, 0, Options{Sync: 9}, nil); err == nil {
		t.Error("Open accepted an unknown policy")
	}
}

func TestUnsafeSyncPolicies(t *testing.T) {
	for _, p := range []SyncPolicy{SyncBatch, SyncOff} {
		t.Run(p.String(), func(t *testing.T) {
			dir := t.TempDir()
			opts, lb := testOptions()
			opts.Sync = p
			opts.SyncInterval = time.Millisecond
			l, _ := mustOpen(t, dir, 1, 0, opts)
			defer mustClose(t, l)
			if want := "fsync policy " + p.String() + ": acknowledged writes can be lost"; !strings.Contains(lb.String(), want) {
				t.Errorf("log %q lacks %q", lb.String(), want)
			}
			syncs := l.Stats().Syncs
			for range 10 {
				mustAppend(t, l, []byte("fast"))
			}
			if p == SyncOff {
				if got := l.Stats().Syncs; got != syncs {
					t.Fatalf("SyncOff did %d fsyncs on append", got-syncs)
				}
			} else {
				waitFor(t, "the background fsync", func() bool { return l.Stats().Syncs > syncs })
				syncs = l.Stats().Syncs
			}
			mustAppend(t, l, []byte("more"))
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			if l.Stats().Syncs == syncs {
				t.Fatal("Sync did not fsync")
			}
		})
	}
}

func TestSyncAlwaysSyncsEveryBatch(t *testing.T) {
	opts, lb := testOptions()
	l, _ := mustOpen(t, t.TempDir(), 1, 0, opts)
	defer mustClose(t, l)
	for range 5 {
		mustAppend(t, l, []byte("x"))
	}
	if st := l.Stats(); st.Syncs < 5 || st.Batches != 5 {
		t.Fatalf("stats %+v after 5 sequential appends", st)
	}
	if strings.Contains(lb.String(), "WARN") {
		t.Fatalf("unexpected warning: %s", lb.String())
	}
}

func TestAppendInvalid(t *testing.T) {
	opts, _ := testOptions()
	l, _ := mustOpen(t, t.TempDir(), 1, 0, opts)
	defer mustClose(t, l)
	for _, e := range []Entry{{Type: 0}, {Type: 1, Payload: make([]byte, MaxPayload+1)}} {
		if _, err := l.Append(Entry{Type: 1}, e); err == nil {
			t.Fatalf("Append of type %d, %d bytes succeeded", e.Type, len(e.Payload))
		}
	}
	if l.Err() != nil || l.NextSeq() != 1 {
		t.Fatalf("invalid entries changed the log: err %v, next seq %d", l.Err(), l.NextSeq())
	}
	if seq, err := l.Append(); seq != 0 || err != nil {
		t.Fatalf("empty Append = %d, %v", seq, err)
	}
}

func TestClosed(t *testing.T) {
	opts, _ := testOptions()
	l, _ := mustOpen(t, t.TempDir(), 1, 0, opts)
	mustAppend(t, l, []byte("x"))
	mustClose(t, l)
	mustClose(t, l) // idempotent
	if _, err := l.Append(Entry{Type: 1}); err != ErrClosed {
		t.Errorf("Append after Close: %v", err)
	}
	if _, err := l.Rotate(nil); err != ErrClosed {
		t.Errorf("Rotate after Close: %v", err)
	}
	if err := l.Sync(); err != ErrClosed {
		t.Errorf("Sync after Close: %v", err)
	}
	if err := l.RemoveBefore(1); err != ErrClosed {
		t.Errorf("RemoveBefore after Close: %v", err)
	}
}

// TestCloseDuringAppends closes the log while appenders are busy: Close must
// return, every acknowledged record must survive, and the rest must fail
// with ErrClosed.
func TestCloseDuringAppends(t *testing.T) {
	dir := t.TempDir()
	opts, _ := testOptions()
	l, _ := mustOpen(t, dir, 1, 0, opts)
	var mu sync.Mutex
	acked := map[uint64][]byte{}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := 0; ; i++ {
				p := fmt.Appendf(nil, "g%d-%d", g, i)
				seq, err := l.Append(Entry{Type: 1, Payload: p})
				if err == ErrClosed {
					return
				}
				if err != nil {
					t.Errorf("Append: %v", err)
					return
				}
				mu.Lock()
				acked[seq] = p
				mu.Unlock()
			}
		})
	}
	waitFor(t, "some appends", func() bool { return l.NextSeq() > 50 })
	var closers sync.WaitGroup
	for range 2 {
		closers.Go(func() {
			if err := l.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	closers.Wait()
	wg.Wait()

	l, recs := mustOpen(t, dir, 1, 0, opts)
	defer mustClose(t, l)
	got := map[uint64][]byte{}
	for _, r := range recs {
		got[r.Seq] = r.Payload
	}
	for seq, p := range acked {
		if !bytes.Equal(got[seq], p) {
			t.Fatalf("acknowledged seq %d: got %q, want %q", seq, got[seq], p)
		}
	}
	t.Logf("%d acknowledged, %d on disk", len(acked), len(recs))
}
