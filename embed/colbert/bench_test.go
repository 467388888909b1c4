package colbert

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkQuery is a question's pass: the per-pack cost late interaction
// adds once passages' vectors are stored.
func BenchmarkQuery(b *testing.B) {
	e, err := Default()
	if err != nil {
		b.Fatal(err)
	}
	q := "What did Caroline realize after her charity race last summer?"
	for b.Loop() {
		if _, err := e.Query(q); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPassage is one passage's pass, what ingest would add per span.
func BenchmarkPassage(b *testing.B) {
	e, err := Default()
	if err != nil {
		b.Fatal(err)
	}
	for _, words := range []int{25, 100} {
		p := strings.Repeat("we camp by the lake and paint ", words/6+1)
		b.Run(fmt.Sprintf("tokens=%d", len(e.PassageIDs(p))), func(b *testing.B) {
			for b.Loop() {
				if _, err := e.Passage(p, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchPool is a query of 14 tokens and 100 passages of 35: the pool of a
// pack.
func benchPool() (Matrix, []Matrix) {
	row := func(seed int) []float32 {
		r := make([]float32, Dims)
		for i := range r {
			r[i] = float32((seed*31+i*17)%13-6) / 16
		}
		return r
	}
	var q Matrix
	for t := range 14 {
		q = append(q, row(t)...)
	}
	ps := make([]Matrix, 100)
	for i := range ps {
		for t := range 35 {
			ps[i] = append(ps[i], row(1000+i*35+t)...)
		}
	}
	return q, ps
}

// BenchmarkMaxSim scores 100 passages of 35 tokens for a query of 14
// tokens: the pool of a pack, once the vectors are at hand.
func BenchmarkMaxSim(b *testing.B) {
	q, ps := benchPool()
	var sink float64
	for b.Loop() {
		for _, p := range ps {
			sink += MaxSim(q, p)
		}
	}
	_ = sink
}

// BenchmarkMaxSimStored is BenchmarkMaxSim over stored rows, with one
// scratch for the pool as ScoreAll scores it.
func BenchmarkMaxSimStored(b *testing.B) {
	q, pm := benchPool()
	qs, ps := Store(q), make([]Stored, len(pm))
	for i, m := range pm {
		ps[i] = Store(m)
	}
	b.ReportAllocs()
	var sink float64
	for b.Loop() {
		var dots scratch
		for _, p := range ps {
			sink += maxSimStored(qs, &dots, p)
		}
	}
	_ = sink
}

// BenchmarkDecodeStored decodes the stored rows of 100 passages of 35
// tokens: what ScoreAll reads of a pool before MaxSim.
func BenchmarkDecodeStored(b *testing.B) {
	_, pm := benchPool()
	bs := make([][]byte, len(pm))
	for i, m := range pm {
		bs[i] = Store(m).Append(nil)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range bs {
			if _, err := DecodeStored(p); err != nil {
				b.Fatal(err)
			}
		}
	}
}
