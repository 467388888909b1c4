package invindex

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// TestSectionsEqual: MemIndex.Sections and BuildSections give the same bytes
// for the same docs, and building is deterministic.
func TestSectionsEqual(t *testing.T) {
	for _, n := range []int{0, 1, 300, 5000} {
		r := rand.New(rand.NewPCG(uint64(n), 1))
		c := genCorpus(r, n, 500, 60)
		a, err := memOf(c).Sections()
		if err != nil {
			t.Fatal(err)
		}
		b, err := BuildSections(c.keys, c.docs)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.TermDict, b.TermDict) || !bytes.Equal(a.Postings, b.Postings) || !bytes.Equal(a.DocLengths, b.DocLengths) {
			t.Fatalf("%d docs: MemIndex.Sections and BuildSections differ", n)
		}
		if len(a.Postings)%8 != 0 {
			t.Fatalf("%d docs: postings of %d bytes", n, len(a.Postings))
		}
	}
	if _, err := BuildSections(make([][16]byte, 2), make([][]string, 3)); err == nil {
		t.Fatal("BuildSections accepted 2 keys for 3 docs")
	}
}

// TestBitmapRoaring: the posting bitmaps are roaring's portable serialization,
// byte for byte, and roaring reads them back.
func TestBitmapRoaring(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	sets := [][]uint32{{0}, {65535, 65536}, {1, 2, 3, 200000}}
	for _, density := range []int{2, 10, 20, 100} { // 1/2 and 1/10 make bitmap containers
		var s []uint32
		for d := uint32(0); d < 200000; d++ {
			if r.IntN(density) == 0 {
				s = append(s, d)
			}
		}
		sets = append(sets, s)
	}
	dense := make([]uint32, 4097) // one past the array limit
	for i := range dense {
		dense[i] = uint32(3 * i)
	}
	sets = append(sets, dense, dense[:4096])
	for _, s := range sets {
		got := appendBitmap(nil, s)
		if len(got) != bitmapSize(s) {
			t.Fatalf("%d docs: %d bytes, bitmapSize says %d", len(s), len(got), bitmapSize(s))
		}
		want, err := roaring.BitmapOf(s...).ToBytes()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%d docs: serialization differs from roaring's", len(s))
		}
		if _, err := checkBitmap(got, len(s), s[len(s)-1]+1); err != nil {
			t.Fatal(err)
		}
		rb := roaring.New()
		if _, err := rb.FromBuffer(got); err != nil || !slices.Equal(rb.ToArray(), s) {
			t.Fatalf("%d docs: roaring reads back %d docs, err %v", len(s), rb.GetCardinality(), err)
		}
	}
}

// TestSegIndexMatchesMem: a SegIndex answers every accessor as the MemIndex
// it was frozen from, decodes every posting list to the same postings, and
// passes Verify.
func TestSegIndexMatchesMem(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	c := genCorpus(r, 9000, 3000, 80)
	c.docs[5] = slices.Repeat([]string{"t0", "t1"}, 400)
	m := memOf(c)
	x := mustSeg(t, c.keys, c.docs)
	if x.NumDocs() != m.NumDocs() || x.TotalLen() != m.TotalLen() || x.NumTerms() != m.NumTerms() {
		t.Fatalf("seg %d docs %d len %d terms, mem %d %d %d",
			x.NumDocs(), x.TotalLen(), x.NumTerms(), m.NumDocs(), m.TotalLen(), m.NumTerms())
	}
	for d := range uint32(m.NumDocs()) {
		if x.DocLen(d) != m.DocLen(d) || x.Key(d) != m.Key(d) || m.DocLen(d) != uint32(len(c.docs[d])) {
			t.Fatalf("doc %d differs", d)
		}
	}
	for _, term := range []string{"t0", "t1", "t17", "t2999", "nope", ""} {
		if x.DocFreq(term) != m.DocFreq(term) {
			t.Fatalf("DocFreq(%q): seg %d, mem %d", term, x.DocFreq(term), m.DocFreq(term))
		}
	}
	for i := range m.terms {
		mt := &m.terms[i]
		var cm, cs cursor
		cm.reset(m.postings(mt.text), 1, 0, 0)
		cs.reset(x.postings(mt.text), 1, 0, 0)
		if cs.nblk != cm.nblk || !bytes.Equal(cs.pl.blocks, cm.pl.blocks) {
			t.Fatalf("term %q: block tables differ", mt.text)
		}
		for j := range cm.nblk {
			if !cm.load(j) || !cs.load(j) || !slices.Equal(cm.docs, cs.docs) || !slices.Equal(cm.tfs, cs.tfs) {
				t.Fatalf("term %q block %d: seg %v %v, mem %v %v", mt.text, j, cs.docs, cs.tfs, cm.docs, cm.tfs)
			}
		}
	}
	if err := x.Verify(); err != nil {
		t.Fatal(err)
	}
}

// TestMemIndexBlocks: the block table kept as docs arrive holds each block's
// last doc, max tf and min length.
func TestMemIndexBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	c := genCorpus(r, 3000, 50, 30)
	m := memOf(c)
	for i := range m.terms {
		mt := &m.terms[i]
		for j := 0; j*blockSize < len(mt.docs); j++ {
			lo, hi := j*blockSize, min((j+1)*blockSize, len(mt.docs))
			var mtf uint32
			mdl := ^uint32(0)
			for p := lo; p < hi; p++ {
				mtf, mdl = max(mtf, mt.tfs[p]), min(mdl, m.DocLen(mt.docs[p]))
			}
			b := mt.blocks[j*blockMetaSize:]
			if le.Uint32(b) != mt.docs[hi-1] || le.Uint32(b[4:]) != mtf || le.Uint32(b[8:]) != mdl {
				t.Fatalf("term %q block %d: meta %v, want %d %d %d", mt.text, j, b[:12], mt.docs[hi-1], mtf, mdl)
			}
		}
	}
}
