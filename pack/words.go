package pack

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Words are what redundancy, conflict detection and query coverage compare.
// A word is a maximal run of letters, digits and combining marks, lowercased;
// an apostrophe (' or ’, kept as ') between two letters stays inside the
// word, so "can't" and "won't" are single words. Scripts written without
// spaces (Chinese, Japanese) give one word per run, which makes these
// comparisons coarse for them.

// isWordRune reports whether r continues a word.
func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

// isLetter reports whether r is a letter.
func isLetter(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r|0x20 && r|0x20 <= 'z'
	}
	return unicode.IsLetter(r)
}

// asciiWord maps each ASCII byte that continues a word to its lowercase
// form, and every other ASCII byte to 0.
var asciiWord = func() (t [utf8.RuneSelf]byte) {
	for c := byte('0'); c <= '9'; c++ {
		t[c] = c
	}
	for c := byte('a'); c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = c, c
	}
	return t
}()

// nextWord finds the first word of s at or after byte i. It appends the
// word, lowercased, to buf[:0] and returns it and the byte offsets of its
// start and of its end; the word is empty when s has no further word.
func nextWord(s string, i int, buf []byte) (word []byte, start, end int) {
	buf = buf[:0]
	i = skipNonWord(s, i)
	start = i
	prevLetter := false
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if l := asciiWord[c]; l != 0 {
				buf = append(buf, l)
				prevLetter = l >= 'a'
				i++
				continue
			}
			if c != '\'' {
				break
			}
		}
		r, size := runeAt(s, i)
		if r == '\'' || r == '’' {
			// Inside the word only between two letters.
			if !prevLetter || i+size >= len(s) {
				break
			}
			if r2, _ := runeAt(s, i+size); !isLetter(r2) {
				break
			}
			buf = append(buf, '\'')
			i += size
			prevLetter = false
			continue
		}
		if !isWordRune(r) {
			break
		}
		buf = utf8.AppendRune(buf, unicode.ToLower(r))
		prevLetter = isLetter(r)
		i += size
	}
	return buf, start, i
}

// runeAt decodes the rune at s[i], with a fast path for ASCII.
func runeAt(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// eachWord calls fn with every word of s in order, lowercased (in a buffer
// that fn must not keep but may overwrite), its byte offset, and brk true
// when one of . ! ? ; : (or their full-width forms) or a blank line
// separates it from the previous word, except inside a number ("1.5",
// "10:30"): a clause break, so that phrases and negations do not match
// across clauses.
func eachWord(s string, fn func(w []byte, start int, brk bool)) {
	var buf [64]byte
	for i, first := 0, true; ; first = false {
		w, start, end := nextWord(s, i, buf[:0])
		if len(w) == 0 {
			return
		}
		fn(w, start, !first && breaksClause(s[i:start]) && !inNumber(s, i, start))
		i = end
	}
}

// words returns the words of s, with "." for each clause break.
func words(s string) []string {
	var out []string
	eachWord(s, func(w []byte, _ int, brk bool) {
		if brk {
			out = append(out, ".")
		}
		out = append(out, string(w))
	})
	return out
}

// breaksClause reports whether the text between two words holds one of
// . ! ? ; : or their full-width forms, or a blank line: a paragraph break
// ends a clause even without a mark, as after a document's title line
// ("Title: Refund policy\n\nRefunds are issued within 30 days"), whose
// words would otherwise join the next sentence's subject. A single line
// break does not: mail and documents wrap sentences at line ends.
func breaksClause(gap string) bool {
	lines := 0
	for i := 0; i < len(gap); i++ {
		switch c := gap[i]; {
		case c == '.' || c == '!' || c == '?' || c == ';' || c == ':':
			return true
		case c == '\n':
			if lines++; lines == 2 {
				return true
			}
		case c >= utf8.RuneSelf:
			if strings.ContainsAny(gap[i:], "。！？；：") {
				return true
			}
		}
	}
	return false
}

// inNumber reports whether the gap s[i:j] between two words is a single
// character between digits, as in "1.5" or "10:30".
func inNumber(s string, i, j int) bool {
	isDigit := func(c byte) bool { return '0' <= c && c <= '9' }
	return j == i+1 && i > 0 && j < len(s) && isDigit(s[i-1]) && isDigit(s[j])
}

// skipNonWord returns the offset of the first word rune of s at or after i
// (len(s) if none).
func skipNonWord(s string, i int) int {
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			if asciiWord[c] != 0 {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if isWordRune(r) {
			return i
		}
		i += size
	}
	return i
}
