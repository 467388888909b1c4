package vecindex

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAxpyInt8SameBitsWithoutSIMD: AxpyInt8, summed the way embed/glove
// sums a text's word vectors (rows of 100 into one accumulator), gives the
// same bits with the pure-Go inner loop as with the AVX2 one.
func TestAxpyInt8SameBitsWithoutSIMD(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	const dim, words = 100, 500
	rows := randInt8(r, dim*words)
	coefs := make([]float32, words)
	for i := range coefs {
		coefs[i] = float32(r.NormFloat64() * 1e-3)
	}
	sum := func() [dim]float32 {
		var acc [dim]float32
		for w := range words {
			AxpyInt8(coefs[w], rows[w*dim:(w+1)*dim], acc[:])
		}
		return acc
	}
	simd := sum()
	defer func(v bool) { useAVX2Axpy = v }(useAVX2Axpy)
	useAVX2Axpy = false
	generic := sum()
	for i := range simd {
		if math.Float32bits(simd[i]) != math.Float32bits(generic[i]) {
			t.Fatalf("y[%d]: SIMD %v, generic %v", i, simd[i], generic[i])
		}
	}
}
