package minilm

import (
	"slices"
	"strings"
	"testing"
)

// testVocab is a tiny vocabulary for tokenizer rules that do not need the
// real one.
var testVocab = []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
	"un", "##aff", "##able", "runn", "##ing", "a", "b", ",", "!", "cafe", "中", "i", "ᄒ", "##ᅡ", "##ᆫ"}

func TestTokenizerRules(t *testing.T) {
	tok, err := NewTokenizer(testVocab, 16)
	if err != nil {
		t.Fatal(err)
	}
	id := func(s string) int32 { return int32(slices.Index(testVocab, s)) }
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"empty", "", nil},
		{"greedy longest match with ##", "unaffable running", []string{"un", "##aff", "##able", "runn", "##ing"}},
		{"no match: whole word is [UNK]", "unaffx", []string{"[UNK]"}},
		{"lowercase", "UNAFFABLE", []string{"un", "##aff", "##able"}},
		{"punctuation splits", "a,b!", []string{"a", ",", "b", "!"}},
		{"accents stripped", "Café", []string{"cafe"}},
		{"chinese characters split", "中中", []string{"中", "中"}},
		{"controls dropped, whitespace splits", "a\x00\tb\u200b", []string{"a", "b"}},
		{"special token in text", "a[SEP]b", []string{"a", "[SEP]", "b"}},
		{"special token is case-sensitive", "[sep]", []string{"[UNK]", "[UNK]", "[UNK]"}},
		{"dotted capital I loses its dot before lowercasing", "İ", []string{"i"}},
		{"hangul decomposes to jamo", "한", []string{"ᄒ", "##ᅡ", "##ᆫ"}},
		{"word over 100 runes is [UNK]", strings.Repeat("a", 101), []string{"[UNK]"}},
		{"truncated to 14 pieces", strings.Repeat("a ", 20), slices.Repeat([]string{"a"}, 14)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := []int32{id("[CLS]")}
			for _, w := range tc.want {
				want = append(want, id(w))
			}
			want = append(want, id("[SEP]"))
			if got := tok.Encode(tc.text); !slices.Equal(got, want) {
				t.Errorf("Encode(%q) = %v, want %v", tc.text, got, want)
			}
		})
	}
}

func TestNewTokenizerErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		vocab  []string
		maxLen int
	}{
		{"no [UNK]", []string{"[CLS]", "[SEP]"}, 8},
		{"repeated token", []string{"[UNK]", "[CLS]", "[SEP]", "[CLS]"}, 8},
		{"max length below 2", []string{"[UNK]", "[CLS]", "[SEP]"}, 1},
	} {
		if _, err := NewTokenizer(tc.vocab, tc.maxLen); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func FuzzTokenizer(f *testing.F) {
	for _, s := range []string{"hello", "İ ß 한 中 ﬁ", "a[CLS]b", "\xff\xfe", strings.Repeat("x", 300)} {
		f.Add(s)
	}
	tok, err := NewTokenizer(testVocab, 16)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids := tok.Encode(s)
		if len(ids) < 2 || len(ids) > 16 || ids[0] != 2 || ids[len(ids)-1] != 3 {
			t.Fatalf("Encode(%q) = %v: not [CLS] … [SEP] within 16", s, ids)
		}
	})
}
