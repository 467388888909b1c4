package export

import (
	"math"
	"strings"
	"testing"
)

// Vectors travel bit for bit, in the documented layout (base64 of
// little-endian float32), and malformed strings are refused by name.
func TestVectorCodec(t *testing.T) {
	v := []float32{1, float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, math.MaxFloat32, -0.1,
		math.Float32frombits(0x7fc00001)} // a NaN with a payload
	got, err := DecodeVector(EncodeVector(v))
	if err != nil || len(got) != len(v) {
		t.Fatalf("round trip: %v %v", got, err)
	}
	for i := range v {
		if math.Float32bits(got[i]) != math.Float32bits(v[i]) {
			t.Errorf("value %d: bits %08x, want %08x", i, math.Float32bits(got[i]), math.Float32bits(v[i]))
		}
	}
	// 1.0 is 0x3f800000: bytes 00 00 80 3f.
	if s := EncodeVector([]float32{1}); s != "AACAPw==" {
		t.Errorf("EncodeVector([1]) = %q, want AACAPw==", s)
	}
	for _, c := range []struct{ in, want string }{
		{"AACAPw", "not standard base64"},   // unpadded
		{"AACA_w==", "not standard base64"}, // URL alphabet
		{"AACAPwA=", "5 bytes, not a whole number of float32 values"},
	} {
		if _, err := DecodeVector(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("DecodeVector(%q) = %v, want an error mentioning %q", c.in, err, c.want)
		}
	}
}
