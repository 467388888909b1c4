package text

import (
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

// plainCounter hides a counter's type, so Chunks counts through Count alone
// (no piece memo).
type plainCounter struct{ c TokenCounter }

func (p plainCounter) Count(s string) int { return p.c.Count(s) }

// TestChunksBPEMemo: chunking with a BPE, which reuses the counts of the
// sentences' pieces when it counts a chunk again, gives exactly what counting
// every chunk afresh gives, for both encodings and all sizes.
func TestChunksBPEMemo(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	var texts []string
	for i := range 300 {
		n := rng.Intn(400)
		if i%20 == 0 {
			n = 3000
		}
		texts = append(texts, randomText(rng, n))
	}
	texts = append(texts, prose(20_000), prose(3_000), strings.Repeat("word ", 3000),
		"abc\xffdef. ghi \xc3( jkl.\n"+prose(2000), strings.Repeat("a", 5000)+". "+prose(1500))
	sizes := []struct{ target, max int }{{200, 512}, {20, 40}, {5, 8}, {2, 3}, {60, 61}}
	for _, enc := range []*BPE{O200kBase(), CL100kBase()} {
		for i, text := range texts {
			for _, sz := range sizes {
				got := Chunks(text, enc, sz.target, sz.max)
				want := Chunks(text, plainCounter{enc}, sz.target, sz.max)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s, text %d, sizes %v: chunks with the piece memo differ from plain counting\n got %+v\nwant %+v",
						enc.Name(), i, sz, got, want)
				}
			}
		}
	}
}

// BenchmarkChunksBPE measures chunking a long document with the exact
// o200k_base counter, as ingest does.
func BenchmarkChunksBPE(b *testing.B) {
	text := prose(100_000)
	enc := O200kBase()
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		Chunks(text, enc, DefaultTarget, DefaultMax)
	}
}

// BenchmarkChunksBPEPlain is BenchmarkChunksBPE without the piece memo.
func BenchmarkChunksBPEPlain(b *testing.B) {
	text := prose(100_000)
	enc := plainCounter{O200kBase()}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		Chunks(text, enc, DefaultTarget, DefaultMax)
	}
}
