package invindex

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Sections are the bytes of an immutable part, stored by the segment package
// as one workspace's TERM_DICT, POSTINGS and DOC_LENGTHS sections. The layout
// is specified in docs/format/invindex.md.
type Sections struct {
	TermDict, Postings, DocLengths []byte
}

// Layout constants of the sections.
const (
	formatVersion   = 1
	dictHeaderSize  = 16
	dictEntrySize   = 24
	lensHeaderSize  = 16
	maxSectionBytes = math.MaxInt64 / 2
)

// postingsLayout returns the offsets, relative to a term's start, of its block
// table and tfs, and the term's total size in Postings.
func postingsLayout(bitmapLen, df, width int) (blocks, tfs, size int) {
	blocks = (bitmapLen + 3) &^ 3
	tfs = blocks + blockMetaSize*((df+blockSize-1)/blockSize)
	size = (tfs + df*width + 7) &^ 7
	return blocks, tfs, size
}

// tfWidth is the number of bytes that store every tf up to maxTf.
func tfWidth(maxTf uint32) int {
	switch {
	case maxTf <= math.MaxUint8:
		return 1
	case maxTf <= math.MaxUint16:
		return 2
	}
	return 4
}

// BuildSections builds the sections of an immutable part holding docs in id
// order: doc i has key keys[i] (kept by the engine's span table, not in the
// sections) and analyzed terms terms[i]. It indexes the docs in a MemIndex
// and freezes it, so the bytes equal those of MemIndex.Sections.
func BuildSections(keys [][16]byte, terms [][]string) (Sections, error) {
	if len(keys) != len(terms) {
		return Sections{}, fmt.Errorf("invindex: %d keys for %d docs", len(keys), len(terms))
	}
	m := NewMemIndex()
	for i := range terms {
		m.Add(keys[i], terms[i])
	}
	return m.Sections()
}

// Sections freezes the index into the bytes of an immutable part.
func (m *MemIndex) Sections() (Sections, error) {
	order := make([]uint32, len(m.terms))
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortFunc(order, func(a, b uint32) int { return strings.Compare(m.terms[a].text, m.terms[b].text) })

	termBytes, postBytes := 0, 0
	for _, id := range order {
		t := &m.terms[id]
		_, _, size := postingsLayout(bitmapSize(t.docs), len(t.docs), tfWidth(t.maxTf()))
		termBytes += len(t.text)
		postBytes += size
	}
	if termBytes > math.MaxUint32 || postBytes > maxSectionBytes {
		return Sections{}, errors.New("invindex: part too large for the section format")
	}

	nt := len(order)
	dict := make([]byte, dictHeaderSize+dictEntrySize*nt+4*(nt+1), dictHeaderSize+dictEntrySize*nt+4*(nt+1)+termBytes)
	le.PutUint32(dict, formatVersion)
	le.PutUint32(dict[4:], uint32(nt))
	le.PutUint32(dict[8:], blockSize)
	post := make([]byte, 0, postBytes)
	offs := dict[dictHeaderSize+dictEntrySize*nt:]
	for i, id := range order {
		t := &m.terms[id]
		maxTf := t.maxTf()
		width := tfWidth(maxTf)
		start := len(post)
		post = appendBitmap(post, t.docs)
		bmLen := len(post) - start
		if bmLen > math.MaxUint32 {
			return Sections{}, errors.New("invindex: posting list too large for the section format")
		}
		blocksAt, _, size := postingsLayout(bmLen, len(t.docs), width)
		post = append(post, make([]byte, start+blocksAt-len(post))...)
		post = append(post, t.blocks...)
		for _, tf := range t.tfs {
			switch width {
			case 1:
				post = append(post, byte(tf))
			case 2:
				post = le.AppendUint16(post, uint16(tf))
			default:
				post = le.AppendUint32(post, tf)
			}
		}
		post = append(post, make([]byte, start+size-len(post))...)

		e := dict[dictHeaderSize+dictEntrySize*i:]
		le.PutUint64(e, uint64(start))
		le.PutUint32(e[8:], uint32(len(t.docs)))
		le.PutUint32(e[12:], uint32(bmLen))
		le.PutUint32(e[16:], maxTf)
		e[20] = byte(width)
		le.PutUint32(offs[4*(i+1):], le.Uint32(offs[4*i:])+uint32(len(t.text)))
		dict = append(dict, t.text...)
	}

	lens := make([]byte, lensHeaderSize, lensHeaderSize+len(m.lens))
	le.PutUint32(lens, formatVersion)
	le.PutUint32(lens[4:], uint32(len(m.keys)))
	le.PutUint64(lens[8:], uint64(m.totalLen))
	lens = append(lens, m.lens...)
	return Sections{TermDict: dict, Postings: post, DocLengths: lens}, nil
}

// maxTf returns the term's largest tf, from its block table.
func (t *memTerm) maxTf() uint32 {
	var m uint32
	for j := 0; j < len(t.blocks); j += blockMetaSize {
		m = max(m, le.Uint32(t.blocks[j+4:]))
	}
	return m
}
