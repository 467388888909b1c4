package pack

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/loci-memory/loci/text"
)

// benchCandidates returns n candidates of about 200 tokens each: English-
// like sentences over a Zipf-distributed vocabulary of 3,000 words, with
// numbers and units, 40 artifacts, both channels.
func benchCandidates(n int) []Candidate {
	r := rand.New(rand.NewPCG(1, 2))
	vocab := make([]string, 3000)
	for i := range vocab {
		var b strings.Builder
		for range 3 + r.IntN(7) {
			b.WriteByte(byte('a' + r.IntN(26)))
		}
		vocab[i] = b.String()
	}
	z := rand.NewZipf(r, 1.1, 2, uint64(len(vocab)-1))
	out := make([]Candidate, n)
	for i := range out {
		var b strings.Builder
		for b.Len() < 800 {
			for k := range 8 + r.IntN(12) {
				if k > 0 {
					b.WriteByte(' ')
				}
				if r.IntN(30) == 0 {
					b.WriteString("42 days")
				} else {
					b.WriteString(vocab[z.Uint64()])
				}
			}
			b.WriteString(". ")
		}
		c := cnd(i, i%40, b.String(), r.Float64()*25)
		c.Semantic, c.InSemantic = r.Float64(), true
		c.Timestamp -= r.Int64N(1e13)
		out[i] = c
	}
	return out
}

// cheap is a near-free token counter, to measure Pack without the cost of
// counting.
type cheap struct{}

func (cheap) Count(s string) int { return len(s)/4 + 1 }

// timed wraps a counter and adds up the time spent counting.
type timed struct {
	tok   text.TokenCounter
	spent time.Duration
	calls int
}

func (t *timed) Count(s string) int {
	start := time.Now()
	n := t.tok.Count(s)
	t.spent += time.Since(start)
	t.calls++
	return n
}

// benchmarkPack reports ns/op, and also the time per op outside the token
// counter (pack-ns/op) and the counter calls per op.
func benchmarkPack(b *testing.B, mode string, tok text.TokenCounter) {
	cs := benchCandidates(200)
	rq := req("refund window policy for enterprise customers", 4096)
	rq.Mode = mode
	counter := &timed{tok: tok}
	b.ReportAllocs()
	start := time.Now()
	n := 0
	for b.Loop() {
		r := Pack(rq, nil, cs, counter)
		if r.TotalTokens > 4096 || len(r.Citations) == 0 {
			b.Fatalf("%d tokens, %d citations", r.TotalTokens, len(r.Citations))
		}
		n++
	}
	elapsed := time.Since(start)
	b.ReportMetric(float64(elapsed-counter.spent)/float64(n), "pack-ns/op")
	b.ReportMetric(float64(counter.calls)/float64(n), "counts/op")
}

// BenchmarkPack: 200 candidates of about 200 tokens, budget 4096.
func BenchmarkPack(b *testing.B) {
	b.Run("relevance/estimate", func(b *testing.B) { benchmarkPack(b, ModeRelevance, text.Estimate{}) })
	b.Run("coverage/estimate", func(b *testing.B) { benchmarkPack(b, ModeCoverage, text.Estimate{}) })
	b.Run("relevance/cheap", func(b *testing.B) { benchmarkPack(b, ModeRelevance, cheap{}) })
}

// BenchmarkPackLineCounts: the same packs counted exactly with o200k_base,
// without and with a LineCounts memo shared across packs (the memo is warm
// after the first pack, as on a server packing one workspace).
func BenchmarkPackLineCounts(b *testing.B) {
	for _, memo := range []bool{false, true} {
		name := "o200k"
		if memo {
			name += "+memo"
		}
		b.Run(name, func(b *testing.B) {
			cs := benchCandidates(200)
			rq := req("refund window policy for enterprise customers", 4096)
			if memo {
				rq.Lines = NewLineCounts(1 << 16)
			}
			tok := text.O200kBase()
			b.ReportAllocs()
			for b.Loop() {
				if r := Pack(rq, nil, cs, tok); r.TotalTokens > 4096 || len(r.Citations) == 0 {
					b.Fatalf("%d tokens, %d citations", r.TotalTokens, len(r.Citations))
				}
			}
		})
	}
}

// BenchmarkAdjacency: the query's term pairs counted in 200 candidates of
// about 200 tokens (800 bytes), what score adds to a pack whose lexical
// channel returned them all (ns/op is per pack).
func BenchmarkAdjacency(b *testing.B) {
	cs := benchCandidates(200)
	b.ReportAllocs()
	for b.Loop() {
		tp := newTermPairs("refund window policy for enterprise customers")
		for i := range cs {
			tp.count(indexTerms(cs[i].Text))
		}
		tp.reachable()
	}
}

// BenchmarkConflictStep: what the conflict step costs a pack of 30 spans
// of about 200 tokens: their features and every pair's rules (ns/op is per
// pack).
func BenchmarkConflictStep(b *testing.B) {
	cs := benchCandidates(30)
	b.ReportAllocs()
	for b.Loop() {
		fs := make([]*features, len(cs))
		for i := range cs {
			fs[i] = featuresOf(cs[i].Text)
			for j := range i {
				detectConflict(fs[j], fs[i], newerOf(cs[j].Timestamp, cs[j].Seq, cs[i].Timestamp, cs[i].Seq), false)
			}
		}
	}
}

// BenchmarkOwnerGrounding is ownerGrounding's worst case: a name no
// candidate holds, so that every one of 400 candidates of about 200 tokens
// (a small workspace's lexical pool) is read.
func BenchmarkOwnerGrounding(b *testing.B) {
	cs := gather(nil, benchCandidates(400), "")
	named := namedTerms("How often do I see Dr. Johnson?")
	b.ReportAllocs()
	for b.Loop() {
		if g := ownerGrounding(cs, named); g == 1 {
			b.Fatal("a candidate holds the name")
		}
	}
}
