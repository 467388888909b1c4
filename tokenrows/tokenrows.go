// Package tokenrows reads and writes token-row files: for each document of
// a segment, the rows of its token vectors (late interaction, see
// embed/colbert's Stored), so that a pack scores its candidates by MaxSim
// without a model pass per candidate.
//
// The rows are derived data, a pure function of a document's text: a file
// that is missing or damaged costs their recomputation, never a different
// answer. So a file is written once, whole, through a temporary file and a
// rename, and every read checks the document's checksum; a document whose
// bytes fail it reports ErrCorrupt, and its reader computes the rows again.
//
// The layout is in docs/format/tokenrows.md: a header, the documents' rows
// one after another, then a table of their offsets and checksums and a
// footer, so that the writer streams the rows and the table follows them.
package tokenrows

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/edsrzf/mmap-go"
	"github.com/loci-memory/loci/internal/codec"
	"github.com/loci-memory/loci/vfs"
)

const (
	// Version is the layout version this package writes and reads.
	Version    = 1
	headerSize = 16 // magic, version, 3 reserved bytes, row size
	footerSize = 12 // docs, table checksum, magic
	// MaxDocs bounds the documents of one file (a segment holds fewer).
	MaxDocs = 1 << 28
)

var (
	magic      = []byte("LOCITOKR")
	footMagic  = []byte("TOKR")
	castagnoli = crc32.MakeTable(crc32.Castagnoli)

	// ErrCorrupt matches every error reporting a damaged file or
	// document (codec.ErrCorrupt).
	ErrCorrupt = codec.ErrCorrupt
)

// Writer streams a token-row file: Add each document's rows in document
// order, then Finish.
type Writer struct {
	w        *bufio.Writer
	header   []byte
	rowBytes int
	pos      uint64
	offsets  []uint64 // offsets[d]: where document d's rows start in the rows area
	crcs     []uint32
	err      error
}

// NewWriter starts a file of rows of rowBytes bytes each on w.
func NewWriter(w io.Writer, rowBytes int) (*Writer, error) {
	if rowBytes <= 0 || rowBytes > 1<<20 {
		return nil, fmt.Errorf("tokenrows: a row of %d bytes", rowBytes)
	}
	tw := &Writer{w: bufio.NewWriterSize(w, 1<<16), rowBytes: rowBytes}
	hdr := make([]byte, 0, headerSize)
	hdr = append(hdr, magic...)
	hdr = append(hdr, Version, 0, 0, 0)
	hdr = binary.LittleEndian.AppendUint32(hdr, uint32(rowBytes))
	tw.header = hdr
	_, tw.err = tw.w.Write(hdr)
	return tw, tw.err
}

// Add appends the next document's rows: a whole number of rows, none for
// a document whose rows are not stored (the engine's reading of an empty
// document: docs/format/tokenrows.md).
func (tw *Writer) Add(rows []byte) error {
	if tw.err != nil {
		return tw.err
	}
	if len(rows)%tw.rowBytes != 0 {
		return fmt.Errorf("tokenrows: document %d: %d bytes are not whole rows of %d", len(tw.offsets), len(rows), tw.rowBytes)
	}
	if len(tw.offsets) >= MaxDocs {
		return fmt.Errorf("tokenrows: more than %d documents", MaxDocs)
	}
	tw.offsets = append(tw.offsets, tw.pos)
	tw.crcs = append(tw.crcs, crc32.Checksum(rows, castagnoli))
	tw.pos += uint64(len(rows))
	_, tw.err = tw.w.Write(rows)
	return tw.err
}

// Finish writes the table and the footer and flushes. The file is
// complete once the underlying writer has made it durable.
func (tw *Writer) Finish() error {
	if tw.err != nil {
		return tw.err
	}
	table := make([]byte, 0, 8*(len(tw.offsets)+1)+4*len(tw.crcs))
	for _, o := range tw.offsets {
		table = binary.LittleEndian.AppendUint64(table, o)
	}
	table = binary.LittleEndian.AppendUint64(table, tw.pos)
	for _, c := range tw.crcs {
		table = binary.LittleEndian.AppendUint32(table, c)
	}
	table = binary.LittleEndian.AppendUint32(table, uint32(len(tw.offsets)))
	table = binary.LittleEndian.AppendUint32(table, crc32.Update(crc32.Checksum(tw.header, castagnoli), castagnoli, table))
	table = append(table, footMagic...)
	if _, err := tw.w.Write(table); err != nil {
		return err
	}
	return tw.w.Flush()
}

// Write makes path a token-row file of n documents, the rows of document d
// being rows(d), so that a crash leaves no file or the whole one
// (codec.ReplaceFile: a temporary file, fsync, rename, directory fsync).
func Write(fsys vfs.FS, path string, rowBytes, n int, rows func(d int) ([]byte, error)) error {
	return codec.ReplaceFile(fsys, path, "tokenrows-*.tmp", func(w io.Writer) error {
		tw, err := NewWriter(w, rowBytes)
		if err != nil {
			return err
		}
		for d := range n {
			r, err := rows(d)
			if err != nil {
				return err
			}
			if err := tw.Add(r); err != nil {
				return err
			}
		}
		return tw.Finish()
	})
}

