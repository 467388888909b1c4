package invindex

import (
	"bytes"
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

// topK keeps the k best hits offered, in a min-heap whose root is the worst
// kept hit. Keys are read only to break a tie between equal scores (and for
// the hits returned), and then kept in the entry: a corpus that repeats its
// texts offers many hits tied with each other, and a key costs a read of the
// span's row.
type topK struct {
	k     int
	parts []Part
	h     []entry
}

type entry struct {
	score float64
	doc   uint32
	part  int32
	keyed bool // key holds the doc's key
	key   [16]byte
}

func (t *topK) reset(k int, parts []Part) { t.k, t.parts, t.h = k, parts, t.h[:0] }

func (t *topK) full() bool { return len(t.h) == t.k }

// min is the worst kept score; only meaningful when full.
func (t *topK) min() float64 { return t.h[0].score }

// keyOf returns e's key, reading it once.
func (t *topK) keyOf(e *entry) *[16]byte {
	if !e.keyed {
		e.key, e.keyed = t.parts[e.part].Key(e.doc), true
	}
	return &e.key
}

// better reports whether a ranks before b: higher score, then smaller key,
// then smaller part and doc (the engine's keys are equal for equal texts
// of equal time; parts and docs are then in ingest order).
func (t *topK) better(a, b *entry) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return t.tieBetter(a, b)
}

func (t *topK) tieBetter(a, b *entry) bool {
	ka, kb := t.keyOf(a), t.keyOf(b)
	if c := bytes.Compare(ka[:], kb[:]); c != 0 {
		return c < 0
	}
	if a.part != b.part {
		return a.part < b.part
	}
	return a.doc < b.doc
}

// offer adds the hit if it ranks among the k best so far and reports whether
// it did.
func (t *topK) offer(score float64, part int, doc uint32) bool {
	e := entry{score: score, doc: doc, part: int32(part)}
	if len(t.h) < t.k {
		t.h = append(t.h, e)
		t.up(len(t.h) - 1)
		return true
	}
	if score < t.h[0].score || score == t.h[0].score && !t.tieBetter(&e, &t.h[0]) {
		return false
	}
	t.h[0] = e
	t.down(0)
	return true
}

func (t *topK) up(i int) {
	h := t.h
	e := h[i]
	for i > 0 {
		p := (i - 1) / 2
		if !t.better(&h[p], &e) {
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
		if r := l + 1; r < len(h) && t.better(&h[l], &h[r]) {
			w = r
		}
		if !t.better(&e, &h[w]) {
			break
		}
		h[i] = h[w]
		i = w
	}
	h[i] = e
}

// hits returns the kept hits, best first, in a new slice.
func (t *topK) hits() []Hit {
	for i := range t.h {
		t.keyOf(&t.h[i])
	}
	slices.SortFunc(t.h, func(a, b entry) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		case t.tieBetter(&a, &b):
			return -1
		case t.tieBetter(&b, &a):
			return 1
		}
		return 0
	})
	out := make([]Hit, len(t.h))
	for i, e := range t.h {
		out[i] = Hit{Part: int(e.part), Doc: e.doc, Score: e.score, Key: e.key}
	}
	return out
}
