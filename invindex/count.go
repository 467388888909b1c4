package invindex

import (
	"hash/maphash"
	"strings"
	"sync"
)

// CountTexts returns the counted index terms of n docs, text(i) being doc
// i's text: element i equals CountTerms(Analyze(text(i), nil)) (the same
// terms in the same order, the same frequencies and length), computed
// faster. It is what ingest runs for every span.
//
// Analysis is a pure function of each token's bytes, so a counter remembers,
// per distinct token, the term it analyzes to (nil for a stop word); a
// repeated word then costs one map lookup, with no stemming and no
// allocation. Counting needs no per-doc map either: each distinct term has
// one entry that records the last doc it was seen in and its position among
// that doc's unique terms. Counters are pooled and forget everything once
// they know maxCountedTokens tokens, so their memory stays bounded; what a
// counter remembers changes only the speed, never the result.
//
// The Terms and TFs of all n docs share two allocations; the term strings
// may be shared with other calls' results (strings are immutable, and each
// is exactly its term, so MemIndex.AddCounted may keep it).
func CountTexts(n int, text func(i int) string) []DocTerms {
	out := make([]DocTerms, n)
	if n == 0 {
		return out
	}
	c := counterPool.Get().(*termCounter)
	c.terms, c.tfs, c.hashes, c.ends = c.terms[:0], c.tfs[:0], c.hashes[:0], c.ends[:0]
	for i := range out {
		out[i].Len = c.count(text(i))
		c.ends = append(c.ends, len(c.terms))
	}
	if total := len(c.terms); total > 0 {
		terms := make([]string, total)
		tfs := make([]uint32, total)
		hashes := make([]uint64, total)
		copy(terms, c.terms)
		copy(tfs, c.tfs)
		copy(hashes, c.hashes)
		lo := 0
		for i, hi := range c.ends {
			if hi > lo {
				out[i].Terms = terms[lo:hi:hi]
				out[i].TFs = tfs[lo:hi:hi]
				out[i].hashes = hashes[lo:hi:hi]
			}
			lo = hi
		}
	}
	clear(c.terms) // the pool must not keep term strings alive
	counterPool.Put(c)
	return out
}

// maxCountedTokens bounds the distinct word tokens (and terms) a pooled
// counter remembers, maxCountedNumbers those holding a digit; past either
// bound, that half of its memory starts afresh.
const (
	maxCountedTokens  = 1 << 14
	maxCountedNumbers = 1 << 12
)

// maxCachedToken is the longest token, in bytes, a counter remembers.
const maxCachedToken = 48

var counterPool = sync.Pool{New: func() any { return newTermCounter() }}

// termEntry is one distinct term known to a termCounter. stamp is the last
// doc it was counted in, and idx its position among that doc's unique terms
// (valid while stamp is the current doc).
type termEntry struct {
	term  string
	hash  uint64 // termHash(term), for MemIndex
	stamp uint64
	idx   int
}

// termCounter analyzes and counts docs, remembering tokens between them.
//
// Tokens holding an ASCII digit (numbers, codes, dates: many of them are
// seen once) are kept apart from word tokens, so that they cannot crowd the
// words out of the counter's memory. The two kinds never share a term: the
// term of a token with an ASCII digit keeps that digit (lowercasing,
// possessive removal and stemming never remove or add one), so the two
// halves count every term exactly once.
type termCounter struct {
	words   tokenCache
	numbers tokenCache
	stop    *termEntry // marks stop words in a cache
	doc     uint64     // current doc's stamp
	buf     [termBufSize]byte

	// The unique terms and their frequencies of the docs of one
	// CountTexts call, doc after doc.
	terms  []string
	tfs    []uint32
	hashes []uint64
	ends   []int // end of each doc's terms in terms
}

// tokenCache maps tokens to their terms' entries, and terms to entries.
type tokenCache struct {
	tokens tokenTable            // token bytes -> its term (stop for a stop word)
	byTerm map[string]*termEntry // term -> its entry
}

