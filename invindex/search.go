package invindex

import (
	"math"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"
)

// window is the number of doc ids Search scores at a time (a power of two).
const window = 1024

// cutSlack widens every pruning test so that rounding in a bound (computed
// with other float operations, or summed in another order, than the score it
// bounds) can never prune a doc that belongs in the results. Bounds and scores
// differ by a few ulps; the slack is a millionfold larger.
const cutSlack = 1e-9

// Search returns the top k docs over all parts by BM25, best first (score
// descending, then Key ascending). Collection statistics (doc count, average
// length, document frequencies) are those of all parts together, so a doc's
// score does not depend on which part holds it.
//
// Query terms with a weight that is not positive and finite, and terms no
// part holds, are ignored. A term listed twice counts twice.
//
// The result is exactly that of SearchExhaustive, scores included: pruning
// only skips docs that provably cannot enter the top k. Search scores each
// part in windows of 1024 doc ids with block-max MaxScore. It first bounds
// each term in each window: the largest bound of the term's blocks that
// overlap the window (w·maxTf/(maxTf + K(minDl)) from the block's metadata,
// valid for any collection statistics), or for a term with fewer postings
// than the part has windows the exact maximum of its contributions there.
// Then, window by window in doc order:
//
//   - a window whose bounds sum below the k-th best score so far (the cut) is
//     skipped without decoding anything;
//   - otherwise the terms whose bounds together stay below the cut are
//     non-essential (no doc matching only them can make the top k); the
//     others' postings are scored term at a time into the window;
//   - each doc they matched is completed from the non-essential terms, in
//     order of decreasing bound, by looking it up in their posting lists
//     (without decoding blocks), and dropped as soon as its partial score plus
//     the remaining bounds falls below the cut.
//
// When the essential terms hold so many postings that looking each candidate
// up would cost more than scoring the non-essential terms' postings, the
// window scores every term instead. A window whose terms are all essential
// keeps only each doc's sum; when they hold many postings, it does not even
// mark which docs matched, and reads every sum of the window instead
// (scoreDense). A doc's score is summed in query-term
// order, the same float operations SearchExhaustive performs, and every
// pruning test keeps a relative slack of 1e-9 so that rounding never drops a
// doc that belongs in the result.
//
// A part whose query terms hold many postings is split among searchers on
// other goroutines, which share the pruning cut (see splitPostings); the
// result is the same.
//
// Queries of more than 64 scoring terms and BM25 parameters outside k1 >= 0,
// 0 <= b <= 1 are scored exhaustively. Search returns nil when a segment part
// turns out corrupt (SegIndex.Verify reports how).
func Search(parts []Part, query []Term, k int, p BM25) []Hit {
	return search(parts, nil, query, k, p, false)
}

// SearchFiltered is Search restricted to the docs of parts[i] in filters[i].
// A nil filter, or a missing one when filters is shorter than parts, does not
// restrict its part.
func SearchFiltered(parts []Part, filters []*roaring.Bitmap, query []Term, k int, p BM25) []Hit {
	return search(parts, filters, query, k, p, false)
}

// SearchExhaustive scores every doc holding a query term and returns the top
// k, ordered as Search. It is the reference Search is tested against.
func SearchExhaustive(parts []Part, query []Term, k int, p BM25) []Hit {
	return search(parts, nil, query, k, p, true)
}

// searcher holds one query's working memory; searchers are pooled so a query
// allocates only its result.
type searcher struct {
	sc      scorer
	lists   []plist   // lists[t*len(parts)+part]
	ws      []float64 // weight × idf of each scoring term
	cursors []cursor
	cur     []*cursor // the current part's cursors, in query-term order
	wb      []float64 // wb[c*nw+w]: bound of cursor c in window w
	wsum    []float64 // wsum[w]: sum of the bounds of window w
	wub     []float64 // window bound of each cursor
	ord     []int     // cursors by increasing window bound
	pre     []float64 // pre[i]: sum of the i smallest window bounds
	top     topK
	cut     float64    // prune below this: the k-th best score less the slack
	shared  *sharedCut // when the part is split among searchers (scoreSplit)
	chunks  *atomic.Int64
	sink    byte // what warm read, so that the reads are not elided
	corrupt bool

	// The current window: per doc offset, its match mask (bit t: term t
	// scored), the sum of its essential contributions, and whether any term
	// matched it; per term and offset, the contribution.
	mask    [window]uint64
	acc     [window]float64
	touched [window / 64]uint64
	contrib []float64 // term t's row starts at t*window

	// Exhaustive scoring: per doc of the part, its score and whether seen.
	exAcc  []float64
	exSeen []uint64
}

