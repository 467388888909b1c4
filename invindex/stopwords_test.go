package invindex

import (
	"testing"
)

// luceneStopWords is EnglishAnalyzer.ENGLISH_STOP_WORDS_SET of Lucene 8 and 9.
var luceneStopWords = []string{
	"a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in",
	"into", "is", "it", "no", "not", "of", "on", "or", "such", "that", "the",
	"their", "then", "there", "these", "they", "this", "to", "was", "will", "with",
}

func TestIsStopWord(t *testing.T) {
	if len(luceneStopWords) != 33 || len(englishStopWords) != 33 {
		t.Fatalf("%d and %d stop words, want 33", len(luceneStopWords), len(englishStopWords))
	}
	for _, w := range luceneStopWords {
		if !IsStopWord(w) {
			t.Errorf("IsStopWord(%q) = false, want true", w)
		}
	}
	for _, w := range []string{
		"", "A", "The", "THE", "i", "s", "am", "he", "we", "do", "so", "up",
		"its", "was ", " the", "thee", "them", "they're", "those", "than",
		"there's", "theirs", "with\x00", "wills", "intoo", "suc", "wil", "ther",
		"these\u0301", "ａ",
	} {
		if IsStopWord(w) {
			t.Errorf("IsStopWord(%q) = true, want false", w)
		}
	}
}

// TestIsStopWordExhaustive compares the hand-written dispatch with a set
// lookup on every lowercase string of up to three letters and on every
// one-letter change of the longer stop words.
func TestIsStopWordExhaustive(t *testing.T) {
	set := map[string]bool{}
	for _, w := range luceneStopWords {
		set[w] = true
	}
	check := func(w string) {
		if got := IsStopWord(w); got != set[w] {
			t.Errorf("IsStopWord(%q) = %v, want %v", w, got, set[w])
		}
		if got := isStopBytes([]byte(w)); got != set[w] {
			t.Errorf("isStopBytes(%q) = %v, want %v", w, got, set[w])
		}
	}
	var gen func(prefix string, n int)
	gen = func(prefix string, n int) {
		check(prefix)
		if n == 0 {
			return
		}
		for c := 'a'; c <= 'z'; c++ {
			gen(prefix+string(c), n-1)
		}
	}
	gen("", 3)
	for _, w := range luceneStopWords {
		for i := range len(w) {
			for c := byte('a'); c <= 'z'; c++ {
				check(w[:i] + string(c) + w[i+1:])
			}
		}
	}
}

func BenchmarkIsStopWord(b *testing.B) {
	words := []string{"the", "cells", "of", "protein", "there", "a", "treatment", "with"}
	for b.Loop() {
		for _, w := range words {
			IsStopWord(w)
		}
	}
}
