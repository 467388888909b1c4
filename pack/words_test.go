package pack

import (
	"slices"
	"strings"
	"testing"
)

func TestWords(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"Hello, World!", "hello world"},
		{"can't won’t 'quoted' rock'n'roll", "can't won't quoted rock'n'roll"},
		{"Q3 revenue: $1,200.50", "q3 revenue . 1 200 50"},
		{"First. Second; third? Fourth", "first . second . third . fourth"},
		{"ÜBER straße café", "über straße café"},
		{"日本語のテキスト。次", "日本語のテキスト . 次"},
		{"a - b -- c", "a b c"},
	}
	for _, tt := range tests {
		if got := strings.Join(words(tt.in), " "); got != tt.want {
			t.Errorf("words(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestStem(t *testing.T) {
	tests := []struct{ in, want string }{
		{"policies", "policy"}, {"policy", "policy"}, {"ties", "tie"},
		{"classes", "class"}, {"glass", "glass"}, {"deadlines", "deadline"}, {"bus", "bus"},
		{"running", "runn"}, {"sing", "sing"}, {"approved", "approv"}, {"used", "used"}, {"days", "day"},
	}
	for _, tt := range tests {
		base, extra := stem([]byte(tt.in))
		got := string(base)
		if extra != 0 {
			got += string(extra)
		}
		if got != tt.want {
			t.Errorf("stem(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTermHash(t *testing.T) {
	kind := func(w string) int { _, k := termHash([]byte(w)); return k }
	if kind("the") != kindStop || kind("won't") != kindStop || kind("2024") != kindNumber || kind("q3") != kindTerm || kind("refund") != kindTerm {
		t.Error("kinds")
	}
	h := func(w string) uint64 { h, _ := termHash([]byte(w)); return h }
	if h("policies") != h("policy") || h("deadlines") != h("deadline") || h("refund") == h("refunds2") {
		t.Error("stemmed hashes")
	}
	q := queryTerms("What is the refund window for 2024? Refunds, windows!")
	if want := sortedSet([]uint64{h("refund"), h("window"), h("2024")}); !slices.Equal(q, want) {
		t.Errorf("query terms %v, want %v", q, want)
	}
}

func TestShingles(t *testing.T) {
	count := func(s string) int { return len(shingleSet(s)) }
	if count("") != 0 || count("one") != 1 || count("one two") != 1 || count("one two three four") != 2 {
		t.Error("shingle counts of short texts")
	}
	if shingleSet("one two")[appendShingles(nil, "one")[0]] {
		t.Error("one word and two words share a shingle")
	}
	if got := count("a b c a b c a b c"); got != 3 {
		t.Errorf("distinct shingles %d, want 3", got)
	}
	if naiveJaccard(shingleSet("The Quick, brown fox."), shingleSet("the quick brown FOX")) != 1 {
		t.Error("case and punctuation matter")
	}
}
