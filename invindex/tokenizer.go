package invindex

import (
	"strings"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
)

// This file implements the tokenizer of the lexical channel: a hand-written
// scanner that follows the grammar of Lucene's StandardTokenizer, which is
// itself the word-boundary algorithm of Unicode Standard Annex #29 (UAX #29)
// plus rules that keep emoji sequences and runs of South-East-Asian script
// together. Matching it closely is what lets the lexical channel reproduce
// the BM25 numbers published for Lucene-based systems such as Anserini.
//
// A token is one of:
//
//   - a word: letters and digits joined by the UAX #29 rules. Letters join
//     letters across one MidLetter, MidNumLet or single quote ("don't",
//     "e.g", "O'Neil"); digits join digits across one MidNum, MidNumLet or
//     single quote ("3.14", "1,000"); letters and digits join directly
//     ("covid19", "h1n1"); Katakana joins Katakana; connector punctuation
//     (ExtendNumLet: "_" and the other Pc characters) joins all of these
//     ("snake_case", "__init__") and is kept at the ends of a word.
//   - a run of Thai, Lao, Myanmar, Khmer or other Line_Break=Complex_Context
//     characters, which UAX #29 cannot split without a dictionary;
//   - a single Han ideograph or a single Hiragana character;
//   - an emoji sequence: an emoji with its modifiers and presentation
//     selector, several of those joined by ZERO WIDTH JOINER, a keycap
//     sequence or a flag (a pair of regional indicators).
//
// Combining marks, format characters and ZWJ (UAX #29 Extend, Format and
// ZWJ) are attached to the character before them (rule WB4). Everything else
// — whitespace, punctuation, symbols, unassigned code points and invalid
// UTF-8 bytes — separates tokens and is dropped.
//
// Tokens longer than maxTokenUnits UTF-16 code units are split, as Lucene
// splits them at its default maxTokenLength of 255: the token ends at the
// longest match that fits and scanning resumes right after it.
//
// Approximations. Go's standard library has no Word_Break, Line_Break or
// emoji property tables, so the classes are derived from general categories,
// scripts and binary properties, with explicit lists where UAX #29 names
// code points. Lucene 8 and 9 compile their grammar against Unicode 9; the
// lists follow Unicode 9 where it differs from later versions.
//
//   - ALetter: letters (L*), letter numbers (Nl), the non-mark
//     Other_Alphabetic characters (circled letters and the like), U+05F3 and
//     the iteration marks U+3005, U+303B, U+16FE3, minus Ideographic
//     characters and the scripts below. Hangul is ALetter.
//   - Hebrew_Letter: letters of the Hebrew script.
//   - Numeric: decimal digits (Nd) plus U+066B.
//   - Katakana: the Katakana script plus U+3031–U+3035, U+309B, U+309C,
//     U+30A0, U+30FC and U+FF70.
//   - Han and Hiragana: the Han and Hiragana scripts.
//   - Complex_Context: letters and marks of the Thai, Lao, Myanmar, Khmer,
//     Tai Le, New Tai Lue, Tai Tham, Tai Viet and Ahom scripts, and the few
//     symbols of those scripts listed in seaExtra.
//   - Extend and Format: marks (Mn, Me, Mc), Other_Grapheme_Extend and
//     format characters (Cf) except ZERO WIDTH SPACE; ZWJ is its own class.
//   - MidLetter, MidNumLet, MidNum, ExtendNumLet (Pc and U+202F) and the
//     quotes: explicit lists (U+02D7 is MidLetter as in Unicode 9).
//   - Emoji: Extended_Pictographic and Emoji_Modifier_Base as of Unicode 15
//     (emoji-data.txt), the skin-tone modifiers U+1F3FB–U+1F3FF (a class of
//     their own, as in Unicode 9) and the regional indicators.
//
// This was checked against Lucene 8.7's StandardTokenizer and
// EnglishAnalyzer: the output is identical for every code point assigned in
// Unicode 9 (except U+111C9) on its own and between letters, digits and
// Katakana, for all of SciFact (corpus and queries), and for 700,000 random
// lines mixing the classes above, including over-long tokens. What remains
// different is text with characters assigned after Unicode 9 (Go 1.26 ships
// Unicode 15): Lucene drops those it has no class for, while this tokenizer
// classifies them by their current properties.

// maxTokenUnits is the longest token, in UTF-16 code units, that the
// tokenizer emits; longer tokens are split. It is Lucene's default
// StandardTokenizer maxTokenLength, counted the way Java counts string length.
const maxTokenUnits = 255

// wbClass is the word-break class of a character, as the tokenizer sees it.
type wbClass uint8

