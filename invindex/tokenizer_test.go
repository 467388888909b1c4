package invindex

import (
	"slices"
	"strings"
	"testing"
)

func TestTokenizeLucene(t *testing.T) {
	for _, tc := range analyzerCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Tokenize(tc.in, nil); !slices.Equal(got, tc.tokens) {
				t.Errorf("Tokenize(%q)\n got %q\nwant %q", tc.in, got, tc.tokens)
			}
		})
	}
}

// TestTokenizeLong checks the split of tokens longer than 255 UTF-16 code
// units. The expected tokens are Lucene 8.7's: a token ends at the longest
// match within 255 units and scanning resumes right after it.
func TestTokenizeLong(t *testing.T) {
	r := strings.Repeat
	for _, tc := range []struct {
		name string
		in   string
		want []string
	}{
		{"255 letters", r("b", 255), []string{r("b", 255)}},
		{"256 letters", r("c", 256), []string{r("c", 255), "c"}},
		{"300 letters", r("a", 300), []string{r("a", 255), r("a", 45)}},
		{"then more", r("x", 260) + " y", []string{r("x", 255), r("x", 5), "y"}},
		// The join across '.' needs the 'b', which does not fit: the token
		// ends before the dot, and the dot alone is dropped.
		{"mid at limit", r("a", 254) + ".b c", []string{r("a", 254), "b", "c"}},
		{"digits at limit", r("1", 253) + ",234", []string{r("1", 253) + ",2", "34"}},
		// 𝑥 is two UTF-16 code units: 127 of them fit.
		{"supplementary", r("𝑥", 200), []string{r("𝑥", 127), r("𝑥", 73)}},
		{"thai", r("ก", 300), []string{r("ก", 255), r("ก", 45)}},
		{"han", r("中", 3), []string{"中", "中", "中"}},
		// Lucene drops connectors until the rest of the run and the letter
		// fit in one token.
		{"connectors then letter", r("_", 300) + "a", []string{r("_", 254) + "a"}},
		{"connectors alone", r("_", 300), nil},
		// Marks past the limit are dropped with nothing to attach to.
		{"marks", "e" + r("\u0301", 300) + "f", []string{"e" + r("\u0301", 254), "f"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Tokenize(tc.in, nil)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Tokenize: got %d tokens %.80q..., want %d tokens %.80q...",
					len(got), got, len(tc.want), tc.want)
			}
			checkTokenized(t, tc.in, got)
		})
	}
}

func TestTokenizeASCIIClasses(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"a'b a.b a:b a,b a;b a\"b a_b a-b a/b a@b", []string{"a'b", "a.b", "a:b", "a", "b", "a", "b", "a", "b", "a_b", "a", "b", "a", "b", "a", "b"}},
		{"1'2 1.2 1:2 1,2 1;2 1\"2 1_2 1-2", []string{"1'2", "1.2", "1", "2", "1,2", "1;2", "1", "2", "1_2", "1", "2"}},
		{"a1 1a a.1 1.a a_1 1_a", []string{"a1", "1a", "a", "1", "1", "a", "a_1", "1_a"}},
		{"'a' \"a\" .a. ,1, _a_ ..a..", []string{"a", "a", "a", "1", "_a_", "a"}},
		{"#1 *x #\u20e3 *\ufe0f\u20e3 # * 9\u20e3", []string{"1", "x", "#\u20e3", "*\ufe0f\u20e3", "9\u20e3"}},
	} {
		if got := Tokenize(tc.in, nil); !slices.Equal(got, tc.want) {
			t.Errorf("Tokenize(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

// TestTokenizeNoAlloc checks that tokens are substrings of the text: with
// room in dst, Tokenize allocates nothing.
func TestTokenizeNoAlloc(t *testing.T) {
	text := "Café naïve 中文 John's U.S.A. 3.14 😀 " + analyzerProse()[:2000]
	dst := Tokenize(text, nil)
	if got := testing.AllocsPerRun(100, func() { dst = Tokenize(text, dst[:0]) }); got != 0 {
		t.Errorf("Tokenize allocated %v times, want 0", got)
	}
}

func BenchmarkTokenizeProse(b *testing.B) {
	text := analyzerProse()
	dst := Tokenize(text, nil)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		dst = Tokenize(text, dst[:0])
	}
}
