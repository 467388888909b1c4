package codec

import (
	"errors"
	"fmt"

	"github.com/loci-memory/loci/internal/varint"
)

// Decoder reads the fields of a storage format from B with a sticky error:
// after the first fault every read returns a zero value and Err holds the
// fault, so a decode function reads straight through and checks Err once.
// Varints follow internal/varint's rule. Results of Take and Bytes alias B.
type Decoder struct {
	B   []byte // the input
	Off int    // offset in B of the next byte to read
	Err error  // the first fault, marked with ErrCorrupt
	// Fault, when set, makes the error of a fault in field at offset at
	// (marked with ErrCorrupt unless it matches it already, so that a
	// package's own error type stays what Err holds). Unset, the error is
	// the reason alone, for the caller to give context.
	Fault func(field string, at int, reason string) error
}

// Failf records a fault in field at offset at, unless one is recorded.
func (d *Decoder) Failf(field string, at int, format string, args ...any) {
	if d.Err != nil {
		return
	}
	reason := fmt.Sprintf(format, args...)
	err := errors.New(reason)
	if d.Fault != nil {
		err = d.Fault(field, at, reason)
	}
	if !errors.Is(err, ErrCorrupt) {
		err = Mark(err)
	}
	d.Err = err
}

// Remaining returns the number of bytes left to read.
func (d *Decoder) Remaining() int { return len(d.B) - d.Off }

// Rest returns the bytes left to read, nil after a fault.
func (d *Decoder) Rest() []byte {
	if d.Err != nil {
		return nil
	}
	return d.B[d.Off:]
}

// Take consumes n bytes.
func (d *Decoder) Take(field string, n uint64) []byte {
	if d.Err != nil {
		return nil
	}
	if n > uint64(d.Remaining()) {
		d.Failf(field, d.Off, "%d bytes needed, %d remaining", n, d.Remaining())
		return nil
	}
	p := d.B[d.Off : d.Off+int(n)]
	d.Off += int(n)
	return p
}

// Byte consumes one byte.
func (d *Decoder) Byte(field string) byte {
	if p := d.Take(field, 1); p != nil {
		return p[0]
	}
	return 0
}

// Uvarint reads an unsigned varint.
func (d *Decoder) Uvarint(field string) uint64 {
	if d.Err != nil {
		return 0
	}
	v, n, err := varint.Uvarint(d.B[d.Off:])
	if err != nil {
		d.Failf(field, d.Off, "%s", err)
		return 0
	}
	d.Off += n
	return v
}

// Varint reads a zig-zag signed varint, as binary.AppendVarint writes it.
func (d *Decoder) Varint(field string) int64 {
	if d.Err != nil {
		return 0
	}
	v, n, err := varint.Varint(d.B[d.Off:])
	if err != nil {
		d.Failf(field, d.Off, "%s", err)
		return 0
	}
	d.Off += n
	return v
}

// Count reads an element count and rejects one that cannot fit in the
// rest of the input, given each element takes at least minSize bytes.
func (d *Decoder) Count(field string, minSize int) int {
	at := d.Off
	v := d.Uvarint(field)
	if d.Err == nil && v > uint64(d.Remaining()/minSize) {
		d.Failf(field, at, "count %d exceeds the %d bytes remaining", v, d.Remaining())
		return 0
	}
	return int(v)
}

// Bytes reads a length-prefixed byte string.
func (d *Decoder) Bytes(field string) []byte { return d.Take(field, d.Uvarint(field)) }

// Str reads a length-prefixed string (a copy).
func (d *Decoder) Str(field string) string { return string(d.Bytes(field)) }

// UUID reads a 16-byte id.
func (d *Decoder) UUID(field string) (id [16]byte) {
	copy(id[:], d.Take(field, 16))
	return id
}

// End rejects trailing bytes.
func (d *Decoder) End(field string) {
	if d.Err == nil && d.Remaining() != 0 {
		d.Failf(field, d.Off, "%d trailing bytes", d.Remaining())
	}
}