const (
	wbOther        wbClass = iota // separates tokens
	wbALetter                     // letters of alphabetic scripts (and Hangul)
	wbHebrew                      // Hebrew_Letter
	wbNumeric                     // decimal digits
	wbKatakana                    // Katakana
	wbExtendNumLet                // connector punctuation such as '_'
	wbMidLetter                   // ':' and similar: joins letters only
	wbMidNumLet                   // '.' and '’': joins letters or digits
	wbMidNum                      // ',' ';' and similar: joins digits only
	wbSingleQuote                 // '\'': joins letters or digits
	wbDoubleQuote                 // '"': joins Hebrew letters only
	wbExtend                      // Extend and Format: attaches to the previous character
	wbZWJ                         // ZERO WIDTH JOINER: attaches, and joins emoji
	wbHan                         // Han ideograph: one token each
	wbHiragana                    // Hiragana: one token each
	wbSEA                         // Complex_Context letter: runs form one token
	wbSEAMark                     // Complex_Context mark: starts a run, else attaches
	wbEmoji                       // Extended_Pictographic
	wbEmojiModBase                // Extended_Pictographic and Emoji_Modifier_Base
	wbEmojiMod                    // emoji skin-tone modifier
	wbRegional                    // regional indicator (flag half)
	wbKeycapBase                  // '#' and '*', which start keycap emoji
)

// asciiClass classifies the ASCII characters; it is the tokenizer's fast path.
// It is indexed by any byte (so that lookups need no bounds check); bytes
// from 0x80 up are multi-byte sequences and map to wbOther here.
var asciiClass = func() (t [256]wbClass) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = wbALetter
		t[c-'a'+'A'] = wbALetter
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = wbNumeric
	}
	t['_'] = wbExtendNumLet
	t[':'] = wbMidLetter
	t['.'] = wbMidNumLet
	t[','] = wbMidNum
	t[';'] = wbMidNum
	t['\''] = wbSingleQuote
	t['"'] = wbDoubleQuote
	t['#'] = wbKeycapBase
	t['*'] = wbKeycapBase
	return t
}()

// bmpPages caches classifyRune for the Basic Multilingual Plane, in pages of
// 256 code points built on first use (about 25µs each), so that text in one
// script pays only for its own pages and programs that never see non-ASCII
// text pay nothing. Concurrent builders of a page compute the same table,
// so the race between them is harmless.
var bmpPages [256]atomic.Pointer[[256]wbClass]

// wbRuneClass returns the class of a non-ASCII rune.
func wbRuneClass(r rune) wbClass {
	if r >= 0x10000 {
		return classifyRune(r)
	}
	page := bmpPages[r>>8].Load()
	if page == nil {
		page = new([256]wbClass)
		for lo := range rune(256) {
			if c := r&^0xFF | lo; c < utf8.RuneSelf {
				page[lo] = asciiClass[c]
			} else {
				page[lo] = classifyRune(c)
			}
		}
		bmpPages[r>>8].Store(page)
	}
	return page[r&0xFF]
}

