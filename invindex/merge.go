package invindex

import (
	"fmt"
	"strings"

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
		it := bm.Iterator()
		for k := 0; it.HasNext(); k++ {
			doc := it.Next()
			if doc >= n {
				return &CorruptError{Section: "POSTINGS", Msg: fmt.Sprintf("term %d: doc %d out of range", i, doc)}
			}
			if newID[doc] == dropped {
				continue
			}
			if mt == nil {
				mt = m.termFor(string(x.term(i)))
			}
			m.appendPosting(mt, newID[doc], tfAt(pl.tfb, pl.width, k))
		}
	}
	return nil
}

// termFor returns term t's postings, creating them.
func (m *MemIndex) termFor(t string) *memTerm {
	id, ok := m.ids[t]
	if !ok {
		t = strings.Clone(t)
		id = uint32(len(m.terms))
		m.ids[t] = id
		m.terms = append(m.terms, memTerm{text: t})
	}
	return &m.terms[id]
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
