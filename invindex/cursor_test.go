package invindex

import (
	"math/rand/v2"
	"testing"
)

// TestTfAt: random-access lookups in increasing doc order, with random gaps
// that skip blocks and containers, return each doc's tf in MemIndex and
// SegIndex posting lists alike (arrays, bitmaps, several containers).
func TestTfAt(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	const n = 140000
	c := corpus{keys: make([][16]byte, n), docs: make([][]string, n)}
	for d := range n {
		var terms []string
		if d%2 == 0 || d > 70000 && d%3 == 0 {
			terms = append(terms, "dense") // bitmap containers, then another
		}
		if r.IntN(40) == 0 {
			terms = append(terms, "sparse", "sparse") // array containers
		}
		if r.IntN(3) == 0 {
			terms = append(terms, "dense", "mid")
		}
		c.docs[d] = terms
	}
	m := memOf(c)
	x := mustSeg(t, c.keys, c.docs)
	sc := newScorer(DefaultBM25, 1)
	for _, term := range []string{"dense", "sparse", "mid"} {
		tf := make(map[uint32]uint32)
		id, _ := m.lookup(termHash(term), term)
		mt := &m.terms[id]
		for i, d := range mt.docs {
			tf[d] = mt.tfs[i]
		}
		for _, p := range []Part{m, x} {
			for _, maxGap := range []int{1, 7, 300, 5000} {
				var cur cursor
				cur.reset(p.postings(term), 1, 0, window)
				for d := uint32(r.IntN(maxGap)); d < n; d += uint32(1 + r.IntN(maxGap)) {
					cur.docUB(d, &sc)
					if got := cur.tfAt(d); got != tf[d] {
						t.Fatalf("%T %q gap %d: tfAt(%d) = %d, want %d", p, term, maxGap, d, got, tf[d])
					}
				}
			}
		}
	}
}
