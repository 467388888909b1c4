package codec_test

import (
	"errors"
	"testing"

	"github.com/loci-memory/loci/internal/codec"
)

type fieldError struct {
	field string
	at    int
}

func (e *fieldError) Error() string { return e.field }

// TestDecoder checks the sticky error: the first fault is kept with its
// field and offset, later reads return zero values, and the error matches
// ErrCorrupt whether or not a Fault hook makes it.
func TestDecoder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    []byte
		read  func(d *codec.Decoder)
		field string
		at    int
	}{
		{"string longer than the input", []byte{5, 'a'}, func(d *codec.Decoder) { d.Str("s") }, "s", 1},
		{"count beyond the input", []byte{3, 0, 0}, func(d *codec.Decoder) { d.Count("n", 2) }, "n", 0},
		{"non-minimal varint", []byte{0x80, 0x00}, func(d *codec.Decoder) { d.Varint("v") }, "v", 0},
		{"trailing bytes", []byte{1, 'a', 0}, func(d *codec.Decoder) { d.Str("s"); d.End("end") }, "end", 2},
		{"short uuid", []byte{1, 2, 3}, func(d *codec.Decoder) { d.UUID("id") }, "id", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &codec.Decoder{B: tc.in, Fault: func(field string, at int, _ string) error {
				return &fieldError{field, at}
			}}
			tc.read(d)
			if d.Uvarint("after") != 0 || d.Byte("after") != 0 || d.Rest() != nil {
				t.Error("a read after the fault returned data")
			}
			var fe *fieldError
			if !errors.As(d.Err, &fe) || fe.field != tc.field || fe.at != tc.at || !errors.Is(d.Err, codec.ErrCorrupt) {
				t.Fatalf("err = %v (%#v), want field %q at %d, marked corrupt", d.Err, fe, tc.field, tc.at)
			}
			plain := &codec.Decoder{B: tc.in}
			tc.read(plain)
			if !errors.Is(plain.Err, codec.ErrCorrupt) {
				t.Fatalf("without a Fault hook: %v is not marked corrupt", plain.Err)
			}
		})
	}
}
