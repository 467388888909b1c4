package codec

import "encoding/binary"

// AppendString appends s as the formats write a string, and Decoder.Str
// reads it: a uvarint byte length, then the bytes.
func AppendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}
