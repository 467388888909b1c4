package tokenrows

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/loci-memory/loci/vfs"
)

// docsOf makes n documents of 0..maxRows rows of rowBytes random bytes.
func docsOf(r *rand.Rand, n, maxRows, rowBytes int) [][]byte {
	docs := make([][]byte, n)
	for d := range docs {
		docs[d] = make([]byte, r.IntN(maxRows+1)*rowBytes)
		for i := range docs[d] {
			docs[d][i] = byte(r.Uint32())
		}
	}
	return docs
}

func write(t *testing.T, fsys vfs.FS, path string, rowBytes int, docs [][]byte) error {
	t.Helper()
	return Write(fsys, path, rowBytes, len(docs), func(d int) ([]byte, error) { return docs[d], nil })
}

// TestRoundTrip: what Write writes, Open reads back, document by
// document, for files of no documents, of empty documents and of many.
func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	for i, c := range []struct{ n, maxRows, rowBytes int }{
		{0, 0, 132}, {1, 0, 132}, {3, 1, 1}, {500, 40, 132}, {20, 3, 68},
	} {
		docs := docsOf(r, c.n, c.maxRows, c.rowBytes)
		path := filepath.Join(dir, fmt.Sprint(i, ".tok"))
		if err := write(t, vfs.Default, path, c.rowBytes, docs); err != nil {
			t.Fatal(err)
		}
		f, err := Open(path)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if f.Docs() != c.n || f.RowBytes() != c.rowBytes {
			t.Fatalf("%+v: %d documents of rows of %d", c, f.Docs(), f.RowBytes())
		}
		for d, want := range docs {
			got, err := f.Rows(d)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%+v: document %d: %d bytes (%v), want %d", c, d, len(got), err, len(want))
			}
		}
		for _, d := range []int{-1, c.n} {
			if _, err := f.Rows(d); err == nil {
				t.Fatalf("%+v: document %d read", c, d)
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Rows(0); err == nil {
			t.Fatal("a document read after Close")
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != i+1 {
			t.Fatalf("%d entries in the directory after %d files: a temporary file was left", len(entries), i+1)
		}
	}
}

// TestEveryByteChecked: a file with any one byte changed either fails to
// open, or opens and fails (ErrCorrupt) on exactly the document that byte
// belongs to, all others reading as written.
func TestEveryByteChecked(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	docs := docsOf(r, 6, 3, 5)
	docs[2] = nil // an empty document between others
	var buf bytes.Buffer
	tw, err := NewWriter(&buf, 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if err := tw.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Finish(); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	owner := func(off int) int { // the document whose rows hold byte off, or -1
		at := headerSize
		for d, rows := range docs {
			if off >= at && off < at+len(rows) {
				return d
			}
			at += len(rows)
		}
		return -1
	}
	for off := range good {
		b := bytes.Clone(good)
		b[off] ^= 0x41
		f, err := Parse("damaged", b)
		d := owner(off)
		if d < 0 {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("byte %d (header, table or footer) changed: Parse %v", off, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("byte %d of document %d changed: Parse %v", off, d, err)
		}
		for e, want := range docs {
			got, err := f.Rows(e)
			switch {
			case e == d && !errors.Is(err, ErrCorrupt):
				t.Fatalf("byte %d of document %d changed: Rows %v", off, d, err)
			case e != d && (err != nil || !bytes.Equal(got, want)):
				t.Fatalf("byte %d of document %d changed: document %d reads %v", off, d, e, err)
			}
		}
	}
	for _, n := range []int{0, 10, headerSize + 8 + footerSize - 1, len(good) - 1} {
		if _, err := Parse("cut", good[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("cut to %d bytes: %v", n, err)
		}
	}
}

// TestWriteFailures: a write that fails (a full disk, a failed fsync, a
// failed rename, an error from the caller) leaves no file and no temporary
// file; the file written before it stays as it was.
func TestWriteFailures(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.tok")
	docs := docsOf(rand.New(rand.NewPCG(5, 6)), 50, 10, 132)
	if err := write(t, vfs.Default, path, 132, docs[:10]); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	boom := errors.New("boom")
	for name, fail := range map[string]func(*vfs.Inject){
		"disk full": func(f *vfs.Inject) { f.SetSpace(1000) },
		"fsync":     func(f *vfs.Inject) { f.FailNth(vfs.OpSync, 1, syscall.EIO) },
		"rename":    func(f *vfs.Inject) { f.FailNth(vfs.OpRename, 1, syscall.EIO) },
	} {
		inj := vfs.NewInject(vfs.Default)
		fail(inj)
		if err := write(t, inj, path, 132, docs); err == nil {
			t.Fatalf("%s: the write succeeded", name)
		}
	}
	if err := Write(vfs.Default, path, 132, len(docs), func(d int) ([]byte, error) {
		if d == 30 {
			return nil, boom
		}
		return docs[d], nil
	}); !errors.Is(err, boom) {
		t.Fatalf("the caller's error: %v", err)
	}
	if err := write(t, vfs.Default, path, 132, [][]byte{make([]byte, 131)}); err == nil {
		t.Fatal("a document of a part of a row was written")
	}
	after, _ := os.ReadFile(path)
	entries, _ := os.ReadDir(dir)
	if !bytes.Equal(before, after) || len(entries) != 1 {
		t.Fatalf("after failed writes: the file changed (%v) or %d entries are left", !bytes.Equal(before, after), len(entries))
	}
}

// TestLayout: a hand-checked example of docs/format/tokenrows.md: two
// documents of rows of 2 bytes, the first of one row, the second empty.
func TestLayout(t *testing.T) {
	var buf bytes.Buffer
	tw, err := NewWriter(&buf, 2)
	if err != nil {
		t.Fatal(err)
	}
	if tw.Add([]byte{0xaa, 0xbb}) != nil || tw.Add(nil) != nil || tw.Finish() != nil {
		t.Fatal("write failed")
	}
	want := []byte("LOCITOKR")
	want = append(want, 1, 0, 0, 0, 2, 0, 0, 0) // version, reserved, row size
	want = append(want, 0xaa, 0xbb)             // rows area: document 0 at 16
	want = binary.LittleEndian.AppendUint64(want, 0)
	want = binary.LittleEndian.AppendUint64(want, 2)
	want = binary.LittleEndian.AppendUint64(want, 2) // off[0..2]
	want = binary.LittleEndian.AppendUint32(want, crc32.Checksum([]byte{0xaa, 0xbb}, crc32.MakeTable(crc32.Castagnoli)))
	want = binary.LittleEndian.AppendUint32(want, 0) // the CRC-32C of no bytes
	want = binary.LittleEndian.AppendUint32(want, 2) // n
	sum := crc32.Update(crc32.Checksum(want[:16], crc32.MakeTable(crc32.Castagnoli)), crc32.MakeTable(crc32.Castagnoli), want[18:])
	want = binary.LittleEndian.AppendUint32(want, sum)
	want = append(want, "TOKR"...)
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("got\n% x\nwant\n% x", buf.Bytes(), want)
	}
}

// FuzzParse: no input makes Parse or Rows panic, and what Parse accepts
// reads every document or reports it corrupt.
func FuzzParse(f *testing.F) {
	var buf bytes.Buffer
	tw, _ := NewWriter(&buf, 3)
	tw.Add([]byte{1, 2, 3, 4, 5, 6})
	tw.Add(nil)
	tw.Add([]byte{7, 8, 9})
	tw.Finish()
	f.Add(buf.Bytes())
	f.Add([]byte("LOCITOKR"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tf, err := Parse("fuzz", b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%v does not match ErrCorrupt", err)
			}
			return
		}
		for d := range tf.Docs() {
			rows, err := tf.Rows(d)
			if err == nil && len(rows)%tf.RowBytes() != 0 {
				t.Fatalf("document %d: %d bytes, rows of %d", d, len(rows), tf.RowBytes())
			}
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("document %d: %v", d, err)
			}
		}
	})
}
