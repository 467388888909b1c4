package control

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/internal/codec"
	"github.com/loci-memory/loci/internal/varint"
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

// decoder reads fields with a sticky error: after the first fault every read
// returns a zero value, so decode functions check the error once at the end.
type decoder struct {
	what string
	b    []byte
	off  int
	err  error
}

func (d *decoder) fail(field string, at int, format string, args ...any) {
	if d.err == nil {
		d.err = &DecodeError{What: d.what, Field: field, Offset: at, Reason: fmt.Sprintf(format, args...)}
	}
}

func (d *decoder) remaining() int { return len(d.b) - d.off }

// take consumes n bytes; the result aliases the input.
func (d *decoder) take(field string, n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(d.remaining()) {
		d.fail(field, d.off, "%d bytes needed, %d remaining", n, d.remaining())
		return nil
	}
	p := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	return p
}

func (d *decoder) byte(field string) byte {
	if p := d.take(field, 1); p != nil {
		return p[0]
	}
	return 0
}

func (d *decoder) uvarint(field string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n, err := varint.Uvarint(d.b[d.off:])
	if err != nil {
		d.fail(field, d.off, "%s", err)
		return 0
	}
	d.off += n
	return v
}

// varint reads a zig-zag signed varint, as binary.AppendVarint writes it.
func (d *decoder) varint(field string) int64 {
	if d.err != nil {
		return 0
	}
	v, n, err := varint.Varint(d.b[d.off:])
	if err != nil {
		d.fail(field, d.off, "%s", err)
		return 0
	}
	d.off += n
	return v
}

// count reads an element count and rejects one that cannot fit in the rest
// of the input, given each element takes at least minSize bytes.
func (d *decoder) count(field string, minSize int) int {
	at := d.off
	v := d.uvarint(field)
	if d.err == nil && v > uint64(d.remaining()/minSize) {
		d.fail(field, at, "count %d exceeds the %d bytes remaining", v, d.remaining())
		return 0
	}
	return int(v)
}

func (d *decoder) str(field string) string {
	return string(d.take(field, d.uvarint(field))) // the conversion copies
}

// bytes returns a copy of a length-prefixed byte string, nil when empty.
func (d *decoder) bytes(field string) []byte {
	p := d.take(field, d.uvarint(field))
	if len(p) == 0 {
		return nil
	}
	return append([]byte(nil), p...)
}

func (d *decoder) uuid(field string) (id uuid.UUID) {
	copy(id[:], d.take(field, 16))
	return id
}

func (d *decoder) hash(field string) (h [32]byte) {
	copy(h[:], d.take(field, 32))
	return h
}

// header checks the version byte and returns the op byte of a record.
func (d *decoder) header() byte {
	at := d.off
	if v := d.byte("version"); d.err == nil && v != formatVersion {
		d.fail("version", at, "unsupported version %d", v)
	}
	return d.byte("op")
}

// end rejects trailing bytes.
func (d *decoder) end() {
	if d.err == nil && d.remaining() != 0 {
		d.fail("end", d.off, "%d trailing bytes", d.remaining())
	}
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
