package invindex

import (
	"math"
	"math/bits"
)

// Lucene stores a document's length in one byte per field ("norms") with
// SmallFloat.intToByte4, a float-like encoding that keeps 4 significant bits
// and represents small lengths exactly. BM25.LossyNorms reproduces it so that
// parity runs against Lucene/Anserini score documents with the same lengths.
//
// Values below numFreeValues are stored as themselves; larger ones are
// numFreeValues plus a 4-bit-mantissa encoding of the excess.

// numFreeValues is 255 - longToInt4(math.MaxInt32) = 24: the lengths 0..23
// that encode exactly.
const numFreeValues = 24

// longToInt4 is Lucene's SmallFloat.longToInt4: the 4 most significant bits of
// i, the leading one implicit, and the shift plus one in the upper bits.
func longToInt4(i uint64) uint32 {
	numBits := 64 - bits.LeadingZeros64(i)
	if numBits < 4 {
		return uint32(i) // subnormal: stored as is
	}
	shift := numBits - 4
	enc := uint32(i>>uint(shift)) & 0x07
	return enc | uint32(shift+1)<<3
}

// int4ToLong is Lucene's SmallFloat.int4ToLong, the inverse of longToInt4
// (rounding down to the encoded precision).
func int4ToLong(i uint32) uint64 {
	b := uint64(i & 0x07)
	shift := int(i>>3) - 1
	if shift == -1 {
		return b
	}
	return (b | 0x08) << uint(shift)
}

// intToByte4 is Lucene's SmallFloat.intToByte4. Lengths above math.MaxInt32,
// which Lucene cannot represent, encode as math.MaxInt32.
func intToByte4(n uint32) byte {
	if n > math.MaxInt32 {
		n = math.MaxInt32
	}
	if n < numFreeValues {
		return byte(n)
	}
	return byte(numFreeValues + longToInt4(uint64(n-numFreeValues)))
}

// byte4ToInt is Lucene's SmallFloat.byte4ToInt.
func byte4ToInt(b byte) uint32 {
	if b < numFreeValues {
		return uint32(b)
	}
	return uint32(numFreeValues + int4ToLong(uint32(b)-numFreeValues))
}
