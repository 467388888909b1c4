package invindex

import (
	"unicode/utf16"
	"unicode/utf8"
)

// This file implements the Porter stemming algorithm (M.F. Porter, "An
// algorithm for suffix stripping", Program 14(3), 1980) exactly as Lucene's
// PorterStemmer applies it, since the lexical channel must produce the same
// index terms as Lucene's EnglishAnalyzer. Lucene follows Porter's own
// reference implementation, which departs from the 1980 paper in two rules
// of step 2: it maps -bli to -ble (the paper has -abli to -able) and adds
// -logi to -log. It also leaves words of one or two characters alone.
//
// The algorithm looks only at the ASCII letters a, e, i, o, u and y; every
// other character — digits, apostrophes, accented and non-Latin letters —
// counts as a consonant. Lucene applies it to Java chars (UTF-16 code
// units), and for words with non-ASCII characters the outcome can depend on
// that (a doubled consonant must be two equal code units; the consonant-
// vowel-consonant test looks at three code units), so such words are
// stemmed as UTF-16 here too.

// stemUnit is a code unit the stemmer works on: a byte of an ASCII word or a
// UTF-16 code unit of any other word.
type stemUnit interface{ ~uint8 | ~uint16 }

// porterState is the state of one stemming. b[0..k] is the word as stemmed so
// far; j is set by ends to the last index of the stem before the suffix.
type porterState[T stemUnit] struct {
	b    []T
	j, k int
}

// porterStem stems the word in b in place and returns the length of the
// stem, a prefix of b (possibly with an ASCII suffix rewritten). Words
// shorter than three units are returned unchanged.
func porterStem[T stemUnit](b []T) int {
	if len(b) < 3 {
		return len(b)
	}
	p := porterState[T]{b: b, k: len(b) - 1}
	p.step1ab()
	p.step1c()
	p.step2()
	p.step3()
	p.step4()
	p.step5()
	return p.k + 1
}

// cons reports whether b[i] is a consonant: anything but a, e, i, o, u, and
// y when it follows a consonant (y is a consonant at the start of a word).
func (p *porterState[T]) cons(i int) bool {
	switch p.b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
	default:
		return true
	}
	// cons(i) for a 'y' is !cons(i-1); walk back over a run of y's.
	flip := false
	for p.b[i] == 'y' && i > 0 {
		flip = !flip
		i--
	}
	switch p.b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return flip
	}
	return !flip
}

// m measures b[0..j]: the number of vowel-sequence/consonant-sequence pairs
// in [C](VC)^m[V], that is, the number of vowel-to-consonant transitions.
// It computes cons incrementally in one pass.
func (p *porterState[T]) m() int {
	n := 0
	prev := true // the first letter cannot end a vowel sequence
	for i := 0; i <= p.j; i++ {
		var c bool
		switch p.b[i] {
		case 'a', 'e', 'i', 'o', 'u':
			c = false
		case 'y':
			c = i == 0 || !prev
		default:
			c = true
		}
		if c && !prev {
			n++
		}
		prev = c
	}
	return n
}

// vowelInStem reports whether b[0..j] contains a vowel.
func (p *porterState[T]) vowelInStem() bool {
	prev := true
	for i := 0; i <= p.j; i++ {
		switch p.b[i] {
		case 'a', 'e', 'i', 'o', 'u':
			return true
		case 'y':
			if i > 0 && prev {
				return true // y after a consonant is a vowel
			}
			prev = true
		default:
			prev = true
		}
	}
	return false
}

// doubleC reports whether b[i-1..i] is a double consonant.
func (p *porterState[T]) doubleC(i int) bool {
	return i >= 1 && p.b[i] == p.b[i-1] && p.cons(i)
}

// cvc reports whether b[i-2..i] is consonant-vowel-consonant with the last
// consonant not w, x or y: the shape of short words that end in a silent e
// once the suffix is gone (hop(e), crim(e), but snow, box, tray).
func (p *porterState[T]) cvc(i int) bool {
	if i < 2 || !p.cons(i) || p.cons(i-1) || !p.cons(i-2) {
		return false
	}
	switch p.b[i] {
	case 'w', 'x', 'y':
		return false
	}
	return true
}

