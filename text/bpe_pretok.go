package text

// The pre-tokenizers cut text into the pieces that BPE then encodes one by
// one. They are hand-written equivalents of tiktoken's regular expressions
// (Go's regexp has no look-ahead), reproducing the backtracking engine's
// choices: at each position the alternatives are tried in order and the first
// that matches wins, each with greedy quantifiers that give back characters
// one at a time until the rest of the alternative matches. Every character
// is matched by some alternative, so pieces are contiguous and cover the
// text. Each function returns the end of the piece that starts at s[i]
// (i < len(s)); s must be valid UTF-8.

// splitCL100k implements cl100k_base's pattern:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func splitCL100k(s string, i int) int {
	c0, n0 := classAt(s, i)
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if s[i] == '\'' {
		if n := contractionLen(s, i); n > 0 {
			return i + n
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if c0&clsLetter != 0 {
		return letterRun(s, i+n0)
	}
	if c0&notPre == 0 && i+n0 < len(s) {
		if c1, n1 := classAt(s, i+n0); c1&clsLetter != 0 {
			return letterRun(s, i+n0+n1)
		}
	}
	// \p{N}{1,3}
	if c0&clsNum != 0 {
		return numberRun(s, i+n0)
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
	if e := punctStart(s, i, c0, n0); e > i {
		e = punctRun(s, e)
		for e < len(s) && (s[e] == '\r' || s[e] == '\n') {
			e++
		}
		return e
	}
	return spaceRun(s, i)
}

// splitO200k implements o200k_base's pattern:
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
//	\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// In the words of clsX and clsY: pre? X* Y+ c? | pre? X+ Y* c? | ..., where
// pre is [^\r\n\p{L}\p{N}] and c a contraction. The optional pre is tried
// first with and then without the character, so the order of attempts is
// (1) pre X*Y+ (2) X*Y+ (3) pre X+Y* (4) X+Y*.
func splitO200k(s string, i int) int {
	c0, n0 := classAt(s, i)
	pre := c0&notPre == 0 && i+n0 < len(s)
	if pre {
		if e := matchXY(s, i+n0); e >= 0 {
			return e + contractionLen(s, e)
		}
	}
	if c0&(clsX|clsY) != 0 {
		if e := matchXY(s, i); e >= 0 {
			return e + contractionLen(s, e)
		}
	}
	if pre {
		if e := matchXplusY(s, i+n0); e >= 0 {
			return e + contractionLen(s, e)
		}
	}
	if c0&clsX != 0 {
		if e := matchXplusY(s, i); e >= 0 {
			return e + contractionLen(s, e)
		}
	}
	// \p{N}{1,3}
	if c0&clsNum != 0 {
		return numberRun(s, i+n0)
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n/]*'
	if e := punctStart(s, i, c0, n0); e > i {
		e = punctRun(s, e)
		for e < len(s) && (s[e] == '\r' || s[e] == '\n' || s[e] == '/') {
			e++
		}
		return e
	}
	return spaceRun(s, i)
}

// matchXY matches X*Y+ at s[a:] and returns its end, or -1. X* first takes
// the longest run of X; if a Y follows, Y+ takes the longest run of Y from
// there. Otherwise X* gives back characters until Y+ can start: at the last
// character of the run that is also a Y (clsBoth), and Y+ then ends right
// after it, since what follows is not a Y.
func matchXY(s string, a int) int {
	b, lastBothEnd := a, -1
	for b < len(s) {
		c, n := classAt(s, b)
		if c&clsX == 0 {
			if c&clsY != 0 {
				return yRun(s, b+n)
			}
			break
		}
		b += n
		if c&clsBoth != 0 {
			lastBothEnd = b
		}
	}
	return lastBothEnd
}

// matchXplusY matches X+Y* at s[a:] and returns its end, or -1.
func matchXplusY(s string, a int) int {
	b := a
	for b < len(s) {
		c, n := classAt(s, b)
		if c&clsX == 0 {
			break
		}
		b += n
	}
	if b == a {
		return -1
	}
	return yRun(s, b)
}

// yRun returns the end of the run of Y characters from s[i].
func yRun(s string, i int) int {
	for i < len(s) {
		if c := s[i]; c-'a' < 26 {
			i++
			continue
		}
		c, n := classAt(s, i)
		if c&clsY == 0 {
			break
		}
		i += n
	}
	return i
}

// letterRun returns the end of the run of \p{L} from s[i].
func letterRun(s string, i int) int {
	for i < len(s) {
		if c := s[i] | 0x20; c-'a' < 26 {
			i++
			continue
		}
		c, n := classAt(s, i)
		if c&clsLetter == 0 {
			break
		}
		i += n
	}
	return i
}

// numberRun returns the end of \p{N}{1,3} whose first character ends at i.
func numberRun(s string, i int) int {
	for k := 1; k < 3 && i < len(s); k++ {
		c, n := classAt(s, i)
		if c&clsNum == 0 {
			break
		}
		i += n
	}
	return i
}

// punctStart matches the start of ' ?[^\s\p{L}\p{N}]' at s[i], whose class
// and size are c0 and n0, and returns the end of the first punctuation
// character, or i if there is none.
func punctStart(s string, i int, c0 uint8, n0 int) int {
	if c0&notPunct == 0 {
		return i + n0
	}
	if s[i] == ' ' && i+1 < len(s) {
		if c1, n1 := classAt(s, i+1); c1&notPunct == 0 {
			return i + 1 + n1
		}
	}
	return i
}

// punctRun returns the end of the run of [^\s\p{L}\p{N}] from s[i].
func punctRun(s string, i int) int {
	for i < len(s) {
		c, n := classAt(s, i)
		if c&notPunct != 0 {
			break
		}
		i += n
	}
	return i
}

// spaceRun matches \s*[\r\n]+|\s+(?!\S)|\s+ at s[i], a white-space
// character. Within the longest run of white space from i:
//   - if it holds a line break, \s*[\r\n]+ ends after the last one (\s* gives
//     back characters until [\r\n]+ can match, and the run holds no line
//     break after it);
//   - else if it reaches the end of the text, \s+(?!\S) takes all of it;
//   - else if it has two or more characters, \s+(?!\S) takes all but the
//     last, which is followed by white space (the last is then part of the
//     next piece);
//   - else \s+ takes the one character.
func spaceRun(s string, i int) int {
	j, lastStart, nlEnd := i, i, -1
	for j < len(s) {
		c, n := classAt(s, j)
		if c&clsSpace == 0 {
			break
		}
		lastStart = j
		j += n
		if c&clsNL != 0 {
			nlEnd = j
		}
	}
	switch {
	case nlEnd >= 0:
		return nlEnd
	case j == len(s):
		return j
	case lastStart > i:
		return lastStart
	}
	return j
}

// contractionLen returns the length of (?i:'s|'t|'re|'ve|'m|'ll|'d) at
// s[i], or 0. Only ASCII letters match: no other code point lower-cases to
// one of these letters (unicode.ToLower, as the reference engine folds case).
func contractionLen(s string, i int) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return 0
	}
	switch s[i+1] | 0x20 {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if i+2 < len(s) && s[i+2]|0x20 == 'e' {
			return 3
		}
	case 'l':
		if i+2 < len(s) && s[i+2]|0x20 == 'l' {
			return 3
		}
	}
	return 0
}
