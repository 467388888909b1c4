package invindex

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestCorruptSections truncates sections and flips bytes in them: every
// mutation makes OpenSegIndex fail with a *CorruptError or yields a part that
// can be searched and verified without a panic or an out-of-range read.
func TestCorruptSections(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	c := genCorpus(r, 400, 120, 40)
	c.docs[7] = slices.Repeat([]string{"t3"}, 300) // a 2-byte tf width
	for i := 100; i < 400; i++ {
		c.docs[i] = append(c.docs[i], "t0") // a long list of several blocks
	}
	good, err := BuildSections(c.keys, c.docs)
	if err != nil {
		t.Fatal(err)
	}
	keys := func(d uint32) [16]byte {
		if int(d) < len(c.keys) {
			return c.keys[d]
		}
		return [16]byte{}
	}
	var queries [][]Term
	for q := range 12 {
		queries = append(queries, QueryTerms([]string{termName(q), termName(2 * q), termName(q + 30), "t0"}))
	}
	opened, verified := 0, 0
	for it := range 4000 {
		s := Sections{
			TermDict:   slices.Clone(good.TermDict),
			Postings:   slices.Clone(good.Postings),
			DocLengths: slices.Clone(good.DocLengths),
		}
		sec := []*[]byte{&s.TermDict, &s.Postings, &s.DocLengths}[r.IntN(3)]
		var what string
		switch it % 4 {
		case 0:
			n := r.IntN(len(*sec) + 1)
			*sec = (*sec)[:n]
			what = fmt.Sprintf("truncated to %d", n)
		case 1:
			*sec = append(*sec, make([]byte, 1+r.IntN(16))...)
			what = "extended"
		default:
			what = "flipped"
			for range 1 + r.IntN(3) {
				if len(*sec) > 0 {
					i := r.IntN(len(*sec))
					(*sec)[i] ^= byte(1 + r.IntN(255))
					what += fmt.Sprintf(" %d", i)
				}
			}
		}
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("iteration %d (%s): panic %v", it, what, p)
				}
			}()
			x, err := OpenSegIndex(s, keys)
			if err != nil {
				var ce *CorruptError
				if !errors.As(err, &ce) {
					t.Fatalf("iteration %d (%s): error %T %v", it, what, err, err)
				}
				return
			}
			opened++
			for _, q := range queries {
				Search([]Part{x}, q, 10, DefaultBM25)
				SearchExhaustive([]Part{x}, q, 10, BM25{K1: 1.2, B: 0.75, LossyNorms: true})
				x.DocFreq(q[0].Text)
			}
			if x.Verify() == nil {
				verified++
			}
		}()
	}
	t.Logf("%d of 4000 mutations opened, %d of those verified", opened, verified)
}

// TestCorruptBitmapValues corrupts doc ids inside posting bitmaps, which
// OpenSegIndex does not read: Search returns nil or valid hits, and Verify
// reports the damage.
func TestCorruptBitmapValues(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	c := genCorpus(r, 600, 40, 30)
	good, err := BuildSections(c.keys, c.docs)
	if err != nil {
		t.Fatal(err)
	}
	x0, err := OpenSegIndex(good, func(d uint32) [16]byte { return c.keys[d] })
	if err != nil {
		t.Fatal(err)
	}
	caught := 0
	for it := range 300 {
		s := good
		s.Postings = slices.Clone(good.Postings)
		// Pick a term and flip a byte inside its first container's values.
		ti := r.IntN(x0.nterms)
		pl := x0.plist(ti)
		_, _, data := container(pl.bitmap, pl.containers, 0)
		start := int(le.Uint64(x0.entries[dictEntrySize*ti:]))
		off := start + (len(pl.bitmap) - len(data)) + r.IntN(len(data))
		s.Postings[off] ^= byte(1 + r.IntN(255))
		x, err := OpenSegIndex(s, func(d uint32) [16]byte { return c.keys[d] })
		if err != nil {
			t.Fatalf("iteration %d: open failed: %v", it, err)
		}
		term := string(x.term(ti))
		hits := Search([]Part{x}, []Term{{Text: term, Weight: 1}}, 1000, DefaultBM25)
		for _, h := range hits {
			if int(h.Doc) >= x.NumDocs() {
				t.Fatalf("iteration %d: hit on doc %d of %d", it, h.Doc, x.NumDocs())
			}
		}
		if x.Verify() != nil {
			caught++
		}
	}
	if caught == 0 {
		t.Fatal("Verify never noticed a corrupted bitmap")
	}
}
