package invindex

import (
	"unicode"
	"unicode/utf8"
)

// The analyzer turns text into the terms of the lexical (BM25) channel. It
// reproduces Lucene's EnglishAnalyzer (Lucene 8 and 9), the analyzer behind
// Anserini's BM25 baselines, so that the channel's effectiveness can be
// checked against their published numbers:
//
//  1. StandardTokenizer: UAX #29 word boundaries (tokenizer.go).
//  2. EnglishPossessiveFilter: a trailing 's, ’s or ＇s (either case of s)
//     is removed: "John's" → "John".
//  3. LowerCaseFilter: Unicode simple lowercase mapping, per code point.
//  4. StopFilter with EnglishAnalyzer's 33 stop words (stopwords.go).
//  5. PorterStemFilter: Porter's algorithm as Lucene implements it
//     (porter.go), applied to every remaining term, digits and all.
//
// Possessive removal commutes with lowercasing (no character but S lowercases
// to s, and the apostrophes have no case), so it is done on the lowercased
// term. A term left empty would be dropped (Lucene would index it), but no
// token the tokenizer produces can end up empty: a token never starts with
// an apostrophe.

// termBufSize holds any term without allocating: a token has at most
// maxTokenUnits UTF-16 code units, which take at most four UTF-8 bytes per
// two units or three per unit.
const termBufSize = 3*maxTokenUnits + 1

// asciiLower maps ASCII bytes to lowercase. It has an entry for every byte
// so that lookups need no bounds check; only ASCII entries are used.
var asciiLower = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = byte(c - 'A' + 'a')
	}
	return t
}()

// Analyze appends the index terms of text to dst, in order (duplicates kept), and returns it.
//
// The terms are those of Lucene's EnglishAnalyzer: tokens as Tokenize
// returns them, lowercased, without possessive 's, without stop words, and
// Porter-stemmed. Ingest and search must both use it so that their terms
// agree. Each term is a new string; Analyze allocates nothing else once dst
// has room (pure-ASCII tokens, the common case, take a fast path).
func Analyze(text string, dst []string) []string {
	sc := tokenScanner{s: text}
	var buf [termBufSize]byte
	for {
		start, end, ascii, ok := sc.next()
		if !ok {
			return dst
		}
		if term := analyzeToken(text[start:end], ascii, &buf); term != nil {
			dst = append(dst, string(term))
		}
	}
}

// EachTerm calls fn with the index terms of text, in order, as Analyze
// returns them, without allocating: term is valid only during the call.
// Readers that only look terms up (the packer's adjacency of query terms)
// use it instead of Analyze.
func EachTerm(text string, fn func(term []byte)) {
	sc := tokenScanner{s: text}
	var buf [termBufSize]byte
	for {
		start, end, ascii, ok := sc.next()
		if !ok {
			return
		}
		if term := analyzeToken(text[start:end], ascii, &buf); term != nil {
			fn(term)
		}
	}
}

// analyzeToken returns the index term of one token as the tokenizer cut it
// (ascii: the token is pure ASCII), in buf, or nil for a stop word. The term
// depends on the token's bytes alone.
func analyzeToken(tok string, ascii bool, buf *[termBufSize]byte) []byte {
	if !ascii {
		return normalizeUnicodeTerm(buf[:0], tok)
	}
	term := buf[:len(tok)]
	for i := 0; i < len(tok); i++ {
		term[i] = asciiLower[tok[i]]
	}
	if n := len(term); n >= 2 && term[n-1] == 's' && term[n-2] == '\'' {
		term = term[:n-2]
	}
	if len(term) == 0 || isStopBytes(term) {
		return nil
	}
	return term[:porterStem(term)]
}

// normalizeUnicodeTerm appends to dst the term for a token that contains
// non-ASCII characters: lowercased, possessive removed, stemmed. It returns
// nil for a stop word.
func normalizeUnicodeTerm(dst []byte, tok string) []byte {
	ascii := true
	for _, r := range tok {
		if r < utf8.RuneSelf {
			dst = append(dst, asciiLower[r])
			continue
		}
		// Some non-ASCII letters lowercase to ASCII (U+212A KELVIN SIGN,
		// U+0130), so the term may yet be a stop word or an ASCII word.
		r = unicode.ToLower(r)
		if r >= utf8.RuneSelf {
			ascii = false
		}
		dst = utf8.AppendRune(dst, r)
	}
	dst = trimPossessive(dst)
	if len(dst) == 0 || isStopBytes(dst) {
		return nil
	}
	if ascii {
		return dst[:porterStem(dst)]
	}
	return stemUTF16(dst)
}

// Possessive suffixes, after lowercasing: apostrophe, right single quotation
// mark or fullwidth apostrophe, then s.
const (
	possessiveRight     = "\u2019s"
	possessiveFullwidth = "\uFF07s"
)

// trimPossessive removes a trailing possessive 's from a lowercased term.
func trimPossessive(b []byte) []byte {
	n := len(b)
	switch {
	case n >= 2 && b[n-1] == 's' && b[n-2] == '\'':
		return b[:n-2]
	case n >= len(possessiveRight) && string(b[n-len(possessiveRight):]) == possessiveRight:
		return b[:n-len(possessiveRight)]
	case n >= len(possessiveFullwidth) && string(b[n-len(possessiveFullwidth):]) == possessiveFullwidth:
		return b[:n-len(possessiveFullwidth)]
	}
	return b
}
