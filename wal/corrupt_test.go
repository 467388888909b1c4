package wal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// lastRecordLog writes a one-file log of four records and returns its
// directory, the file's bytes and the offset of the last record.
func lastRecordLog(t *testing.T) (dir string, data []byte, lastOff int64) {
	dir = writeLog(t, 5, 0, 30, 20)
	offs := offsets(t, walPath(dir, 1))
	return dir, mustReadFile(t, walPath(dir, 1)), offs[len(offs)-1]
}

// checkTruncated opens dir, whose only file was damaged at offset off, and
// checks the repair: the records before off replay, the file is cut to off
// with a warning naming file and offset, appends work and a reopen is clean.
func checkTruncated(t *testing.T, dir string, off int64, sizes []int) {
	t.Helper()
	path := walPath(dir, 1)
	opts, lb := testOptions()
	l, recs := mustOpen(t, dir, 1, 0, opts)
	checkRecords(t, recs, 1, sizes)
	if got := fileSize(t, path); got != off {
		t.Fatalf("file is %d bytes after Open, want truncated to %d", got, off)
	}
	logged := lb.String()
	if !strings.Contains(logged, "level=WARN") || !strings.Contains(logged, "file="+path) ||
		!strings.Contains(logged, fmt.Sprintf("offset=%d ", off)) {
		t.Fatalf("warning does not name file %s and offset %d: %s", path, off, logged)
	}
	next := uint64(len(sizes) + 1)
	if seq := mustAppend(t, l, payloadFor(next, 9)); seq != next {
		t.Fatalf("Append after repair got seq %d, want %d", seq, next)
	}
	mustClose(t, l)

	opts, lb = testOptions()
	l, recs = mustOpen(t, dir, 1, 0, opts)
	defer mustClose(t, l)
	checkRecords(t, recs, 1, append(sizes, 9))
	if lb.String() != "" {
		t.Fatalf("reopen after repair logged: %s", lb.String())
	}
}

func TestTornTail(t *testing.T) {
	_, data, lastOff := lastRecordLog(t)
	for cut := lastOff + 1; cut < int64(len(data)); cut++ {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			dir := t.TempDir()
			mustWriteFile(t, walPath(dir, 1), data[:cut])
			checkTruncated(t, dir, lastOff, []int{5, 0, 30})
		})
	}
}

func TestCorruptTail(t *testing.T) {
	_, data, lastOff := lastRecordLog(t)
	tests := []struct {
		name string
		at   int64 // offset in the frame
		bit  byte
	}{
		{"length longer", 0, 0x01},   // torn: claims 21 bytes, has 20
		{"length over max", 3, 0x80}, // corrupt: over MaxPayload
		{"length shorter", 0, 0x04},  // checksum: claims 16 bytes
		{"crc", 4, 0x01},
		{"crc high", 7, 0x80},
		{"type", 8, 0x01},
		{"seq", 9, 0x01},
		{"seq high", 16, 0x80},
		{"payload", 17, 0x01},
		{"payload end", 17 + 19, 0x80},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			b := bytes.Clone(data)
			b[lastOff+tt.at] ^= tt.bit
			mustWriteFile(t, walPath(dir, 1), b)
			checkTruncated(t, dir, lastOff, []int{5, 0, 30})
		})
	}
}

func TestZeroTail(t *testing.T) {
	_, data, _ := lastRecordLog(t)
	for _, n := range []int{1, recordHeaderSize - 1, recordHeaderSize, 100, 4096} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			dir := t.TempDir()
			mustWriteFile(t, walPath(dir, 1), append(bytes.Clone(data), make([]byte, n)...))
			checkTruncated(t, dir, int64(len(data)), []int{5, 0, 30, 20})
		})
	}
}

// TestBadHeaderOfLastFile damages the header of the second of two files: it
// is cut to nothing and given a fresh header, and appends go on in it.
func TestBadHeaderOfLastFile(t *testing.T) {
	header := fileHeader()
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"3 bytes", header[:3]},
		{"7 bytes", header[:7]},
		{"bad magic", append([]byte("LOCIWAX\x01"), make([]byte, 40)...)},
		{"zeros", make([]byte, 64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeLog(t, 4)
			mustWriteFile(t, walPath(dir, 2), tt.data)
			opts, lb := testOptions()
			l, recs := mustOpen(t, dir, 1, 0, opts)
			checkRecords(t, recs, 1, []int{4})
			if got := mustReadFile(t, walPath(dir, 2)); !bytes.Equal(got, header) {
				t.Fatalf("file 2 = %q after Open, want just a header", got)
			}
			if want := "file=" + walPath(dir, 2) + " offset=0 "; !strings.Contains(lb.String(), want) {
				t.Fatalf("log lacks %q: %s", want, lb.String())
			}
			mustAppend(t, l, payloadFor(2, 6))
			if l.CurrentIndex() != 2 {
				t.Fatalf("CurrentIndex = %d, want 2", l.CurrentIndex())
			}
			mustClose(t, l)
			l, recs = mustOpen(t, dir, 1, 0, opts)
			defer mustClose(t, l)
			checkRecords(t, recs, 1, []int{4, 6})
		})
	}
}

// TestUnsupportedVersion checks that a file of another format version is
// refused, not mistaken for damage and truncated.
func TestUnsupportedVersion(t *testing.T) {
	dir := writeLog(t, 4, 5)
	path := walPath(dir, 1)
	data := mustReadFile(t, path)
	data[7] = 2
	mustWriteFile(t, path, data)
	opts, _ := testOptions()
	_, err := Open(dir, 1, 0, opts, collect(new([]Record)))
	var ce *CorruptionError
	if err == nil || errors.As(err, &ce) || !strings.Contains(err.Error(), "unsupported format version 2") {
		t.Fatalf("Open: %v, want an unsupported version error", err)
	}
	if !bytes.Equal(mustReadFile(t, path), data) {
		t.Fatal("Open changed the file")
	}
}

