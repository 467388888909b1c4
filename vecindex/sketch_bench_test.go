package vecindex

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user and system CPU time so far. The benchmarks
// report it per operation next to wall time: the machine they run on may be
// shared, and CPU time is less disturbed by other processes than wall time.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// The two-stage scan pays off only when the sketch bound prunes, which
// depends on how scores are spread: uniform random vectors are the worst
// case (every score near 0, the k-th barely above the rest). The benchmarks
// use vectors shaped like sentence embeddings instead, and real MiniLM
// vectors when LOCI_BENCH_VECTORS names a file of them.

// benchVectors is a quantized data set: n rows of dim values, and queries.
type benchVectors struct {
	name    string
	dim     int
	rows    [][]int8
	scales  []float32
	queries [][]int8
	qscales []float32
}

// clusteredVectors returns n unit vectors of dim values shaped like sentence
// embeddings, and nq queries: a direction every vector shares (sentence
// embeddings are far from centred), topics and subtopics (near-duplicate
// chunks of one document) drawn from a subspace of an eighth of the
// dimensions (embeddings are anisotropic, which spreads their similarities),
// and noise. Queries are noisier mixtures of a topic and a subtopic. The
// weights make the scores look like MiniLM's over real text (MiniLM's in
// brackets, measured on 100k SciFact and LoCoMo passages): mean 0.09 (0.09),
// standard deviation 0.10 (0.10), 100th best 0.43 (0.47), 400th 0.36
// (0.38), so pruning is a little harder than on MiniLM.
func clusteredVectors(n, dim, nq int) *benchVectors {
	r := rand.New(rand.NewPCG(42, uint64(n)))
	unit := func(v []float64) []float64 {
		var s float64
		for _, x := range v {
			s += x * x
		}
		s = math.Sqrt(s)
		for i := range v {
			v[i] /= s
		}
		return v
	}
	gauss := func() []float64 {
		v := make([]float64, dim)
		for i := range v {
			v[i] = r.NormFloat64()
		}
		return unit(v)
	}
	const (
		wCommon, wTopic, wSub, wNoise, wQueryNoise = 0.32, 0.6, 0.6, 0.4, 0.8
		rank                                       = 8 // the subspace is dim/rank
	)
	basis := make([][]float64, dim/rank)
	for i := range basis {
		basis[i] = gauss()
	}
	lowRank := func() []float64 {
		v := make([]float64, dim)
		for _, b := range basis {
			c := r.NormFloat64()
			for i := range v {
				v[i] += c * b[i]
			}
		}
		return unit(v)
	}
	common := gauss()
	const topics, subPerTopic = 400, 25
	topic := make([][]float64, topics)
	for i := range topic {
		topic[i] = lowRank()
	}
	sub := make([][]float64, topics*subPerTopic)
	for i := range sub {
		sub[i] = lowRank()
	}
	mix := func(t, s int, noise float64) []float32 {
		v := make([]float64, dim)
		for i := range v {
			v[i] = wCommon*common[i] + wTopic*topic[t][i] + wSub*sub[s][i] + noise*r.NormFloat64()/math.Sqrt(float64(dim))
		}
		unit(v)
		f := make([]float32, dim)
		for i := range v {
			f[i] = float32(v[i])
		}
		return f
	}
	bv := &benchVectors{name: "clustered", dim: dim}
	for range n {
		t := r.IntN(topics)
		s := t*subPerTopic + r.IntN(subPerTopic)
		row := make([]int8, dim)
		bv.scales = append(bv.scales, Quantize(mix(t, s, wNoise), row))
		bv.rows = append(bv.rows, row)
	}
	for range nq {
		t := r.IntN(topics)
		s := t*subPerTopic + r.IntN(subPerTopic)
		q := make([]int8, dim)
		bv.qscales = append(bv.qscales, Quantize(mix(t, s, wQueryNoise), q))
		bv.queries = append(bv.queries, q)
	}
	return bv
}

// gaussianVectors returns n random Gaussian vectors and nq queries: the
// two-stage scan's worst case, every score near 0 and the k-th barely above
// the rest, so the bounds prune almost nothing.
func gaussianVectors(n, dim, nq int) *benchVectors {
	r := rand.New(rand.NewPCG(43, uint64(n)))
	bv := &benchVectors{name: "gaussian", dim: dim}
	f := make([]float32, dim)
	add := func(rows *[][]int8, scales *[]float32) {
		for i := range f {
			f[i] = float32(r.NormFloat64())
		}
		row := make([]int8, dim)
		*scales = append(*scales, Quantize(f, row))
		*rows = append(*rows, row)
	}
	for range n {
		add(&bv.rows, &bv.scales)
	}
	for range nq {
		add(&bv.queries, &bv.qscales)
	}
	return bv
}

