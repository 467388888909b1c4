package glove

import (
	"slices"
	"testing"
)

func tokens(s string) []string {
	var z tokenizer
	z.reset(s)
	var out []string
	for {
		w, ok := z.next()
		if !ok {
			return out
		}
		out = append(out, string(w))
	}
}

func TestTokenizer(t *testing.T) {
	long := string(make([]byte, 0)) + "a"
	for range maxToken {
		long += "b"
	}
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  \t\n ", nil},
		{"Hello, World!", []string{"hello", "world"}},
		{"The U.S. GDP grew 3.5% in 2024", []string{"the", "u", "s", "gdp", "grew", "3", "5", "in", "2024"}},
		{"well-known e-mail", []string{"well", "known", "e", "mail"}},
		{"it's John's", []string{"it", "john"}},
		{"don't can't won't isn't", []string{"do", "ca", "wo", "is"}},
		{"we're they'll I've I'm she'd", []string{"we", "they", "i", "i", "she"}},
		{"it\u2019s don\u2019t", []string{"it", "do"}},
		{"O'Neill rock'n'roll", []string{"o", "neill", "rock", "n", "roll"}},
		{"'quoted' dogs' '90s", []string{"quoted", "dogs", "90s"}},
		{"a''b ''' '", []string{"a", "b"}},
		{"café au lait", []string{"au", "lait"}},
		{"東京 tower", []string{"tower"}},
		{"naïve résumé ok", []string{"ok"}},
		{"snake_case CamelCase", []string{"snake", "case", "camelcase"}},
		{"x\u00a0y\u2014z", []string{"x", "y", "z"}},
		{long + " end", []string{"end"}},
		{"bad\xffutf8", []string{"bad", "utf8"}},
	} {
		if got := tokens(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzTokenizer(f *testing.F) {
	f.Add("Hello, it's O'Neill's café")
	f.Fuzz(func(t *testing.T, s string) {
		for _, w := range tokens(s) {
			if w == "" || len(w) > maxToken {
				t.Fatalf("bad word %q", w)
			}
			for i := 0; i < len(w); i++ {
				if wordByte[w[i]] != w[i] {
					t.Fatalf("word %q has byte %q", w, w[i])
				}
			}
		}
	})
}
