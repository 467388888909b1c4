package control

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/internal/codec"
)

// formatVersion is the leading byte of every record payload and of the
// snapshot payload (docs/format/control.md).
const formatVersion byte = 1

// DecodeError reports a malformed record or snapshot payload with the byte
// offset of the fault.
type DecodeError struct {
	What   string // "snapshot" or the record kind, such as "tenant record"
	Field  string
	Offset int
	Reason string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("control: decode %s: %s at byte %d: %s", e.What, e.Field, e.Offset, e.Reason)
}

// Is reports a DecodeError as corruption: errors.Is(err, codec.ErrCorrupt).
func (e *DecodeError) Is(target error) bool { return target == codec.ErrCorrupt }

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

// decoder is codec.Decoder whose faults are *DecodeError naming what is
// decoded (the snapshot or a record kind).
type decoder struct{ codec.Decoder }

func newDecoder(what string, b []byte) *decoder {
	return &decoder{codec.Decoder{B: b, Fault: func(field string, at int, reason string) error {
		return &DecodeError{What: what, Field: field, Offset: at, Reason: reason}
	}}}
}

// bytes returns a copy of a length-prefixed byte string, nil when empty.
func (d *decoder) bytes(field string) []byte {
	p := d.Bytes(field)
	if len(p) == 0 {
		return nil
	}
	return append([]byte(nil), p...)
}

func (d *decoder) uuid(field string) uuid.UUID { return d.UUID(field) }

func (d *decoder) hash(field string) (h [32]byte) {
	copy(h[:], d.Take(field, 32))
	return h
}

// header checks the version byte and returns the op byte of a record.
func (d *decoder) header() byte {
	at := d.Off
	if v := d.Byte("version"); d.Err == nil && v != formatVersion {
		d.Failf("version", at, "unsupported version %d", v)
	}
	return d.Byte("op")
}

// micros converts a time to the Unix microseconds records carry, so that
// replay reproduces exactly the times the live store saw.
func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// validTime bounds record times to years 1..9999, the range RFC 3339 and the
// JSON encoders can print.
func validTime(us int64) bool {
	const lo, hi = -62135596800 * 1e6, 253402300799 * 1e6
	return us >= lo && us <= hi
}