var searchers = sync.Pool{New: func() any { return new(searcher) }}

func search(parts []Part, filters []*roaring.Bitmap, query []Term, k int, p BM25, exhaustive bool) []Hit {
	if k <= 0 || len(parts) == 0 || len(query) == 0 {
		return nil
	}
	n, total := Stats(parts)
	if n == 0 {
		return nil
	}
	searching.Add(1)
	defer searching.Add(-1)
	s := searchers.Get().(*searcher)
	defer s.release()

	s.lists, s.ws = s.lists[:0], s.ws[:0]
	for _, t := range query {
		if !(t.Weight > 0) || math.IsInf(t.Weight, 1) {
			continue
		}
		base, df := len(s.lists), 0
		for _, part := range parts {
			pl := part.postings(t.Text)
			s.lists = append(s.lists, pl)
			df += pl.df
		}
		if df == 0 {
			s.lists = s.lists[:base]
			continue
		}
		s.ws = append(s.ws, t.Weight*idf(n, int64(df)))
	}
	nt := len(s.ws)
	if nt == 0 {
		return nil
	}
	s.sc = newScorer(p, float64(total)/float64(n))
	s.top.reset(k, parts)
	s.cut = math.Inf(-1)
	exhaustive = exhaustive || nt > 64 || !p.pruneSafe()
	if len(s.cursors) < nt {
		s.cursors = make([]cursor, nt)
	}
	if !exhaustive && len(s.contrib) < nt*window {
		s.contrib = make([]float64, nt*window)
	}
	for pi, part := range parts {
		s.cur = s.cur[:0]
		for t := range nt {
			if pl := s.lists[t*len(parts)+pi]; pl.df > 0 {
				c := &s.cursors[len(s.cur)]
				c.reset(pl, s.ws[t], t, window)
				s.cur = append(s.cur, c)
			}
		}
		if len(s.cur) == 0 {
			continue
		}
		var f *roaring.Bitmap
		if pi < len(filters) {
			f = filters[pi]
		}
		switch {
		case exhaustive:
			s.scoreAll(pi, part, f)
		case s.splits(part):
			s.scoreSplit(pi, part, f)
		default:
			s.scorePruned(pi, part, f)
		}
		if s.corrupt {
			return nil
		}
	}
	return s.top.hits()
}

// release returns the searcher to the pool without references to parts.
func (s *searcher) release() {
	if s.corrupt {
		clear(s.mask[:])
		clear(s.acc[:])
		clear(s.touched[:])
		clear(s.exAcc)
		clear(s.exSeen)
		s.corrupt = false
	}
	clear(s.lists)
	for i := range s.cursors {
		s.cursors[i].pl = plist{}
		s.cursors[i].docs, s.cursors[i].tfs = nil, nil
	}
	clear(s.cur)
	s.top.reset(0, nil)
	if cap(s.top.ties) > maxKeptTies {
		s.top.ties = nil // a query of many ties does not pin its list in the pool
	}
	searchers.Put(s)
}

// offer hands a scored doc to the top k and raises the pruning cut.
func (s *searcher) offer(score float64, pi int, d uint32) {
	if s.top.offer(score, pi, d) && s.top.full() {
		m := s.top.min()
		s.cut = max(s.cut, m-math.Abs(m)*cutSlack)
		if s.shared != nil {
			s.shared.raise(s.cut)
		}
	}
}

// scorePruned scores one part window by window with block-max MaxScore.
// It first bounds every term in every window; a window whose bounds sum below
// the cut is skipped without decoding anything.
func (s *searcher) scorePruned(pi int, part Part, f *roaring.Bitmap) {
	nw := s.bound(part)
	if !s.corrupt {
		s.scoreWindows(pi, part, f, 0, nw)
	}
}