// File is an open token-row file. Its methods are safe for concurrent use
// until Close.
type File struct {
	name     string
	mm       mmap.MMap // nil for Parse
	data     []byte
	rowBytes int
	docs     int
	offsets  []byte // docs+1 little-endian uint64
	crcs     []byte // docs little-endian uint32
}

// Open maps the file at path and checks its header, table and footer (not
// the documents' rows: Rows checks each as it reads it).
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tokenrows: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("tokenrows: %w", err)
	}
	if fi.Size() < headerSize+8+footerSize {
		return nil, codec.Errorf("tokenrows: %s: %d bytes, too short for a token-row file", path, fi.Size())
	}
	m, err := mmap.Map(f, mmap.RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("tokenrows: mmap %s: %w", path, err)
	}
	tf, err := Parse(path, m)
	if err != nil {
		m.Unmap()
		return nil, err
	}
	tf.mm = m
	return tf, nil
}

// Parse reads a token-row file held in b with Open's checks; name names it
// in errors. b must not change while the File is in use.
func Parse(name string, b []byte) (*File, error) {
	bad := func(format string, args ...any) error {
		return codec.Errorf("tokenrows: %s: "+format, append([]any{name}, args...)...)
	}
	if len(b) < headerSize+8+footerSize {
		return nil, bad("%d bytes, too short for a token-row file", len(b))
	}
	if !bytes.Equal(b[:len(magic)], magic) || !bytes.Equal(b[len(b)-len(footMagic):], footMagic) {
		return nil, bad("bad magic")
	}
	if b[len(magic)] != Version {
		return nil, bad("offset %d: unsupported version %d", len(magic), b[len(magic)])
	}
	if b[9]|b[10]|b[11] != 0 {
		return nil, bad("offset 9: reserved bytes are not zero")
	}
	rowBytes := int(binary.LittleEndian.Uint32(b[12:]))
	foot := len(b) - footerSize
	docs := int(binary.LittleEndian.Uint32(b[foot:]))
	if rowBytes <= 0 || docs > MaxDocs {
		return nil, bad("row size %d, %d documents", rowBytes, docs)
	}
	tableSize := 8*(docs+1) + 4*docs
	tableAt := foot - tableSize
	if tableAt < headerSize {
		return nil, bad("a table of %d documents does not fit in %d bytes", docs, len(b))
	}
	sum := crc32.Update(crc32.Checksum(b[:headerSize], castagnoli), castagnoli, b[tableAt:foot+4])
	if got, want := sum, binary.LittleEndian.Uint32(b[foot+4:]); got != want {
		return nil, bad("offset %d: table checksum mismatch (stored %08x, computed %08x)", foot+4, want, got)
	}
	tf := &File{name: name, data: b, rowBytes: rowBytes, docs: docs,
		offsets: b[tableAt : tableAt+8*(docs+1)], crcs: b[tableAt+8*(docs+1) : foot]}
	area := uint64(tableAt - headerSize)
	prev := uint64(0)
	for d := 0; d <= docs; d++ {
		o := binary.LittleEndian.Uint64(tf.offsets[8*d:])
		if o < prev || o > area || (o-prev)%uint64(rowBytes) != 0 || (d == 0 && o != 0) {
			return nil, bad("document %d: offset %d after %d in a rows area of %d bytes (rows of %d)", d, o, prev, area, rowBytes)
		}
		prev = o
	}
	if prev != area {
		return nil, bad("the rows end at %d, the rows area at %d", prev, area)
	}
	return tf, nil
}

// Docs is the number of documents.
func (f *File) Docs() int { return f.docs }

// RowBytes is the size of one row.
func (f *File) RowBytes() int { return f.rowBytes }

// errRange reports a document number out of the file's range.
var errRange = errors.New("tokenrows: no such document")

// Rows returns document d's rows, aliasing the file (valid until Close),
// after checking them against their checksum: an error that matches
// ErrCorrupt when they fail it.
func (f *File) Rows(d int) ([]byte, error) {
	if d < 0 || d >= f.docs {
		return nil, errRange
	}
	lo := binary.LittleEndian.Uint64(f.offsets[8*d:])
	hi := binary.LittleEndian.Uint64(f.offsets[8*(d+1):])
	rows := f.data[headerSize+lo : headerSize+hi]
	if got, want := crc32.Checksum(rows, castagnoli), binary.LittleEndian.Uint32(f.crcs[4*d:]); got != want {
		return nil, codec.Errorf("tokenrows: %s: document %d at offset %d: checksum mismatch (stored %08x, computed %08x)",
			f.name, d, headerSize+lo, want, got)
	}
	return rows, nil
}

// Close unmaps the file; Rows then finds no document. Rows returned before
// must not be used after.
func (f *File) Close() error {
	if f.mm == nil {
		return nil
	}
	err := f.mm.Unmap()
	f.mm, f.data, f.offsets, f.crcs, f.docs = nil, nil, nil, nil, 0
	return err
}
