package wal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/loci-memory/loci/vfs"
)

// FileName returns the name of the log file with the given index.
func FileName(index int) string {
	return fmt.Sprintf("%08d.wal", index)
}

// parseFileName returns the index of a log file name, and false for any name
// FileName would not produce.
func parseFileName(name string) (int, bool) {
	digits, ok := strings.CutSuffix(name, ".wal")
	if !ok || len(digits) < 8 {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	index, err := strconv.Atoi(digits)
	if err != nil || index < 1 || FileName(index) != name {
		return 0, false
	}
	return index, true
}

// Files lists the indexes of the log files in dir, ascending. Other names
// and subdirectories are ignored.
func Files(dir string) ([]int, error) { return files(vfs.Default, dir) }

func files(fsys vfs.FS, dir string) ([]int, error) {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var indexes []int
	for _, e := range entries {
		if index, ok := parseFileName(e.Name()); ok && !e.IsDir() {
			indexes = append(indexes, index)
		}
	}
	slices.Sort(indexes)
	return indexes, nil
}

// fileHeader returns the 8-byte header every log file starts with.
func fileHeader() []byte {
	return append([]byte(fileMagic), formatVersion)
}

// createFile creates log file index in dir with its header, and makes both
// the file and its directory entry durable before returning it.
// If it fails, the file is removed again, so that a retry (after a full
// disk was freed, say) can create it.
func createFile(fsys vfs.FS, dir string, index int, sync func(vfs.File) error) (vfs.File, error) {
	path := filepath.Join(dir, FileName(index))
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("wal: create %s: %w", path, err)
	}
	fail := func(err error) (vfs.File, error) {
		f.Close()
		fsys.Remove(path)
		return nil, err
	}
	if _, err := f.Write(fileHeader()); err != nil {
		return fail(fmt.Errorf("wal: write header of %s: %w", path, err))
	}
	if err := sync(f); err != nil {
		return fail(err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fail(err)
	}
	return f, nil
}

// reader reads the records of one log file in order, reusing one payload
// buffer. It trusts the file size it is given, so a damaged length field is
// recognised as torn without reading or allocating for it.
type reader struct {
	br   *bufio.Reader
	path string
	size int64 // bytes in the file
	off  int64 // offset of the next record
	hdr  [recordHeaderSize]byte
	buf  []byte
}

func newReader(f vfs.File, path string) (*reader, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return &reader{br: bufio.NewReaderSize(f, 256<<10), path: path, size: fi.Size()}, nil
}

func (r *reader) corrupt(reason string, torn bool) *CorruptionError {
	e := &CorruptionError{File: r.path, Offset: r.off, Reason: reason}
	if torn {
		e.cause = ErrShort
	}
	return e
}

// readFileHeader checks the file header. A missing or damaged header is a
// *CorruptionError at offset 0. A well-formed header of another format
// version is a plain error: that file may be intact, written by a newer
// Loci, and must never be treated as damage and truncated.
func (r *reader) readFileHeader() error {
	if r.size < fileHeaderSize {
		return r.corrupt(fmt.Sprintf("torn file header: %d of %d bytes", r.size, fileHeaderSize), true)
	}
	var h [fileHeaderSize]byte
	if _, err := io.ReadFull(r.br, h[:]); err != nil {
		return fmt.Errorf("wal: read %s: %w", r.path, err)
	}
	if string(h[:len(fileMagic)]) != fileMagic {
		return r.corrupt(fmt.Sprintf("bad file magic %q", h[:len(fileMagic)]), false)
	}
	if v := h[len(fileMagic)]; v != formatVersion {
		return fmt.Errorf("wal: %s: unsupported format version %d (want %d)", r.path, v, formatVersion)
	}
	r.off = fileHeaderSize
	return nil
}

// next returns the next record, io.EOF at a clean end of file, a
// *CorruptionError at a torn or corrupt record (r.off is then its offset), or
// an I/O error. The payload is valid until the next call.
func (r *reader) next() (Record, error) {
	left := r.size - r.off
	if left == 0 {
		return Record{}, io.EOF
	}
	if left < recordHeaderSize {
		return Record{}, r.corrupt(fmt.Sprintf("torn record header: %d of %d bytes", left, recordHeaderSize), true)
	}
	if _, err := io.ReadFull(r.br, r.hdr[:]); err != nil {
		return Record{}, fmt.Errorf("wal: read %s at offset %d: %w", r.path, r.off, err)
	}
	length, reason := payloadLen(r.hdr[:])
	if reason != "" {
		return Record{}, r.corrupt(reason, false)
	}
	if have := left - recordHeaderSize; have < int64(length) {
		return Record{}, r.corrupt(fmt.Sprintf("torn record payload: %d of %d bytes", have, length), true)
	}
	if cap(r.buf) < length {
		r.buf = make([]byte, length)
	}
	payload := r.buf[:length]
	if _, err := io.ReadFull(r.br, payload); err != nil {
		return Record{}, fmt.Errorf("wal: read %s at offset %d: %w", r.path, r.off, err)
	}
	rec, reason := checkFrame(r.hdr[:], payload)
	if reason != "" {
		return Record{}, r.corrupt(reason, false)
	}
	r.off += recordHeaderSize + int64(length)
	return rec, nil
}

// maxSeqGap bounds how far above the last good sequence number a frame found
// after damage may be numbered to count as a record. The sequence field of
// random bytes is random, so the bound keeps garbage from passing as a
// record even when its checksum happens to match; real gaps (sequence
// numbers of batches that failed to write) are never that large.
const maxSeqGap = 1 << 32

// validFrameAfter returns the offset of the first valid frame that starts
// after offset from, in a file of size bytes, with a sequence number above
// after and within maxSeqGap of it; or 0 if there is none.
//
// This is how damage is told from a torn write. A crash during a write can
// only leave an incomplete or garbled end of the last file: a frame cut short,
// a length written without its payload, or zeros where the file was extended
// but the data never reached the disk. None of these is followed by a valid
// frame. A flipped byte in the middle of a file is.
func validFrameAfter(f io.ReaderAt, size, from int64, after uint64) (int64, error) {
	if size-from <= recordHeaderSize {
		return 0, nil
	}
	b := make([]byte, size-from)
	if _, err := f.ReadAt(b, from); err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	for i := 1; i+recordHeaderSize <= len(b); i++ {
		h := b[i : i+recordHeaderSize]
		if h[8] == 0 {
			continue
		}
		seq := binary.LittleEndian.Uint64(h[9:17])
		if seq <= after || seq-after > maxSeqGap {
			continue
		}
		n := int64(binary.LittleEndian.Uint32(h[0:4]))
		end := int64(i) + recordHeaderSize + n
		if end > int64(len(b)) {
			continue
		}
		if _, reason := checkFrame(h, b[i+recordHeaderSize:end]); reason == "" {
			return from + int64(i), nil
		}
	}
	return 0, nil
}

// notTorn turns damage e into the error for damage followed by the valid
// record at offset next: corruption, never a torn write.
func notTorn(e *CorruptionError, next int64) *CorruptionError {
	return &CorruptionError{File: e.File, Offset: e.Offset, Next: next, cause: e.cause,
		Reason: fmt.Sprintf("%s, followed by a valid record at offset %d: damaged data, not a torn write", e.Reason, next)}
}

// seqError reports a record whose sequence number does not exceed the one
// before it. Its checksum is valid, so this is never a torn write.
func seqError(path string, off int64, seq, prev uint64) *CorruptionError {
	return &CorruptionError{File: path, Offset: off,
		Reason: fmt.Sprintf("sequence number %d does not follow %d", seq, prev)}
}

// ScanFile reads the log file at path without changing it, calling fn for
// each valid record with the record's offset; the payload is valid only
// during the call. It stops at the first bad file header or record and
// returns a *CorruptionError for it (errors.Is(err, ErrShort) if it is cut
// short), and also treats a sequence number that does not increase as
// corruption. When a valid record follows the damage, the error's Next is its
// offset: in the last file that tells corruption from a torn tail. ScanFile
// returns nil if the file is clean to its end, and fn's error if fn fails.
func ScanFile(path string, fn func(offset int64, r Record) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := newReader(f, path)
	if err != nil {
		return err
	}
	var prev uint64
	damaged := func(err error) error {
		var ce *CorruptionError
		if !errors.As(err, &ce) {
			return err
		}
		next, ferr := validFrameAfter(f, r.size, ce.Offset, prev)
		if ferr != nil {
			return fmt.Errorf("wal: read %s after offset %d: %w", path, ce.Offset, ferr)
		}
		if next != 0 {
			return notTorn(ce, next)
		}
		return err
	}
	if err := r.readFileHeader(); err != nil {
		return damaged(err)
	}
	for first := true; ; first = false {
		off := r.off
		rec, err := r.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return damaged(err)
		}
		if !first && rec.Seq <= prev {
			return seqError(path, off, rec.Seq, prev)
		}
		prev = rec.Seq
		if err := fn(off, rec); err != nil {
			return err
		}
	}
}