// bound sets every cursor's bound in every window of part (s.wb) and their
// sums (s.wsum), and returns the number of windows.
func (s *searcher) bound(part Part) int {
	lens := part.lengths()
	n := uint32(part.NumDocs())
	nc := len(s.cur)
	nw := int((uint64(n) + window - 1) / window)
	s.wb = grow(s.wb, nc*nw)
	clear(s.wb)
	s.wsum = grow(s.wsum, nw)
	clear(s.wsum)
	for i, c := range s.cur {
		wb := s.wb[i*nw : (i+1)*nw]
		c.windowBounds(wb, &s.sc, lens)
		if c.corrupt {
			s.corrupt = true
			return nw
		}
		for w, b := range wb {
			s.wsum[w] += b
		}
		c.rewind() // windowBounds may have loaded blocks
	}
	return nw
}

// scoreWindows scores the windows [from, to) of part, whose bounds s.wb and
// s.wsum hold (nw windows in all). With s.chunks set it scores the chunks
// of splitChunk windows it takes from that counter instead, until none is
// left, and it raises its cut to the shared one before each window.
func (s *searcher) scoreWindows(pi int, part Part, f *roaring.Bitmap, from, to int) {
	lens := part.lengths()
	n := uint32(part.NumDocs())
	nc := len(s.cur)
	nw := int((uint64(n) + window - 1) / window)
	s.wub, s.ord, s.pre = grow(s.wub, nc), grow(s.ord, nc), grow(s.pre, nc+1)
	if s.chunks != nil {
		from, to = 0, 0
	}
	for w := from; ; w++ {
		if w >= to {
			if s.chunks == nil {
				return
			}
			from = int(s.chunks.Add(1)-1) * splitChunk
			if from >= nw {
				return
			}
			w, to = from, min(from+splitChunk, nw)
		}
		if s.shared != nil {
			s.cut = max(s.cut, s.shared.load())
		}
		if s.wsum[w] < s.cut {
			continue
		}
		lo := uint32(w) * window
		hi := uint32(min(uint64(lo)+window, uint64(n)))
		for i, c := range s.cur {
			s.wub[i] = s.wb[i*nw+w]
			c.advance(lo)
		}
		ne := s.partition(nc, hi-lo, n)
		s.warm(lens, lo, hi)
		// Essential terms in query-term order, so that a doc no
		// non-essential term matches has its exact score in acc.
		var neMask uint64
		for _, i := range s.ord[:ne] {
			neMask |= s.cur[i].bit
		}
		mode := scoreRecord
		if neMask == 0 {
			mode = scoreSum
			if s.dense(n) {
				mode = scoreDense
			}
		}
		for _, c := range s.cur {
			if c.bit&neMask == 0 {
				s.scoreWindow(c, lo, hi, lens, mode)
			}
		}
		if mode == scoreDense {
			s.offerDense(pi, f, lo, hi)
		} else {
			s.candidates(pi, f, lo, s.ord[:ne], neMask, lens)
		}
		for _, c := range s.cur {
			if c.corrupt {
				s.corrupt = true
				return
			}
		}
	}
}

// Splitting a part among searchers. A part whose query terms hold at least
// splitPostings postings is scored by up to splitWorkers searchers at once
// (this one and pooled ones on other goroutines), each taking chunks of
// splitChunk windows in increasing order from a shared counter and keeping
// its own top k; they share the highest cut any of them reached
// (sharedCut), which is safe to prune by: a searcher's k-th best score is
// never above the k-th best of all. At the end the others' kept hits (the
// heap and the ties) are offered to this searcher's top k, which then holds
// what one searcher would have: Search's result does not depend on the
// split, which the tests check against SearchExhaustive.
// Variables so that tests can force a split of small parts.
var (
	splitPostings = 1 << 17
	splitWorkers  = min(runtime.GOMAXPROCS(0), 4)
	splitChunk    = 16 // windows a split searcher takes at a time
)

// searching counts the searches running in the process: a part is split
// only when no other search runs, since under concurrent queries every core
// already has one, and splitting cost 6% of the throughput of 8 concurrent
// searches at 1M spans (docs/benchmarks.md).
var searching atomic.Int64

// splits reports whether part is scored by scoreSplit.
func (s *searcher) splits(part Part) bool {
	if splitWorkers < 2 || part.NumDocs() <= splitChunk*window || searching.Load() > 1 {
		return false
	}
	postings := 0
	for _, c := range s.cur {
		postings += c.pl.df
	}
	return postings >= splitPostings
}

// sharedCut is the highest pruning cut the searchers of a split reached,
// as float64 bits (cuts only rise).
type sharedCut struct{ bits atomic.Uint64 }

func (c *sharedCut) load() float64 { return math.Float64frombits(c.bits.Load()) }

