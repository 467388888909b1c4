package vecindex

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func randInt8(r *rand.Rand, n int) []int8 {
	v := make([]int8, n)
	for i := range v {
		v[i] = int8(r.Uint32())
	}
	return v
}

var sinkInt32 int32

// BenchmarkDotInt8 measures one dot product per call, every supported kernel.
func BenchmarkDotInt8(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, k := range supportedKernels() {
		for _, dim := range []int{100, 128, 384, 768, 1536} {
			x, y := randInt8(r, dim), randInt8(r, dim)
			b.Run(fmt.Sprintf("%s/dim=%d", k.name, dim), func(b *testing.B) {
				b.SetBytes(int64(2 * dim))
				var s int32
				for b.Loop() {
					s += k.dot(x, y)
				}
				sinkInt32 = s
			})
		}
	}
}

// BenchmarkDotBatch scores one query against 100k vectors of dim 128 (12.8
// MB, past L2) per op; SetBytes counts the vector bytes, so MB/s is the scan
// rate search sees.
func BenchmarkDotBatch(b *testing.B) {
	const n, dim = 100_000, 128
	r := rand.New(rand.NewPCG(7, 8))
	data := randInt8(r, n*dim)
	q := randInt8(r, dim)
	out := make([]int32, n)
	b.Logf("active kernel: %s", KernelName())
	for _, k := range supportedKernels() {
		b.Run(k.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				k.batch(q, data, dim, out)
			}
			b.ReportMetric(float64(len(data))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}