// wbClassAt returns the class of the character at s[i] and its length in bytes.
// An invalid UTF-8 byte is a one-byte separator.
func wbClassAt(s string, i int) (wbClass, int) {
	if b := s[i]; b < utf8.RuneSelf {
		return asciiClass[b], 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && n == 1 {
		return wbOther, 1
	}
	return wbRuneClass(r), n
}

// utf16Units returns how many UTF-16 code units the character encoded in n
// UTF-8 bytes occupies: two for a supplementary character, else one.
func utf16Units(n int) int {
	if n == 4 {
		return 2
	}
	return 1
}

// seaScripts are the scripts whose letters and marks have
// Line_Break=Complex_Context.
var seaScripts = []*unicode.RangeTable{
	unicode.Thai, unicode.Lao, unicode.Myanmar, unicode.Khmer,
	unicode.Tai_Le, unicode.New_Tai_Lue, unicode.Tai_Tham, unicode.Tai_Viet,
	unicode.Ahom,
}

// seaExtra lists the symbols and punctuation of the Complex_Context scripts
// that have Line_Break=Complex_Context too.
var seaExtra = &unicode.RangeTable{
	R16: []unicode.Range16{
		{Lo: 0x109E, Hi: 0x109F, Stride: 1},
		{Lo: 0x19DA, Hi: 0x19DA, Stride: 1},
		{Lo: 0x19DE, Hi: 0x19DF, Stride: 1},
		{Lo: 0x1AA0, Hi: 0x1AAD, Stride: 1},
		{Lo: 0xAA77, Hi: 0xAA79, Stride: 1},
		{Lo: 0xAADE, Hi: 0xAADF, Stride: 1},
	},
	R32: []unicode.Range32{
		{Lo: 0x1173A, Hi: 0x1173B, Stride: 1},
		{Lo: 0x1173F, Hi: 0x1173F, Stride: 1},
	},
}

// extPict is the Extended_Pictographic property of Unicode 15
// (emoji-data.txt), which Lucene's emoji rule is built on.
var extPict = &unicode.RangeTable{
	R16: []unicode.Range16{
		{Lo: 0x00A9, Hi: 0x00A9, Stride: 1},
		{Lo: 0x00AE, Hi: 0x00AE, Stride: 1},
		{Lo: 0x203C, Hi: 0x203C, Stride: 1},
		{Lo: 0x2049, Hi: 0x2049, Stride: 1},
		{Lo: 0x2122, Hi: 0x2122, Stride: 1},
		{Lo: 0x2139, Hi: 0x2139, Stride: 1},
		{Lo: 0x2194, Hi: 0x2199, Stride: 1},
		{Lo: 0x21A9, Hi: 0x21AA, Stride: 1},
		{Lo: 0x231A, Hi: 0x231B, Stride: 1},
		{Lo: 0x2328, Hi: 0x2328, Stride: 1},
		{Lo: 0x2388, Hi: 0x2388, Stride: 1},
		{Lo: 0x23CF, Hi: 0x23CF, Stride: 1},
		{Lo: 0x23E9, Hi: 0x23F3, Stride: 1},
		{Lo: 0x23F8, Hi: 0x23FA, Stride: 1},
		{Lo: 0x24C2, Hi: 0x24C2, Stride: 1},
		{Lo: 0x25AA, Hi: 0x25AB, Stride: 1},
		{Lo: 0x25B6, Hi: 0x25B6, Stride: 1},
		{Lo: 0x25C0, Hi: 0x25C0, Stride: 1},
		{Lo: 0x25FB, Hi: 0x25FE, Stride: 1},
		{Lo: 0x2600, Hi: 0x2605, Stride: 1},
		{Lo: 0x2607, Hi: 0x2612, Stride: 1},
		{Lo: 0x2614, Hi: 0x2685, Stride: 1},
		{Lo: 0x2690, Hi: 0x2705, Stride: 1},
		{Lo: 0x2708, Hi: 0x2712, Stride: 1},
		{Lo: 0x2714, Hi: 0x2714, Stride: 1},
		{Lo: 0x2716, Hi: 0x2716, Stride: 1},
		{Lo: 0x271D, Hi: 0x271D, Stride: 1},
		{Lo: 0x2721, Hi: 0x2721, Stride: 1},
		{Lo: 0x2728, Hi: 0x2728, Stride: 1},
		{Lo: 0x2733, Hi: 0x2734, Stride: 1},
		{Lo: 0x2744, Hi: 0x2744, Stride: 1},
		{Lo: 0x2747, Hi: 0x2747, Stride: 1},
		{Lo: 0x274C, Hi: 0x274C, Stride: 1},
		{Lo: 0x274E, Hi: 0x274E, Stride: 1},
		{Lo: 0x2753, Hi: 0x2755, Stride: 1},
		{Lo: 0x2757, Hi: 0x2757, Stride: 1},
		{Lo: 0x2763, Hi: 0x2767, Stride: 1},
		{Lo: 0x2795, Hi: 0x2797, Stride: 1},
		{Lo: 0x27A1, Hi: 0x27A1, Stride: 1},
		{Lo: 0x27B0, Hi: 0x27B0, Stride: 1},
		{Lo: 0x27BF, Hi: 0x27BF, Stride: 1},
		{Lo: 0x2934, Hi: 0x2935, Stride: 1},
		{Lo: 0x2B05, Hi: 0x2B07, Stride: 1},
		{Lo: 0x2B1B, Hi: 0x2B1C, Stride: 1},
		{Lo: 0x2B50, Hi: 0x2B50, Stride: 1},
		{Lo: 0x2B55, Hi: 0x2B55, Stride: 1},
		{Lo: 0x3030, Hi: 0x3030, Stride: 1},
		{Lo: 0x303D, Hi: 0x303D, Stride: 1},
		{Lo: 0x3297, Hi: 0x3297, Stride: 1},
		{Lo: 0x3299, Hi: 0x3299, Stride: 1},
	},
	R32: []unicode.Range32{
		{Lo: 0x1F000, Hi: 0x1F0FF, Stride: 1},
		{Lo: 0x1F10D, Hi: 0x1F10F, Stride: 1},
		{Lo: 0x1F12F, Hi: 0x1F12F, Stride: 1},
		{Lo: 0x1F16C, Hi: 0x1F171, Stride: 1},
		{Lo: 0x1F17E, Hi: 0x1F17F, Stride: 1},
		{Lo: 0x1F18E, Hi: 0x1F18E, Stride: 1},
		{Lo: 0x1F191, Hi: 0x1F19A, Stride: 1},
		{Lo: 0x1F1AD, Hi: 0x1F1E5, Stride: 1},
		{Lo: 0x1F201, Hi: 0x1F20F, Stride: 1},
		{Lo: 0x1F21A, Hi: 0x1F21A, Stride: 1},
		{Lo: 0x1F22F, Hi: 0x1F22F, Stride: 1},
		{Lo: 0x1F232, Hi: 0x1F23A, Stride: 1},
		{Lo: 0x1F23C, Hi: 0x1F23F, Stride: 1},
		{Lo: 0x1F249, Hi: 0x1F3FA, Stride: 1},
		{Lo: 0x1F400, Hi: 0x1F53D, Stride: 1},
		{Lo: 0x1F546, Hi: 0x1F64F, Stride: 1},
		{Lo: 0x1F680, Hi: 0x1F6FF, Stride: 1},
		{Lo: 0x1F774, Hi: 0x1F77F, Stride: 1},
		{Lo: 0x1F7D5, Hi: 0x1F7FF, Stride: 1},
		{Lo: 0x1F80C, Hi: 0x1F80F, Stride: 1},
		{Lo: 0x1F848, Hi: 0x1F84F, Stride: 1},
		{Lo: 0x1F85A, Hi: 0x1F85F, Stride: 1},
		{Lo: 0x1F888, Hi: 0x1F88F, Stride: 1},
		{Lo: 0x1F8AE, Hi: 0x1F8FF, Stride: 1},
		{Lo: 0x1F90C, Hi: 0x1F93A, Stride: 1},
		{Lo: 0x1F93C, Hi: 0x1F945, Stride: 1},
		{Lo: 0x1F947, Hi: 0x1FFFD, Stride: 1},
	},
	LatinOffset: 2,
}

// emojiModBase is the Emoji_Modifier_Base property of Unicode 15: the emoji
// that take a skin-tone modifier.
var emojiModBase = &unicode.RangeTable{
	R16: []unicode.Range16{
		{Lo: 0x261D, Hi: 0x261D, Stride: 1},
		{Lo: 0x26F9, Hi: 0x26F9, Stride: 1},
		{Lo: 0x270A, Hi: 0x270D, Stride: 1},
	},
	R32: []unicode.Range32{
		{Lo: 0x1F385, Hi: 0x1F385, Stride: 1},
		{Lo: 0x1F3C2, Hi: 0x1F3C4, Stride: 1},
		{Lo: 0x1F3C7, Hi: 0x1F3C7, Stride: 1},
		{Lo: 0x1F3CA, Hi: 0x1F3CC, Stride: 1},
		{Lo: 0x1F442, Hi: 0x1F443, Stride: 1},
		{Lo: 0x1F446, Hi: 0x1F450, Stride: 1},
		{Lo: 0x1F466, Hi: 0x1F478, Stride: 1},
		{Lo: 0x1F47C, Hi: 0x1F47C, Stride: 1},
		{Lo: 0x1F481, Hi: 0x1F483, Stride: 1},
		{Lo: 0x1F485, Hi: 0x1F487, Stride: 1},
		{Lo: 0x1F48F, Hi: 0x1F48F, Stride: 1},
		{Lo: 0x1F491, Hi: 0x1F491, Stride: 1},
		{Lo: 0x1F4AA, Hi: 0x1F4AA, Stride: 1},
		{Lo: 0x1F574, Hi: 0x1F575, Stride: 1},
		{Lo: 0x1F57A, Hi: 0x1F57A, Stride: 1},
		{Lo: 0x1F590, Hi: 0x1F590, Stride: 1},
		{Lo: 0x1F595, Hi: 0x1F596, Stride: 1},
		{Lo: 0x1F645, Hi: 0x1F647, Stride: 1},
		{Lo: 0x1F64B, Hi: 0x1F64F, Stride: 1},
		{Lo: 0x1F6A3, Hi: 0x1F6A3, Stride: 1},
		{Lo: 0x1F6B4, Hi: 0x1F6B6, Stride: 1},
		{Lo: 0x1F6C0, Hi: 0x1F6C0, Stride: 1},
		{Lo: 0x1F6CC, Hi: 0x1F6CC, Stride: 1},
		{Lo: 0x1F90C, Hi: 0x1F90C, Stride: 1},
		{Lo: 0x1F90F, Hi: 0x1F90F, Stride: 1},
		{Lo: 0x1F918, Hi: 0x1F91F, Stride: 1},
		{Lo: 0x1F926, Hi: 0x1F926, Stride: 1},
		{Lo: 0x1F930, Hi: 0x1F939, Stride: 1},
		{Lo: 0x1F93C, Hi: 0x1F93E, Stride: 1},
		{Lo: 0x1F977, Hi: 0x1F977, Stride: 1},
		{Lo: 0x1F9B5, Hi: 0x1F9B6, Stride: 1},
		{Lo: 0x1F9B8, Hi: 0x1F9B9, Stride: 1},
		{Lo: 0x1F9BB, Hi: 0x1F9BB, Stride: 1},
		{Lo: 0x1F9CD, Hi: 0x1F9CF, Stride: 1},
		{Lo: 0x1F9D1, Hi: 0x1F9DD, Stride: 1},
		{Lo: 0x1FAC3, Hi: 0x1FAC5, Stride: 1},
		{Lo: 0x1FAF0, Hi: 0x1FAF8, Stride: 1},
	},
}

// classifyRune derives the word-break class of a non-ASCII rune from the
// Unicode tables of the standard library; see the approximations above.
// The order of the tests matters: explicit code points first, then marks
// (which must attach rather than start words), then scripts with special
// treatment, then letters, then emoji.
func classifyRune(r rune) wbClass {
	switch r {
	case 0x00B7, 0x0387, 0x05F4, 0x2027, 0xFE13, 0xFE55, 0xFF1A,
		0x02D7: // MODIFIER LETTER MINUS SIGN, MidLetter until Unicode 10
		return wbMidLetter
	case 0x2018, 0x2019, 0x2024, 0xFE52, 0xFF07, 0xFF0E:
		return wbMidNumLet
	case 0x037E, 0x0589, 0x060C, 0x060D, 0x066C, 0x07F8, 0x2044,
		0xFE10, 0xFE14, 0xFE50, 0xFE54, 0xFF0C, 0xFF1B:
		return wbMidNum
	case 0x202F: // NARROW NO-BREAK SPACE joins Mongolian suffixes
		return wbExtendNumLet
	case 0x200D:
		return wbZWJ
	case 0x200B: // ZERO WIDTH SPACE is Cf but breaks words
		return wbOther
	case 0x066B: // ARABIC DECIMAL SEPARATOR
		return wbNumeric
	case 0x3031, 0x3032, 0x3033, 0x3034, 0x3035, 0x309B, 0x309C, 0x30A0, 0x30FC, 0xFF70:
		return wbKatakana
	case 0x3005, 0x303B, 0x16FE3: // iteration marks: Han script, but ALetter
		return wbALetter
	case 0x05F3: // HEBREW PUNCTUATION GERESH
		return wbALetter
	case 0x1CF2, 0x1CF3: // Vedic signs, spacing marks (Extend) until Unicode 10
		return wbExtend
	}
	switch {
	case r >= 0x1F3FB && r <= 0x1F3FF:
		return wbEmojiMod
	case r >= 0x1F1E6 && r <= 0x1F1FF:
		return wbRegional
	}
	isLetter := unicode.IsLetter(r)
	isMark := unicode.IsMark(r)
	if (isLetter || isMark) && unicode.IsOneOf(seaScripts, r) && r != 0x1A7F {
		if isLetter {
			return wbSEA
		}
		return wbSEAMark
	}
	if unicode.Is(seaExtra, r) {
		return wbSEA
	}
	if isMark || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Other_Grapheme_Extend, r) {
		return wbExtend
	}
	if unicode.Is(unicode.Nd, r) {
		return wbNumeric
	}
	if unicode.Is(unicode.Pc, r) {
		return wbExtendNumLet
	}
	if unicode.Is(unicode.Han, r) {
		return wbHan
	}
	if unicode.Is(unicode.Hiragana, r) {
		return wbHiragana
	}
	if unicode.Is(unicode.Katakana, r) {
		return wbKatakana
	}
	if isLetter && unicode.Is(unicode.Hebrew, r) {
		return wbHebrew
	}
	if (isLetter || unicode.Is(unicode.Nl, r) || unicode.Is(unicode.Other_Alphabetic, r)) &&
		!unicode.Is(unicode.Ideographic, r) {
		return wbALetter
	}
	if unicode.Is(extPict, r) {
		if unicode.Is(emojiModBase, r) {
			return wbEmojiModBase
		}
		return wbEmoji
	}
	return wbOther
}

