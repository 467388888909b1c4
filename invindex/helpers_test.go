package invindex

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// corpus is a generated collection: doc i has key keys[i] and terms docs[i].
type corpus struct {
	keys [][16]byte
	docs [][]string
}

// genCorpus makes n docs over a Zipfian vocabulary of vocab terms, each of
// 0..maxLen terms. About one doc in ten repeats an earlier doc, so that equal
// scores (broken by key) are common.
func genCorpus(r *rand.Rand, n, vocab, maxLen int) corpus {
	z := newZipf(r, vocab, 1.1)
	c := corpus{keys: make([][16]byte, n), docs: make([][]string, n)}
	for i := range n {
		for j := range 16 {
			c.keys[i][j] = byte(r.Uint32())
		}
		if i > 0 && r.IntN(10) == 0 {
			c.docs[i] = c.docs[r.IntN(i)]
			continue
		}
		l := r.IntN(maxLen + 1)
		d := make([]string, l)
		for j := range d {
			d[j] = termName(z.next())
		}
		c.docs[i] = d
	}
	return c
}

func termName(i int) string { return "t" + strconv.Itoa(i) }

// zipf draws ranks 0..n-1 with P(i) proportional to 1/(i+1)^s.
type zipf struct {
	r   *rand.Rand
	cdf []float64
}

func newZipf(r *rand.Rand, n int, s float64) *zipf {
	z := &zipf{r: r, cdf: make([]float64, n)}
	sum := 0.0
	for i := range n {
		sum += 1 / math.Pow(float64(i+1), s)
		z.cdf[i] = sum
	}
	for i := range z.cdf {
		z.cdf[i] /= sum
	}
	return z
}

func (z *zipf) next() int {
	u := z.r.Float64()
	lo, hi := 0, len(z.cdf)-1
	for lo < hi {
		m := (lo + hi) / 2
		if z.cdf[m] < u {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// buildParts splits c at cuts (ascending doc offsets) into parts; seg[i]
// makes part i a SegIndex opened from BuildSections, else a MemIndex. It
// returns the parts and each part's first doc.
func buildParts(t testing.TB, c corpus, cuts []int, seg []bool) ([]Part, []int) {
	t.Helper()
	bounds := append(append([]int{0}, cuts...), len(c.docs))
	var parts []Part
	for i := 0; i+1 < len(bounds); i++ {
		lo, hi := bounds[i], bounds[i+1]
		if seg[i] {
			parts = append(parts, mustSeg(t, c.keys[lo:hi], c.docs[lo:hi]))
		} else {
			m := NewMemIndex()
			for j := lo; j < hi; j++ {
				m.Add(c.keys[j], c.docs[j])
			}
			parts = append(parts, m)
		}
	}
	return parts, bounds[:len(bounds)-1]
}

func mustSeg(t testing.TB, keys [][16]byte, docs [][]string) *SegIndex {
	t.Helper()
	s, err := BuildSections(keys, docs)
	if err != nil {
		t.Fatal(err)
	}
	x, err := OpenSegIndex(s, func(d uint32) [16]byte { return keys[d] })
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func memOf(c corpus) *MemIndex {
	m := NewMemIndex()
	for i := range c.docs {
		m.Add(c.keys[i], c.docs[i])
	}
	return m
}

// sameHits reports whether two results are identical, scores bit for bit.
func sameHits(a, b []Hit) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Part != b[i].Part || a[i].Doc != b[i].Doc || a[i].Key != b[i].Key ||
			math.Float64bits(a[i].Score) != math.Float64bits(b[i].Score) {
			return false
		}
	}
	return true
}

// sameRanking compares results by key and score only (part layouts differ).
func sameRanking(a, b []Hit) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || math.Float64bits(a[i].Score) != math.Float64bits(b[i].Score) {
			return false
		}
	}
	return true
}
