package vecindex

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// benchPart builds one segment part of n random unit vectors of dim,
// quantized, and nq quantized random queries.
func benchPart(b *testing.B, n, dim, nq int) (Part, [][]int8, []float32) {
	b.Helper()
	r := rand.New(rand.NewPCG(uint64(dim), uint64(n)))
	m := NewMemVectors("bench", dim)
	v := make([]int8, dim)
	f := make([]float32, dim)
	for i := range n {
		for j := range f {
			f[j] = float32(r.NormFloat64())
		}
		s := Quantize(f, v) // Score ranks the same with or without unit norm
		var k [16]byte
		k[0], k[1], k[2], k[3] = byte(i>>24), byte(i>>16), byte(i>>8), byte(i)
		m.Add(k, v, s)
	}
	s, err := OpenSegVectors(m.Section())
	if err != nil {
		b.Fatal(err)
	}
	qs := make([][]int8, nq)
	qscales := make([]float32, nq)
	for i := range qs {
		qs[i] = make([]int8, dim)
		qscales[i] = Quantize(randUnit(r, dim), qs[i])
	}
	return s, qs, qscales
}

// BenchmarkSearch runs exact top-k queries over 100k vectors and reports
// the latency percentiles of the individual queries (p50, p99) and the
// scan rate over the padded vector bytes.
func BenchmarkSearch(b *testing.B) {
	const n = 100_000
	b.Logf("kernel: %s", KernelName())
	for _, dim := range []int{100, 384, 1536} {
		part, qs, qscales := benchPart(b, n, dim, 64)
		parts := []Part{part}
		for _, k := range []int{10, 100} {
			b.Run(fmt.Sprintf("dim=%d/k=%d", dim, k), func(b *testing.B) {
				b.SetBytes(int64(n * Stride(dim)))
				var lat []time.Duration
				i := 0
				for b.Loop() {
					start := time.Now()
					Search(parts, qs[i%len(qs)], qscales[i%len(qs)], k)
					lat = append(lat, time.Since(start))
					i++
				}
				reportPercentiles(b, lat)
			})
		}
	}
}

// BenchmarkScan runs the same top-100 queries over 100k vectors of 384
// dimensions (the encoder's) as one Scan shared by 1 or 2 goroutines.
func BenchmarkScan(b *testing.B) {
	const n, dim, k = 100_000, 384, 100
	part, qs, qscales := benchPart(b, n, dim, 64)
	parts := []Part{part}
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			b.SetBytes(int64(n * Stride(dim)))
			var lat []time.Duration
			i := 0
			for b.Loop() {
				start := time.Now()
				s := NewScan(parts, qs[i%len(qs)], qscales[i%len(qs)], k)
				var wg sync.WaitGroup
				for range workers - 1 {
					wg.Go(s.Work)
				}
				s.Work()
				wg.Wait()
				s.Hits()
				lat = append(lat, time.Since(start))
				i++
			}
			reportPercentiles(b, lat)
		})
	}
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}