func (tc *tokenCache) reset(size int) {
	tc.tokens = tokenTable{slots: make([]tokenSlot, 2*size)}
	tc.byTerm = make(map[string]*termEntry, size)
}

// tokenTable is an open-addressing hash table (linear probing, at most half
// full) from token bytes to entries: the lookup every token of every span
// makes, kept inline and cheaper than a general map.
type tokenTable struct {
	slots []tokenSlot // a power of two
	n     int
}

type tokenSlot struct {
	hash uint64 // tokenHash of key; 0 marks an empty slot
	key  string
	e    *termEntry
}

var tokenSeed = maphash.MakeSeed()

// tokenHash hashes a token for a tokenTable (never 0).
func tokenHash(tok string) uint64 { return maphash.String(tokenSeed, tok) | 1 }

// get returns the entry of tok, whose tokenHash is h, or nil.
func (t *tokenTable) get(h uint64, tok string) *termEntry {
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.hash == h && s.key == tok {
			return s.e
		}
		if s.hash == 0 {
			return nil
		}
	}
}

// put adds tok (not present), whose tokenHash is h.
func (t *tokenTable) put(h uint64, tok string, e *termEntry) {
	if 2*(t.n+1) > len(t.slots) {
		old := t.slots
		t.slots = make([]tokenSlot, 2*len(old))
		for _, s := range old {
			if s.hash != 0 {
				t.insert(s)
			}
		}
	}
	t.insert(tokenSlot{h, tok, e})
	t.n++
}

func (t *tokenTable) insert(s tokenSlot) {
	mask := uint64(len(t.slots) - 1)
	i := s.hash & mask
	for t.slots[i].hash != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = s
}

func newTermCounter() *termCounter {
	c := &termCounter{stop: &termEntry{}}
	c.words.reset(1024)
	c.numbers.reset(64)
	return c
}

// count appends text's unique terms (first occurrence order) to c.terms and
// their frequencies to c.tfs, and returns the number of terms of text.
func (c *termCounter) count(text string) uint32 {
	if c.words.tokens.n > maxCountedTokens || len(c.words.byTerm) > maxCountedTokens {
		c.words.reset(1024)
	}
	if c.numbers.tokens.n > maxCountedNumbers || len(c.numbers.byTerm) > maxCountedNumbers {
		c.numbers.reset(64)
	}
	c.doc++
	base := len(c.terms)
	var n uint32
	sc := tokenScanner{s: text}
	for {
		start, end, ascii, ok := sc.next()
		if !ok {
			return n
		}
		tok := text[start:end]
		cache := &c.words
		if hasDigit(tok) {
			cache = &c.numbers
		}
		h := tokenHash(tok)
		e := cache.tokens.get(h, tok)
		if e == nil {
			e = c.entry(cache, h, tok, ascii)
		}
		if e == c.stop {
			continue
		}
		n++
		if e.stamp == c.doc {
			c.tfs[base+e.idx]++
			continue
		}
		e.stamp, e.idx = c.doc, len(c.terms)-base
		c.terms = append(c.terms, e.term)
		c.tfs = append(c.tfs, 1)
		c.hashes = append(c.hashes, e.hash)
	}
}

// hasDigit reports whether s holds an ASCII digit.
func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i]-'0' < 10 {
			return true
		}
	}
	return false
}

// entry analyzes a token not remembered yet and returns its term's entry
// (c.stop for a stop word), remembering the token when it is short.
func (c *termCounter) entry(cache *tokenCache, h uint64, tok string, ascii bool) *termEntry {
	e := c.stop
	if term := analyzeToken(tok, ascii, &c.buf); term != nil {
		e = cache.byTerm[string(term)]
		if e == nil {
			e = &termEntry{term: string(term)}
			e.hash = termHash(e.term)
			cache.byTerm[e.term] = e
		}
	}
	if len(tok) <= maxCachedToken {
		cache.tokens.put(h, strings.Clone(tok), e)
	}
	return e
}
