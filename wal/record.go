package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"

	"github.com/loci-memory/loci/internal/codec"
)

// MaxPayload is the largest payload a record may carry. A frame whose length
// field is larger is corrupt: the limit keeps a damaged length from making a
// reader allocate or wait for gigabytes.
const MaxPayload = 64 << 20

// Frame layout; see docs/format/wal.md.
const (
	recordHeaderSize = 17 // length u32 | crc u32 | type u8 | seq u64
	fileHeaderSize   = 8  // "LOCIWAL" | version u8

	formatVersion = 1
	fileMagic     = "LOCIWAL"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrShort reports a frame cut short: the bytes end inside its header or its
// payload. At the end of a log's last file this is what a crash during a
// write leaves behind.
var ErrShort = errors.New("wal: short record")

// Record is one decoded log record.
type Record struct {
	Seq     uint64
	Type    uint8
	Payload []byte
}

// CorruptionError says where a log is damaged. File is the path of the log
// file (empty when the error comes from [DecodeRecord], which sees no file)
// and Offset the byte offset of the damaged record or file header in it.
type CorruptionError struct {
	File   string
	Offset int64
	Reason string
	// Next is the offset of a valid record found after the damage, or 0 if
	// there is none. Damage with a valid record after it cannot be a torn
	// write, which only ever affects the end of the last file.
	Next int64

	cause error // ErrShort for a torn frame or file header, else nil
}

func (e *CorruptionError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("wal: record at offset %d: %s", e.Offset, e.Reason)
	}
	return fmt.Sprintf("wal: %s at offset %d: %s", e.File, e.Offset, e.Reason)
}

// Unwrap returns ErrShort when the damaged frame or file header is cut short
// by the end of the file. That is what a torn write leaves, but it is one
// only if nothing valid follows (Next == 0): a damaged length field can make
// a frame in the middle of a file look cut short too.
func (e *CorruptionError) Unwrap() error { return e.cause }

// Is reports a CorruptionError as corruption: errors.Is(err, codec.ErrCorrupt).
func (e *CorruptionError) Is(target error) bool { return target == codec.ErrCorrupt }

// appendRecord appends the frame of one record to dst.
func appendRecord(dst []byte, typ uint8, seq uint64, payload []byte) []byte {
	off := len(dst)
	dst = slices.Grow(dst, recordHeaderSize+len(payload))
	dst = dst[:off+recordHeaderSize]
	h := dst[off:]
	binary.LittleEndian.PutUint32(h[0:4], uint32(len(payload)))
	h[8] = typ
	binary.LittleEndian.PutUint64(h[9:17], seq)
	binary.LittleEndian.PutUint32(h[4:8], frameCRC(h, payload))
	return append(dst, payload...)
}

// frameCRC is the CRC-32C of everything in a frame but its crc field: the
// length bytes, then type and seq, then the payload.
func frameCRC(h, payload []byte) uint32 {
	c := crc32.Update(0, castagnoli, h[0:4])
	c = crc32.Update(c, castagnoli, h[8:recordHeaderSize])
	return crc32.Update(c, castagnoli, payload)
}

// payloadLen returns the length field of the frame header h, or a reason if
// it exceeds MaxPayload.
func payloadLen(h []byte) (int, string) {
	n := binary.LittleEndian.Uint32(h[0:4])
	if n > MaxPayload {
		return 0, fmt.Sprintf("payload length %d exceeds maximum %d", n, MaxPayload)
	}
	return int(n), ""
}

// checkFrame verifies a complete frame, given as its header h and payload,
// and returns its record, or a reason why it is corrupt.
func checkFrame(h, payload []byte) (Record, string) {
	if want, got := binary.LittleEndian.Uint32(h[4:8]), frameCRC(h, payload); want != got {
		return Record{}, fmt.Sprintf("checksum mismatch: stored %#08x, computed %#08x", want, got)
	}
	if h[8] == 0 {
		return Record{}, "invalid record type 0"
	}
	return Record{
		Seq:     binary.LittleEndian.Uint64(h[9:17]),
		Type:    h[8],
		Payload: payload,
	}, ""
}

// DecodeRecord decodes the framed record at the start of b and returns it and
// its framed size n. The payload aliases b. If b ends inside the frame the
// error is ErrShort; if the frame is damaged it is a *CorruptionError (with
// no File) giving the reason. DecodeRecord never allocates in proportion to
// the length field, whatever b holds.
func DecodeRecord(b []byte) (rec Record, n int, err error) {
	if len(b) < recordHeaderSize {
		return Record{}, 0, ErrShort
	}
	h := b[:recordHeaderSize]
	length, reason := payloadLen(h)
	if reason != "" {
		return Record{}, 0, &CorruptionError{Reason: reason}
	}
	if len(b)-recordHeaderSize < length {
		return Record{}, 0, ErrShort
	}
	n = recordHeaderSize + length
	rec, reason = checkFrame(h, b[recordHeaderSize:n:n])
	if reason != "" {
		return Record{}, 0, &CorruptionError{Reason: reason}
	}
	return rec, n, nil
}
