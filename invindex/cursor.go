package invindex

import "math/bits"

// cursor walks one query term's posting list in one part, a block of up to
// 128 postings at a time. Blocks are "loaded" into docs and tfs: slices of the
// MemIndex's own arrays, or decoded from a segment's bitmap and tf array into
// the cursor's buffers. Block metadata is read without loading ("shallow"
// moves) to bound scores and skip blocks.
//
// Loading a segment block checks what the hot loops rely on: doc ids strictly
// increasing and ending at the block's last doc, which OpenSegIndex checked to
// be below the part's doc count. A block that fails marks the cursor corrupt
// and exhausted.
type cursor struct {
	pl   plist
	w    float64 // query weight × idf
	bit  uint64  // this term's bit in a doc's match mask
	row  int     // this term's row in the window's contribution matrix
	nblk int

	blk  int // loaded block, -1 before the first load
	pos  int // next posting in the loaded block
	docs []uint32
	tfs  []uint32
	done bool // no postings left

	sblk  int // shallow position: no block before it can matter any more
	ubBlk int // block whose bound ubVal holds
	ubVal float64

	corrupt bool

	// Segment decoding: container ci holds ranks [cStart, cEnd).
	ci, cStart, cEnd int

	// tfAt's forward-only position: every posting before rank lrank has a
	// doc below the last doc looked up. In segments, container lci holds
	// ranks [lcStart, lcEnd), and when it is a bitmap, its bits below lbit
	// are exactly the ranks [lcStart, lrank).
	lrank               int
	lci, lcStart, lcEnd int
	lbit                uint32
	docBuf, tfBuf       [blockSize]uint32
}

// reset points the cursor at a new posting list.
func (c *cursor) reset(pl plist, w float64, t int, window int) {
	c.pl, c.w, c.bit, c.row = pl, w, 1<<uint(t), t*window
	c.nblk = pl.numBlocks()
	c.ubBlk, c.corrupt = -1, false
	c.rewind()
}

// rewind moves the cursor back to the start of its posting list.
func (c *cursor) rewind() {
	c.blk, c.pos, c.docs, c.tfs, c.done = -1, 0, nil, nil, c.pl.df == 0 || c.corrupt
	c.sblk = 0
	c.ci, c.cStart, c.cEnd = -1, 0, 0
	c.lrank, c.lci, c.lcStart, c.lcEnd, c.lbit = 0, -1, 0, 0, 0
}

func (c *cursor) lastDoc(j int) uint32 { return le.Uint32(c.pl.blocks[blockMetaSize*j:]) }

// blockUB bounds the contribution of the term to any doc in block j.
func (c *cursor) blockUB(j int, sc *scorer) float64 {
	if j != c.ubBlk {
		m := c.pl.blocks[blockMetaSize*j:]
		c.ubBlk, c.ubVal = j, contrib(c.w, le.Uint32(m[4:]), sc.k(le.Uint32(m[8:])))
	}
	return c.ubVal
}

// next returns the cursor's next doc if the loaded block holds it.
func (c *cursor) next() (uint32, bool) {
	if c.pos < len(c.docs) {
		return c.docs[c.pos], true
	}
	return 0, false
}

// advance moves the shallow position to the first block whose last doc is
// >= lo. Windows are visited in increasing order, so cursors only move
// forward.
func (c *cursor) advance(lo uint32) {
	for c.sblk < c.nblk && c.lastDoc(c.sblk) < lo {
		c.sblk++
	}
	if c.sblk >= c.nblk {
		c.done = true
	}
}

// windowBounds sets out[w] to a bound of the term's contribution to the docs
// of window w (doc ids [w·window, (w+1)·window)), 0 when it has none there.
// A block bounds every window it may overlap. A term with fewer postings than
// there are windows is scored instead: its exact maxima cost no more than the
// walk over the windows, and its blocks would each span many windows.
// Scoring denser terms' postings here as well gave tighter bounds, but on
// real text (docs/benchmarks.md § BM25 against tantivy) they let Search skip
// under 2% of windows while the scoring took a third of its time.
func (c *cursor) windowBounds(out []float64, sc *scorer, lens []byte) {
	if c.pl.df < len(out) {
		for j := range c.nblk {
			if !c.load(j) {
				return
			}
			for i, d := range c.docs {
				v := contrib(c.w, c.tfs[i], sc.k(le.Uint32(lens[4*uint(d):])))
				out[d/window] = max(out[d/window], v)
			}
		}
		return
	}
	first := uint32(0)
	for j := range c.nblk {
		last := c.lastDoc(j)
		ub := c.blockUB(j, sc)
		for w := first / window; w <= last/window; w++ {
			out[w] = max(out[w], ub)
		}
		first = last + 1
	}
}

