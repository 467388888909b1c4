package invindex

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestAppendIndexEqualsRebuild: merging segment parts with AppendIndex gives
// the same section bytes as indexing the kept docs' terms from scratch.
func TestAppendIndexEqualsRebuild(t *testing.T) {
	for seed := uint64(0); seed < 30; seed++ {
		r := rand.New(rand.NewPCG(seed, 3))
		vocab := 5 + r.IntN(200)
		ndocs := r.IntN(600)
		keys := make([][16]byte, ndocs)
		terms := make([][]string, ndocs)
		for d := range terms {
			keys[d][0], keys[d][1], keys[d][15] = byte(d), byte(d>>8), byte(seed)
			for j := r.IntN(60); j > 0; j-- {
				terms[d] = append(terms[d], fmt.Sprintf("t%d", int(float64(vocab)*r.Float64()*r.Float64())))
			}
			if r.IntN(50) == 0 { // a very frequent term, for wide tfs
				for j := 0; j < 300; j++ {
					terms[d] = append(terms[d], "hot")
				}
			}
		}
		split := 0
		if ndocs > 0 {
			split = r.IntN(ndocs + 1)
		}
		open := func(lo, hi int) *SegIndex {
			s, err := BuildSections(keys[lo:hi], terms[lo:hi])
			if err != nil {
				t.Fatal(err)
			}
			x, err := OpenSegIndex(s, func(doc uint32) [16]byte { return keys[lo+int(doc)] })
			if err != nil {
				t.Fatal(err)
			}
			return x
		}
		a, b := open(0, split), open(split, ndocs)
		drop := map[int]bool{}
		var keptKeys [][16]byte
		var keptTerms [][]string
		for d := 0; d < ndocs; d++ {
			if r.IntN(5) == 0 {
				drop[d] = true
				continue
			}
			keptKeys, keptTerms = append(keptKeys, keys[d]), append(keptTerms, terms[d])
		}
		m := NewMemIndex()
		if err := m.AppendIndex(a, func(doc uint32) bool { return !drop[int(doc)] }); err != nil {
			t.Fatal(err)
		}
		if err := m.AppendIndex(b, func(doc uint32) bool { return !drop[split+int(doc)] }); err != nil {
			t.Fatal(err)
		}
		got, err := m.Sections()
		if err != nil {
			t.Fatal(err)
		}
		want, _ := BuildSections(keptKeys, keptTerms)
		if !bytes.Equal(got.TermDict, want.TermDict) || !bytes.Equal(got.Postings, want.Postings) || !bytes.Equal(got.DocLengths, want.DocLengths) {
			t.Fatalf("seed %d: merged sections differ from a rebuild", seed)
		}
	}
}

// TestAddCountedEqualsAdd: counting terms apart and adding them counted
// builds the same index as Add.
func TestAddCountedEqualsAdd(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	a, b := NewMemIndex(), NewMemIndex()
	for d := 0; d < 700; d++ {
		var terms []string
		for j := r.IntN(80); j > 0; j-- {
			terms = append(terms, fmt.Sprintf("t%d", int(100*r.Float64()*r.Float64())))
		}
		key := [16]byte{byte(d), byte(d >> 8)}
		a.Add(key, terms)
		b.AddCounted(key, CountTerms(terms))
	}
	sa, _ := a.Sections()
	sb, _ := b.Sections()
	if !bytes.Equal(sa.TermDict, sb.TermDict) || !bytes.Equal(sa.Postings, sb.Postings) || !bytes.Equal(sa.DocLengths, sb.DocLengths) {
		t.Fatal("AddCounted built a different index than Add")
	}
}
