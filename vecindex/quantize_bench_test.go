package vecindex

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func BenchmarkQuantize(b *testing.B) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, dim := range []int{100, 1536} {
		v := randUnit(r, dim)
		dst := make([]int8, Stride(dim))
		b.Run(fmt.Sprintf("dim=%d", dim), func(b *testing.B) {
			b.SetBytes(int64(4 * dim))
			for b.Loop() {
				Quantize(v, dst)
			}
		})
	}
}

// BenchmarkOpenSegVectors measures opening a 100k-document section: header
// checks and the scale scan; rows and keys are not touched.
func BenchmarkOpenSegVectors(b *testing.B) {
	r := rand.New(rand.NewPCG(33, 34))
	d := randDocs(r, 100_000, 100)
	sec, err := BuildSection(100, "glove-6b-100d-sif", d.keys, d.vecs, d.scales)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := OpenSegVectors(sec); err != nil {
			b.Fatal(err)
		}
	}
}
