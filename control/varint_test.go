package control

import (
	"testing"

	"github.com/loci-memory/loci/internal/varint"
)

// TestDecoderVarintRule checks that CONTROL payloads follow the one varint
// rule of internal/varint.
func TestDecoderVarintRule(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		want uint64
		err  error
	}{
		{"minimal", []byte{0x80, 0x01}, 128, nil},
		{"non-minimal", []byte{0x80, 0x00}, 0, varint.ErrNonMinimal},
		{"truncated", []byte{0xff}, 0, varint.ErrTruncated},
		{"overflow", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, 0, varint.ErrOverflow},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newDecoder("test", tc.in)
			v := d.Uvarint("field")
			if v != tc.want {
				t.Errorf("uvarint = %d, want %d", v, tc.want)
			}
			de, _ := d.Err.(*DecodeError)
			switch {
			case tc.err == nil && d.Err != nil:
				t.Errorf("err = %v, want none", d.Err)
			case tc.err != nil && (de == nil || de.Reason != tc.err.Error()):
				t.Errorf("err = %v, want reason %q", d.Err, tc.err)
			}
		})
	}
}
