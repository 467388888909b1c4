package vecindex

import "math"

// MaxDim is the largest vector dimension Loci stores.
const MaxDim = 4096

// Stride is the stored length of a vector of dim int8 values: dim rounded up
// to a multiple of 16, the padding zero. Padded rows let the SIMD kernels run
// on whole 16-byte chunks with no tail handling; the query's padding is zero
// too, so padding never changes a dot product.
func Stride(dim int) int {
	return (dim + 15) &^ 15
}

// Quantize stores v as symmetric per-vector int8 in dst and returns the
// scale: scale = max|v[i]| / 127 (in float32) and
// dst[i] = round-half-away-from-zero(v[i] / scale), computed in float64 and
// clamped to [-127, 127], so v[i] ≈ float32(dst[i]) * scale. -128 is never
// produced: the code range is symmetric around zero. dst[len(v):] is zeroed,
// so a dst of Stride(len(v)) bytes comes out padded.
//
// A zero vector, or one with a NaN or infinite component, quantizes to all
// zeros with scale 0: callers treat a zero scale as "no semantic signal".
// It panics if len(dst) < len(v).
func Quantize(v []float32, dst []int8) (scale float32) {
	if len(dst) < len(v) {
		panic("BUG: vecindex.Quantize: dst shorter than v")
	}
	var maxAbs float32
	for _, x := range v {
		if x != x { // NaN
			maxAbs = float32(math.Inf(1))
			break
		}
		maxAbs = max(maxAbs, abs32(x))
	}
	if maxAbs == 0 || math.IsInf(float64(maxAbs), 0) {
		clear(dst)
		return 0
	}
	scale = maxAbs / 127
	if scale == 0 { // maxAbs subnormal: underflow
		clear(dst)
		return 0
	}
	s := float64(scale)
	for i, x := range v {
		q := math.Round(float64(x) / s)
		dst[i] = int8(min(max(q, -127), 127))
	}
	clear(dst[len(v):])
	return scale
}

func abs32(x float32) float32 {
	return math.Float32frombits(math.Float32bits(x) &^ (1 << 31))
}

// Score is the similarity of a query and a document from their int8 dot
// product and scales: float64(dot) * float64(qscale) * float64(dscale),
// multiplied in that order. It is defined once, here, so every path (head,
// segments, any partitioning) computes bit-identical scores. For unit-length
// inputs it approximates their cosine.
func Score(dot int32, qscale, dscale float32) float64 {
	return float64(dot) * float64(qscale) * float64(dscale)
}

// validScale reports whether s can be stored: finite and >= 0.
func validScale(s float32) bool {
	return s >= 0 && !math.IsInf(float64(s), 1)
}