func (c *sharedCut) raise(v float64) {
	for {
		old := c.bits.Load()
		if !(v > math.Float64frombits(old)) || c.bits.CompareAndSwap(old, math.Float64bits(v)) {
			return
		}
	}
}

// scoreSplit is scorePruned with the part's windows split among searchers
// (see splitPostings).
func (s *searcher) scoreSplit(pi int, part Part, f *roaring.Bitmap) {
	s.bound(part)
	if s.corrupt {
		return
	}
	var shared sharedCut
	shared.bits.Store(math.Float64bits(s.cut))
	var chunks atomic.Int64
	helpers := make([]*searcher, splitWorkers-1)
	var wg sync.WaitGroup
	for i := range helpers {
		h := searchers.Get().(*searcher)
		helpers[i] = h
		h.sc, h.wb, h.wsum = s.sc, s.wb, s.wsum
		h.top.reset(s.top.k, s.top.parts)
		h.cut, h.shared, h.chunks = s.cut, &shared, &chunks
		if len(h.cursors) < len(s.cur) {
			h.cursors = make([]cursor, len(s.cur))
		}
		h.contrib = grow(h.contrib, len(s.contrib))
		h.cur = h.cur[:0]
		for j, c := range s.cur {
			hc := &h.cursors[j]
			hc.reset(c.pl, c.w, bits.TrailingZeros64(c.bit), window)
			h.cur = append(h.cur, hc)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.scoreWindows(pi, part, f, 0, 0)
		}()
	}
	s.shared, s.chunks = &shared, &chunks
	s.scoreWindows(pi, part, f, 0, 0)
	wg.Wait()
	s.shared, s.chunks = nil, nil
	for _, h := range helpers {
		s.corrupt = s.corrupt || h.corrupt
		for _, e := range h.top.h {
			s.offer(e.score, int(e.part), e.doc)
		}
		if len(h.top.h) > 0 {
			least := h.top.min()
			for _, t := range h.top.ties {
				s.offer(least, int(t.part), t.doc)
			}
		}
		h.wb, h.wsum, h.shared, h.chunks = nil, nil, nil, nil
		h.release()
	}
}

// warm reads one word of every cache line of the window's doc lengths, in
// order, before the terms' postings read them out of order: a sequential
// sweep the hardware prefetcher follows, where each term's strided reads would
// each wait for memory.
func (s *searcher) warm(lens []byte, lo, hi uint32) {
	b := lens[4*uint(lo) : 4*uint(hi)]
	var x byte
	for i := 0; i < len(b); i += 64 {
		x ^= b[i]
	}
	s.sink ^= x
}

// partition orders the cursors by window bound into s.ord and returns how
// many come first as non-essential: the longest prefix whose bounds sum
// below the cut, so that no doc matching only those terms can make the top
// k. When looking those terms up for every candidate would cost more than
// scoring their postings in the window, it returns 0 instead.
func (s *searcher) partition(nc int, span, n uint32) int {
	ord := s.ord[:nc]
	for i := range ord {
		j := i
		for ; j > 0 && s.wub[ord[j-1]] > s.wub[i]; j-- {
			ord[j] = ord[j-1]
		}
		ord[j] = i
	}
	ne, pre := 0, 0.0
	s.pre[0] = 0
	for ne < nc && pre+s.wub[ord[ne]] < s.cut {
		pre += s.wub[ord[ne]]
		ne++
		s.pre[ne] = pre
	}
	if ne == 0 {
		return 0
	}
	// Expected postings in the window: the essential ones bound the
	// candidates, each costing about lookupCost postings per non-essential
	// term.
	var ess, non float64
	for x, i := range ord {
		if df := float64(s.cur[i].pl.df); x < ne {
			non += df
		} else {
			ess += df
		}
	}
	if ess*float64(ne)*lookupCost > non {
		s.pre[0] = 0
		return 0
	}
	return ne
}

// lookupCost is the cost of looking a candidate up in a posting list, in
// postings scored. A variable so that tests can force either strategy.
var lookupCost = 2.0

// How scoreWindow keeps an essential term's contributions.
const (
	// scoreRecord: the sum per doc, which docs any term matched, and each
	// contribution and the term's bit per doc, which candidates reads to
	// re-add a score in query-term order after a non-essential term
	// matched.
	scoreRecord = iota
	// scoreSum: a window without non-essential terms (most windows at top
	// 100) keeps only the sum and which docs matched.
	scoreSum
	// scoreDense: the sum only, for a window of many postings whose docs
	// offerDense finds by reading every sum: the read-modify-write of the
	// matched bits, one per posting, cost more than that.
	scoreDense
)