// docUB bounds the term's contribution to doc d, moving shallowly to the block
// that would hold it.
func (c *cursor) docUB(d uint32, sc *scorer) float64 {
	if c.done {
		return 0
	}
	if n, ok := c.next(); ok && n > d {
		return 0
	}
	for c.sblk < c.nblk && c.lastDoc(c.sblk) < d {
		c.sblk++
	}
	if c.sblk == c.nblk {
		return 0
	}
	return c.blockUB(c.sblk, sc)
}

// load makes block j the current block, positioned at its first posting.
func (c *cursor) load(j int) bool {
	c.blk, c.pos = j, 0
	if c.sblk < j {
		c.sblk = j
	}
	lo := j * blockSize
	hi := min(lo+blockSize, c.pl.df)
	if !c.pl.seg {
		c.docs, c.tfs = c.pl.docs[lo:hi], c.pl.tfs[lo:hi]
		return true
	}
	if !c.decode(j, lo, hi) {
		c.corrupt, c.done, c.docs, c.tfs = true, true, nil, nil
		return false
	}
	return true
}

// decode decodes the postings of ranks [lo, hi), block j, from a segment.
func (c *cursor) decode(j, lo, hi int) bool {
	pl := &c.pl
	var prev int64 = -1
	if j > 0 {
		prev = int64(c.lastDoc(j - 1))
	}
	out := c.docBuf[:0]
	for r := lo; r < hi; {
		for c.cEnd <= r {
			c.ci++
			if c.ci >= pl.containers {
				return false
			}
			_, card, _ := container(pl.bitmap, pl.containers, c.ci)
			c.cStart, c.cEnd = c.cEnd, c.cEnd+card
		}
		key, card, data := container(pl.bitmap, pl.containers, c.ci)
		take := min(hi, c.cEnd) - r
		if card <= arrayMaxCard {
			at := 2 * (r - c.cStart)
			if at+2*take > len(data) {
				return false
			}
			src := data[at : at+2*take]
			n := len(out)
			dst := out[n : n+take] // within docBuf: a block holds at most blockSize
			for i := range dst {
				d := key | uint32(src[2*i]) | uint32(src[2*i+1])<<8
				if int64(d) <= prev {
					return false
				}
				dst[i] = d
				prev = int64(d)
			}
			out = out[:n+take]
		} else {
			// Resume after the previous doc when it lies in this container.
			bit := 0
			if r > c.cStart {
				if prev < int64(key) {
					return false
				}
				bit = int(prev-int64(key)) + 1
			}
			wi := bit >> 6
			if wi >= bitmapBytes/8 {
				return false
			}
			w := le.Uint64(data[8*wi:]) &^ (1<<uint(bit&63) - 1)
			first := true
			for range take {
				for w == 0 {
					if wi++; wi >= bitmapBytes/8 {
						return false
					}
					w = le.Uint64(data[8*wi:])
				}
				d := key | uint32(wi<<6|bits.TrailingZeros64(w))
				w &= w - 1
				if first && int64(d) <= prev {
					return false
				}
				first = false
				out = append(out, d)
			}
			prev = int64(out[len(out)-1])
		}
		r += take
	}
	if len(out) == 0 || out[len(out)-1] != c.lastDoc(j) {
		return false
	}
	tfs := c.tfBuf[:len(out)]
	switch pl.width {
	case 1:
		b := pl.tfb[lo:hi]
		b = b[:len(tfs)] // one length check, none in the loop
		for i, x := range b {
			tfs[i] = uint32(x)
		}
	case 2:
		b := pl.tfb[2*lo : 2*hi]
		for i := range tfs {
			tfs[i] = uint32(le.Uint16(b[2*i:]))
		}
	default:
		b := pl.tfb[4*lo : 4*hi]
		for i := range tfs {
			tfs[i] = le.Uint32(b[4*i:])
		}
	}
	c.docs, c.tfs = out, tfs
	return true
}

