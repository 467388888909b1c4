package pack

import (
	"encoding/binary"
	"slices"
	"strings"
)

// Conflict rules and query coverage compare terms: words that are not
// stopwords, reduced by stem, hashed to 64 bits (wordKey). Words of ASCII
// digits only are numbers, kept apart from terms.

// stopwords are English function words left out of term sets, so that two
// unrelated texts do not overlap through "the" and "is". The negation and
// modal words are among them: they are what the negation rule looks at, and
// they must not count as shared content.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
		a about above after again against all also am an and any are aren't as at
		be because been before being below between both but by
		can can't cannot could couldn't did didn't do does doesn't doing don't down during
		each few for from further had hadn't has hasn't have haven't having he her here hers
		herself him himself his how i if in into is isn't it it's its itself just
		me more most must my myself no nor not now of off on once only or other our ours
		ourselves out over own same shall she should shouldn't so some such than that the
		their theirs them themselves then there these they this those through to too
		under until up very was wasn't we were weren't what when where which while who
		whom why will with won't would wouldn't you your yours yourself yourselves`) {
		m[w] = true
	}
	return m
}()

// stem strips a few English inflections, crudely, so that "policies" meets
// "policy" and "deadlines" meets "deadline": a possessive 's is dropped
// (words keep an apostrophe between letters, and "Melanie's" must meet
// "Melanie"), -ies becomes -y, -sses -ss, and -ing, -ed and -s (not -ss)
// are dropped from long enough words. It returns the kept prefix of w and a
// letter to append, or 0.
func stem(w []byte) ([]byte, byte) {
	n := len(w)
	suffix := func(s string) bool { return n >= len(s) && string(w[n-len(s):]) == s }
	switch {
	case n > 2 && suffix("'s"):
		return w[:n-2], 0
	case n > 4 && suffix("ies"):
		return w[:n-3], 'y'
	case n > 4 && suffix("sses"):
		return w[:n-2], 0
	case n > 5 && suffix("ing"):
		return w[:n-3], 0
	case n > 4 && suffix("ed"):
		return w[:n-2], 0
	case n > 3 && suffix("s") && !suffix("ss"):
		return w[:n-1], 0
	}
	return w, 0
}

// Kinds of words, for term sets.
const (
	kindStop = iota
	kindTerm
	kindNumber
)

// termHash classifies a lowercased word and returns its hash: of its stem
// for a term, of its digits for a number. It may overwrite w.
func termHash(w []byte) (uint64, int) {
	h := wordKey(w)
	return termOf(w, h, lexicon.get(h))
}

// termOf is termHash for a word whose wordKey h and lexicon role r are
// known.
func termOf(w []byte, h uint64, r *role) (uint64, int) {
	if r != nil && r.stop {
		return 0, kindStop
	}
	digits := true
	for _, c := range w {
		if c < '0' || c > '9' {
			digits = false
			break
		}
	}
	if digits {
		return h, kindNumber
	}
	base, extra := stem(w)
	if len(base) == len(w) {
		return h, kindTerm
	}
	if extra != 0 {
		w[len(base)] = extra // base is a prefix of w, and -ies leaves room
		base = w[:len(base)+1]
	}
	return wordKey(base), kindTerm
}

// wordKey hashes a lowercased word, eight bytes at a time: the key of
// terms and of the lexicon.
func wordKey(w []byte) uint64 {
	h := uint64(len(w)) * 0x9e3779b97f4a7c15
	for len(w) >= 8 {
		h = mix(h ^ binary.LittleEndian.Uint64(w))
		w = w[8:]
	}
	var tail uint64
	for i, c := range w {
		tail |= uint64(c) << (8 * i)
	}
	return mix(h ^ tail)
}

// sortedSet sorts hs and removes repeats, in place.
func sortedSet(hs []uint64) []uint64 {
	slices.Sort(hs)
	return slices.Compact(hs)
}

// queryTerms returns the sorted distinct term and number hashes of a
// query, as query coverage matches them.
func queryTerms(query string) []uint64 {
	var hs []uint64
	eachWord(query, func(w []byte, _ int, _ bool) {
		if h, kind := termHash(w); kind != kindStop {
			hs = append(hs, h)
		}
	})
	return sortedSet(hs)
}

// hashSet is a set of term hashes: its distinct keys in insertion order,
// and an open-addressing index over them. Building one costs a probe per
// key, much less than sorting; intersections probe the larger set with the
// smaller one's keys.
type hashSet struct {
	keys  []uint64
	slots []uint64 // key(h) of each key; 0 is empty
}

// newHashSet returns the set of hs.
func newHashSet(hs []uint64) hashSet {
	if len(hs) == 0 {
		return hashSet{}
	}
	size := 8
	for size < 2*len(hs) {
		size *= 2
	}
	s := hashSet{keys: make([]uint64, 0, len(hs)), slots: make([]uint64, size)}
	mask := uint64(size - 1)
	for _, h := range hs {
		k := key(h)
		for i := k & mask; ; i = (i + 1) & mask {
			if s.slots[i] == 0 {
				s.slots[i] = k
				s.keys = append(s.keys, h)
				break
			}
			if s.slots[i] == k {
				break
			}
		}
	}
	return s
}

// has reports whether h is in s.
func (s *hashSet) has(h uint64) bool {
	if len(s.slots) == 0 {
		return false
	}
	k, mask := key(h), uint64(len(s.slots)-1)
	for i := k & mask; ; i = (i + 1) & mask {
		switch s.slots[i] {
		case k:
			return true
		case 0:
			return false
		}
	}
}

// intersect returns the size of the intersection of two sets.
func intersect(a, b *hashSet) int {
	if len(a.keys) > len(b.keys) {
		a, b = b, a
	}
	n := 0
	for _, h := range a.keys {
		if b.has(h) {
			n++
		}
	}
	return n
}
