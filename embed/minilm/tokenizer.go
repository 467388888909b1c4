package minilm

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Special token ids of the BERT uncased vocabulary. The tokenizer looks them
// up by name when it is built and refuses a vocabulary that lacks one.
const (
	unkToken = "[UNK]"
	clsToken = "[CLS]"
	sepToken = "[SEP]"
)

// specialTokens are the reference's added tokens: matched in the raw text,
// case-sensitively and before normalization, wherever they occur, and
// emitted as their own ids ("[CLS]" typed by a user becomes id 101).
var specialTokens = []string{"[PAD]", unkToken, clsToken, sepToken, "[MASK]"}

// maxWordRunes is WordPiece's max_input_chars_per_word: a longer word is one
// [UNK], as in the reference tokenizer.
const maxWordRunes = 100

// Tokenizer is the BERT uncased WordPiece tokenizer of all-MiniLM-L6-v2, as
// the Hugging Face `tokenizers` package runs it (BertNormalizer,
// BertPreTokenizer, WordPiece, [CLS] … [SEP] template, longest-first
// truncation). Token ids must equal the reference's exactly: the encoder's
// weights were trained on them. It is safe for concurrent use.
type Tokenizer struct {
	vocab         map[string]int32
	special       []int32 // ids of specialTokens, -1 if absent
	unk, cls, sep int32
	maxLen        int
}

// NewTokenizer builds a tokenizer over vocab (token i has id i) that emits at
// most maxLen ids, [CLS] and [SEP] included.
func NewTokenizer(vocab []string, maxLen int) (*Tokenizer, error) {
	if maxLen < 2 {
		return nil, fmt.Errorf("minilm: tokenizer: max length %d < 2", maxLen)
	}
	t := &Tokenizer{vocab: make(map[string]int32, len(vocab)), maxLen: maxLen}
	for i, tok := range vocab {
		if _, dup := t.vocab[tok]; dup {
			return nil, fmt.Errorf("minilm: tokenizer: token %q repeated at id %d", tok, i)
		}
		t.vocab[tok] = int32(i)
	}
	for _, sp := range []struct {
		name string
		id   *int32
	}{{unkToken, &t.unk}, {clsToken, &t.cls}, {sepToken, &t.sep}} {
		id, ok := t.vocab[sp.name]
		if !ok {
			return nil, fmt.Errorf("minilm: tokenizer: vocabulary has no %s", sp.name)
		}
		*sp.id = id
	}
	for _, name := range specialTokens {
		id, ok := t.vocab[name]
		if !ok {
			id = -1
		}
		t.special = append(t.special, id)
	}
	return t, nil
}

// MaxLen is the largest number of ids Encode returns.
func (t *Tokenizer) MaxLen() int { return t.maxLen }

// Encode returns the token ids of text: [CLS], the WordPiece ids of the
// normalized words, truncated to MaxLen()-2, and [SEP].
func (t *Tokenizer) Encode(text string) []int32 {
	return t.AppendEncode(make([]int32, 0, 16), text)
}

// AppendEncode appends the ids Encode would return to dst.
func (t *Tokenizer) AppendEncode(dst []int32, text string) []int32 {
	start := len(dst)
	limit := start + t.maxLen - 1 // room for [SEP]
	dst = append(dst, t.cls)
	var key []byte
	for text != "" && len(dst) < limit {
		piece, id, rest := t.cutSpecial(text)
		dst = t.appendPiece(dst, piece, limit, &key)
		if id >= 0 && len(dst) < limit {
			dst = append(dst, id)
		}
		text = rest
	}
	if len(dst) > limit {
		dst = dst[:limit]
	}
	return append(dst, t.sep)
}

// cutSpecial splits text at its first special token: the text before it,
// the token's id (-1 if there is none) and the text after it.
func (t *Tokenizer) cutSpecial(text string) (before string, id int32, after string) {
	for i := 0; i < len(text); i++ {
		if text[i] != '[' {
			continue
		}
		for k, name := range specialTokens {
			if t.special[k] >= 0 && strings.HasPrefix(text[i:], name) {
				return text[:i], t.special[k], text[i+len(name):]
			}
		}
	}
	return text, -1, ""
}

// appendPiece appends the WordPiece ids of text (holding no special token),
// stopping once dst reaches limit.
func (t *Tokenizer) appendPiece(dst []int32, text string, limit int, key *[]byte) []int32 {
	norm := normalize(text)
	for i := 0; i < len(norm) && len(dst) < limit; {
		r, size := utf8.DecodeRuneInString(norm[i:])
		if r == ' ' {
			i += size
			continue
		}
		if isBertPunct(r) {
			dst = t.appendWord(dst, norm[i:i+size], key)
			i += size
			continue
		}
		j := i + size
		for j < len(norm) {
			r, size := utf8.DecodeRuneInString(norm[j:])
			if r == ' ' || isBertPunct(r) {
				break
			}
			j += size
		}
		dst = t.appendWord(dst, norm[i:j], key)
		i = j
	}
	return dst
}

