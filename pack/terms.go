package pack

import (
	"encoding/binary"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
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

// names are the terms of the words of a query that name something
// (namedTerms), sorted, and for each a lower-case prefix that every word of
// that term holds (its stem's kept prefix, less its last letter when longer
// than three: "polic" of "policies", which meets "policy"), for a quick
// look before reading a text's words.
type names struct {
	terms []uint64
	keys  []string
}

// namedTerms returns the words of query that name something: a word with a
// capital letter ("Johnson", "Italian", "iPad") that does not start a
// sentence, is not a single letter ("I", an initial) or a stopword, and is
// not a month, weekday, unit or scene word (the lexicon's scene role: a
// date is held by a span's time, not its text). A sentence starts at the
// query's first word and after . ! or ?, except after a short capitalised
// abbreviation ("Dr. Johnson", "St. Mary's", "C. S. Lewis"). Names are
// seldom paraphrased, so a name the memory never holds is a sign the
// question is about something else (ownerGrounding).
func namedTerms(query string) names {
	var n names
	var buf [64]byte
	prevStart, prevEnd := -1, 0
	words, capitalised, capitalStops := 0, 0, 0
	for i := 0; ; {
		w, start, end := nextWord(query, i, buf[:0])
		if len(w) == 0 {
			break
		}
		i = end
		orig := query[start:end]
		first := prevStart < 0 || (sentenceBreak(query[prevEnd:start]) && !abbreviation(query[prevStart:prevEnd], query[prevEnd:start]))
		prevStart, prevEnd = start, end
		if first || len(w) < 2 {
			continue
		}
		words++
		if !hasUpper(orig) {
			continue
		}
		capitalised++
		if r := lexicon.get(wordKey(w)); r != nil && (r.scene || r.stop) {
			if r.stop {
				capitalStops++
			}
			continue
		}
		key, _ := stem(w)
		if len(key) > 3 {
			key = key[:len(key)-1]
		}
		k := string(key) // termHash may overwrite w
		if !isASCII(k) {
			k = "" // hasWordPrefix compares bytes: a key it cannot find says "may hold"
		}
		if h, kind := termHash(w); kind == kindTerm {
			if at, found := slices.BinarySearch(n.terms, h); !found {
				n.terms = slices.Insert(n.terms, at, h)
				n.keys = slices.Insert(n.keys, at, k)
			}
		}
	}
	if words >= TitleCaseWords && 2*capitalised > words && capitalStops > 0 {
		// Title Case or capitals throughout: case says nothing of names.
		return names{}
	}
	return n
}

// TitleCaseWords is how many words (the first of each sentence and single
// letters aside) a query must have for namedTerms to read it as written in
// Title Case, or in capitals, when more than half of them are capitalised,
// a stopword among them: "How Often Do I See Dr. Johnson" names nothing;
// "Do I see Dr. Johnson or Dr. Brown?" names four things, "Did I visit
// Yosemite National Park?" three.
const TitleCaseWords = 4

// sentenceBreak reports whether the text between two words ends a
// sentence: it holds . ! or ? (or their full-width forms).
func sentenceBreak(gap string) bool {
	return strings.ContainsAny(gap, ".!?。！？")
}

// abbreviation reports whether a word and the gap after it are a short
// capitalised abbreviation ("Dr", "St", "Mrs", "C") followed by ". ",
// which does not end a sentence.
func abbreviation(word, gap string) bool {
	return len(word) <= 3 && word[0] >= 'A' && word[0] <= 'Z' && strings.TrimRight(gap, " ") == "."
}

// hasWordPrefix reports whether a word of s starts with sub, a lower-case
// string, ignoring case: whether sub is in s where no letter or digit comes
// before it. It looks for sub's first byte in both cases with IndexByte,
// which is vectorised, rather than folding every byte of s.
func hasWordPrefix(s, sub string) bool {
	if sub == "" {
		return true
	}
	lo, up := sub[0], sub[0]
	if 'a' <= lo && lo <= 'z' {
		up = lo - 'a' + 'A'
	}
	for from := 0; len(s)-from >= len(sub); {
		rest := s[from:]
		i := strings.IndexByte(rest, lo)
		end := len(rest)
		if i >= 0 {
			end = i
		}
		if up != lo {
			if j := strings.IndexByte(rest[:end], up); j >= 0 {
				i = j
			}
		}
		if i < 0 {
			return false
		}
		at := from + i
		if len(s)-at < len(sub) {
			return false
		}
		if !wordBefore(s, at) && strings.EqualFold(s[at:at+len(sub)], sub) {
			return true
		}
		from = at + 1
	}
	return false
}

// wordBefore reports whether the rune before s[at] continues a word, as
// nextWord reads words: then no word starts at at.
func wordBefore(s string, at int) bool {
	if at == 0 {
		return false
	}
	if c := s[at-1]; c < utf8.RuneSelf {
		return asciiWord[c] != 0
	}
	r, _ := utf8.DecodeLastRuneInString(s[:at])
	return isWordRune(r)
}

// isASCII reports whether s is all ASCII.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// hasUpper reports whether s holds an upper-case letter.
func hasUpper(s string) bool {
	for _, r := range s {
		if unicode.IsUpper(r) {
			return true
		}
	}
	return false
}
