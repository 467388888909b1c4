package invindex

import (
	"fmt"
	"math"

	"github.com/loci-memory/loci/internal/codec"
)

// SegIndex is an immutable part read from a segment's sections. It keeps
// references into the section bytes (mapped from the file) and copies
// nothing; searches may run concurrently.
type SegIndex struct {
	n        int
	totalLen int64
	lens     []byte // u32 per doc

	nterms  int
	entries []byte // nterms × 24
	toffs   []byte // (nterms+1) × u32 into tbytes
	tbytes  []byte
	post    []byte

	keys func(doc uint32) [16]byte
}

// CorruptError reports sections that break the format.
type CorruptError struct {
	Section string // TERM_DICT, POSTINGS or DOC_LENGTHS
	Msg     string
}

func (e *CorruptError) Error() string { return "invindex: corrupt " + e.Section + ": " + e.Msg }

// Is reports a CorruptError as corruption: errors.Is(err, codec.ErrCorrupt).
func (e *CorruptError) Is(target error) bool { return target == codec.ErrCorrupt }

func corrupt(section, format string, args ...any) error {
	return &CorruptError{Section: section, Msg: fmt.Sprintf(format, args...)}
}

// OpenSegIndex opens the sections written by BuildSections or
// MemIndex.Sections without copying them: the SegIndex reads s's slices for as
// long as it is used. keys returns a doc's key (the engine reads it from its
// span table).
//
// It checks the structure of every table, which costs time proportional to
// the number of terms plus the number of posting blocks (about 1/128 of the
// postings), not to the postings themselves: the doc lengths and their sum,
// the term dictionary (sorted unique terms, offsets, sizes), each posting
// list's bitmap header and block table (last docs strictly increasing and
// below the doc count). The doc ids inside bitmaps are checked as Search
// decodes them; Verify checks everything.
func OpenSegIndex(s Sections, keys func(doc uint32) [16]byte) (*SegIndex, error) {
	x := &SegIndex{keys: keys}
	if err := x.openLengths(s.DocLengths); err != nil {
		return nil, err
	}
	if err := x.openDict(s.TermDict, s.Postings); err != nil {
		return nil, err
	}
	for i := range x.nterms {
		if _, err := x.termPostings(i); err != nil {
			return nil, err
		}
	}
	return x, nil
}

func (x *SegIndex) openLengths(b []byte) error {
	const sec = "DOC_LENGTHS"
	if len(b) < lensHeaderSize {
		return corrupt(sec, "%d bytes, shorter than the header", len(b))
	}
	if v := le.Uint32(b); v != formatVersion {
		return corrupt(sec, "unsupported version %d", v)
	}
	n := int(le.Uint32(b[4:]))
	if n == math.MaxUint32 || (len(b)-lensHeaderSize)/4 != n || (len(b)-lensHeaderSize)%4 != 0 {
		return corrupt(sec, "%d bytes for %d docs", len(b), n)
	}
	x.n, x.lens = n, b[lensHeaderSize:]
	var sum uint64
	for i := 0; i < len(x.lens); i += 4 {
		sum += uint64(le.Uint32(x.lens[i:]))
	}
	if total := le.Uint64(b[8:]); total != sum {
		return corrupt(sec, "total length %d, but the lengths sum to %d", total, sum)
	}
	x.totalLen = int64(sum)
	return nil
}

