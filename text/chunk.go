package text

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Production chunk sizes, in tokens.
const (
	DefaultTarget = 200 // chunks are packed up to about this many tokens
	DefaultMax    = 512 // and never hold more
)

// Chunk is a span of a text, as cut by [Chunks].
type Chunk struct {
	Start, End int    // offsets into the text, in Unicode code points
	Text       string // text[Start:End] by code points
	Tokens     int    // the counter's count of Text
}

// Chunks splits text into sentence-aware chunks of about target tokens and
// never more than maxTokens (DefaultTarget and DefaultMax in production), as
// counted by counter (Estimate when nil).
//
// Sentences are kept whole and packed greedily: a chunk takes the following
// sentence while the sum of its sentences' counts stays within target, and
// always takes at least one. A sentence of more than maxTokens starts a new
// chunk and is split at white space into words that are packed the same way;
// a single word of more than maxTokens is cut between code points into pieces
// of at most target tokens (not inside a sequence joined by combining marks,
// emoji modifiers or zero-width joiners when that can be avoided). The exact count of every chunk is then checked, and a
// chunk over maxTokens gives back its last units to the next chunk.
//
// A sentence ends after '.', '!', '?' or '…' (or a run of them, such as "?!"
// or "...", with any closing quotes and brackets) followed by white space or
// the end of the text; after the CJK '。', '！', '？' and '｡' without needing
// white space; and at every line break. A period does not end a sentence
// after an abbreviation that never ends one (Mr., Mrs., Ms., Dr., Prof., Sr.,
// Jr., St., e.g., i.e., vs., cf.), after a single capital letter (an
// initial), after a list number that starts the sentence ("1. "), or after an
// abbreviation that may end one (etc., al., approx., incl., esp., or any word
// with an inner period such as "a.m.") when a lower-case letter or a digit
// follows. A period between digits ("3.14") is never
// followed by white space and so never ends a sentence.
//
// Chunks are in order, do not overlap, are trimmed of white space (as defined
// by unicode.IsSpace, which never belongs to any chunk) and together hold
// every other character of text. A text that is empty or all white space has
// no chunks. Tokens is counter.Count(Text) and is at most maxTokens unless a
// single code point counts more (with Estimate, only when maxTokens is 1). A maxTokens below 1 is
// taken as 1, and a target outside [1, maxTokens] as maxTokens. text should be
// valid UTF-8 (Extract's output is); an invalid byte counts as one code point.
// The result depends only on the arguments.
func Chunks(text string, counter TokenCounter, target, maxTokens int) []Chunk {
	if counter == nil {
		counter = Estimate{}
	}
	if maxTokens < 1 {
		maxTokens = 1
	}
	if target < 1 || target > maxTokens {
		target = maxTokens
	}
	// Fast path: a text that fits the target whole is one chunk, counted
	// once (most chat turns and notes are), instead of once per sentence and
	// again as a chunk.
	lo, hi := 0, len(text)
	for lo < hi {
		r, n := utf8.DecodeRuneInString(text[lo:])
		if !unicode.IsSpace(r) {
			break
		}
		lo += n
	}
	for hi > lo {
		r, n := utf8.DecodeLastRuneInString(text[:hi])
		if !unicode.IsSpace(r) {
			break
		}
		hi -= n
	}
	if lo == hi {
		return nil
	}
	// Only texts short enough to plausibly fit try it (tokens average about
	// four bytes), so long documents are not counted an extra time.
	if hi-lo <= 4*target {
		if n := counter.Count(text[lo:hi]); n <= target {
			start := utf8.RuneCountInString(text[:lo])
			return []Chunk{{Start: start, End: start + utf8.RuneCountInString(text[lo:hi]), Text: text[lo:hi], Tokens: n}}
		}
	}
	c := chunker{text: text, counter: counter, target: target, max: maxTokens}
	if b, ok := counter.(*BPE); ok {
		c.bpe, c.memo = b, memoPool.Get().(*pieceMemo)
		defer func() {
			c.memo.pieces = c.memo.pieces[:0]
			memoPool.Put(c.memo)
		}()
	}
	for pos := 0; ; {
		start, end, next := nextSentence(text, pos)
		if start == end {
			break
		}
		c.sentence(start, end)
		pos = next
	}
	c.flush()
	return c.out
}

// unit is a piece of text that the chunker never cuts: a sentence, a word of
// a long sentence or a piece of a long word. start and end are byte offsets.
type unit struct {
	start, end, tokens int
}

// chunker packs units into chunks.
type chunker struct {
	text        string
	counter     TokenCounter
	target, max int

	units []unit // the units of the chunk being packed
	sum   int    // the sum of their token counts

	out               []Chunk
	lastByte, lastPos int // end of the last chunk, in bytes and code points

	// With a BPE counter: the pieces of the sentences counted so far, whose
	// counts the chunk counts reuse (see chunk_memo.go).
	bpe  *BPE
	memo *pieceMemo
}

