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
// kept hit. Entries are 16 bytes; keys are read only to break a tie between
// equal scores, and for the hits returned.
type topK struct {
	k     int
	parts []Part
	h     []entry

	// The root's key, read once while the root stays: a corpus that
	// repeats its texts offers many hits tied with the root.
	rootKey   [16]byte
	rootKeyed bool
}

type entry struct {
	score float64
	doc   uint32
	part  int32
}

func (t *topK) reset(k int, parts []Part) {
	t.k, t.parts, t.h, t.rootKeyed = k, parts, t.h[:0], false
}

func (t *topK) full() bool { return len(t.h) == t.k }

// min is the worst kept score; only meaningful when full.
func (t *topK) min() float64 { return t.h[0].score }

// better reports whether a ranks before b: higher score, then smaller key,
// then smaller part and doc (the engine's keys are equal for equal texts
// of equal time; parts and docs are then in ingest order).
func (t *topK) better(a, b entry) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return t.tieBetter(a, b)
}

func (t *topK) tieBetter(a, b entry) bool {
	ka, kb := t.parts[a.part].Key(a.doc), t.parts[b.part].Key(b.doc)
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
		t.rootKeyed = false
		return true
	}
	if score < t.h[0].score || score == t.h[0].score && !t.beatsRoot(e) {
		return false
	}
	t.h[0] = e
	t.down(0)
	t.rootKeyed = false
	return true
}

// beatsRoot is tieBetter(e, t.h[0]) with the root's key cached.
func (t *topK) beatsRoot(e entry) bool {
	r := t.h[0]
	if !t.rootKeyed {
		t.rootKey, t.rootKeyed = t.parts[r.part].Key(r.doc), true
	}
	ke := t.parts[e.part].Key(e.doc)
	if c := bytes.Compare(ke[:], t.rootKey[:]); c != 0 {
		return c < 0
	}
	if e.part != r.part {
		return e.part < r.part
	}
	return e.doc < r.doc
}

func (t *topK) up(i int) {
	h := t.h
	e := h[i]
	for i > 0 {
		p := (i - 1) / 2
		if !t.better(h[p], e) {
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
		if r := l + 1; r < len(h) && t.better(h[l], h[r]) {
			w = r
		}
		if !t.better(e, h[w]) {
			break
		}
		h[i] = h[w]
		i = w
	}
	h[i] = e
}

// hits returns the kept hits, best first, in a new slice.
func (t *topK) hits() []Hit {
	slices.SortFunc(t.h, func(a, b entry) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		case t.tieBetter(a, b):
			return -1
		case t.tieBetter(b, a):
			return 1
		}
		return 0
	})
	out := make([]Hit, len(t.h))
	for i, e := range t.h {
		out[i] = Hit{Part: int(e.part), Doc: e.doc, Score: e.score, Key: t.parts[e.part].Key(e.doc)}
	}
	return out
}