func (x *SegIndex) openDict(b, post []byte) error {
	const sec = "TERM_DICT"
	if len(b) < dictHeaderSize {
		return corrupt(sec, "%d bytes, shorter than the header", len(b))
	}
	if v := le.Uint32(b); v != formatVersion {
		return corrupt(sec, "unsupported version %d", v)
	}
	if bs := le.Uint32(b[8:]); bs != blockSize {
		return corrupt(sec, "block size %d, want %d", bs, blockSize)
	}
	if r := le.Uint32(b[12:]); r != 0 {
		return corrupt(sec, "reserved field %#x", r)
	}
	nt := int(le.Uint32(b[4:]))
	tables := dictHeaderSize + (dictEntrySize+4)*nt + 4
	if nt > (len(b)-dictHeaderSize-4)/(dictEntrySize+4) || tables > len(b) {
		return corrupt(sec, "%d bytes cannot hold %d terms", len(b), nt)
	}
	x.nterms = nt
	x.entries = b[dictHeaderSize : dictHeaderSize+dictEntrySize*nt]
	x.toffs = b[dictHeaderSize+dictEntrySize*nt : tables]
	x.tbytes = b[tables:]
	x.post = post
	if le.Uint32(x.toffs) != 0 || int(le.Uint32(x.toffs[4*nt:])) != len(x.tbytes) {
		return corrupt(sec, "term bytes do not span the rest of the section")
	}
	for i := range nt {
		lo, hi := le.Uint32(x.toffs[4*i:]), le.Uint32(x.toffs[4*i+4:])
		if hi < lo || int(hi) > len(x.tbytes) {
			return corrupt(sec, "term %d has offsets %d..%d", i, lo, hi)
		}
		if i > 0 && string(x.tbytes[le.Uint32(x.toffs[4*i-4:]):lo]) >= string(x.tbytes[lo:hi]) {
			return corrupt(sec, "term %d is not after term %d", i, i-1)
		}
	}
	if nt == 0 && len(post) != 0 {
		return corrupt("POSTINGS", "%d bytes for no terms", len(post))
	}
	return nil
}

// term returns the bytes of term i.
func (x *SegIndex) term(i int) []byte {
	return x.tbytes[le.Uint32(x.toffs[4*i:]):le.Uint32(x.toffs[4*i+4:])]
}

