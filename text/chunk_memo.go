package text

import (
	"math"
	"sort"
	"sync"
	"unicode/utf8"
)

// When chunking with a BPE, every sentence of a long text is counted, and
// then every chunk of several sentences is counted again as a whole (its
// exact count is not the sum of its sentences'). The second count cuts the
// chunk into the same pieces as the first, except near the sentence
// boundaries. A piece's token count depends on its bytes alone, so the
// chunker remembers the pieces of the sentence counts by their byte ranges
// in the text, and the chunk counts take the count of every piece with the
// same range from there, merging only the pieces that differ. The pieces are
// still cut anew, so every count is exactly BPE.Count's.

// pieceMemo holds the pieces of one text met while counting its sentences,
// in increasing order of start.
type pieceMemo struct {
	pieces []memoPiece
}

type memoPiece struct {
	start, end, tokens uint32
}

var memoPool = sync.Pool{New: func() any { return new(pieceMemo) }}

// countMemo returns b.Count(text[lo:hi]). With record, the pieces are added
// to m (text[lo:hi] must start at or after every piece m holds); without,
// pieces m holds give their counts.
func (b *BPE) countMemo(text string, lo, hi int, m *pieceMemo, record bool) int {
	s := text[lo:hi]
	if !utf8.ValidString(s) || hi > math.MaxUint32 {
		return b.Count(s)
	}
	t := b.table
	var (
		sc  *mergeScratch
		buf [smallMerge]uint32
	)
	j := 0
	if !record {
		j = sort.Search(len(m.pieces), func(k int) bool { return m.pieces[k].start >= uint32(lo) })
	}
	n := 0
	for i := 0; i < len(s); {
		end := b.split(s, i)
		piece := s[i:end]
		start, stop := uint32(lo+i), uint32(lo+end)
		i = end
		if !record {
			for j < len(m.pieces) && m.pieces[j].start < start {
				j++
			}
			if j < len(m.pieces) && m.pieces[j].start == start && m.pieces[j].end == stop {
				n += int(m.pieces[j].tokens)
				continue
			}
		}
		var k int
		switch {
		case t.rank(piece) != noRank:
			k = 1
		case len(piece) <= smallMerge:
			k = len(t.mergeSmall(piece, &buf))
		default:
			if sc == nil {
				sc = scratchPool.Get().(*mergeScratch)
			}
			k = len(t.mergeLarge(piece, sc))
		}
		if record {
			m.pieces = append(m.pieces, memoPiece{start, stop, uint32(k)})
		}
		n += k
	}
	if sc != nil {
		scratchPool.Put(sc)
	}
	return n
}
