package invindex

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// headDocs returns n counted docs like a head's: Zipfian words from a
// vocabulary of 3,000, numbers (a long tail of distinct terms), 10 to 60
// terms each.
func headDocs(n int) []DocTerms {
	r := rand.New(rand.NewPCG(1, 2))
	z := rand.NewZipf(r, 1.1, 1, 2999)
	texts := make([]string, n)
	for i := range texts {
		var sb strings.Builder
		for k := 10 + r.IntN(50); k > 0; k-- {
			if r.IntN(30) == 0 {
				fmt.Fprintf(&sb, "%d ", r.IntN(100000))
				continue
			}
			fmt.Fprintf(&sb, "w%dx ", z.Uint64())
		}
		texts[i] = sb.String()
	}
	return CountTexts(n, func(i int) string { return texts[i] })
}

// BenchmarkMemIndexAddCounted adds a head's worth of docs to 8 indexes in
// turn (as 8 workspaces' heads fill), the work the engine does under its
// write lock for every ingested span.
func BenchmarkMemIndexAddCounted(b *testing.B) {
	docs := headDocs(160_000)
	b.ResetTimer()
	for b.Loop() {
		var idx [8]*MemIndex
		for i := range idx {
			idx[i] = NewMemIndex()
		}
		for i, d := range docs {
			idx[i%8].AddCounted([16]byte{byte(i)}, d)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(docs)), "ns/doc")
}

// TestAddCountedSharedTerms: docs added with the counts of CountTexts (term
// strings shared between docs, hashes precomputed) give the very index Add
// builds from each doc's analyzed terms: the same sections byte for byte,
// the same postings for every term, across table growth and many terms.
func TestAddCountedSharedTerms(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	var texts []string
	for range 3000 {
		var sb strings.Builder
		for k := r.IntN(80); k > 0; k-- {
			switch r.IntN(6) {
			case 0:
				fmt.Fprintf(&sb, "%d ", r.IntN(5000))
			case 1:
				sb.WriteString("Running runners' café ΑΒΓ ")
			default:
				fmt.Fprintf(&sb, "w%d ", r.IntN(700))
			}
		}
		texts = append(texts, sb.String())
	}
	a, b := NewMemIndex(), NewMemIndex()
	for lo := 0; lo < len(texts); lo += 3 {
		batch := texts[lo:min(lo+3, len(texts))]
		counted := CountTexts(len(batch), func(i int) string { return batch[i] })
		for i, text := range batch {
			key := [16]byte{byte(lo + i), byte((lo + i) >> 8)}
			a.Add(key, Analyze(text, nil))
			b.AddCounted(key, counted[i])
		}
	}
	sa, err := a.Sections()
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.Sections()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sa.TermDict, sb.TermDict) || !bytes.Equal(sa.Postings, sb.Postings) || !bytes.Equal(sa.DocLengths, sb.DocLengths) {
		t.Fatal("sections differ between Add and AddCounted")
	}
	if a.NumTerms() != b.NumTerms() || a.NumTerms() < 5000 {
		t.Fatalf("%d and %d terms", a.NumTerms(), b.NumTerms())
	}
	for i := range a.terms {
		term := a.terms[i].text
		pa, pb := a.postings(term), b.postings(term)
		if pa.df != pb.df || !slices.Equal(pa.docs, pb.docs) || !slices.Equal(pa.tfs, pb.tfs) || !bytes.Equal(pa.blocks, pb.blocks) ||
			a.DocFreq(term) != b.DocFreq(term) {
			t.Fatalf("term %q: postings differ", term)
		}
	}
	if b.DocFreq("absent") != 0 || b.postings("absent").df != 0 {
		t.Fatal("an absent term has postings")
	}
}