// wbAttaches reports whether a character of class c attaches to the character
// before it inside a token (UAX #29 WB4: Extend, Format, ZWJ).
func wbAttaches(c wbClass) bool {
	return c == wbExtend || c == wbZWJ || c == wbSEAMark
}

// tokenScanner splits a string into tokens; see the file comment for the rules.
// The zero value with s set scans s from the start.
type tokenScanner struct {
	s   string
	pos int
	// noWordBefore is a position before which a connector does not begin
	// a word, learned from a failed word scan.
	noWordBefore int
}

// next returns the byte range [start, end) of the next token and whether the
// token is pure ASCII, or ok=false when the text is exhausted.
func (sc *tokenScanner) next() (start, end int, ascii, ok bool) {
	s := sc.s
	i := sc.pos
	for i < len(s) {
		var c wbClass
		n := 1
		if b := s[i]; b < utf8.RuneSelf {
			c = asciiClass[b]
			switch c {
			case wbOther, wbMidLetter, wbMidNumLet, wbMidNum, wbSingleQuote, wbDoubleQuote:
				i++
				continue
			}
		} else {
			c, n = wbClassAt(s, i)
		}
		switch c {
		case wbALetter, wbHebrew, wbNumeric, wbKatakana, wbExtendNumLet:
			if c == wbExtendNumLet && i < sc.noWordBefore {
				i += n
				continue
			}
			e, asc, found, stop, limited := scanWord(s, i)
			if found {
				if n > 1 && isPictLetter(s[i:]) {
					// Both the word and the emoji rule apply; Lucene takes
					// the longer match.
					e = max(e, emojiToken(s, i))
				}
				sc.pos = e
				return i, e, asc, true
			}
			// A run of connectors and marks with no word character in
			// reach. Lucene drops its first character and scans again from
			// the next one, where a mark may begin another kind of token
			// (Complex_Context, emoji after ZWJ). A connector begins a word
			// only from noWordBefore on; until then it fails the same way.
			if limited {
				sc.noWordBefore = connectorRunBound(s, i)
			} else {
				sc.noWordBefore = stop
			}
			i += n
		case wbSEA, wbSEAMark:
			e := scanRun(s, i, true)
			sc.pos = e
			return i, e, false, true
		case wbHan, wbHiragana:
			e := scanRun(s, i, false)
			sc.pos = e
			return i, e, false, true
		case wbEmoji, wbEmojiModBase, wbEmojiMod, wbZWJ, wbRegional, wbKeycapBase:
			if e := emojiToken(s, i); e > i {
				sc.pos = e
				return i, e, false, true
			}
			i += n
		default:
			i += n
		}
	}
	sc.pos = len(s)
	return 0, 0, false, false
}