// find returns the index of term, or -1.
func (x *SegIndex) find(term string) int {
	lo, hi := 0, x.nterms
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if string(x.term(m)) < term {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < x.nterms && string(x.term(lo)) == term {
		return lo
	}
	return -1
}

// termPostings returns the checked posting list of term i.
func (x *SegIndex) termPostings(i int) (plist, error) {
	const sec = "POSTINGS"
	e := x.entries[dictEntrySize*i:]
	start := le.Uint64(e)
	end := uint64(len(x.post))
	if i+1 < x.nterms {
		end = le.Uint64(x.entries[dictEntrySize*(i+1):])
	}
	df, bmLen, maxTf, width := int(le.Uint32(e[8:])), int(le.Uint32(e[12:])), le.Uint32(e[16:]), int(e[20])
	if i == 0 && start != 0 || start%8 != 0 || end < start || end > uint64(len(x.post)) {
		return plist{}, corrupt(sec, "term %d spans [%d, %d) of %d bytes", i, start, end, len(x.post))
	}
	if e[21]|e[22]|e[23] != 0 {
		return plist{}, corrupt("TERM_DICT", "term %d has reserved bytes set", i)
	}
	if df < 1 || df > x.n || maxTf < 1 || width != tfWidth(maxTf) {
		return plist{}, corrupt("TERM_DICT", "term %d has df %d (of %d docs), max tf %d, tf width %d", i, df, x.n, maxTf, width)
	}
	blocksAt, tfsAt, size := postingsLayout(bmLen, df, width)
	if uint64(size) != end-start {
		return plist{}, corrupt(sec, "term %d has %d bytes, want %d", i, end-start, size)
	}
	b := x.post[start:end]
	for _, p := range b[bmLen:blocksAt] {
		if p != 0 {
			return plist{}, corrupt(sec, "term %d: non-zero padding", i)
		}
	}
	for _, p := range b[tfsAt+df*width:] {
		if p != 0 {
			return plist{}, corrupt(sec, "term %d: non-zero padding", i)
		}
	}
	containers, err := checkBitmap(b[:bmLen], df, uint32(x.n))
	if err != nil {
		return plist{}, corrupt(sec, "term %d: %v", i, err)
	}
	pl := plist{df: df, blocks: b[blocksAt:tfsAt], seg: true, bitmap: b[:bmLen],
		containers: containers, tfb: b[tfsAt : tfsAt+df*width], width: width}
	var prev int64 = -1
	var seen uint32
	for j := 0; j < len(pl.blocks); j += blockMetaSize {
		last, mtf, mdl := le.Uint32(pl.blocks[j:]), le.Uint32(pl.blocks[j+4:]), le.Uint32(pl.blocks[j+8:])
		if int64(last) <= prev || int(last) >= x.n || mtf < 1 || mtf > maxTf || mdl < 1 {
			return plist{}, corrupt(sec, "term %d block %d: last doc %d (after %d), max tf %d, min length %d",
				i, j/blockMetaSize, last, prev, mtf, mdl)
		}
		prev, seen = int64(last), max(seen, mtf)
	}
	if seen != maxTf {
		return plist{}, corrupt(sec, "term %d: blocks reach tf %d, dictionary says %d", i, seen, maxTf)
	}
	return pl, nil
}

// NumDocs returns the number of docs in the part.
func (x *SegIndex) NumDocs() int { return x.n }

// NumTerms returns the number of distinct terms.
func (x *SegIndex) NumTerms() int { return x.nterms }

// TotalLen returns the sum of the doc lengths.
func (x *SegIndex) TotalLen() int64 { return x.totalLen }

// DocFreq returns the number of docs holding term.
func (x *SegIndex) DocFreq(term string) int {
	if i := x.find(term); i >= 0 {
		return int(le.Uint32(x.entries[dictEntrySize*i+8:]))
	}
	return 0
}

// DocLen returns the length of doc in terms.
func (x *SegIndex) DocLen(doc uint32) uint32 { return le.Uint32(x.lens[4*int(doc):]) }

// Key returns the key of doc.
func (x *SegIndex) Key(doc uint32) [16]byte { return x.keys(doc) }

func (x *SegIndex) postings(term string) plist {
	i := x.find(term)
	if i < 0 {
		return plist{}
	}
	return x.plist(i)
}

// plist returns the posting list of term i without checking it again:
// OpenSegIndex did, and the bytes do not change.
func (x *SegIndex) plist(i int) plist {
	e := x.entries[dictEntrySize*i:]
	start := le.Uint64(e)
	df, bmLen, width := int(le.Uint32(e[8:])), int(le.Uint32(e[12:])), int(e[20])
	blocksAt, tfsAt, _ := postingsLayout(bmLen, df, width)
	b := x.post[start:]
	return plist{df: df, blocks: b[blocksAt:tfsAt], seg: true, bitmap: b[:bmLen],
		containers: int(le.Uint32(b[4:])), tfb: b[tfsAt : tfsAt+df*width], width: width}
}

func (x *SegIndex) lengths() []byte { return x.lens }

// Verify checks everything OpenSegIndex leaves to search time: every posting
// list decodes, its block metadata is exact (last doc, max tf, min length),
// every tf is at least 1 and at most its doc's length, and each doc's tfs sum
// to its length.
func (x *SegIndex) Verify() error {
	const sec = "POSTINGS"
	sum := make([]uint64, x.n)
	var c cursor
	for i := range x.nterms {
		pl, err := x.termPostings(i)
		if err != nil {
			return err
		}
		c.reset(pl, 0, 0, 0)
		for j := range c.nblk {
			if !c.load(j) {
				return corrupt(sec, "term %q: block %d does not decode", x.term(i), j)
			}
			var mtf uint32
			mdl := uint32(math.MaxUint32)
			for k, d := range c.docs {
				tf, dl := c.tfs[k], x.DocLen(d)
				if tf < 1 || tf > dl {
					return corrupt(sec, "term %q: doc %d has tf %d and length %d", x.term(i), d, tf, dl)
				}
				sum[d] += uint64(tf)
				mtf, mdl = max(mtf, tf), min(mdl, dl)
			}
			m := pl.blocks[blockMetaSize*j:]
			if le.Uint32(m[4:]) != mtf || le.Uint32(m[8:]) != mdl {
				return corrupt(sec, "term %q block %d: metadata says max tf %d and min length %d, postings have %d and %d",
					x.term(i), j, le.Uint32(m[4:]), le.Uint32(m[8:]), mtf, mdl)
			}
		}
	}
	for d, s := range sum {
		if dl := uint64(x.DocLen(uint32(d))); s != dl {
			return corrupt(sec, "doc %d has length %d, but its terms' tfs sum to %d", d, dl, s)
		}
	}
	return nil
}
