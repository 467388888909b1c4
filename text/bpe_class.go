package text

import (
	"sync"
	"unicode"
	"unicode/utf8"
)

// Rune classes of the BPE pre-tokenizers, one bit each. They are the
// character classes the tiktoken patterns are written in, taken from the same
// tables as the reference's regular expression engine (github.com/dlclark/regexp2
// uses Go's unicode package: \s is unicode.IsSpace, \p{..} the unicode
// category tables), so the two agree on every code point.
const (
	clsSpace  = 1 << iota // \s (unicode.IsSpace)
	clsNL                 // \r or \n
	clsLetter             // \p{L}
	clsNum                // \p{N}
	clsUp                 // \p{Lu} or \p{Lt}: upper-case only, in o200k's first letter class
	clsLow                // \p{Ll}: lower-case only, in o200k's second letter class
	clsBoth               // \p{Lm}, \p{Lo} or \p{M}: in both of o200k's letter classes
)

// Derived classes used by the patterns.
const (
	// clsX is o200k's [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}].
	clsX = clsUp | clsBoth
	// clsY is o200k's [\p{Ll}\p{Lm}\p{Lo}\p{M}].
	clsY = clsLow | clsBoth
	// notPre are the classes outside [^\r\n\p{L}\p{N}], the optional
	// character before a word.
	notPre = clsNL | clsLetter | clsNum
	// notPunct are the classes outside [^\s\p{L}\p{N}], punctuation and
	// symbols (combining marks included).
	notPunct = clsSpace | clsLetter | clsNum
)

// asciiClass holds the class of each ASCII byte.
var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for r := range rune(utf8.RuneSelf) {
		t[r] = computeClass(r)
	}
	return t
}()

// bmpClass holds the class of each code point of the Basic Multilingual
// Plane, built at the first load of a vocabulary (about 64 KB, a few
// milliseconds); code points above it are classified on each use.
var (
	bmpClass     *[0x10000]uint8
	bmpClassOnce sync.Once
)

func initBMPClass() {
	bmpClassOnce.Do(func() {
		t := new([0x10000]uint8)
		for r := range rune(0x10000) {
			t[r] = computeClass(r)
		}
		bmpClass = t
	})
}

// computeClass classifies r from the unicode tables.
func computeClass(r rune) uint8 {
	var c uint8
	if unicode.IsSpace(r) {
		c |= clsSpace
	}
	if r == '\r' || r == '\n' {
		c |= clsNL
	}
	switch {
	case r < utf8.RuneSelf:
		switch {
		case 'A' <= r && r <= 'Z':
			c |= clsLetter | clsUp
		case 'a' <= r && r <= 'z':
			c |= clsLetter | clsLow
		case '0' <= r && r <= '9':
			c |= clsNum
		}
	case unicode.IsLetter(r):
		c |= clsLetter
		switch {
		case unicode.Is(unicode.Lu, r) || unicode.Is(unicode.Lt, r):
			c |= clsUp
		case unicode.Is(unicode.Ll, r):
			c |= clsLow
		default: // Lm, Lo
			c |= clsBoth
		}
	case unicode.IsMark(r):
		c |= clsBoth
	case unicode.IsNumber(r):
		c |= clsNum
	}
	return c
}

// classAt returns the class and the size of the rune at s[i]. s must be
// valid UTF-8 (see [BPE.Count] for how invalid input is handled).
func classAt(s string, i int) (uint8, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	if r < 0x10000 {
		return bmpClass[r], size
	}
	return computeClass(r), size
}
