package pack

// redundancyIndex answers, for a candidate, which included span its
// shingle set is most like, without comparing it with each included span
// in turn: it keeps an inverted index from shingle hash to the included
// spans that have it, so a candidate costs one lookup per distinct shingle
// however many spans are included.
type redundancyIndex struct {
	heads hashTable // shingle hash -> 1 + index of its last posting (0: none)
	next  []int32   // posting -> 1 + index of the previous posting of the same shingle
	span  []int32   // posting -> ordinal of the included span
	sizes []int     // ordinal -> number of distinct shingles
	bloom []uint64  // one bit per low 16 bits of an indexed shingle: most lookups stop here

	seen    seenSet  // scratch: distinct shingles of the text at hand
	counts  []int32  // scratch: shared shingles per ordinal
	touched []int32  // scratch: ordinals with non-zero counts
	hashes  []uint64 // scratch: shingle hashes of the text at hand
}

// distinct returns the distinct shingle hashes of text, in a scratch slice
// that the next call overwrites.
func (x *redundancyIndex) distinct(text string) []uint64 {
	x.hashes = appendShingles(x.hashes[:0], text)
	x.seen.reset(len(x.hashes))
	out := x.hashes[:0]
	for _, h := range x.hashes {
		if x.seen.add(h) {
			out = append(out, h)
		}
	}
	x.hashes = out
	return out
}

// add indexes the included span with the given ordinal (its position in
// the pack, counting from 0 without gaps) and distinct shingles.
func (x *redundancyIndex) add(ord int, shingles []uint64) {
	if x.bloom == nil {
		x.bloom = make([]uint64, 1<<16/64)
	}
	for _, h := range shingles {
		x.bloom[h>>6&(1<<10-1)] |= 1 << (h & 63)
		slot := x.heads.slot(h)
		x.next = append(x.next, x.heads.vals[slot])
		x.span = append(x.span, int32(ord))
		x.heads.set(slot, h, int32(len(x.span)))
	}
	x.sizes = append(x.sizes, len(shingles))
	x.counts = append(x.counts, 0)
}

// mostSimilar returns the included span whose shingle set has the highest
// Jaccard similarity |A∩B| / |A∪B| with shingles (the lowest ordinal among
// equals), and that similarity; ord is -1 when none shares a shingle.
func (x *redundancyIndex) mostSimilar(shingles []uint64) (ord int, jaccard float64) {
	if x.bloom == nil {
		return -1, 0
	}
	for _, h := range shingles {
		if x.bloom[h>>6&(1<<10-1)]&(1<<(h&63)) == 0 {
			continue
		}
		for p := x.heads.get(h); p != 0; p = x.next[p-1] {
			o := x.span[p-1]
			if x.counts[o] == 0 {
				x.touched = append(x.touched, o)
			}
			x.counts[o]++
		}
	}
	ord = -1
	for _, o := range x.touched {
		k := int(x.counts[o])
		j := float64(k) / float64(len(shingles)+x.sizes[o]-k)
		if j > jaccard || j == jaccard && int(o) < ord {
			ord, jaccard = int(o), j
		}
		x.counts[o] = 0
	}
	x.touched = x.touched[:0]
	return ord, jaccard
}

// hashTable is an open-addressing hash table from non-zero uint64 keys
// (shingle hashes, remapped off 0) to int32 values.
type hashTable struct {
	keys []uint64
	vals []int32
	n    int
}

// key remaps the empty marker 0.
func key(h uint64) uint64 {
	if h == 0 {
		return 1
	}
	return h
}

// slot returns the slot of h: where it is, or where it would go (with
// value 0). It grows the table first when needed.
func (t *hashTable) slot(h uint64) int {
	if 2*(t.n+1) > len(t.keys) {
		t.grow()
	}
	h = key(h)
	mask := len(t.keys) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		if t.keys[i] == h || t.keys[i] == 0 {
			return i
		}
	}
}

// set stores v for h in its slot.
func (t *hashTable) set(slot int, h uint64, v int32) {
	if t.keys[slot] == 0 {
		t.keys[slot] = key(h)
		t.n++
	}
	t.vals[slot] = v
}

// get returns the value of h, or 0.
func (t *hashTable) get(h uint64) int32 {
	if len(t.keys) == 0 {
		return 0
	}
	h = key(h)
	mask := len(t.keys) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		switch t.keys[i] {
		case h:
			return t.vals[i]
		case 0:
			return 0
		}
	}
}

// reserve sizes the empty table for about n keys.
func (t *hashTable) reserve(n int) {
	size := 256
	for size < 2*n {
		size *= 2
	}
	t.keys, t.vals, t.n = make([]uint64, size), make([]int32, size), 0
}

func (t *hashTable) grow() {
	old, oldVals := t.keys, t.vals
	t.keys = make([]uint64, max(256, 2*len(old)))
	t.vals = make([]int32, len(t.keys))
	t.n = 0
	for i, k := range old {
		if k != 0 {
			t.set(t.slot(k), k, oldVals[i])
		}
	}
}

// seenSet is a reusable set of uint64 that empties in O(1): an entry
// counts only if stamped with the current generation.
type seenSet struct {
	keys  []uint64
	stamp []uint32
	gen   uint32
}

// reset empties the set and makes room for n keys.
func (s *seenSet) reset(n int) {
	if 2*n > len(s.keys) {
		size := 256
		for size < 2*n {
			size *= 2
		}
		s.keys, s.stamp, s.gen = make([]uint64, size), make([]uint32, size), 0
	}
	s.gen++
}

// add adds h and reports whether it was new.
func (s *seenSet) add(h uint64) bool {
	mask := len(s.keys) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		if s.stamp[i] != s.gen {
			s.keys[i], s.stamp[i] = h, s.gen
			return true
		}
		if s.keys[i] == h {
			return false
		}
	}
}