// sentence adds the sentence text[start:end] to the chunks.
func (c *chunker) sentence(start, end int) {
	var n int
	if c.bpe != nil {
		n = c.bpe.countMemo(c.text, start, end, c.memo, true)
	} else {
		n = c.counter.Count(c.text[start:end])
	}
	if n <= c.max {
		c.add(unit{start, end, n})
		return
	}
	c.flush()
	for i := start; i < end; {
		ws := i
		for ws < end {
			r, size := runeAt(c.text, ws)
			if !isSpace(r) {
				break
			}
			ws += size
		}
		we := ws
		for we < end {
			r, size := runeAt(c.text, we)
			if isSpace(r) {
				break
			}
			we += size
		}
		if ws < we {
			if n := c.counter.Count(c.text[ws:we]); n <= c.max {
				c.add(unit{ws, we, n})
			} else {
				c.cutWord(ws, we)
			}
		}
		i = we
	}
}

// cutWord adds text[start:end], a word of more than max tokens, as pieces of
// at most target tokens each. The cut of each piece is found by galloping and
// then bisecting over code point boundaries, so the cost stays proportional
// to the word's length times a logarithm.
func (c *chunker) cutWord(start, end int) {
	for start < end {
		_, first := runeAt(c.text, start)
		good := start + first // always take at least one code point
		bad := end + 1        // no known prefix over target yet
		for step := 4 * c.target; ; step *= 2 {
			probe := runeStart(c.text, start+step, good, end)
			if probe <= good {
				break
			}
			if c.counter.Count(c.text[start:probe]) > c.target {
				bad = probe
				break
			}
			good = probe
			if probe == end {
				break
			}
		}
		if bad <= end {
			for {
				mid := runeStart(c.text, good+(bad-good)/2, good, bad)
				if mid <= good || mid >= bad {
					break
				}
				if c.counter.Count(c.text[start:mid]) > c.target {
					bad = mid
				} else {
					good = mid
				}
			}
		}
		// Keep marks, joiners and emoji modifiers with their neighbours.
		for cut := good; cut < end && cut > start+first; {
			prev, size := utf8.DecodeLastRuneInString(c.text[start:cut])
			if r, _ := runeAt(c.text, cut); !joined(prev, r) {
				good = cut
				break
			}
			cut -= size
		}
		c.add(unit{start, good, c.counter.Count(c.text[start:good])})
		start = good
	}
}

// joined reports whether a cut between the code points prev and next would
// break a character apart: before a combining mark, an emoji modifier or a
// zero-width joiner, or after a joiner.
func joined(prev, next rune) bool {
	return prev == 0x200D || next == 0x200D || unicode.IsMark(next) ||
		(next >= 0x1F3FB && next <= 0x1F3FF)
}

// runeStart returns the code point boundary at or before p, or, if that is
// not after lo, the first one after p; the result is clamped to hi.
func runeStart(s string, p, lo, hi int) int {
	if p >= hi {
		return hi
	}
	q := p
	for q > lo && !utf8.RuneStart(s[q]) {
		q--
	}
	if q > lo {
		return q
	}
	for p < hi && !utf8.RuneStart(s[p]) {
		p++
	}
	return p
}

// add packs u into the current chunk, or starts a new chunk with it when the
// current one would go over target.
func (c *chunker) add(u unit) {
	if len(c.units) > 0 && c.sum+u.tokens > c.target {
		c.flush()
	}
	c.units = append(c.units, u)
	c.sum += u.tokens
}

// flush emits the packed units as chunks: as one chunk when its exact count
// is within max, otherwise the longest prefix of units that is (found by
// bisection), and so on with the rest.
func (c *chunker) flush() {
	units := c.units
	for len(units) > 0 {
		k := len(units)
		n := units[0].tokens
		if k > 1 {
			n = c.count(units, k)
			if n > c.max {
				good, goodN, bad := 1, units[0].tokens, k
				for bad-good > 1 {
					mid := good + (bad-good)/2
					if m := c.count(units, mid); m <= c.max {
						good, goodN = mid, m
					} else {
						bad = mid
					}
				}
				k, n = good, goodN
			}
		}
		c.emit(units[0].start, units[k-1].end, n)
		units = units[k:]
	}
	c.units = c.units[:0]
	c.sum = 0
}

// count counts the text spanned by the first k units.
func (c *chunker) count(units []unit, k int) int {
	if c.bpe != nil {
		return c.bpe.countMemo(c.text, units[0].start, units[k-1].end, c.memo, false)
	}
	return c.counter.Count(c.text[units[0].start:units[k-1].end])
}

// emit appends the chunk text[start:end], converting its byte offsets to code
// point offsets incrementally (chunks are emitted in order).
func (c *chunker) emit(start, end, tokens int) {
	if c.out == nil {
		c.out = make([]Chunk, 0, len(c.text)/(4*c.target)+1)
	}
	s := c.lastPos + utf8.RuneCountInString(c.text[c.lastByte:start])
	e := s + utf8.RuneCountInString(c.text[start:end])
	c.out = append(c.out, Chunk{Start: s, End: e, Text: c.text[start:end], Tokens: tokens})
	c.lastByte, c.lastPos = end, e
}