// denseShare: a window without non-essential terms is scored dense (see
// scoreDense) when its essential terms are expected to hold at least this
// many postings per doc of the window. A variable so that tests can force
// either way.
var denseShare = 0.25

// dense reports whether a window whose terms are all essential, in a part
// of n docs, is scored dense. Only once the top k is full with a
// positive cut: offerDense tells a matched doc by its sum, which is
// positive for every match (contrib), and a doc of sum 0 is then below the
// cut anyway.
func (s *searcher) dense(n uint32) bool {
	if !s.top.full() || !(s.cut > 0) || s.sc.lossy {
		return false
	}
	df := 0
	for _, c := range s.cur {
		df += c.pl.df
	}
	return float64(df) >= denseShare*float64(n)
}

// offerDense offers the docs of the window [lo, hi) whose sum reaches the
// cut, after a dense scoring, and clears the sums.
func (s *searcher) offerDense(pi int, f *roaring.Bitmap, lo, hi uint32) {
	acc := s.acc[:hi-lo]
	cut := s.cut // in a register: offers are rare
	for off, score := range acc {
		if score >= cut {
			if d := lo + uint32(off); f == nil || f.Contains(d) {
				s.offer(score, pi, d)
				cut = s.cut
			}
		}
	}
	clear(acc)
}

// scoreWindow adds an essential term's contributions to the docs of [lo,
// hi), kept as mode says.
func (s *searcher) scoreWindow(c *cursor, lo, hi uint32, lens []byte, mode int) {
	sc := &s.sc
	w, bit := c.w, c.bit
	row := s.contrib[c.row : c.row+window]
	for !c.done {
		if c.pos >= len(c.docs) {
			j := max(c.blk+1, c.sblk)
			for j < c.nblk && c.lastDoc(j) < lo {
				j++
			}
			if j >= c.nblk {
				c.done = true
				return
			}
			if j > 0 && c.lastDoc(j-1) >= hi-1 {
				return // the block starts past the window
			}
			if !c.load(j) {
				return
			}
		}
		docs, tfs := c.docs, c.tfs
		i := c.pos
		for i < len(docs) && docs[i] < lo {
			i++
		}
		switch {
		case sc.lossy:
			for ; i < len(docs); i++ {
				d := docs[i]
				if d >= hi {
					break
				}
				off := (d - lo) & (window - 1)
				v := contrib(w, tfs[i], sc.k(le.Uint32(lens[4*uint(d):])))
				row[off] = v
				s.acc[off] += v
				s.mask[off] |= bit
				s.touched[off>>6] |= 1 << (off & 63)
			}
		case mode == scoreRecord:
			i = s.scoreExact(docs, tfs, i, lo, hi, w, bit, row, lens)
		case mode == scoreSum:
			i = s.scoreExactSum(docs, tfs, i, lo, hi, w, lens)
		default:
			i = s.scoreExactDense(docs, tfs, i, lo, hi, w, lens)
		}
		c.pos = i
		if i < len(docs) {
			return
		}
	}
}

// scoreExact is scoreWindow's loop over one loaded block from posting i, for
// exact lengths: K is computed here with scorer.k's float operations, so
// that the loop makes no call and keeps its state in registers. It returns
// the first posting at or past hi.
func (s *searcher) scoreExact(docs, tfs []uint32, i int, lo, hi uint32, w float64, bit uint64, row []float64, lens []byte) int {
	c0, c1 := s.sc.c0, s.sc.c1
	docs = docs[i:]
	tfs = tfs[i:][:len(docs)] // equal lengths: no bounds check on tfs[j]
	row = row[:window]
	j := 0
	for ; j < len(docs); j++ {
		d := docs[j]
		if d >= hi {
			break
		}
		off := (d - lo) & (window - 1)
		k := c0 + float64(c1*float64(le.Uint32(lens[4*uint(d):])))
		v := contrib(w, tfs[j], k)
		row[off] = v
		s.acc[off] += v
		s.mask[off] |= bit
		s.touched[off>>6] |= 1 << (off & 63)
	}
	return i + j
}