// ends reports whether b[0..k] ends with s, and if so sets j to the index
// before the suffix.
func (p *porterState[T]) ends(s string) bool {
	o := p.k - len(s) + 1
	if o < 0 {
		return false
	}
	// Compare from the end: most candidates differ in their last letters.
	for i := len(s) - 1; i >= 0; i-- {
		if p.b[o+i] != T(s[i]) {
			return false
		}
	}
	p.j = p.k - len(s)
	return true
}

// setTo replaces b[j+1..k] with s. Every rule replaces a suffix with one at
// most as long as the text it removed, so s fits in b.
func (p *porterState[T]) setTo(s string) {
	o := p.j + 1
	for i := 0; i < len(s); i++ {
		p.b[o+i] = T(s[i])
	}
	p.k = p.j + len(s)
}

// replace is setTo when the stem has m() > 0, the condition of steps 2 and 3.
func (p *porterState[T]) replace(s string) {
	if p.m() > 0 {
		p.setTo(s)
	}
}

// step1ab removes plurals (step 1a) and -ed or -ing (step 1b), then tidies
// the stem: caresses→caress, ponies→poni, cats→cat, agreed→agree,
// plastered→plaster, conflated→conflate, hopping→hop, filing→file.
func (p *porterState[T]) step1ab() {
	if p.b[p.k] == 's' {
		switch {
		case p.ends("sses"):
			p.k -= 2
		case p.ends("ies"):
			p.setTo("i")
		case p.b[p.k-1] != 's':
			p.k--
		}
	}
	if p.ends("eed") {
		if p.m() > 0 {
			p.k--
		}
		return
	}
	if !(p.ends("ed") || p.ends("ing")) || !p.vowelInStem() {
		return
	}
	p.k = p.j
	switch {
	case p.ends("at"):
		p.setTo("ate")
	case p.ends("bl"):
		p.setTo("ble")
	case p.ends("iz"):
		p.setTo("ize")
	case p.doubleC(p.k):
		switch p.b[p.k] {
		case 'l', 's', 'z':
		default:
			p.k--
		}
	default:
		// j == k here: m measures the whole stem.
		if p.m() == 1 && p.cvc(p.k) {
			p.setTo("e")
		}
	}
}

// step1c turns a final y into i when the stem has a vowel: happy→happi,
// but sky→sky.
func (p *porterState[T]) step1c() {
	if p.ends("y") && p.vowelInStem() {
		p.b[p.k] = 'i'
	}
}

// step2 maps double suffixes to single ones when m() > 0:
// relational→relate, digitizer→digitize, vietnamization→vietnamize.
// Only the first suffix that matches is tried.
func (p *porterState[T]) step2() {
	if p.k == 0 {
		return
	}
	switch p.b[p.k-1] {
	case 'a':
		if p.ends("ational") {
			p.replace("ate")
		} else if p.ends("tional") {
			p.replace("tion")
		}
	case 'c':
		if p.ends("enci") {
			p.replace("ence")
		} else if p.ends("anci") {
			p.replace("ance")
		}
	case 'e':
		if p.ends("izer") {
			p.replace("ize")
		}
	case 'l':
		if p.ends("bli") {
			p.replace("ble")
		} else if p.ends("alli") {
			p.replace("al")
		} else if p.ends("entli") {
			p.replace("ent")
		} else if p.ends("eli") {
			p.replace("e")
		} else if p.ends("ousli") {
			p.replace("ous")
		}
	case 'o':
		if p.ends("ization") {
			p.replace("ize")
		} else if p.ends("ation") {
			p.replace("ate")
		} else if p.ends("ator") {
			p.replace("ate")
		}
	case 's':
		if p.ends("alism") {
			p.replace("al")
		} else if p.ends("iveness") {
			p.replace("ive")
		} else if p.ends("fulness") {
			p.replace("ful")
		} else if p.ends("ousness") {
			p.replace("ous")
		}
	case 't':
		if p.ends("aliti") {
			p.replace("al")
		} else if p.ends("iviti") {
			p.replace("ive")
		} else if p.ends("biliti") {
			p.replace("ble")
		}
	case 'g':
		if p.ends("logi") {
			p.replace("log")
		}
	}
}