// Word scanner states: what the word ends with so far, which decides what
// may follow. Lucene's grammar writes a word as a sequence of groups — a
// chain of letters joined by ExtendNumLet or single mid punctuation, a chain
// of digits likewise, a Katakana chain, or a Hebrew letter followed by a
// single quote (WB7a) or by a double quote and another Hebrew letter (WB7b,
// WB7c) — with connectors between groups. The states track that grammar.
const (
	wsConnector   = iota // start of word, or after ExtendNumLet
	wsLetter             // after ALetter
	wsHebrew             // after a Hebrew_Letter that can start a group
	wsHebrewChain        // after a Hebrew_Letter joined by mid punctuation
	wsNumber             // after Numeric
	wsKatakana           // after Katakana
	wsGroupEnd           // after Hebrew_Letter Single_Quote, or Hebrew " Hebrew
)

// wordStep returns the state after a core character of class c (ALetter,
// Hebrew_Letter, Numeric, Katakana or ExtendNumLet) directly follows state
// st, and whether the two stay in one word (UAX #29 WB5, WB8, WB9, WB10,
// WB13, WB13a, WB13b).
func wordStep(st int, c wbClass) (int, bool) {
	switch c {
	case wbExtendNumLet:
		return wsConnector, true
	case wbKatakana:
		return wsKatakana, st == wsConnector || st == wsKatakana
	}
	if st == wsKatakana {
		return st, false
	}
	switch c {
	case wbALetter:
		return wsLetter, true
	case wbHebrew:
		return wsHebrew, true
	default: // wbNumeric
		return wsNumber, true
	}
}

