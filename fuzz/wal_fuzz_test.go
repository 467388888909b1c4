package fuzz

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-memory/loci/wal"
)

// walFileHeader is the 8-byte header of a format version 1 log file.
const walFileHeader = "LOCIWAL\x01"

// walFrame builds a record frame from the format description, independently
// of the wal package's encoder.
func walFrame(typ uint8, seq uint64, payload []byte) []byte {
	b := make([]byte, 17, 17+len(payload))
	binary.LittleEndian.PutUint32(b[0:4], uint32(len(payload)))
	b[8] = typ
	binary.LittleEndian.PutUint64(b[9:17], seq)
	b = append(b, payload...)
	crc := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	crc.Write(b[0:4])
	crc.Write(b[8:])
	binary.LittleEndian.PutUint32(b[4:8], crc.Sum32())
	return b
}

// FuzzWALRecord feeds arbitrary bytes to wal.DecodeRecord, checking that
// whatever decodes is exactly the frame the format describes, and to
// wal.ScanFile as the body of a log file, checking that it agrees with
// DecodeRecord record by record.
func FuzzWALRecord(f *testing.F) {
	valid := walFrame(1, 42, []byte("payload"))
	f.Add(valid)
	f.Add(append(bytes.Clone(valid), walFrame(2, 43, nil)...))
	f.Add(valid[:len(valid)-3])
	flipped := bytes.Clone(valid)
	flipped[5] ^= 0x40
	f.Add(flipped)
	f.Add([]byte{})
	f.Add(make([]byte, 40))

	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, n, err := wal.DecodeRecord(b)
		var ce *wal.CorruptionError
		switch {
		case err == nil:
			if rec.Type == 0 || len(rec.Payload) > wal.MaxPayload {
				t.Fatalf("decoded an invalid record: type %d, %d bytes", rec.Type, len(rec.Payload))
			}
			if want := walFrame(rec.Type, rec.Seq, rec.Payload); n != len(want) || !bytes.Equal(b[:n], want) {
				t.Fatalf("decoded n=%d type %d seq %d from %x, which is not the frame %x", n, rec.Type, rec.Seq, b[:n], want)
			}
		case errors.Is(err, wal.ErrShort), errors.As(err, &ce):
			if n != 0 || rec.Payload != nil {
				t.Fatalf("error %v with n=%d and a payload", err, n)
			}
		default:
			t.Fatalf("unexpected error type %T: %v", err, err)
		}

		// ScanFile must read the same records DecodeRecord finds, and
		// report the first bad one where DecodeRecord fails.
		path := filepath.Join(dir, wal.FileName(1))
		if err := os.WriteFile(path, append([]byte(walFileHeader), b...), 0o644); err != nil {
			t.Fatal(err)
		}
		off := 0
		var prev uint64
		scanErr := wal.ScanFile(path, func(offset int64, r wal.Record) error {
			want, n, err := wal.DecodeRecord(b[off:])
			if err != nil || offset != int64(off+len(walFileHeader)) || r.Seq != want.Seq ||
				r.Type != want.Type || !bytes.Equal(r.Payload, want.Payload) {
				t.Fatalf("ScanFile record at %d disagrees with DecodeRecord at %d (%v)", offset, off, err)
			}
			if off > 0 && r.Seq <= prev {
				t.Fatalf("ScanFile passed seq %d after %d", r.Seq, prev)
			}
			prev = r.Seq
			off += n
			return nil
		})
		if off == len(b) {
			if scanErr != nil {
				t.Fatalf("ScanFile of clean records: %v", scanErr)
			}
			return
		}
		if !errors.As(scanErr, &ce) || ce.File != path || ce.Offset != int64(off+len(walFileHeader)) {
			t.Fatalf("ScanFile stopped at %d with %v, want a corruption error there", off, scanErr)
		}
		_, _, derr := wal.DecodeRecord(b[off:])
		if derr == nil {
			if !strings.Contains(ce.Reason, "sequence") {
				t.Fatalf("ScanFile rejected a valid frame: %v", scanErr)
			}
			return
		}
		if errors.Is(derr, wal.ErrShort) != errors.Is(scanErr, wal.ErrShort) {
			t.Fatalf("DecodeRecord says %v but ScanFile says %v", derr, scanErr)
		}
	})
}
