// Package varint decodes the varints of Loci's storage formats (WAL records,
// segment files, the manifest, the CONTROL snapshot) under one rule, so that
// every decoder accepts exactly the bytes the encoders write.
//
// The encoding is Go's encoding/binary unsigned varint (LEB128: seven bits
// per byte, least significant group first, the high bit set on every byte but
// the last), at most 10 bytes, and it must be minimal: a last byte of 0x00
// after the first byte is an error (0x80 0x00 is not a valid encoding of 0).
// binary.Uvarint accepts non-minimal encodings; the storage does not, so
// that one value has one encoding and a decoded record re-encodes to the
// same bytes. binary.AppendUvarint and binary.AppendVarint always write
// minimal encodings, so everything Loci has written decodes.
package varint

import (
	"encoding/binary"
	"errors"
)

// The errors Uvarint and Varint return. Their texts are the reasons decode
// errors report.
var (
	ErrTruncated  = errors.New("truncated varint")
	ErrOverflow   = errors.New("varint overflows 64 bits")
	ErrNonMinimal = errors.New("non-minimal varint")
)

// Uvarint decodes the unsigned varint at the start of b and returns it with
// the number of bytes it takes. It fails with ErrTruncated when b ends
// inside the varint, ErrOverflow when the value does not fit in 64 bits
// (more than 10 bytes, or a 10th byte above 1), and ErrNonMinimal when the
// encoding is longer than needed (its last byte is 0x00 and not its first).
func Uvarint(b []byte) (uint64, int, error) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1, nil
	}
	v, n := binary.Uvarint(b)
	switch {
	case n == 0:
		return 0, 0, ErrTruncated
	case n < 0:
		return 0, 0, ErrOverflow
	case b[n-1] == 0: // n > 1 here: a one-byte varint took the fast path
		return 0, 0, ErrNonMinimal
	}
	return v, n, nil
}

// Varint decodes a zig-zag signed varint, as binary.AppendVarint writes it:
// the uvarint of (v << 1) ^ (v >> 63), under the rules of Uvarint.
func Varint(b []byte) (int64, int, error) {
	u, n, err := Uvarint(b)
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v, n, err
}