// appendWord appends the WordPiece ids of one pre-tokenized word: greedy
// longest match first, continuations prefixed with "##"; a word with a part
// that matches nothing, or longer than maxWordRunes, is one [UNK].
func (t *Tokenizer) appendWord(dst []int32, word string, key *[]byte) []int32 {
	if utf8.RuneCountInString(word) > maxWordRunes {
		return append(dst, t.unk)
	}
	mark := len(dst)
	for start := 0; start < len(word); {
		end := len(word)
		found := int32(-1)
		for end > start {
			k := (*key)[:0]
			if start > 0 {
				k = append(k, "##"...)
			}
			k = append(k, word[start:end]...)
			*key = k
			if id, ok := t.vocab[string(k)]; ok {
				found = id
				break
			}
			// Shorten by one rune, never splitting a UTF-8 sequence.
			_, size := utf8.DecodeLastRuneInString(word[start:end])
			end -= size
		}
		if found < 0 {
			return append(dst[:mark], t.unk)
		}
		dst = append(dst, found)
		start = end
	}
	return dst
}

// normalize is the BertNormalizer of the reference (clean_text,
// handle_chinese_chars, strip_accents, lowercase, in that order): control
// characters, NUL and U+FFFD are dropped, whitespace becomes ' ', CJK
// ideographs are surrounded by spaces, text is decomposed (NFD) and its
// nonspacing marks dropped, and what remains is lowercased.
func normalize(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f {
			ascii = false
			break
		}
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	if ascii { // fast path: only whitespace mapping and lowercasing apply
		for i := 0; i < len(s); i++ {
			c := s[i]
			switch {
			case c == '\t' || c == '\n' || c == '\r':
				c = ' '
			case 'A' <= c && c <= 'Z':
				c += 'a' - 'A'
			}
			b.WriteByte(c)
		}
		return b.String()
	}
	for _, r := range s {
		if r == 0 || r == utf8.RuneError || isControl(r) {
			continue
		}
		if isWhitespace(r) {
			b.WriteByte(' ')
			continue
		}
		if isChineseChar(r) {
			b.WriteByte(' ')
			writeStripped(&b, r)
			b.WriteByte(' ')
			continue
		}
		writeStripped(&b, r)
	}
	return b.String()
}

// writeStripped writes r decomposed (NFD), without nonspacing marks, and
// lowercased.
func writeStripped(b *strings.Builder, r rune) {
	if r < utf8.RuneSelf {
		writeLower(b, r)
		return
	}
	if unicode.Is(unicode.Mn, r) {
		return
	}
	if hangulFirst <= r && r <= hangulLast {
		for _, d := range decomposeHangul(r) {
			if d != 0 {
				writeLower(b, d)
			}
		}
		return
	}
	if d, ok := stripTable[r]; ok {
		for _, dr := range d {
			writeLower(b, dr)
		}
		return
	}
	writeLower(b, r)
}

// writeLower writes the lowercase of r. Rust's char::to_lowercase, which
// the reference uses, differs from the simple mapping only for U+0130 (İ),
// and that never reaches here: accent stripping has made it "I".
func writeLower(b *strings.Builder, r rune) {
	b.WriteRune(unicode.ToLower(r))
}

// Hangul syllables decompose by formula (Unicode §3.12), not by table.
const (
	hangulFirst = 0xAC00
	hangulLast  = 0xD7A3
	jamoL       = 0x1100
	jamoV       = 0x1161
	jamoT       = 0x11A7
	jamoVCount  = 21
	jamoTCount  = 28
)

// decomposeHangul returns the leading, vowel and trailing jamo of syllable r;
// the trailing jamo is 0 when the syllable has none.
func decomposeHangul(r rune) [3]rune {
	s := r - hangulFirst
	l := jamoL + s/(jamoVCount*jamoTCount)
	v := jamoV + (s%(jamoVCount*jamoTCount))/jamoTCount
	var t rune
	if s%jamoTCount != 0 {
		t = jamoT + s%jamoTCount
	}
	return [3]rune{l, v, t}
}

// isWhitespace is the reference's whitespace: Unicode White_Space, which
// Go's unicode.IsSpace implements.
func isWhitespace(r rune) bool { return unicode.IsSpace(r) }

// isControl is the reference's "other" category (Cc, Cf, Cs, Co and
// unassigned code points), tab, newline and carriage return excepted: they
// are whitespace.
func isControl(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' {
		return false
	}
	if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs) {
		return true
	}
	return !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z)
}

// isBertPunct is BERT's punctuation: every ASCII non-alphanumeric printable
// character (so $, +, <, =, >, ^, `, |, ~ too) and Unicode category P.
func isBertPunct(r rune) bool {
	if r < utf8.RuneSelf {
		return (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126)
	}
	return unicode.IsPunct(r)
}

// isChineseChar reports whether r is in a CJK ideograph block, which BERT
// splits into single-character words.
func isChineseChar(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) ||
		(r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) ||
		(r >= 0x2B920 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) ||
		(r >= 0x2F800 && r <= 0x2FA1F)
}