// scanWord scans a word that starts at s[start], a core character. It
// returns the end of the longest word that fits in maxTokenUnits and whether
// it is pure ASCII. A run of connectors (and marks) that reaches no letter,
// digit or Katakana is not a word: then found is false, and stop is where
// the scan stopped, limited telling whether it was for the length limit.
func scanWord(s string, start int) (end int, ascii, found bool, stop int, limited bool) {
	st := wsConnector
	ascii = true
	units := 0
	i := start
	for i < len(s) {
		// Fast path: a run of ASCII letters and digits.
		if st != wsKatakana {
			j := i
			limit := min(len(s), i+maxTokenUnits-units)
			last := wbOther
			for j < limit {
				c := asciiClass[s[j]]
				if c != wbALetter && c != wbNumeric {
					break
				}
				last = c
				j++
			}
			if j > i {
				units += j - i
				i = j
				end = i
				found = true
				if last == wbALetter {
					st = wsLetter
				} else {
					st = wsNumber
				}
				if i >= len(s) {
					break
				}
			}
		}

		c, n := wbClassAt(s, i)
		u := utf16Units(n)
		switch c {
		case wbExtend, wbZWJ, wbSEAMark:
			// WB4: marks attach without changing the state.
			if units+u > maxTokenUnits {
				return end, ascii, found, i, true
			}
			units += u
			i += n
			ascii = false
			if found {
				end = i
			}
			continue

		case wbALetter, wbHebrew, wbNumeric, wbKatakana, wbExtendNumLet:
			next, ok := wordStep(st, c)
			if !ok {
				return end, ascii, found, i, false
			}
			if units+u > maxTokenUnits {
				return end, ascii, found, i, true
			}
			units += u
			i += n
			if n > 1 {
				ascii = false
			}
			st = next
			if c != wbExtendNumLet {
				found = true
			}
			if found {
				end = i
			}
			continue

		case wbMidLetter, wbMidNumLet, wbMidNum, wbSingleQuote, wbDoubleQuote:
			// The punctuation joins only if the right kind of character
			// follows it, after any marks.
			j := i + n
			mu := u
			for j < len(s) {
				c2, n2 := wbClassAt(s, j)
				if !wbAttaches(c2) {
					break
				}
				j += n2
				mu += utf16Units(n2)
			}
			nextClass, nn := wbOther, 0
			if j < len(s) {
				nextClass, nn = wbClassAt(s, j)
			}
			if st == wsHebrew && c == wbSingleQuote && units+u <= maxTokenUnits {
				// WB7a: Hebrew_Letter × Single_Quote. Taking the quote as
				// the end of a group also covers WB6/WB7 for what follows.
				units += u
				i += n
				end = i
				st = wsGroupEnd
				continue
			}
			joins := false
			nextState := wsLetter
			switch st {
			case wsLetter, wsHebrew, wsHebrewChain:
				joins = (c == wbMidLetter || c == wbMidNumLet || c == wbSingleQuote) &&
					(nextClass == wbALetter || nextClass == wbHebrew)
				if nextClass == wbHebrew {
					nextState = wsHebrewChain
				}
				if st == wsHebrew && c == wbDoubleQuote {
					// WB7b, WB7c: Hebrew_Letter " Hebrew_Letter.
					joins = nextClass == wbHebrew
					nextState = wsGroupEnd
				}
			case wsNumber:
				joins = (c == wbMidNum || c == wbMidNumLet || c == wbSingleQuote) &&
					nextClass == wbNumeric
				nextState = wsNumber
			}
			if joins && units+mu+utf16Units(nn) <= maxTokenUnits {
				if j+nn-i != 2 {
					// Two bytes are two ASCII characters; more means a
					// multi-byte mid, mark or letter.
					ascii = false
				}
				units += mu + utf16Units(nn)
				i = j + nn
				end = i
				st = nextState
				continue
			}
			return end, ascii, found, i, false

		default:
			return end, ascii, found, i, false
		}
	}
	return end, ascii, found, i, false
}

