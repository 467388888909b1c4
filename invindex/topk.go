package invindex

import (
	"bytes"
	"cmp"
	"slices"
)

// Hit is one search result: doc Doc of parts[Part], with its BM25 score and
// key.
type Hit struct {
	Part  int
	Doc   uint32
	Score float64
	Key   [16]byte
}

// topK keeps the k best hits offered: higher score first, then smaller key,
// then smaller part and doc (the engine's keys are equal for equal texts of
// equal time; parts and docs are then in ingest order).
//
// Keys cost a read of the span's row, and a corpus that repeats its texts
// offers many hits tied at the k-th score, so ties are not resolved as they
// come. The heap holds k hits ordered by score alone; ties holds every other
// hit offered whose score equals the heap's least (those the heap could not
// take, and those it gave up for a better one while its least stayed the
// same). When the least rises, ties empties: k hits score above them. Only
// at the end (hits) are keys read, for the hits tied at the final least
// score, and the best of them by key fill the places the heap holds at that
// score.
type topK struct {
	k     int
	parts []Part
	h     []entry
	ties  []tied
}

type entry struct {
	score float64
	doc   uint32
	part  int32
	key   [16]byte // read by hits only
}

// maxKeptTies is the largest ties list a pooled searcher keeps for reuse
// (8 bytes a tie).
const maxKeptTies = 1 << 16

// tied is a hit whose score is the heap's least.
type tied struct {
	doc  uint32
	part int32
}

func (t *topK) reset(k int, parts []Part) {
	t.k, t.parts, t.h, t.ties = k, parts, t.h[:0], t.ties[:0]
}

func (t *topK) full() bool { return len(t.h) == t.k }

// min is the least kept score; only meaningful when full.
func (t *topK) min() float64 { return t.h[0].score }

// offer offers a hit and reports whether the heap took it (the least kept
// score can then have risen).
func (t *topK) offer(score float64, part int, doc uint32) bool {
	e := entry{score: score, doc: doc, part: int32(part)}
	if len(t.h) < t.k {
		t.h = append(t.h, e)
		t.up(len(t.h) - 1)
		return true
	}
	switch least := t.h[0].score; {
	case score < least:
		return false
	case score == least:
		t.ties = append(t.ties, tied{doc, int32(part)})
		return false
	}
	out := t.h[0]
	t.h[0] = e
	t.down(0)
	if t.h[0].score == out.score {
		t.ties = append(t.ties, tied{out.doc, out.part})
	} else {
		t.ties = t.ties[:0]
	}
	return true
}

func (t *topK) up(i int) {
	h := t.h
	e := h[i]
	for i > 0 {
		p := (i - 1) / 2
		if h[p].score <= e.score {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = e
}

func (t *topK) down(i int) {
	h := t.h
	e := h[i]
	for {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		w := l
		if r := l + 1; r < len(h) && h[r].score < h[l].score {
			w = r
		}
		if e.score <= h[w].score {
			break
		}
		h[i] = h[w]
		i = w
	}
	h[i] = e
}

// hits returns the kept hits, best first, in a new slice: the heap's hits
// above its least score, and of those at it and the ties, the best by key.
func (t *topK) hits() []Hit {
	if len(t.h) == 0 {
		return nil
	}
	least := t.h[0].score
	if len(t.ties) > 0 {
		kept := t.h[:0]
		var at []entry
		for _, e := range t.h {
			if e.score == least {
				at = append(at, e)
			} else {
				kept = append(kept, e)
			}
		}
		places := len(at)
		for _, x := range t.ties {
			at = append(at, entry{score: least, doc: x.doc, part: x.part})
		}
		t.readKeys(at)
		slices.SortFunc(at, compareEntries)
		t.h = append(kept, at[:places]...)
		t.readKeys(kept)
	} else {
		t.readKeys(t.h)
	}
	slices.SortFunc(t.h, compareEntries)
	out := make([]Hit, len(t.h))
	for i, e := range t.h {
		out[i] = Hit{Part: int(e.part), Doc: e.doc, Score: e.score, Key: e.key}
	}
	return out
}

// readKeys reads the key of each entry.
func (t *topK) readKeys(es []entry) {
	for i := range es {
		es[i].key = t.parts[es[i].part].Key(es[i].doc)
	}
}

// compareEntries orders hits best first: higher score, then smaller key,
// then smaller part and doc.
func compareEntries(a, b entry) int {
	if c := cmp.Compare(b.score, a.score); c != 0 {
		return c
	}
	if c := bytes.Compare(a.key[:], b.key[:]); c != 0 {
		return c
	}
	if c := cmp.Compare(a.part, b.part); c != 0 {
		return c
	}
	return cmp.Compare(a.doc, b.doc)
}
