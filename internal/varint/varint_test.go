package varint

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

func TestUvarint(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		v    uint64
		n    int
		err  error
	}{
		{"zero", []byte{0x00}, 0, 1, nil},
		{"one byte max", []byte{0x7f}, 127, 1, nil},
		{"two bytes", []byte{0x80, 0x01}, 128, 2, nil},
		{"trailing bytes ignored", []byte{0x05, 0x80}, 5, 1, nil},
		{"max uint64", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, math.MaxUint64, 10, nil},
		{"empty", nil, 0, 0, ErrTruncated},
		{"truncated", []byte{0x80}, 0, 0, ErrTruncated},
		{"truncated long", []byte{0xff, 0xff, 0xff}, 0, 0, ErrTruncated},
		{"non-minimal zero", []byte{0x80, 0x00}, 0, 0, ErrNonMinimal},
		{"non-minimal one", []byte{0x81, 0x00}, 0, 0, ErrNonMinimal},
		{"non-minimal 127", []byte{0xff, 0x80, 0x00}, 0, 0, ErrNonMinimal},
		{"non-minimal ten bytes", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 0, 0, ErrNonMinimal},
		{"tenth byte above 1", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, 0, 0, ErrOverflow},
		{"eleven bytes", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, 0, 0, ErrOverflow},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, n, err := Uvarint(tc.in)
			if v != tc.v || n != tc.n || !errors.Is(err, tc.err) {
				t.Fatalf("Uvarint(% x) = %d, %d, %v; want %d, %d, %v", tc.in, v, n, err, tc.v, tc.n, tc.err)
			}
		})
	}
}

func TestVarint(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		v    int64
		n    int
		err  error
	}{
		{"zero", []byte{0x00}, 0, 1, nil},
		{"minus one", []byte{0x01}, -1, 1, nil},
		{"one", []byte{0x02}, 1, 1, nil},
		{"min int64", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, math.MinInt64, 10, nil},
		{"non-minimal minus one", []byte{0x81, 0x00}, 0, 0, ErrNonMinimal},
		{"truncated", []byte{0x81}, 0, 0, ErrTruncated},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, n, err := Varint(tc.in)
			if v != tc.v || n != tc.n || !errors.Is(err, tc.err) {
				t.Fatalf("Varint(% x) = %d, %d, %v; want %d, %d, %v", tc.in, v, n, err, tc.v, tc.n, tc.err)
			}
		})
	}
}

// TestRoundTrip checks that what the encoders write decodes, to the same
// value and length: binary.AppendUvarint and AppendVarint are minimal.
func TestRoundTrip(t *testing.T) {
	var us []uint64
	for s := range 64 {
		u := uint64(1) << s
		us = append(us, u-1, u, u+1)
	}
	us = append(us, math.MaxUint64)
	for _, u := range us {
		b := binary.AppendUvarint(nil, u)
		if v, n, err := Uvarint(b); v != u || n != len(b) || err != nil {
			t.Errorf("Uvarint(AppendUvarint(%d)) = %d, %d, %v", u, v, n, err)
		}
		s := int64(u)
		b = binary.AppendVarint(nil, s)
		if v, n, err := Varint(b); v != s || n != len(b) || err != nil {
			t.Errorf("Varint(AppendVarint(%d)) = %d, %d, %v", s, v, n, err)
		}
	}
}

// FuzzUvarint checks that Uvarint accepts exactly the canonical encodings:
// whatever it accepts re-encodes to the bytes it consumed, and otherwise
// it agrees with binary.Uvarint.
func FuzzUvarint(f *testing.F) {
	f.Add([]byte{0x80, 0x00})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, n, err := Uvarint(b)
		gv, gn := binary.Uvarint(b)
		if err != nil {
			if gn > 0 && err != ErrNonMinimal {
				t.Fatalf("Uvarint(% x) = %v, binary.Uvarint accepts it", b, err)
			}
			return
		}
		if v != gv || n != gn {
			t.Fatalf("Uvarint(% x) = %d, %d; binary.Uvarint = %d, %d", b, v, n, gv, gn)
		}
		if enc := binary.AppendUvarint(nil, v); string(enc) != string(b[:n]) {
			t.Fatalf("Uvarint(% x) = %d, which encodes as % x", b, v, enc)
		}
	})
}