// tfAt returns the term's tf in doc d, 0 when d does not hold it. Lookups
// must come in increasing doc order, after docUB(d) has moved the shallow
// position to the block that would hold d. They do not load blocks: they
// move a separate forward-only position by galloping search (in a MemIndex's
// docs or a segment's array container) or by counting bits (in a bitmap
// container), so a run of lookups costs about the postings it passes over,
// or the logarithm of the gaps when lookups are sparse.
func (c *cursor) tfAt(d uint32) uint32 {
	j := c.sblk
	if j >= c.nblk || c.lastDoc(j) < d {
		return 0
	}
	r0 := j * blockSize
	r1 := min(r0+blockSize, c.pl.df)
	if !c.pl.seg {
		c.lrank = max(c.lrank, r0)
		i := c.lrank + gallop32(c.pl.docs[c.lrank:r1], d)
		c.lrank = i
		if i < r1 && c.pl.docs[i] == d {
			return c.pl.tfs[i]
		}
		return 0
	}
	pl := &c.pl
	key := d &^ 0xFFFF
	for c.lci < 0 || c.lcEnd <= r0 || uint32(le.Uint16(pl.bitmap[8+4*c.lci:]))<<16 < key {
		if c.lci+1 >= pl.containers {
			return 0
		}
		c.lci++
		_, card, _ := container(pl.bitmap, pl.containers, c.lci)
		c.lcStart, c.lcEnd = c.lcEnd, c.lcEnd+card
		c.lrank, c.lbit = c.lcStart, 0
	}
	ckey, card, data := container(pl.bitmap, pl.containers, c.lci)
	if ckey != key {
		return 0
	}
	if c.lrank < r0 {
		// Jump to block j, which starts inside this container, after the
		// container's doc lastDoc(j-1).
		prev := c.lastDoc(j - 1)
		if prev < key || prev-key >= 1<<16-1 {
			return 0
		}
		c.lrank, c.lbit = r0, prev-key+1
	}
	low := d & 0xFFFF
	if card <= arrayMaxCard {
		lo, end := c.lrank-c.lcStart, min(r1, c.lcEnd)-c.lcStart
		i := lo + gallop16(data[2*lo:2*end], uint16(low))
		c.lrank = c.lcStart + i
		if i >= end || le.Uint16(data[2*i:]) != uint16(low) {
			return 0
		}
	} else {
		if c.lbit > low {
			return 0
		}
		n := 0
		for wi := c.lbit >> 6; wi <= low>>6; wi++ {
			w := le.Uint64(data[8*wi:])
			if wi == c.lbit>>6 {
				w &^= 1<<(c.lbit&63) - 1
			}
			if wi == low>>6 {
				w &= 1<<(low&63) - 1
			}
			n += bits.OnesCount64(w)
		}
		c.lrank += n
		c.lbit = low
		if data[low>>3]&(1<<(low&7)) == 0 {
			return 0
		}
	}
	r := c.lrank
	if r >= r1 {
		return 0
	}
	switch pl.width {
	case 1:
		return uint32(pl.tfb[r])
	case 2:
		return uint32(le.Uint16(pl.tfb[2*r:]))
	}
	return le.Uint32(pl.tfb[4*r:])
}

// gallop32 returns the index of the first element of docs (ascending) that
// is >= d, or len(docs): exponential steps, then binary search.
func gallop32(docs []uint32, d uint32) int {
	lo, step := 0, 1
	for lo+step < len(docs) && docs[lo+step] < d {
		lo += step
		step <<= 1
	}
	if len(docs) == 0 || docs[lo] >= d {
		return lo
	}
	hi := min(lo+step, len(docs))
	for lo++; lo < hi; {
		m := int(uint(lo+hi) >> 1)
		if docs[m] < d {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// gallop16 is gallop32 over little-endian u16 values.
func gallop16(b []byte, v uint16) int {
	n := len(b) / 2
	lo, step := 0, 1
	for lo+step < n && le.Uint16(b[2*(lo+step):]) < v {
		lo += step
		step <<= 1
	}
	if n == 0 || le.Uint16(b[2*lo:]) >= v {
		return lo
	}
	hi := min(lo+step, n)
	for lo++; lo < hi; {
		m := int(uint(lo+hi) >> 1)
		if le.Uint16(b[2*m:]) < v {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
