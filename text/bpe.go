package text

import (
	_ "embed"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// BPE counts (and encodes) the tokens of one OpenAI encoding exactly: its
// counts and token ids equal those of tiktoken's encode_ordinary for the
// same text. It implements [TokenCounter]. The encodings are [O200kBase]
// (GPT-4o and later; the default) and [CL100kBase] (GPT-4, GPT-3.5).
//
// Text is cut into pieces by a hand-written equivalent of the encoding's
// pre-tokenizing regular expression, and each piece is a token of its own or
// is split by byte-pair merging with the encoding's ranks.
//
// Special tokens such as <|endoftext|> are not recognised: they are counted
// as the ordinary text they are spelled with, like tiktoken's
// encode_ordinary, so that text from users cannot forge them.
//
// Invalid UTF-8 is counted as if each byte of it that does not belong to a
// valid sequence were U+FFFD, the replacement character, which is what the
// reference (github.com/pkoukk/tiktoken-go, which converts text to runes)
// does with the same Go string.
//
// A BPE is safe for concurrent use. Its methods allocate nothing in steady
// state (Encode appends to the slice it is given), except that text holding
// invalid UTF-8 is first copied with the replacements made.
type BPE struct {
	name  string
	split func(s string, i int) int
	table *rankTable
}

// bpeSpec names one embedded encoding and loads it once.
type bpeSpec struct {
	name  string
	file  []byte
	sum   string
	split func(s string, i int) int

	once sync.Once
	bpe  *BPE
	err  error
}

var (
	//go:embed bpe_data/o200k_base.bin.zst
	o200kBaseFile []byte
	//go:embed bpe_data/cl100k_base.bin.zst
	cl100kBaseFile []byte

	o200kBase  = &bpeSpec{name: "o200k_base", file: o200kBaseFile, sum: o200kBaseSHA256, split: splitO200k}
	cl100kBase = &bpeSpec{name: "cl100k_base", file: cl100kBaseFile, sum: cl100kBaseSHA256, split: splitCL100k}
	bpeSpecs   = []*bpeSpec{o200kBase, cl100kBase}
)

func (sp *bpeSpec) load() (*BPE, error) {
	sp.once.Do(func() {
		t, err := loadRankTable(sp.name, sp.file, sp.sum)
		if err != nil {
			sp.err = err
			return
		}
		sp.bpe = &BPE{name: sp.name, split: sp.split, table: t}
	})
	return sp.bpe, sp.err
}

func (sp *bpeSpec) mustLoad() *BPE {
	b, err := sp.load()
	if err != nil {
		panic(err)
	}
	return b
}

// O200kBase returns the o200k_base encoding (GPT-4o, GPT-4.1, o-series). Its
// vocabulary is read from data embedded in the program at the first call
// (about 15 ms and 6 MB of memory; cl100k_base 5 ms and 3 MB) and shared
// afterwards. It panics only if
// the embedded data is damaged (its SHA-256 sum is checked); [BPEByName]
// returns that as an error instead.
func O200kBase() *BPE { return o200kBase.mustLoad() }

// CL100kBase returns the cl100k_base encoding (GPT-4, GPT-3.5-turbo,
// text-embedding-3), loaded like [O200kBase].
func CL100kBase() *BPE { return cl100kBase.mustLoad() }

// BPEByName returns the encoding of that name, "o200k_base" or
// "cl100k_base". It fails for any other name, and if the embedded
// vocabulary is damaged.
func BPEByName(name string) (*BPE, error) {
	names := make([]string, len(bpeSpecs))
	for i, sp := range bpeSpecs {
		if sp.name == name {
			return sp.load()
		}
		names[i] = sp.name
	}
	return nil, fmt.Errorf("text: unknown BPE encoding %q (allowed: %s)", name, strings.Join(names, ", "))
}

// Name returns the encoding's name, such as "o200k_base".
func (b *BPE) Name() string { return b.name }

// Count returns the number of tokens of s.
func (b *BPE) Count(s string) int {
	if !utf8.ValidString(s) {
		s = replaceInvalidUTF8(s)
	}
	t := b.table
	var (
		sc  *mergeScratch
		buf [smallMerge]uint32
	)
	n := 0
	for i := 0; i < len(s); {
		end := b.split(s, i)
		piece := s[i:end]
		i = end
		switch {
		case t.rank(piece) != noRank:
			n++
		case len(piece) <= smallMerge:
			n += len(t.mergeSmall(piece, &buf))
		default:
			if sc == nil {
				sc = scratchPool.Get().(*mergeScratch)
			}
			n += len(t.mergeLarge(piece, sc))
		}
	}
	if sc != nil {
		scratchPool.Put(sc)
	}
	return n
}

// Encode appends the token ids of s to dst and returns the extended slice.
func (b *BPE) Encode(s string, dst []int) []int {
	if !utf8.ValidString(s) {
		s = replaceInvalidUTF8(s)
	}
	t := b.table
	var (
		sc  *mergeScratch
		buf [smallMerge]uint32
	)
	for i := 0; i < len(s); {
		end := b.split(s, i)
		piece := s[i:end]
		i = end
		var toks []uint32
		if r := t.rank(piece); r != noRank {
			dst = append(dst, int(r))
			continue
		} else if len(piece) <= smallMerge {
			toks = t.mergeSmall(piece, &buf)
		} else {
			if sc == nil {
				sc = scratchPool.Get().(*mergeScratch)
			}
			toks = t.mergeLarge(piece, sc)
		}
		for _, r := range toks {
			dst = append(dst, int(r))
		}
	}
	if sc != nil {
		scratchPool.Put(sc)
	}
	return dst
}

// replaceInvalidUTF8 replaces each byte of s that does not start a valid
// UTF-8 sequence with U+FFFD, as converting s to []rune does. (Unlike
// strings.ToValidUTF8, which replaces a run of such bytes with one.)
func replaceInvalidUTF8(s string) string {
	var sb strings.Builder
	sb.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.WriteString(s[i : i+size])
		}
		i += size
	}
	return sb.String()
}