// connectorRunBound is called when a word scan from start, a connector,
// hit the length limit before any letter, digit or Katakana: the run of
// connectors and marks is longer than a token. It returns the first position
// from which a connector could still begin a word — where the rest of the
// run and the character after it fit in a token, or the end of the run if
// no word character follows it. It looks at no more than two token lengths
// of the run, returning a position at least a token length further when the
// run goes on, so that long runs cost linear time overall.
func connectorRunBound(s string, start int) int {
	_, n := wbClassAt(s, start)
	j := start + n
	units := utf16Units(n)
	safe := -1
	for j < len(s) {
		c, n := wbClassAt(s, j)
		if c != wbExtendNumLet && !wbAttaches(c) {
			break
		}
		if units >= maxTokenUnits && safe < 0 {
			safe = j
		}
		if units >= 2*maxTokenUnits {
			// Starts before safe are more than a token away from the end
			// of the run.
			return safe
		}
		units += utf16Units(n)
		j += n
	}
	if j < len(s) {
		if c, n := wbClassAt(s, j); c == wbALetter || c == wbHebrew || c == wbNumeric || c == wbKatakana {
			total := units + utf16Units(n)
			p := start
			for p < j && total > maxTokenUnits {
				_, np := wbClassAt(s, p)
				total -= utf16Units(np)
				p += np
			}
			return p
		}
	}
	return j
}

// scanRun scans a single Han or Hiragana character (sea=false) or a run of
// Complex_Context characters (sea=true), with the marks attached to them,
// up to maxTokenUnits.
func scanRun(s string, start int, sea bool) int {
	_, n := wbClassAt(s, start)
	i := start + n
	units := utf16Units(n)
	for i < len(s) {
		c, n := wbClassAt(s, i)
		if !wbAttaches(c) && !(sea && c == wbSEA) {
			break
		}
		if units+utf16Units(n) > maxTokenUnits {
			break
		}
		units += utf16Units(n)
		i += n
	}
	return i
}

const (
	textPresSel  = "\uFE0E"
	emojiPresSel = "\uFE0F"
	zwjSeq       = "\u200D"
	keycapMark   = "\u20E3"
)

// scanEmoji returns the end of the emoji sequence starting at s[start], or
// start if there is none. It recognises Lucene's emoji rule: emoji elements
// (an Extended_Pictographic character with its marks and an optional U+FE0F,
// or a modifier sequence) joined by ZWJ, keycap sequences ('#', '*' with
// U+20E3; digit keycaps come out of the word rule identically) and pairs of
// regional indicators.
func scanEmoji(s string, start int) int {
	c, n := wbClassAt(s, start)
	switch c {
	case wbRegional:
		i := skipAttached(s, start+n, false)
		if i < len(s) {
			if c2, n2 := wbClassAt(s, i); c2 == wbRegional {
				return skipAttached(s, i+n2, false)
			}
		}
		return start
	case wbKeycapBase:
		// base, marks, then either U+FE0F U+20E3 and marks, or marks that
		// include a U+20E3 (which is itself a mark).
		i := skipAttached(s, start+1, true)
		if hasPrefixAt(s, i, emojiPresSel+keycapMark) {
			return skipAttached(s, i+len(emojiPresSel+keycapMark), true)
		}
		if strings.Contains(s[start+1:i], keycapMark) {
			return i
		}
		return start
	}
	end := emojiElement(s, start)
	if end == start {
		return start
	}
	for end < len(s) {
		// The joiner is either still ahead or was taken in as a mark.
		at := end
		if hasPrefixAt(s, end, zwjSeq) {
			at += len(zwjSeq)
		} else if !endsWithZWJ(s[start:end]) {
			break
		}
		e := emojiElement(s, at)
		if e == at {
			break
		}
		end = e
	}
	return end
}