// scoreExactSum is scoreExact without the per-term row and bit, for a
// window whose terms are all essential.
func (s *searcher) scoreExactSum(docs, tfs []uint32, i int, lo, hi uint32, w float64, lens []byte) int {
	c0, c1 := s.sc.c0, s.sc.c1
	docs = docs[i:]
	tfs = tfs[i:][:len(docs)]
	acc := s.acc[:window]
	j := 0
	for ; j < len(docs); j++ {
		d := docs[j]
		if d >= hi {
			break
		}
		off := (d - lo) & (window - 1)
		k := c0 + float64(c1*float64(le.Uint32(lens[4*uint(d):])))
		acc[off] += contrib(w, tfs[j], k)
		s.touched[off>>6] |= 1 << (off & 63)
	}
	return i + j
}

// scoreExactDense is scoreExactSum without the matched bits (scoreDense):
// a loop of its own, as the flag in the loop measured 2-4% slower.
func (s *searcher) scoreExactDense(docs, tfs []uint32, i int, lo, hi uint32, w float64, lens []byte) int {
	c0, c1 := s.sc.c0, s.sc.c1
	docs = docs[i:]
	tfs = tfs[i:][:len(docs)]
	acc := s.acc[:window]
	j := 0
	for ; j < len(docs); j++ {
		d := docs[j]
		if d >= hi {
			break
		}
		k := c0 + float64(c1*float64(le.Uint32(lens[4*uint(d):])))
		acc[(d-lo)&(window-1)] += contrib(w, tfs[j], k)
	}
	return i + j
}

// candidates completes and offers the docs of the window [lo, lo+window) that
// essential terms matched. ne lists the non-essential cursors by increasing
// bound; s.pre holds the sums of their bounds.
func (s *searcher) candidates(pi int, f *roaring.Bitmap, lo uint32, ne []int, neMask uint64, lens []byte) {
	sc := &s.sc
	for wi, word := range s.touched {
		if word == 0 {
			continue
		}
		s.touched[wi] = 0
		for ; word != 0; word &= word - 1 {
			off := wi<<6 | bits.TrailingZeros64(word)
			m, partial := s.mask[off], s.acc[off]
			s.mask[off], s.acc[off] = 0, 0
			if partial+s.pre[len(ne)] < s.cut {
				continue
			}
			d := lo + uint32(off)
			if f != nil && !f.Contains(d) {
				continue
			}
			pruned := false
			for x := len(ne) - 1; x >= 0; x-- {
				c := s.cur[ne[x]]
				ub := c.docUB(d, sc)
				if ub == 0 {
					continue
				}
				if partial+ub+s.pre[x] < s.cut {
					pruned = true
					break
				}
				if tf := c.tfAt(d); tf != 0 {
					v := contrib(c.w, tf, sc.k(le.Uint32(lens[4*uint(d):])))
					s.contrib[c.row+off] = v
					m |= c.bit
					partial += v
				}
			}
			if pruned {
				continue
			}
			score := partial
			if m&neMask != 0 {
				// Re-add in query-term order.
				score = 0
				for ; m != 0; m &= m - 1 {
					score += s.contrib[bits.TrailingZeros64(m)*window+off]
				}
			}
			s.offer(score, pi, d)
		}
	}
}

// scoreAll scores every doc of the part that holds a query term, term after
// term in query order.
func (s *searcher) scoreAll(pi int, part Part, f *roaring.Bitmap) {
	n := part.NumDocs()
	lens := part.lengths()
	s.exAcc, s.exSeen = grow(s.exAcc, n), grow(s.exSeen, (n+63)/64)
	acc, seen := s.exAcc, s.exSeen
	for _, c := range s.cur {
		for j := 0; j < c.nblk && !s.corrupt; j++ {
			if !c.load(j) {
				s.corrupt = true
				break
			}
			for i, d := range c.docs {
				acc[d] += contrib(c.w, c.tfs[i], s.sc.k(le.Uint32(lens[4*uint(d):])))
				seen[d>>6] |= 1 << (d & 63)
			}
		}
	}
	for wi, word := range seen {
		if word == 0 {
			continue
		}
		seen[wi] = 0
		for ; word != 0; word &= word - 1 {
			d := uint32(wi<<6 | bits.TrailingZeros64(word))
			score := acc[d]
			acc[d] = 0
			if !s.corrupt && (f == nil || f.Contains(d)) {
				s.offer(score, pi, d)
			}
		}
	}
}

// grow returns s resized to n elements, reallocating (zeroed) if too small.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
