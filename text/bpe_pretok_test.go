package text

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// The patterns of tiktoken, as the oracle compiles them.
const (
	bpeCL100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	bpeO200kPattern  = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

var bpeSplitters = []struct {
	name    string
	split   func(string, int) int
	pattern *regexp2.Regexp
}{
	{"o200k_base", splitO200k, regexp2.MustCompile(bpeO200kPattern, regexp2.None)},
	{"cl100k_base", splitCL100k, regexp2.MustCompile(bpeCL100kPattern, regexp2.None)},
}

// bpePieces cuts s with split, after the replacement of invalid UTF-8 that
// Count and Encode do.
func bpePieces(split func(string, int) int, s string) []string {
	initBMPClass()
	if !utf8.ValidString(s) {
		s = replaceInvalidUTF8(s)
	}
	var pieces []string
	for i := 0; i < len(s); {
		end := split(s, i)
		pieces = append(pieces, s[i:end])
		i = end
	}
	return pieces
}

// bpeRegexpPieces cuts s with the reference engine, as the oracle does.
func bpeRegexpPieces(re *regexp2.Regexp, s string) []string {
	runes := []rune(s)
	var pieces []string
	m, _ := re.FindRunesMatch(runes)
	for m != nil {
		pieces = append(pieces, string(runes[m.Index:m.Index+m.Length]))
		m, _ = re.FindNextMatch(m)
	}
	return pieces
}

func bpeCheckPieces(t *testing.T, name string, split func(string, int) int, re *regexp2.Regexp, label, s string) bool {
	t.Helper()
	got, want := bpePieces(split, s), bpeRegexpPieces(re, s)
	if slices.Equal(got, want) {
		return true
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	t.Errorf("%s %s: piece %d differs in %q\n got  %q\n want %q", name, label, i, bpeShorten(s, 200),
		got[max(0, i-2):min(i+3, len(got))], want[max(0, i-2):min(i+3, len(want))])
	return false
}

// TestBPEPretokenizerExamples pins the pieces of a few tricky texts (as
// the reference engine cuts them, which the test also checks).
func TestBPEPretokenizerExamples(t *testing.T) {
	for _, tc := range []struct {
		enc, text string
		want      []string
	}{
		{"o200k_base", "Hello world", []string{"Hello", " world"}},
		{"o200k_base", "don't DON'T it’s", []string{"don't", " DON'T", " it", "’s"}},
		{"cl100k_base", "don't DON'T it’s", []string{"don", "'t", " DON", "'T", " it", "’s"}},
		{"o200k_base", "getHTTPResponse", []string{"get", "HTTPResponse"}},
		{"o200k_base", "  a\n\n  b   ", []string{" ", " a", "\n\n", " ", " b", "   "}},
		{"cl100k_base", "x  \n\t\ty", []string{"x", "  \n", "\t", "\ty"}},
		{"o200k_base", "1234567 a1", []string{"123", "456", "7", " a", "1"}},
		{"o200k_base", "end.\n/path //x", []string{"end", ".\n/", "path", " //", "x"}},
		{"cl100k_base", "end.\n/path", []string{"end", ".\n", "/path"}},
		{"o200k_base", "\u0301AB.", []string{"\u0301", "AB", "."}},
		{"cl100k_base", "\u0301AB.", []string{"\u0301AB", "."}},
		{"o200k_base", " \u00a0x", []string{" ", "\u00a0x"}},
		{"o200k_base", "日本語のテキスト。", []string{"日本語のテキスト", "。"}},
	} {
		for _, sp := range bpeSplitters {
			if sp.name != tc.enc {
				continue
			}
			if got := bpePieces(sp.split, tc.text); !slices.Equal(got, tc.want) {
				t.Errorf("%s %q: %q, want %q", tc.enc, tc.text, got, tc.want)
			}
			bpeCheckPieces(t, sp.name, sp.split, sp.pattern, "example", tc.text)
		}
	}
}

func TestBPEPretokenizerSynthetic(t *testing.T) {
	for _, sp := range bpeSplitters {
		for _, c := range bpeSyntheticCases {
			bpeCheckPieces(t, sp.name, sp.split, sp.pattern, c.name, c.text)
		}
	}
}

// TestBPEPretokenizerRandom compares the pieces with the reference engine's
// on random strings of the characters the patterns distinguish.
func TestBPEPretokenizerRandom(t *testing.T) {
	cases := 10000
	if testing.Short() {
		cases = 1000
	}
	for _, sp := range bpeSplitters {
		rng := rand.New(rand.NewSource(99))
		failures := 0
		for i := range cases {
			s := bpeRandomString(rng, 30)
			if !bpeCheckPieces(t, sp.name, sp.split, sp.pattern, fmt.Sprintf("random case %d", i), s) {
				if failures++; failures == 10 {
					t.Fatal("too many failures")
				}
			}
		}
	}
}

// TestBPEPretokenizerAllCodePoints puts every code point of the Basic
// Multilingual Plane, and a sample of the others, in contexts that exercise
// each class (after a letter, before a letter, after a space, doubled), and
// compares the pieces with the reference engine's.
func TestBPEPretokenizerAllCodePoints(t *testing.T) {
	var sb strings.Builder
	add := func(r rune) {
		sb.WriteString("a")
		sb.WriteRune(r)
		sb.WriteString("b ")
		sb.WriteRune(r)
		sb.WriteRune(r)
		sb.WriteString("A'S")
		sb.WriteRune(r)
		sb.WriteString("1\n")
	}
	for r := rune(0); r < 0x10000; r++ {
		if r < 0xD800 || r > 0xDFFF {
			add(r)
		}
	}
	for r := rune(0x10000); r <= 0x10FFFF; r += 97 {
		add(r)
	}
	for r := rune(0xE0000); r < 0xE0200; r++ { // tags and variation selectors
		add(r)
	}
	text := sb.String()
	for _, sp := range bpeSplitters {
		for i, part := range bpeSplitLines(text, 64<<10) {
			bpeCheckPieces(t, sp.name, sp.split, sp.pattern, fmt.Sprintf("part %d", i), part)
		}
	}
}

func TestBPEClassTable(t *testing.T) {
	initBMPClass()
	for r := range rune(0x10000) {
		if got, want := bmpClass[r], computeClass(r); got != want {
			t.Fatalf("%U: class %08b, want %08b", r, got, want)
		}
	}
}