// TestCorruptEarlierFile damages the first of two files, which no crash can
// explain: Open must fail with the place of the damage and change nothing.
func TestCorruptEarlierFile(t *testing.T) {
	build := func(t *testing.T) (dir string, data []byte, lastOff int64) {
		dir = writeLog(t, 10, 20, 30)
		opts, _ := testOptions()
		l, _ := mustOpen(t, dir, 1, 0, opts)
		l.Rotate(nil)
		mustAppend(t, l, payloadFor(4, 40))
		mustClose(t, l)
		offs := offsets(t, walPath(dir, 1))
		return dir, mustReadFile(t, walPath(dir, 1)), offs[len(offs)-1]
	}
	tests := []struct {
		name    string
		damage  func(data []byte, lastOff int64) []byte
		atFile0 bool // damage is at offset 0, not at the last record
		torn    bool
	}{
		{"torn payload", func(d []byte, _ int64) []byte { return d[:len(d)-1] }, false, true},
		{"torn header", func(d []byte, off int64) []byte { return d[:off+5] }, false, true},
		{"payload flipped", func(d []byte, _ int64) []byte { d[len(d)-1] ^= 1; return d }, false, false},
		{"crc flipped", func(d []byte, off int64) []byte { d[off+4] ^= 1; return d }, false, false},
		{"zero tail", func(d []byte, _ int64) []byte { return append(d, make([]byte, 20)...) }, false, false},
		{"bad magic", func(d []byte, _ int64) []byte { d[0] = 'X'; return d }, true, false},
		{"empty", func([]byte, int64) []byte { return nil }, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, data, lastOff := build(t)
			path := walPath(dir, 1)
			damaged := tt.damage(data, lastOff)
			mustWriteFile(t, path, damaged)
			wantOff := lastOff
			if tt.atFile0 {
				wantOff = 0
			} else if tt.name == "zero tail" {
				wantOff = int64(len(data))
			}

			opts, _ := testOptions()
			_, err := Open(dir, 1, 0, opts, collect(new([]Record)))
			var ce *CorruptionError
			if !errors.As(err, &ce) || ce.File != path || ce.Offset != wantOff || errors.Is(err, ErrShort) != tt.torn {
				t.Fatalf("Open: %v, want corruption in %s at offset %d (torn %v)", err, path, wantOff, tt.torn)
			}
			if !bytes.Equal(mustReadFile(t, path), damaged) {
				t.Fatal("Open changed the damaged file")
			}
			if err2 := ScanFile(path, func(int64, Record) error { return nil }); err2 == nil || err2.Error() != err.Error() {
				t.Fatalf("ScanFile: %v, want %v", err2, err)
			}
		})
	}
}

// TestSeqRegression checks that a valid frame whose seq does not increase is
// corruption, in the last file too: it cannot be a torn write.
func TestSeqRegression(t *testing.T) {
	dir := t.TempDir()
	path := walPath(dir, 1)
	data := fileHeader()
	data = appendRecord(data, 1, 1, []byte("a"))
	data = appendRecord(data, 1, 2, []byte("b"))
	off := int64(len(data))
	data = appendRecord(data, 1, 2, []byte("c"))
	mustWriteFile(t, path, data)

	opts, _ := testOptions()
	_, err := Open(dir, 1, 0, opts, collect(new([]Record)))
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.File != path || ce.Offset != off || !strings.Contains(ce.Reason, "sequence") {
		t.Fatalf("Open: %v, want a sequence error at offset %d", err, off)
	}
	if !bytes.Equal(mustReadFile(t, path), data) {
		t.Fatal("Open changed the file")
	}
	if err := ScanFile(path, func(int64, Record) error { return nil }); err == nil || !strings.Contains(err.Error(), "sequence") {
		t.Fatalf("ScanFile: %v", err)
	}
}

func TestScanFile(t *testing.T) {
	dir := writeLog(t, 3, 0, 7)
	path := walPath(dir, 1)
	type seen struct {
		off int64
		seq uint64
		n   int
	}
	var got []seen
	err := ScanFile(path, func(off int64, r Record) error {
		got = append(got, seen{off, r.Seq, len(r.Payload)})
		return nil
	})
	want := []seen{{8, 1, 3}, {8 + 20, 2, 0}, {8 + 20 + 17, 3, 7}}
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ScanFile = %v, %v; want %v", got, err, want)
	}

	stop := errors.New("stop")
	if err := ScanFile(path, func(int64, Record) error { return stop }); err != stop {
		t.Fatalf("ScanFile returned %v, want fn's error", err)
	}

	data := mustReadFile(t, path)
	torn := data[:len(data)-2]
	mustWriteFile(t, path, torn)
	got = nil
	err = ScanFile(path, func(off int64, r Record) error {
		got = append(got, seen{off, r.Seq, len(r.Payload)})
		return nil
	})
	var ce *CorruptionError
	if !errors.As(err, &ce) || !errors.Is(err, ErrShort) || ce.Offset != 45 || len(got) != 2 {
		t.Fatalf("ScanFile of torn file = %v, %v", got, err)
	}
	if !bytes.Equal(mustReadFile(t, path), torn) {
		t.Fatal("ScanFile changed the file")
	}
	if err := ScanFile(walPath(dir, 9), nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ScanFile of missing file: %v", err)
	}
}
