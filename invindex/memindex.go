package invindex

import (
	"math"
	"strings"
)

// MemIndex is the mutable in-memory part: the engine's head. Docs are added in
// id order and never change. Each term keeps its postings as two growable
// slices, doc ids and tfs, plus a block table maintained as docs arrive, so a
// search reads the head exactly as it reads a segment.
//
// Add must not run concurrently with anything else; searches may run
// concurrently with each other. The engine serialises Add under its write lock
// and searches under its read lock.
type MemIndex struct {
	ids      termTable // term -> index into terms
	terms    []memTerm
	lens     []byte // u32 per doc, little endian, as in a segment
	keys     [][16]byte
	totalLen int64

	// New terms take their first postings' room from these chunks: most
	// terms of a head have a few postings, which would otherwise cost three
	// small allocations each, and more as they grow.
	slab32 []uint32
	slab8  []byte
}

// Room carved for a new term: docs and tfs for firstPostings postings, and
// one block's metadata.
const (
	firstPostings = 4
	slabTerms     = 512 // terms per chunk
)

// memTerm is one term's postings in a MemIndex, 8 bytes per posting plus 12
// per block.
type memTerm struct {
	text   string
	docs   []uint32
	tfs    []uint32
	blocks []byte // same layout as a segment's block table
}

// NewMemIndex returns an empty MemIndex.
func NewMemIndex() *MemIndex {
	return &MemIndex{}
}

// Add appends a doc with its analyzed terms and returns its id: 0 for the
// first doc, then 1, 2, ... Term strings are copied, so they may point into a
// larger buffer.
func (m *MemIndex) Add(key [16]byte, terms []string) uint32 {
	if len(terms) > math.MaxUint32 {
		panic("invindex: MemIndex is full")
	}
	return m.addCounted(key, CountTerms(terms), false)
}

// NumDocs returns the number of docs added.
func (m *MemIndex) NumDocs() int { return len(m.keys) }

// NumTerms returns the number of distinct terms.
func (m *MemIndex) NumTerms() int { return len(m.terms) }

// TotalLen returns the sum of the doc lengths.
func (m *MemIndex) TotalLen() int64 { return m.totalLen }

// DocFreq returns the number of docs holding term.
func (m *MemIndex) DocFreq(term string) int {
	if id, ok := m.lookup(termHash(term), term); ok {
		return len(m.terms[id].docs)
	}
	return 0
}

// DocLen returns the number of terms doc was added with.
func (m *MemIndex) DocLen(doc uint32) uint32 { return le.Uint32(m.lens[4*int(doc):]) }

// Key returns the key doc was added with.
func (m *MemIndex) Key(doc uint32) [16]byte { return m.keys[doc] }

// MemoryBytes estimates the heap bytes the index holds (capacity of its slices,
// the term table and the term strings), for resident-memory reports.
func (m *MemIndex) MemoryBytes() int64 {
	n := int64(cap(m.lens) + 16*cap(m.keys) + cap(m.terms)*88 + 8*len(m.ids.slots))
	for i := range m.terms {
		t := &m.terms[i]
		n += int64(4*cap(t.docs) + 4*cap(t.tfs) + cap(t.blocks) + len(t.text))
	}
	return n
}

func (m *MemIndex) postings(term string) plist {
	id, ok := m.lookup(termHash(term), term)
	if !ok {
		return plist{}
	}
	t := &m.terms[id]
	return plist{df: len(t.docs), blocks: t.blocks, docs: t.docs, tfs: t.tfs}
}

func (m *MemIndex) lengths() []byte { return m.lens }

// DocTerms is one doc's analyzed terms counted: unique terms in first
// occurrence order, their frequencies, and the doc length (all occurrences).
// Counting is done apart from AddCounted so it can run in parallel, away
// from whatever serialises adds.
type DocTerms struct {
	Terms []string
	TFs   []uint32
	Len   uint32
	// hashes, when set (CountTexts sets it), holds each term's termHash,
	// so that adding the doc to a MemIndex does not hash its terms again.
	hashes []uint64
}

// CountTerms counts a doc's analyzed terms.
func CountTerms(terms []string) DocTerms {
	d := DocTerms{Len: uint32(len(terms))}
	if len(terms) == 0 {
		return d
	}
	at := make(map[string]int, len(terms))
	for _, t := range terms {
		if i, ok := at[t]; ok {
			d.TFs[i]++
			continue
		}
		at[t] = len(d.Terms)
		d.Terms = append(d.Terms, t)
		d.TFs = append(d.TFs, 1)
	}
	return d
}

// AddCounted appends a doc whose terms CountTerms or CountTexts counted and
// returns its id; the index is exactly what Add of the doc's terms would
// build. Unlike Add, it keeps the term strings of d as they are, without
// copying them (CountTexts' strings are exactly their terms, shared between
// docs, so a term added again is often the very same string and is found
// without comparing bytes): they should not point into larger buffers.
func (m *MemIndex) AddCounted(key [16]byte, d DocTerms) uint32 {
	return m.addCounted(key, d, true)
}

// addCounted is AddCounted; owned tells whether d's term strings may be
// kept (else a new term is copied).
func (m *MemIndex) addCounted(key [16]byte, d DocTerms, owned bool) uint32 {
	if len(m.keys) >= math.MaxUint32-1 {
		panic("invindex: MemIndex is full")
	}
	doc := uint32(len(m.keys))
	m.keys = append(m.keys, key)
	m.lens = le.AppendUint32(m.lens, d.Len)
	m.totalLen += int64(d.Len)
	// Terms are looked up in groups first, then their postings appended:
	// the lookups of a group are independent of each other, so the CPU
	// fetches their table slots and term records from memory at once
	// rather than one after another.
	const group = 16
	var ids [group]uint32
	for lo := 0; lo < len(d.Terms); lo += group {
		terms := d.Terms[lo:min(lo+group, len(d.Terms))]
		var hs [group]uint64
		for i, t := range terms {
			if d.hashes != nil {
				hs[i] = d.hashes[lo+i]
			} else {
				hs[i] = termHash(t)
			}
			ids[i] = noTerm
			if id, ok := m.lookup(hs[i], t); ok {
				ids[i] = id
			}
		}
		for i, t := range terms {
			id := ids[i]
			if id == noTerm { // new (no term repeats in a doc)
				if !owned {
					t = strings.Clone(t)
				}
				id = m.newTerm(hs[i], t)
			}
			m.appendPosting(&m.terms[id], doc, d.TFs[lo+i])
		}
	}
	return doc
}

// noTerm marks a term not in the index yet.
const noTerm = ^uint32(0)