// step3 handles -ic-, -full, -ness and the like when m() > 0:
// triplicate→triplic, formative→form, hopeful→hope, goodness→good.
func (p *porterState[T]) step3() {
	switch p.b[p.k] {
	case 'e':
		if p.ends("icate") {
			p.replace("ic")
		} else if p.ends("ative") {
			p.replace("")
		} else if p.ends("alize") {
			p.replace("al")
		}
	case 'i':
		if p.ends("iciti") {
			p.replace("ic")
		}
	case 'l':
		if p.ends("ical") {
			p.replace("ic")
		} else if p.ends("ful") {
			p.replace("")
		}
	case 's':
		if p.ends("ness") {
			p.replace("")
		}
	}
}

// step4 removes -ant, -ence and the other residual suffixes when the stem
// has m() > 1: revival→reviv, adjustment→adjust, adoption→adopt.
func (p *porterState[T]) step4() {
	if p.k == 0 {
		return
	}
	var ok bool
	switch p.b[p.k-1] {
	case 'a':
		ok = p.ends("al")
	case 'c':
		ok = p.ends("ance") || p.ends("ence")
	case 'e':
		ok = p.ends("er")
	case 'i':
		ok = p.ends("ic")
	case 'l':
		ok = p.ends("able") || p.ends("ible")
	case 'n':
		ok = p.ends("ant") || p.ends("ement") || p.ends("ment") || p.ends("ent")
	case 'o':
		// -ion only after s or t; -ou covers -ous once step 1 ran.
		ok = p.ends("ion") && p.j >= 0 && (p.b[p.j] == 's' || p.b[p.j] == 't') || p.ends("ou")
	case 's':
		ok = p.ends("ism")
	case 't':
		ok = p.ends("ate") || p.ends("iti")
	case 'u':
		ok = p.ends("ous")
	case 'v':
		ok = p.ends("ive")
	case 'z':
		ok = p.ends("ize")
	}
	if ok && p.m() > 1 {
		p.k = p.j
	}
}

// step5 removes a final e (step 5a: probate→probat, rate→rate,
// cease→ceas) and undoubles a final ll (step 5b: controll→control,
// roll→roll). Both measure the word as it was on entry.
func (p *porterState[T]) step5() {
	p.j = p.k
	if p.b[p.k] == 'e' {
		if a := p.m(); a > 1 || a == 1 && !p.cvc(p.k-1) {
			p.k--
		}
	}
	if p.b[p.k] == 'l' && p.doubleC(p.k) && p.m() > 1 {
		p.k--
	}
}

// Stem returns the Porter stem of a lowercase word.
//
// It is the stemmer Analyze applies to every term; words of fewer than three
// characters are returned unchanged. Stem does not allocate when the word is
// its own stem.
func Stem(word string) string {
	if len(word) < 3 {
		return word
	}
	var buf [64]byte
	var b []byte
	if isASCIIString(word) {
		b = append(buf[:0], word...)
		b = b[:porterStem(b)]
	} else {
		b = stemUTF16(append(buf[:0], word...))
	}
	if string(b) == word {
		return word
	}
	return string(b)
}

// stemUTF16 stems a word that contains non-ASCII characters in place, as
// Lucene does, on its UTF-16 code units, and returns the stem.
func stemUTF16(word []byte) []byte {
	var ubuf [maxTokenUnits + 1]uint16
	u := ubuf[:0]
	for _, r := range string(word) {
		u = utf16.AppendRune(u, r)
	}
	u = u[:porterStem(u)]
	out := word[:0] // the code units are in ubuf, so word can be overwritten

	for i := 0; i < len(u); i++ {
		r := rune(u[i])
		if utf16.IsSurrogate(r) && i+1 < len(u) {
			if d := utf16.DecodeRune(r, rune(u[i+1])); d != utf8.RuneError {
				r = d
				i++
			}
		}
		out = utf8.AppendRune(out, r)
	}
	return out
}

// isASCIIString reports whether s has only ASCII characters.
func isASCIIString(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