// fileVectors reads LOCI_BENCH_VECTORS and LOCI_BENCH_QUERIES: each a
// little-endian uint32 count and dim, count float32 scales, then count*dim
// int8 values (vectors quantized with Quantize). It returns nil when the
// variables are unset.
func fileVectors(tb testing.TB) *benchVectors {
	dp, qp := os.Getenv("LOCI_BENCH_VECTORS"), os.Getenv("LOCI_BENCH_QUERIES")
	if dp == "" || qp == "" {
		return nil
	}
	read := func(p string) ([][]int8, []float32, int) {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		n, dim := int(binary.LittleEndian.Uint32(b)), int(binary.LittleEndian.Uint32(b[4:]))
		if len(b) != 8+4*n+n*dim {
			tb.Fatalf("%s: %d bytes, want %d", p, len(b), 8+4*n+n*dim)
		}
		scales := make([]float32, n)
		rows := make([][]int8, n)
		for i := range n {
			scales[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[8+4*i:]))
			row := make([]int8, dim)
			for j := range row {
				row[j] = int8(b[8+4*n+i*dim+j])
			}
			rows[i] = row
		}
		return rows, scales, dim
	}
	bv := &benchVectors{name: "minilm"}
	bv.rows, bv.scales, bv.dim = read(dp)
	bv.queries, bv.qscales, _ = read(qp)
	return bv
}

// segPart stores the rows as one segment part (keys from the row number).
func (bv *benchVectors) segPart(tb testing.TB) *SegVectors {
	m := NewMemVectors("bench", bv.dim)
	for i, row := range bv.rows {
		var k [16]byte
		binary.BigEndian.PutUint32(k[:], uint32(i))
		m.Add(k, row, bv.scales[i])
	}
	s, err := OpenSegVectors(m.Section())
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

var benchSets struct {
	once sync.Once
	sets []*benchVectors
}

func twoStageSets(tb testing.TB) []*benchVectors {
	benchSets.once.Do(func() {
		benchSets.sets = []*benchVectors{clusteredVectors(100_000, 384, 256), gaussianVectors(100_000, 384, 256)}
		if f := fileVectors(tb); f != nil {
			benchSets.sets = append(benchSets.sets, f)
		}
	})
	return benchSets.sets
}

// BenchmarkTwoStage compares the plain int8 scan with the two-stage scan
// over 100k documents of 384 dimensions, one goroutine (Search) and two
// (Scan, as the engine runs it), and reports the share of documents the
// two-stage scan scored exactly (rescored-%).
func BenchmarkTwoStage(b *testing.B) {
	b.Logf("kernel: %s", KernelName())
	for _, bv := range twoStageSets(b) {
		seg := bv.segPart(b)
		parts := []Part{seg}
		seg.sketchFor(0, seg.NumDocs()) // built once per segment; BenchmarkSketchBuild times it
		for _, k := range []int{100, 400} {
			for _, workers := range []int{1, 2} {
				for _, mode := range []string{"plain", "twostage"} {
					b.Run(fmt.Sprintf("%s/k=%d/workers=%d/%s", bv.name, k, workers, mode), func(b *testing.B) {
						useSketch = mode == "twostage"
						defer func() { useSketch = true }()
						exactScored.Store(0)
						i := 0
						cpu0 := cpuTime(b)
						for b.Loop() {
							q, qs := bv.queries[i%len(bv.queries)], bv.qscales[i%len(bv.queries)]
							i++
							if workers == 1 {
								Search(parts, q, qs, k)
								continue
							}
							s := NewScan(parts, q, qs, k)
							var wg sync.WaitGroup
							wg.Go(s.Work)
							s.Work()
							wg.Wait()
							s.Hits()
						}
						b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(i), "cpu-ns/op")
						b.ReportMetric(100*float64(exactScored.Load())/float64(i*seg.NumDocs()), "rescored-%")
					})
				}
			}
		}
	}
}

// BenchmarkSketchBuild times sketching a segment of 100k documents of 384
// dimensions, which the first scan of a segment pays.
func BenchmarkSketchBuild(b *testing.B) {
	bv := twoStageSets(b)[0]
	seg := bv.segPart(b)
	i := 0
	cpu0 := cpuTime(b)
	for b.Loop() {
		i++
		seg.sketch = new(lazySketch)
		seg.sketchFor(0, seg.NumDocs())
	}
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(i), "cpu-ns/op")
}
