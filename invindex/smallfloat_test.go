package invindex

import (
	"math"
	"testing"
)

// TestSmallFloat checks intToByte4 and byte4ToInt against values worked out
// from Lucene's SmallFloat (NUM_FREE_VALUES = 24).
func TestSmallFloat(t *testing.T) {
	tests := []struct {
		n       uint32
		b       byte
		decoded uint32
	}{
		{0, 0, 0}, {1, 1, 1}, {2, 2, 2}, {3, 3, 3}, {7, 7, 7}, {8, 8, 8}, {15, 15, 15}, {16, 16, 16},
		{23, 23, 23}, {24, 24, 24}, {25, 25, 25}, {31, 31, 31}, {32, 32, 32}, {33, 33, 33}, {39, 39, 39}, {40, 40, 40}, {41, 40, 40}, {42, 41, 42},
		{100, 57, 96}, {1000, 87, 984}, {1000000, 167, 983064},
		{math.MaxInt32, 255, 2013265944},
		{math.MaxUint32, 255, 2013265944}, // beyond Lucene's range: clamped
	}
	for _, tt := range tests {
		b := intToByte4(tt.n)
		if b != tt.b {
			t.Errorf("intToByte4(%d) = %d, want %d", tt.n, b, tt.b)
		}
		if d := byte4ToInt(b); d != tt.decoded {
			t.Errorf("byte4ToInt(%d) = %d, want %d", b, d, tt.decoded)
		}
	}
	// Every byte decodes to a length that encodes back to it, and decoding is
	// increasing, so encoding preserves order (the block bounds rely on it).
	prev := -1
	for i := range 256 {
		d := byte4ToInt(byte(i))
		if intToByte4(d) != byte(i) || int(d) <= prev {
			t.Fatalf("byte %d decodes to %d (previous %d), which encodes to %d", i, d, prev, intToByte4(d))
		}
		prev = int(d)
	}
}
