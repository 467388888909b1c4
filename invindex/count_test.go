package invindex

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// sameDocTerms reports whether two counts are equal (nil and empty slices
// alike).
func sameDocTerms(a, b DocTerms) bool {
	return a.Len == b.Len && slices.Equal(a.Terms, b.Terms) && slices.Equal(a.TFs, b.TFs)
}

// checkCountTexts checks CountTexts against CountTerms(Analyze(...)) for one
// batch of docs.
func checkCountTexts(t *testing.T, texts []string) {
	t.Helper()
	got := CountTexts(len(texts), func(i int) string { return texts[i] })
	if len(got) != len(texts) {
		t.Fatalf("CountTexts returned %d docs for %d", len(got), len(texts))
	}
	for i, text := range texts {
		if want := CountTerms(Analyze(text, nil)); !sameDocTerms(got[i], want) {
			t.Fatalf("CountTexts doc %d of %d (%q):\n got %+v\nwant %+v", i, len(texts), text, got[i], want)
		}
		if len(got[i].hashes) != len(got[i].Terms) {
			t.Fatalf("doc %d: %d hashes for %d terms", i, len(got[i].hashes), len(got[i].Terms))
		}
		for k, term := range got[i].Terms {
			if got[i].hashes[k] != termHash(term) {
				t.Fatalf("doc %d: hash of %q is not its termHash", i, term)
			}
		}
	}
}

// TestCountTextsEqualsCountTerms: the pooled, remembering counter gives
// exactly what analyzing and counting each doc afresh gives, whatever the
// counter remembers from earlier docs (batches of several docs, repeated
// texts, tokens cached in one batch and met again in another, more distinct
// tokens than a counter keeps).
func TestCountTextsEqualsCountTerms(t *testing.T) {
	var cases []string
	for _, c := range analyzerCases {
		cases = append(cases, c.in)
	}
	for _, l := range readLuceneGolden(t) {
		cases = append(cases, l.Text)
	}
	r := rand.New(rand.NewPCG(3, 5))
	for i := range 5000 {
		text := randomAnalyzerText(r, r.IntN(60), i%2 == 1)
		if i%250 == 0 {
			text = strings.Repeat(text, 1+r.IntN(50))
		}
		cases = append(cases, text)
	}
	// Prose with possessives, stop words, repeated words and their stems,
	// numbers (many distinct tokens), long tokens and case variants.
	words := strings.Fields("The the THE runs run running runner's John's dogs' a an and of to is are was " +
		"connection connected connecting café CAFÉ naïve résumé α-synuclein TNF-α U.S.A. e.g. 3.14 " +
		"supercalifragilisticexpialidocious-and-then-some-more-letters-beyond-forty-eight-bytes x")
	for range 3000 {
		var sb strings.Builder
		for k := r.IntN(80); k > 0; k-- {
			if r.IntN(5) == 0 {
				sb.WriteString(strings.Repeat("n", r.IntN(3)))
				sb.WriteString(string(rune('0' + r.IntN(10))))
				sb.WriteString(strings.Repeat("7", r.IntN(4)))
			} else {
				sb.WriteString(words[r.IntN(len(words))])
			}
			sb.WriteString([]string{" ", ", ", ". ", "\n", "'s "}[r.IntN(5)])
		}
		cases = append(cases, sb.String())
	}
	cases = append(cases, "", "   ", "the a an", strings.Repeat("word ", 1000))
	for lo := 0; lo < len(cases); {
		n := 1 + r.IntN(7)
		hi := min(lo+n, len(cases))
		checkCountTexts(t, cases[lo:hi])
		lo = hi
	}
	// Twice over: everything is remembered now (up to the bound).
	for lo := 0; lo < len(cases); lo += 5 {
		checkCountTexts(t, cases[lo:min(lo+5, len(cases))])
	}
	// Distinct tokens past the bound make a counter start afresh mid-run.
	var many []string
	for i := range 3 * maxCountedTokens / 50 {
		var sb strings.Builder
		for k := range 50 {
			sb.WriteString("tok")
			sb.WriteString(strings.Repeat("z", k%3))
			sb.WriteString(string(rune('a' + (i*50+k)%26)))
			sb.WriteString(string(rune('a' + (i*50+k)/26%26)))
			sb.WriteString(string(rune('a' + (i*50+k)/676%26)))
			sb.WriteString(" the running ")
		}
		many = append(many, sb.String())
	}
	for lo := 0; lo < len(many); lo += 3 {
		checkCountTexts(t, many[lo:min(lo+3, len(many))])
	}
	// Numbers and tokens mixing digits and letters (kept apart from words
	// by the counter), past their own bound.
	mixed := strings.Fields("10s 10 2nd 2nds second A4's a4 x86_64 X86_64 ３ ３s 1,000 1.5 v1.2.3 " +
		"2024-05-01 the running's 7up 7UP's ٣ ٣s 100th 100ths")
	var nums []string
	for i := range 3 * maxCountedNumbers / 40 {
		var sb strings.Builder
		for k := range 40 {
			sb.WriteString(strconv.Itoa(i*40 + k))
			sb.WriteString(" ")
			sb.WriteString(mixed[(i+k)%len(mixed)])
			sb.WriteString(" ")
		}
		nums = append(nums, sb.String())
	}
	for lo := 0; lo < len(nums); lo += 2 {
		checkCountTexts(t, nums[lo:min(lo+2, len(nums))])
	}
	if got := CountTexts(0, nil); got == nil || len(got) != 0 {
		t.Errorf("CountTexts(0) = %#v, want an empty non-nil slice", got)
	}
}

// TestCountTextsSciFact compares on real scientific prose (when the shared
// data set is checked out).
func TestCountTextsSciFact(t *testing.T) {
	var docs []string
	for _, doc := range readSciFact(t, "corpus.jsonl") {
		docs = append(docs, doc.Title, doc.Text)
	}
	for lo := 0; lo < len(docs); lo += 4 {
		checkCountTexts(t, docs[lo:min(lo+4, len(docs))])
	}
}

// TestCountTextsConcurrent runs counters on many goroutines at once (run
// with -race): results never mix.
func TestCountTextsConcurrent(t *testing.T) {
	texts := []string{
		"The quick brown foxes jumped over the lazy dogs' backs in 1999.",
		"Café naïve résumé: α-synuclein and TNF-α in the U.S.A. (e.g. 3.14).",
		"deploy deploys deployed deploying the deployment of the cluster",
	}
	want := make([]DocTerms, len(texts))
	for i, s := range texts {
		want[i] = CountTerms(Analyze(s, nil))
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 2000 {
				i := (g + k) % len(texts)
				got := CountTexts(2, func(j int) string { return texts[(i+j)%len(texts)] })
				for j := range got {
					if !sameDocTerms(got[j], want[(i+j)%len(texts)]) {
						t.Errorf("goroutine %d: got %+v", g, got[j])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

func BenchmarkCountTexts(b *testing.B) {
	text := analyzerProse()
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		CountTexts(1, func(int) string { return text })
	}
}

func BenchmarkCountTermsAnalyze(b *testing.B) {
	text := analyzerProse()
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		CountTerms(Analyze(text, nil))
	}
}
