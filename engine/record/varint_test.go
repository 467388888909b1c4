package record

import (
	"strings"
	"testing"

	"github.com/loci-memory/loci/internal/codec"
	"github.com/loci-memory/loci/internal/varint"
)

// TestDecoderVarintRule checks that the decoder of the engine's formats
// (WAL records, the MANIFEST, receipts) follows the one varint rule of
// internal/varint: minimal, at most 64 bits, not truncated.
func TestDecoderVarintRule(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		err  error
	}{
		{"minimal", []byte{0x80, 0x01}, nil},
		{"non-minimal", []byte{0x80, 0x00}, varint.ErrNonMinimal},
		{"truncated", []byte{0x80}, varint.ErrTruncated},
		{"overflow", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, varint.ErrOverflow},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, signed := range []bool{false, true} {
				d := codec.Decoder{B: tc.in}
				if signed {
					d.Varint("")
				} else {
					d.Uvarint("")
				}
				if tc.err == nil && d.Err != nil || tc.err != nil && (d.Err == nil || d.Err.Error() != tc.err.Error()) {
					t.Errorf("signed %v: err = %v, want %v", signed, d.Err, tc.err)
				}
			}
		})
	}
}

// TestRecordRejectsNonMinimalVarint checks the varints the artifact record
// decodes itself: the erasure fence and the span count.
func TestRecordRejectsNonMinimalVarint(t *testing.T) {
	tenant := codec.AppendString([]byte{Version}, "t")
	if _, _, err := DecodeEraseWorkspace(append(tenant, 0x81, 0x00, 'w')); err == nil {
		t.Error("erase record with a non-minimal string length decoded")
	}
	_, _, _, _, err := DecodeArtifact([]byte{FencedArtifactVersion, 0x81, 0x00})
	if err == nil || !strings.Contains(err.Error(), "fence") {
		t.Errorf("fenced artifact record with a non-minimal fence: err = %v, want a bad fence", err)
	}
}
