package vecindex

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

// clusteredPart builds one segment part of n unit vectors of the built-in
// encoder's space made realistic enough for IVF: each is a built-in
// centroid plus Gaussian noise of norm about 1.5 (cosine about 0.55 to its
// centroid, as real passages are to theirs), and nq queries made the same
// way. It also returns the centroids.
func clusteredPart(b *testing.B, n, nq int) (*Centroids, Part, [][]int8, []float32) {
	b.Helper()
	c := CentroidsFor(MiniLMModel)
	if c == nil {
		b.Skip("no built-in centroids")
	}
	dim, stride := c.Dim(), Stride(c.Dim())
	r := rand.New(rand.NewPCG(uint64(n), 5))
	f := make([]float32, dim)
	gen := func(dst []int8) float32 {
		l := r.IntN(c.Lists())
		row, s := c.sec.Rows()[l*stride:], float64(c.sec.Scales()[l])
		for j := range f {
			f[j] = float32(float64(row[j])*s + 1.5*r.NormFloat64()/math.Sqrt(float64(dim)))
		}
		return Quantize(f, dst)
	}
	m := NewMemVectors(MiniLMModel, dim)
	v := make([]int8, dim)
	for i := range n {
		s := gen(v)
		var k [16]byte
		k[0], k[1], k[2], k[3] = byte(i>>24), byte(i>>16), byte(i>>8), byte(i)
		m.Add(k, v, s)
	}
	seg, err := OpenSegVectors(m.Section())
	if err != nil {
		b.Fatal(err)
	}
	qs := make([][]int8, nq)
	qscales := make([]float32, nq)
	for i := range qs {
		qs[i] = make([]int8, dim)
		qscales[i] = gen(qs[i])
	}
	return c, seg, qs, qscales
}

// BenchmarkSearchIVF compares the exact two-stage scan with IVF (the
// built-in centroids, 64-512 lists probed) on one segment part, top 100,
// by workspace size, reporting the share of rows IVF scores and its recall
// on these synthetic vectors (real recall: loci bench ivf). Set
// LOCI_BENCH_IVF_1M=1 to add 1M vectors (about 600 MB of memory).
func BenchmarkSearchIVF(b *testing.B) {
	sizes := []int{10_000, 25_000, 50_000, 100_000}
	if os.Getenv("LOCI_BENCH_IVF_1M") != "" {
		sizes = append(sizes, 1_000_000)
	}
	const k = 100
	for _, n := range sizes {
		c, part, qs, qscales := clusteredPart(b, n, 64)
		parts := []Part{part}
		Search(parts, qs[0], qscales[0], k)                  // build the sketch
		SearchIVF(parts, c, qs[0], qscales[0], k, c.Lists()) // and the one in list order
		for _, mode := range []string{"exact", "ivf-64", "ivf-128", "ivf-256", "ivf-512"} {
			var nprobe int
			fmt.Sscanf(mode, "ivf-%d", &nprobe)
			b.Run(fmt.Sprintf("n=%d/%s", n, mode), func(b *testing.B) {
				var lat []time.Duration
				scored, found, i := 0, 0.0, 0
				for b.Loop() {
					q, qs := qs[i%len(qs)], qscales[i%len(qs)]
					start := time.Now()
					if mode == "exact" {
						Search(parts, q, qs, k)
					} else {
						_, s := SearchIVF(parts, c, q, qs, k, nprobe)
						scored += s
					}
					lat = append(lat, time.Since(start))
					i++
				}
				reportPercentiles(b, lat)
				if nprobe > 0 {
					b.ReportMetric(float64(scored)/float64(i)/float64(n), "share-scored")
					for j := range qs {
						want := Search(parts, qs[j], qscales[j], k)
						got, _ := SearchIVF(parts, c, qs[j], qscales[j], k, nprobe)
						found += float64(overlap(got, want)) / float64(len(want))
					}
					b.ReportMetric(found/float64(len(qs)), "recall@100")
				}
			})
		}
	}
}

// overlap counts the hits of got that are in want (by key).
func overlap(got, want []Hit) int {
	in := map[[16]byte]bool{}
	for _, h := range want {
		in[h.Key] = true
	}
	n := 0
	for _, h := range got {
		if in[h.Key] {
			n++
		}
	}
	return n
}

// BenchmarkAssign is the cost of assigning one row to its list under the
// built-in centroids: what the head adds to each vector it stores, and a
// compaction to each row it writes.
func BenchmarkAssign(b *testing.B) {
	c, part, _, _ := clusteredPart(b, 1024, 1)
	rows, stride := part.Rows(), Stride(c.Dim())
	buf := make([]int32, c.Lists())
	i := 0
	for b.Loop() {
		c.assign(rows[(i%1024)*stride:(i%1024+1)*stride], &buf)
		i++
	}
}