// emojiElement returns the end of one emoji element at s[i], or i if there
// is none. An element is an Extended_Pictographic character with its marks
// and an optional U+FE0F, or a modifier sequence: an Emoji_Modifier_Base
// character (with its marks) and a skin-tone modifier, or a modifier alone.
// ZWJ characters may precede the element unless it is a lone modifier.
func emojiElement(s string, i int) int {
	p := i
	for hasPrefixAt(s, p, zwjSeq) {
		p += len(zwjSeq)
	}
	if p >= len(s) {
		return i
	}
	c, n := wbClassAt(s, p)
	switch {
	case c == wbEmojiMod && p == i:
		return skipAttached(s, p+n, true)
	case c == wbEmojiModBase:
		p = skipAttached(s, p+n, true)
		if p < len(s) {
			if c2, n2 := wbClassAt(s, p); c2 == wbEmojiMod {
				return skipAttached(s, p+n2, true)
			}
		}
	case c == wbEmoji || isPictLetter(s[p:]):
		p = skipAttached(s, p+n, true)
	default:
		return i
	}
	if hasPrefixAt(s, p, emojiPresSel) {
		p += len(emojiPresSel)
	}
	return p
}

// isPictLetter reports whether s starts with one of the few letters that are
// also Extended_Pictographic (ℹ, Ⓜ, 🅰, 🅱, 🅾, 🅿). They start words, but
// also emoji sequences.
func isPictLetter(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	switch r {
	case 0x2139, 0x24C2, 0x1F170, 0x1F171, 0x1F17E, 0x1F17F:
		return true
	}
	return false
}

// skipAttached skips attached characters from s[i]; with sansPresentation it
// stops at the presentation selectors U+FE0E and U+FE0F, which the emoji
// rule treats separately.
func skipAttached(s string, i int, sansPresentation bool) int {
	for i < len(s) {
		if sansPresentation && (hasPrefixAt(s, i, emojiPresSel) || hasPrefixAt(s, i, textPresSel)) {
			return i
		}
		c, n := wbClassAt(s, i)
		if !wbAttaches(c) {
			return i
		}
		i += n
	}
	return i
}

// hasPrefixAt reports whether s[i:] begins with p.
func hasPrefixAt(s string, i int, p string) bool {
	return len(s)-i >= len(p) && s[i:i+len(p)] == p
}

// endsWithZWJ reports whether s ends with ZERO WIDTH JOINER.
func endsWithZWJ(s string) bool {
	return len(s) >= len(zwjSeq) && s[len(s)-len(zwjSeq):] == zwjSeq
}

// emojiToken returns the end of the emoji token at s[i], or i if there is
// none. Lucene scans each token in a buffer of maxTokenUnits code units, so
// an emoji sequence whose required parts (the second regional indicator,
// the keycap mark, the emoji after a run of ZWJs) lie beyond that does not
// match; scanning within that window does the same. The window is computed
// only for long sequences, and the byte bound keeps the work per call
// constant however long a run of joiners or marks is.
func emojiToken(s string, i int) int {
	w := s[:min(len(s), i+3*maxTokenUnits)]
	e := scanEmoji(w, i)
	if e-i > maxTokenUnits {
		if we := tokenWindowEnd(w, i); e > we {
			e = scanEmoji(w[:we], i)
		}
	}
	return e
}

// tokenWindowEnd returns the end of the longest prefix of s[start:] that fits in
// maxTokenUnits UTF-16 code units. Lucene scans each token in a buffer of
// that size, so a token rule that needs more text than that does not match;
// scanning the emoji rule within s[:tokenWindowEnd(s, start)] does the same.
func tokenWindowEnd(s string, start int) int {
	units := 0
	i := start
	for i < len(s) {
		_, n := utf8.DecodeRuneInString(s[i:])
		if units+utf16Units(n) > maxTokenUnits {
			break
		}
		units += utf16Units(n)
		i += n
	}
	return i
}

// Tokenize appends the raw tokens (after tokenizer only, original case) —
// for tests and debugging.
//
// The tokens are substrings of text, so Tokenize allocates only to grow dst.
func Tokenize(text string, dst []string) []string {
	sc := tokenScanner{s: text}
	for {
		start, end, _, ok := sc.next()
		if !ok {
			return dst
		}
		dst = append(dst, text[start:end])
	}
}
