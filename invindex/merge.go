package invindex

import (
	"fmt"
	"hash/maphash"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
)

// AppendIndex appends the docs of x for which keep reports true to m,
// renumbered after m's docs in their order, with their terms and
// frequencies: the index Add would build from the docs' analyzed terms,
// without analysing anything again. Compaction uses it to merge segments.
// keep nil keeps every doc.
func (m *MemIndex) AppendIndex(x *SegIndex, keep func(doc uint32) bool) error {
	n := uint32(x.NumDocs())
	newID := make([]uint32, n)
	const dropped = ^uint32(0)
	for d := uint32(0); d < n; d++ {
		if keep != nil && !keep(d) {
			newID[d] = dropped
			continue
		}
		newID[d] = uint32(len(m.keys))
		dl := x.DocLen(d)
		m.keys = append(m.keys, x.Key(d))
		m.lens = le.AppendUint32(m.lens, dl)
		m.totalLen += int64(dl)
	}
	// Within a term, x's postings come in doc order and new ids keep that
	// order, above every doc m already held: appending keeps each list sorted.
	var docBuf [256]uint32
	for i := 0; i < x.nterms; i++ {
		pl, err := x.termPostings(i)
		if err != nil {
			return err
		}
		var bm roaring.Bitmap
		if _, err := bm.FromBuffer(pl.bitmap); err != nil {
			return &CorruptError{Section: "POSTINGS", Msg: fmt.Sprintf("term %d: %v", i, err)}
		}
		if int(bm.GetCardinality()) != pl.df || len(pl.tfb) < pl.df*pl.width {
			return &CorruptError{Section: "POSTINGS", Msg: fmt.Sprintf("term %d: bitmap and tfs disagree", i)}
		}
		var mt *memTerm
		it := bm.ManyIterator()
		k := 0
		for {
			got := it.NextMany(docBuf[:])
			if got == 0 {
				break
			}
			for _, doc := range docBuf[:got] {
				if doc >= n {
					return &CorruptError{Section: "POSTINGS", Msg: fmt.Sprintf("term %d: doc %d out of range", i, doc)}
				}
				if newID[doc] == dropped {
					k++
					continue
				}
				if mt == nil {
					mt = m.termForBytes(x.term(i))
					// Room for the rest of the list at once.
					rest := pl.df - k
					mt.docs = slices.Grow(mt.docs, rest)
					mt.tfs = slices.Grow(mt.tfs, rest)
					mt.blocks = slices.Grow(mt.blocks, (rest/blockSize+1)*blockMetaSize)
				}
				m.appendPosting(mt, newID[doc], tfAt(pl.tfb, pl.width, k))
				k++
			}
		}
	}
	return nil
}

// termForBytes returns the postings of the term held in b, creating them
// (with a copy of b).
func (m *MemIndex) termForBytes(b []byte) *memTerm {
	h := termHashBytes(b)
	id, ok := m.lookup(h, string(b))
	if !ok {
		id = m.newTerm(h, string(b))
	}
	return &m.terms[id]
}

// termTable maps terms to their index in MemIndex.terms: open addressing
// with linear probing, at most half full, 8 bytes a slot (the high half of
// the term's hash, then its index + 1; 0 for an empty slot), the term
// itself being read from MemIndex.terms to confirm a match. A head's terms
// are looked up for every posting added, under the engine's write lock: a
// table this compact stays in the CPU's cache where a map of string keys
// (24 bytes a slot and the keys' bytes elsewhere) does not.
type termTable struct {
	slots []uint64
	n     int
}

var termSeed = maphash.MakeSeed()

func termHash(t string) uint64 { return maphash.String(termSeed, t) }

func termHashBytes(b []byte) uint64 { return maphash.Bytes(termSeed, b) }

// lookup returns the index of term t, whose termHash is h.
func (m *MemIndex) lookup(h uint64, t string) (uint32, bool) {
	slots := m.ids.slots
	if len(slots) == 0 {
		return 0, false
	}
	mask := uint64(len(slots) - 1)
	tag := h >> 32
	for i := h & mask; ; i = (i + 1) & mask {
		s := slots[i]
		if s == 0 {
			return 0, false
		}
		if s>>32 == tag {
			if id := uint32(s) - 1; m.terms[id].text == t {
				return id, true
			}
		}
	}
}

// insert records index id for a term whose termHash is h (not present).
func (tt *termTable) insert(h uint64, id uint32) {
	mask := uint64(len(tt.slots) - 1)
	i := h & mask
	for tt.slots[i] != 0 {
		i = (i + 1) & mask
	}
	tt.slots[i] = h>>32<<32 | uint64(id+1)
}

func (m *MemIndex) newTerm(h uint64, t string) uint32 {
	id := uint32(len(m.terms))
	if 2*(m.ids.n+1) > len(m.ids.slots) {
		m.ids.slots = make([]uint64, max(64, 2*len(m.ids.slots)))
		for i := range m.terms {
			m.ids.insert(termHash(m.terms[i].text), uint32(i))
		}
	}
	m.ids.insert(h, id)
	m.ids.n++
	if len(m.slab32) < 2*firstPostings {
		m.slab32 = make([]uint32, 2*firstPostings*slabTerms)
	}
	if len(m.slab8) < blockMetaSize {
		m.slab8 = make([]byte, blockMetaSize*slabTerms)
	}
	// Full slice expressions: an append past the room reallocates, never
	// writing into the next term's.
	docs := m.slab32[0:0:firstPostings]
	tfs := m.slab32[firstPostings : firstPostings : 2*firstPostings]
	blocks := m.slab8[0:0:blockMetaSize]
	m.slab32, m.slab8 = m.slab32[2*firstPostings:], m.slab8[blockMetaSize:]
	m.terms = append(m.terms, memTerm{text: t, docs: docs, tfs: tfs, blocks: blocks})
	return id
}

// appendPosting adds doc (above every doc of mt) with frequency tf, keeping
// the block table as Add does.
func (m *MemIndex) appendPosting(mt *memTerm, doc, tf uint32) {
	dl := le.Uint32(m.lens[4*int(doc):])
	n := len(mt.docs)
	mt.docs = append(mt.docs, doc)
	mt.tfs = append(mt.tfs, tf)
	if n%blockSize == 0 {
		mt.blocks = le.AppendUint32(mt.blocks, doc)
		mt.blocks = le.AppendUint32(mt.blocks, tf)
		mt.blocks = le.AppendUint32(mt.blocks, dl)
		return
	}
	last := len(mt.blocks) - blockMetaSize
	le.PutUint32(mt.blocks[last:], doc)
	if tf > le.Uint32(mt.blocks[last+4:]) {
		le.PutUint32(mt.blocks[last+4:], tf)
	}
	if dl < le.Uint32(mt.blocks[last+8:]) {
		le.PutUint32(mt.blocks[last+8:], dl)
	}
}

// tfAt reads the k-th term frequency of a segment posting list.
func tfAt(tfb []byte, width, k int) uint32 {
	switch width {
	case 1:
		return uint32(tfb[k])
	case 2:
		return uint32(le.Uint16(tfb[2*k:]))
	}
	return le.Uint32(tfb[4*k:])
}
