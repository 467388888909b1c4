package text

import (
	"math/rand"
	"strings"
	"testing"
)

func TestEstimateCount(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"hello", 1},
		{" hello", 1},
		{"hello world", 2},
		{"Hello, world!", 4},
		{"internationalization", 4}, // 20 letters: ceil(20/4)-1
		{"tokenizer", 2},            // 9 letters
		{"camelCase", 2},
		{"HTTPServer", 2},
		{"don't", 2},
		{"It's", 2},
		{"2024", 2},
		{"123456", 2},
		{"3.14", 3},
		{"2024-05-01", 6},
		{"你好世界", 4},
		{"こんにちは", 5},
		{"a\nb", 3},
		{"a\n\n\nb", 3},
		{"a  b", 3},
		{"a\n    b", 4},
		{"end.\nNext", 3},
		{"...", 2},
		{"{\"a\":1}", 5},
		{"😀", 2},
		{"→", 1},
		{"👍🏽", 4},
		{"👨\u200d👩\u200d👧", 8},
		{"e\u0301", 1},
		{"\u200d", 1},
		{"\ufe0f", 0},
		{" ", 1},
		{"\t\t", 1},
		{strings.Repeat(" ", 40), 3},
		{"café naïve Ελληνικά", 4},
		{"The quick brown fox jumps over the lazy dog.", 10},
	}
	for _, tt := range tests {
		if got := (Estimate{}).Count(tt.in); got != tt.want {
			t.Errorf("Estimate.Count(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// TestEstimateProperties checks, on random text, that every code point costs
// at most one token (two outside the Basic Multilingual Plane) and that a text costs at most the sum of its halves plus
// one (a piece split in two can only gain the tokens at the cut).
func TestEstimateProperties(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var e Estimate
	for range 2000 {
		s := randomText(rng, 1+rng.Intn(60))
		for _, r := range s {
			limit := 1
			if r >= 0x10000 {
				limit = 2
			}
			if n := e.Count(string(r)); n > limit {
				t.Fatalf("Estimate.Count(%q) = %d, want <= %d", r, n, limit)
			}
		}
		n := e.Count(s)
		if n != e.Count(s) {
			t.Fatalf("Estimate.Count(%q) is not deterministic", s)
		}
		rs := []rune(s)
		cut := rng.Intn(len(rs) + 1)
		a, b := string(rs[:cut]), string(rs[cut:])
		if sum := e.Count(a) + e.Count(b); n > sum+1 {
			t.Fatalf("Estimate.Count(%q) = %d > Count(%q)+Count(%q)+1 = %d", s, n, a, b, sum+1)
		}
	}
}

func TestASCIIKinds(t *testing.T) {
	if len(asciiKinds) != 128 {
		t.Fatalf("len(asciiKinds) = %d, want 128", len(asciiKinds))
	}
	for c := range 128 {
		var want byte
		switch r := rune(c); {
		case 'a' <= r && r <= 'z':
			want = kindLower
		case 'A' <= r && r <= 'Z':
			want = kindUpper
		case '0' <= r && r <= '9':
			want = kindDigit
		case r == ' ' || r == '\t':
			want = kindSpace
		case r == '\n' || r == '\v' || r == '\f' || r == '\r':
			want = kindNewline
		default:
			want = kindPunct
		}
		if asciiKinds[c] != want {
			t.Errorf("asciiKinds[%q] = %q, want %q", rune(c), asciiKinds[c], want)
		}
	}
}
