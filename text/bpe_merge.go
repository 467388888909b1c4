package text

import "sync"

// Byte-pair merging of one pre-tokenized piece that is not itself a token.
//
// The result is defined by tiktoken's procedure: start from single bytes;
// while some adjacent pair of parts joins into a token, join the pair whose
// token has the lowest rank, the leftmost such pair on ties. Two
// implementations give that result: mergeSmall rescans all pairs after each
// join, which is quickest for the short pieces of ordinary text, and
// mergeLarge keeps the pairs in a min-heap ordered by (rank, position) with
// a linked list of parts, so that long pieces (a run of 10,000 "a", base64,
// CJK text without punctuation) cost O(n log n) rather than O(n²). After a
// join only the two pairs that touch the new part change, and only they are
// looked up again.

// smallMerge is the longest piece, in bytes, merged by mergeSmall.
const smallMerge = 32

// pairRankOf returns the rank of the token s (two adjacent parts joined), or
// noRank.
func (t *rankTable) pairRankOf(s string) uint32 {
	if len(s) == 2 {
		return t.pairRank[int(s[0])<<8|int(s[1])]
	}
	return t.rank(s)
}

// mergeSmall merges piece (2 to smallMerge bytes) and returns its tokens,
// stored in buf.
func (t *rankTable) mergeSmall(piece string, buf *[smallMerge]uint32) []uint32 {
	var (
		pos [smallMerge + 1]uint8 // part i is piece[pos[i]:pos[i+1]]
		rk  [smallMerge]uint32    // rank of parts i and i+1 joined
	)
	tok := buf[:len(piece)]
	m := len(piece)
	for i := range m {
		pos[i] = uint8(i)
		tok[i] = t.byteRank[piece[i]]
	}
	pos[m] = uint8(m)
	for i := range m - 1 {
		rk[i] = t.pairRank[int(piece[i])<<8|int(piece[i+1])]
	}
	for m > 1 {
		best, at := noRank, -1
		for i, r := range rk[:m-1] {
			if r < best {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		tok[at] = best
		copy(pos[at+1:m], pos[at+2:m+1])
		copy(tok[at+1:m-1], tok[at+2:m])
		if at+2 < m-1 {
			copy(rk[at+1:m-2], rk[at+2:m-1])
		}
		m--
		if at+1 < m {
			rk[at] = t.pairRankOf(piece[pos[at]:pos[at+2]])
		}
		if at > 0 {
			rk[at-1] = t.pairRankOf(piece[pos[at-1]:pos[at+1]])
		}
	}
	return tok[:m]
}

// mergeScratch holds the working arrays of mergeLarge, reused through
// scratchPool so that merging allocates nothing in steady state.
type mergeScratch struct {
	next, prev []int32  // linked list of parts, indexed by start byte
	rk, tok    []uint32 // pair rank and token of the part starting there
	heap       []uint64 // rank<<32 | start, a min-heap
	out        []uint32
}

var scratchPool = sync.Pool{New: func() any { return new(mergeScratch) }}

// mergeLarge merges piece (at least 2 bytes) and returns its tokens, stored
// in sc.out.
func (t *rankTable) mergeLarge(piece string, sc *mergeScratch) []uint32 {
	n := len(piece)
	if cap(sc.next) < n {
		sc.next = make([]int32, n)
		sc.prev = make([]int32, n)
		sc.rk = make([]uint32, n)
		sc.tok = make([]uint32, n)
	}
	next, prev, rk, tok := sc.next[:n], sc.prev[:n], sc.rk[:n], sc.tok[:n]
	h := sc.heap[:0]
	for i := range n {
		next[i], prev[i] = int32(i+1), int32(i-1)
		tok[i] = t.byteRank[piece[i]]
		rk[i] = noRank
		if i+1 < n {
			if r := t.pairRank[int(piece[i])<<8|int(piece[i+1])]; r != noRank {
				rk[i] = r
				h = append(h, uint64(r)<<32|uint64(i))
			}
		}
	}
	heapInit(h)
	for len(h) > 0 {
		e := h[0]
		h = heapPop(h)
		r, p := uint32(e>>32), int32(e)
		if rk[p] != r {
			continue // stale: the part was joined, or its right neighbour changed
		}
		q := next[p]
		nq := next[q]
		next[p] = nq
		if int(nq) < n {
			prev[nq] = p
		}
		tok[p], rk[q] = r, noRank
		rk[p] = noRank
		if int(nq) < n {
			if r := t.pairRankOf(piece[p:next[nq]]); r != noRank {
				rk[p] = r
				h = heapPush(h, uint64(r)<<32|uint64(p))
			}
		}
		if p > 0 {
			pp := prev[p]
			rk[pp] = t.pairRankOf(piece[pp:nq])
			if rk[pp] != noRank {
				h = heapPush(h, uint64(rk[pp])<<32|uint64(pp))
			}
		}
	}
	sc.heap = h
	out := sc.out[:0]
	for p := int32(0); int(p) < n; p = next[p] {
		out = append(out, tok[p])
	}
	sc.out = out
	return out
}

// heapInit orders h as a min-heap.
func heapInit(h []uint64) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		heapDown(h, i)
	}
}

// heapPush adds x to the min-heap h.
func heapPush(h []uint64, x uint64) []uint64 {
	h = append(h, x)
	i := len(h) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if h[parent] <= x {
			break
		}
		h[i] = h[parent]
		i = parent
	}
	h[i] = x
	return h
}

// heapPop removes the least element, h[0], from the min-heap h.
func heapPop(h []uint64) []uint64 {
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	if last > 0 {
		heapDown(h, 0)
	}
	return h
}

func heapDown(h []uint64, i int) {
	x := h[i]
	for {
		c := 2*i + 1
		if c >= len(h) {
			break
		}
		if c+1 < len(h) && h[c+1] < h[c] {
			c++
		}
		if x <= h[c] {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = x
}
