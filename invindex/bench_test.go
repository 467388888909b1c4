package invindex

import (
	"bufio"
	"encoding/json"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The synthetic benchmark collection: 100k docs of 60..140 terms drawn from a
// Zipfian vocabulary of 50k terms whose 50 most frequent ranks are dropped
// (as stop words are), so the most frequent term is in about a quarter of the
// docs. Queries have 3..10 terms from the same distribution.
const (
	benchDocs   = 100_000
	benchVocab  = 50_000
	benchSkip   = 50
	benchQCount = 1000
)

type benchData struct {
	c       corpus
	mem     *MemIndex
	seg     *SegIndex
	split   []Part // a 10k-doc head and three segments
	queries [][]Term
	mixed   [][]Term // two of the 30 most frequent terms and two rarer ones
}

var (
	benchOnce sync.Once
	bench     benchData
)

func benchCollection(b *testing.B) *benchData {
	benchOnce.Do(func() {
		r := rand.New(rand.NewPCG(42, 42))
		z := newZipf(r, benchVocab+benchSkip, 1.0)
		names := make([]string, benchVocab)
		for i := range names {
			names[i] = "w" + strconv.Itoa(i)
		}
		draw := func() string {
			for {
				if i := z.next(); i >= benchSkip {
					return names[i-benchSkip]
				}
			}
		}
		c := corpus{keys: make([][16]byte, benchDocs), docs: make([][]string, benchDocs)}
		for i := range c.docs {
			for j := range 16 {
				c.keys[i][j] = byte(r.Uint32())
			}
			d := make([]string, 60+r.IntN(81))
			for j := range d {
				d[j] = draw()
			}
			c.docs[i] = d
		}
		bench.c = c
		bench.mem = memOf(c)
		bench.seg = mustSeg(b, c.keys, c.docs)
		bench.split, _ = buildParts(b, c, []int{40_000, 70_000, 90_000}, []bool{true, true, true, false})
		for range benchQCount {
			q := make([]string, 3+r.IntN(8))
			for i := range q {
				q[i] = draw()
			}
			bench.queries = append(bench.queries, QueryTerms(q))
			bench.mixed = append(bench.mixed, QueryTerms([]string{
				names[r.IntN(20)], names[r.IntN(30)], names[500+r.IntN(3000)], names[500+r.IntN(3000)]}))
		}
	})
	return &bench
}

// runQueries runs queries round robin, reporting latency percentiles and
// queries per second besides ns/op.
func runQueries(b *testing.B, parts []Part, queries [][]Term, k int, search func([]Part, []Term, int, BM25) []Hit) {
	lat := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	i := 0
	for b.Loop() {
		t0 := time.Now()
		search(parts, queries[i%len(queries)], k, DefaultBM25)
		if len(lat) < cap(lat) {
			lat = append(lat, time.Since(t0))
		}
		i++
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user and system CPU time: on a shared machine it
// counts what the benchmark itself used, where wall time also counts waits.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSearch100k: BM25 top-100 over 100k docs, one segment, the head
// alone, and a head plus three segments; exhaustive scoring for comparison.
// "mixed" queries pair two very frequent terms with two rarer ones, the case
// where pruning skips most postings.
func BenchmarkSearch100k(b *testing.B) {
	d := benchCollection(b)
	b.Run("segment", func(b *testing.B) { runQueries(b, []Part{d.seg}, d.queries, 100, Search) })
	b.Run("head", func(b *testing.B) { runQueries(b, []Part{d.mem}, d.queries, 100, Search) })
	b.Run("4parts", func(b *testing.B) { runQueries(b, d.split, d.queries, 100, Search) })
	b.Run("segment/k10", func(b *testing.B) { runQueries(b, []Part{d.seg}, d.queries, 10, Search) })
	b.Run("segment/exhaustive", func(b *testing.B) { runQueries(b, []Part{d.seg}, d.queries, 100, SearchExhaustive) })
	b.Run("segment/mixed", func(b *testing.B) { runQueries(b, []Part{d.seg}, d.mixed, 100, Search) })
	b.Run("segment/mixed/k10", func(b *testing.B) { runQueries(b, []Part{d.seg}, d.mixed, 10, Search) })
	b.Run("segment/mixed/exhaustive", func(b *testing.B) { runQueries(b, []Part{d.seg}, d.mixed, 100, SearchExhaustive) })
}

// sciFact loads the SciFact corpus (title and abstract per doc) and queries,
// analyzed, or returns false when the shared data set is absent.
func loadSciFact(tb testing.TB) (corpus, [][]Term, bool) {
	read := func(name string, each func(title, text string)) bool {
		f, err := os.Open("../../shared/data/scifact/" + name)
		if err != nil {
			return false
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var v struct{ Title, Text string }
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
				tb.Fatal(err)
			}
			each(v.Title, v.Text)
		}
		return sc.Err() == nil
	}
	var c corpus
	ok := read("corpus.jsonl", func(title, text string) {
		var key [16]byte
		copy(key[:], strconv.Itoa(len(c.docs)))
		c.keys = append(c.keys, key)
		c.docs = append(c.docs, Analyze(title+" "+text, nil))
	})
	var queries [][]Term
	ok = ok && read("queries.jsonl", func(_, text string) {
		queries = append(queries, QueryTerms(Analyze(text, nil)))
	})
	return c, queries, ok
}

// BenchmarkSciFact: all SciFact queries over its 5,183 docs in one segment.
func BenchmarkSciFact(b *testing.B) {
	c, queries, ok := loadSciFact(b)
	if !ok {
		b.Skip("SciFact not found at ../../shared/data/scifact")
	}
	seg := []Part{mustSeg(b, c.keys, c.docs)}
	for _, k := range []int{10, 100, 1000} {
		b.Run("k"+strconv.Itoa(k), func(b *testing.B) { runQueries(b, seg, queries, k, Search) })
	}
	b.Run("k100/exhaustive", func(b *testing.B) { runQueries(b, seg, queries, 100, SearchExhaustive) })
}

// BenchmarkAdd measures head indexing of ~100-term docs.
func BenchmarkAdd(b *testing.B) {
	d := benchCollection(b)
	b.ReportAllocs()
	m := NewMemIndex()
	i := 0
	for b.Loop() {
		if i == len(d.c.docs) {
			m, i = NewMemIndex(), 0
		}
		m.Add(d.c.keys[i], d.c.docs[i])
		i++
	}
	b.ReportMetric(float64(d.mem.MemoryBytes())/benchDocs*100_000/(1<<20), "MiB/100k-docs")
}

// BenchmarkSections measures freezing a 100k-doc head into sections and
// opening them.
func BenchmarkSections(b *testing.B) {
	d := benchCollection(b)
	s, err := d.mem.Sections()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("freeze", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := d.mem.Sections(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(s.TermDict)+len(s.Postings)+len(s.DocLengths))/(1<<20), "MiB")
	})
	b.Run("open", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := OpenSegIndex(s, d.c.keyOf); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func (c corpus) keyOf(d uint32) [16]byte { return c.keys[d] }