// isSpace reports whether r is white space, which chunks never start or end
// with.
func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || '\t' <= r && r <= '\r'
	}
	return unicode.IsSpace(r)
}

// isLineBreak reports whether r ends a line.
func isLineBreak(r rune) bool {
	switch r {
	case '\n', '\r', '\v', '\f', 0x85, 0x2028, 0x2029:
		return true
	}
	return false
}

// nextSentence returns the byte range [start, end) of the first sentence at
// or after pos, trimmed of white space, and the offset at which to look for
// the next one. start == end when no sentence is left.
func nextSentence(text string, pos int) (start, end, next int) {
	for pos < len(text) {
		r, size := runeAt(text, pos)
		if !isSpace(r) {
			break
		}
		pos += size
	}
	start = pos
	for i := start; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			if k := asciiKinds[c]; k != kindPunct && k != kindNewline {
				i++ // fast path: letters, digits, spaces
				continue
			}
			switch c {
			case '\n', '\r', '\v', '\f':
				return start, trimRight(text, start, i), i + 1
			case '.', '!', '?':
				j, ok := sentenceEnd(text, start, i)
				if ok {
					return start, j, j
				}
				i = j
				continue
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		switch r {
		case 0x85, 0x2028, 0x2029:
			return start, trimRight(text, start, i), i + size
		case '…':
			j, ok := sentenceEnd(text, start, i)
			if ok {
				return start, j, j
			}
			i = j
			continue
		case '。', '！', '？', '｡':
			j := i + size
			for j < len(text) {
				r2, sz := utf8.DecodeRuneInString(text[j:])
				if r2 != '。' && r2 != '！' && r2 != '？' && r2 != '｡' && !isCloser(r2) {
					break
				}
				j += sz
			}
			return start, j, j
		}
		i += size
	}
	return start, trimRight(text, start, len(text)), len(text)
}

// trimRight returns end moved back over white space, but not before start.
func trimRight(text string, start, end int) int {
	for end > start {
		r, size := utf8.DecodeLastRuneInString(text[start:end])
		if !isSpace(r) {
			break
		}
		end -= size
	}
	return end
}

// isCloser reports whether r closes a quotation or bracket and so stays with
// the sentence terminator before it.
func isCloser(r rune) bool {
	switch r {
	case '"', '\'', ')', ']', '}', '’', '”', '»', '›', '」', '』', '）', '】', '》', '〉', '〕':
		return true
	}
	return false
}

// sentenceEnd examines the terminator at text[i] within the sentence that
// starts at start. It returns the offset after the terminator run and any
// closing quotes, and whether the sentence ends there.
func sentenceEnd(text string, start, i int) (int, bool) {
	j := i
	for j < len(text) {
		if c := text[j]; c == '.' || c == '!' || c == '?' {
			j++
		} else if strings.HasPrefix(text[j:], "…") {
			j += len("…")
		} else {
			break
		}
	}
	run := j
	for j < len(text) {
		r, size := runeAt(text, j)
		if !isCloser(r) {
			break
		}
		j += size
	}
	if j == len(text) {
		return j, true
	}
	if r, _ := runeAt(text, j); !isSpace(r) {
		return j, false
	}
	if run == i+1 && text[i] == '.' && abbreviation(text, start, i, j) {
		return j, false
	}
	return j, true
}

// abbreviation reports whether the period at text[i], in the sentence that
// starts at start and followed by white space at text[j], ends an
// abbreviation rather than the sentence.
func abbreviation(text string, start, i, j int) bool {
	w := i
	for w > start && (isASCIILetter(text[w-1]) || isDigit(text[w-1]) || text[w-1] == '.') {
		w--
	}
	if w > start {
		if r, _ := utf8.DecodeLastRuneInString(text[start:w]); unicode.IsLetter(r) || unicode.IsDigit(r) {
			return false // part of a longer word
		}
	}
	word := text[w:i]
	if word == "" || len(word) > 8 {
		return false
	}
	if w == start && len(word) <= 3 && allDigits(word) {
		return true // a list number: "1. First step"
	}
	if len(word) == 1 && 'A' <= word[0] && word[0] <= 'Z' {
		return true // an initial: "J. Smith"
	}
	var buf [8]byte
	lower := buf[:len(word)]
	for k := 0; k < len(word); k++ {
		lower[k] = word[k] | 0x20
		if isDigit(word[k]) || word[k] == '.' {
			lower[k] = word[k]
		}
	}
	switch string(lower) {
	case "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "e.g", "i.e", "vs", "cf":
		return true
	case "etc", "al", "approx", "incl", "esp":
	default:
		if strings.IndexByte(word, '.') <= 0 {
			return false
		}
	}
	// An abbreviation ends the sentence unless a lower-case word or a number
	// follows.
	for j < len(text) {
		r, size := runeAt(text, j)
		if !isSpace(r) {
			return unicode.IsLower(r) || unicode.IsDigit(r)
		}
		if isLineBreak(r) {
			return false
		}
		j += size
	}
	return false
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func allDigits(s string) bool {
	for k := 0; k < len(s); k++ {
		if !isDigit(s[k]) {
			return false
		}
	}
	return true
}
