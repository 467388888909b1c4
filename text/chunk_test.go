package text

import (
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestSentences(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" \n\t ", nil},
		{"End", []string{"End"}},
		{"Hello world. How are you?", []string{"Hello world.", "How are you?"}},
		{"Pi is 3.14 today. Yes", []string{"Pi is 3.14 today.", "Yes"}},
		{"See e.g. the docs. Then go.", []string{"See e.g. the docs.", "Then go."}},
		{"Use i.e. this one", []string{"Use i.e. this one"}},
		{"Dr. Smith and Mrs. Jones met Mr. Brown. He sat.", []string{"Dr. Smith and Mrs. Jones met Mr. Brown.", "He sat."}},
		{"Apples, pears, etc. and more.", []string{"Apples, pears, etc. and more."}},
		{"Apples, pears, etc. Next one.", []string{"Apples, pears, etc.", "Next one."}},
		{"Go vs. Rust vs. C", []string{"Go vs. Rust vs. C"}},
		{"See e.g. Python. Or cf. Go.", []string{"See e.g. Python.", "Or cf. Go."}},
		{"cats vs. dogs", []string{"cats vs. dogs"}},
		{"At 5 p.m. today. Next", []string{"At 5 p.m. today.", "Next"}},
		{"J. R. R. Tolkien wrote it. Yes.", []string{"J. R. R. Tolkien wrote it.", "Yes."}},
		{"Wait?! Really... yes.", []string{"Wait?!", "Really...", "yes."}},
		{"Hmm… maybe", []string{"Hmm…", "maybe"}},
		{"He said \"stop.\" Then left.", []string{"He said \"stop.\"", "Then left."}},
		{"(Quietly.) Then", []string{"(Quietly.)", "Then"}},
		{"example.com is up. ok", []string{"example.com is up.", "ok"}},
		{"v1.2.3 released", []string{"v1.2.3 released"}},
		{"line one\nline two\n\nline three", []string{"line one", "line two", "line three"}},
		{"  padded  \n", []string{"padded"}},
		{"Windows\r\nline", []string{"Windows", "line"}},
		{"a\u2028b\u2029c\u0085d", []string{"a", "b", "c", "d"}},
		{"Is it?\u00a0Yes.", []string{"Is it?", "Yes."}},
		{"1. First step\n2. Second step", []string{"1. First step", "2. Second step"}},
		{"Chapter 12. The end", []string{"Chapter 12.", "The end"}},
		{"你好。世界！再见", []string{"你好。", "世界！", "再见"}},
		{"「本当？」はい。", []string{"「本当？」", "はい。"}},
		{"Why？！ok", []string{"Why？！", "ok"}},
		{"Done. 🎉 Party!", []string{"Done.", "🎉 Party!"}},
	}
	for _, tt := range tests {
		var got []string
		for pos := 0; ; {
			start, end, next := nextSentence(tt.in, pos)
			if start == end {
				break
			}
			got = append(got, tt.in[start:end])
			pos = next
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("sentences of %q\n got: %q\nwant: %q", tt.in, got, tt.want)
		}
	}
}

// runeCounter counts code points, white space included: unlike Estimate, a
// chunk then costs more than the sum of its sentences, which exercises the
// exact check of each chunk.
type runeCounter struct{}

func (runeCounter) Count(s string) int { return utf8.RuneCountInString(s) }

func TestChunks(t *testing.T) {
	tests := []struct {
		name        string
		in          string
		counter     TokenCounter
		target, max int
		want        []string
	}{
		{"empty", "", nil, 200, 512, nil},
		{"all space", " \n\t\u3000 ", nil, 200, 512, nil},
		{"one chunk", "  Hello there. How are you?  ", nil, 200, 512, []string{"Hello there. How are you?"}},
		{"packing", "One. Two. Three. Four.", Estimate{}, 4, 10, []string{"One. Two.", "Three. Four."}},
		{"sentence over target alone", "A b. C d e f g h i j k l. M.", Estimate{}, 4, 20,
			[]string{"A b.", "C d e f g h i j k l.", "M."}},
		{"long sentence split at words", "Short one. a b c d e f g h i j. Tail.", Estimate{}, 4, 6,
			[]string{"Short one.", "a b c d", "e f g h", "i j.", "Tail."}},
		{"long word cut", strings.Repeat("abcd", 40), Estimate{}, 3, 5,
			[]string{"abcdabcdabcdabcd", "abcdabcdabcdabcd", "abcdabcdabcdabcd", "abcdabcdabcdabcd", "abcdabcdabcdabcd",
				"abcdabcdabcdabcd", "abcdabcdabcdabcd", "abcdabcdabcdabcd", "abcdabcdabcdabcd", "abcdabcdabcdabcd"}},
		{"CJK without spaces cut", "一二三四五六七八九十。", Estimate{}, 4, 5, []string{"一二三四", "五六七八", "九十。"}},
		{"marks kept with their letter", "e\u0301e\u0301e\u0301e\u0301", runeCounter{}, 3, 3,
			[]string{"e\u0301", "e\u0301", "e\u0301", "e\u0301"}},
		{"emoji sequences kept whole", strings.Repeat("👨\u200d👩\u200d👧", 3), runeCounter{}, 6, 6,
			[]string{"👨\u200d👩\u200d👧", "👨\u200d👩\u200d👧", "👨\u200d👩\u200d👧"}},
		{"exact check splits packed chunk", "ab. cd. ef.", runeCounter{}, 6, 6, []string{"ab.", "cd.", "ef."}},
		{"chat lines", "user: hi\nassistant: hello there\nuser: bye", Estimate{}, 4, 8,
			[]string{"user: hi", "assistant: hello there", "user: bye"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks := Chunks(tt.in, tt.counter, tt.target, tt.max)
			var got []string
			for _, c := range chunks {
				got = append(got, c.Text)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Chunks(%q, %d, %d)\n got: %q\nwant: %q", tt.in, tt.target, tt.max, got, tt.want)
			}
			counter := tt.counter
			if counter == nil {
				counter = Estimate{}
			}
			checkChunks(t, tt.in, counter, tt.max, chunks)
		})
	}
}

func TestChunksOffsets(t *testing.T) {
	text := "héllo 👋🏽 wörld. 你好！ Bye."
	chunks := Chunks(text, Estimate{}, 3, 8)
	want := []Chunk{
		{Start: 0, End: 15, Text: "héllo 👋🏽 wörld.", Tokens: 7},
		{Start: 16, End: 19, Text: "你好！", Tokens: 3},
		{Start: 20, End: 24, Text: "Bye.", Tokens: 2},
	}
	if !reflect.DeepEqual(chunks, want) {
		t.Errorf("Chunks(%q)\n got: %+v\nwant: %+v", text, chunks, want)
	}
}

func TestChunksArguments(t *testing.T) {
	text := "One. Two."
	for _, tt := range []struct{ target, max int }{{0, 0}, {-5, 1}, {100, 1}, {0, 3}} {
		checkChunks(t, text, Estimate{}, max(tt.max, 1), Chunks(text, nil, tt.target, tt.max))
	}
}

// TestChunksProperties checks the invariants of Chunks on random texts, with
// several counters and sizes.
func TestChunksProperties(t *testing.T) {
	rng := rand.New(rand.NewSource(42))
	counters := []TokenCounter{Estimate{}, runeCounter{}}
	sizes := []struct{ target, max int }{{200, 512}, {20, 40}, {5, 8}, {1, 2}, {1, 1}, {3, 100}}
	for i := range 250 {
		text := randomText(rng, rng.Intn(300))
		if i%25 == 0 {
			text = randomText(rng, 3000)
		}
		for _, counter := range counters {
			for _, sz := range sizes {
				if _, ok := counter.(Estimate); ok && sz.max < 2 {
					continue // an emoji alone costs two
				}
				chunks := Chunks(text, counter, sz.target, sz.max)
				checkChunks(t, text, counter, sz.max, chunks)
				if again := Chunks(text, counter, sz.target, sz.max); !reflect.DeepEqual(chunks, again) {
					t.Fatalf("Chunks(%q) is not deterministic", text)
				}
			}
		}
	}
}

// FuzzChunks checks the invariants of Chunks on arbitrary valid UTF-8.
func FuzzChunks(f *testing.F) {
	for _, s := range []string{"", "Hello. World!", "e.g. 3.14\n\n你好。", "👨\u200d👩\u200d👧 é\u0301"} {
		f.Add(s, 4, 8)
	}
	f.Fuzz(func(t *testing.T, text string, target, maxTokens int) {
		if !utf8.ValidString(text) {
			return
		}
		target, maxTokens = target%600, max(maxTokens%600, 2)
		checkChunks(t, text, Estimate{}, maxTokens, Chunks(text, Estimate{}, target, maxTokens))
	})
}

// checkChunks verifies the invariants of Chunks.
func checkChunks(t *testing.T, text string, counter TokenCounter, maxTokens int, chunks []Chunk) {
	t.Helper()
	runes := []rune(text)
	prev := 0
	for i, c := range chunks {
		if c.Start < prev || c.End <= c.Start || c.End > len(runes) {
			t.Fatalf("chunk %d of %q: bad range [%d,%d) after %d", i, text, c.Start, c.End, prev)
		}
		if s := string(runes[c.Start:c.End]); s != c.Text {
			t.Fatalf("chunk %d of %q: Text %q != text[%d:%d] %q", i, text, c.Text, c.Start, c.End, s)
		}
		if n := counter.Count(c.Text); c.Tokens != n {
			t.Fatalf("chunk %d %q: Tokens %d, count %d", i, c.Text, c.Tokens, n)
		}
		if c.Tokens > maxTokens {
			t.Fatalf("chunk %d %q of %q: %d tokens > max %d", i, c.Text, text, c.Tokens, maxTokens)
		}
		if unicode.IsSpace(runes[c.Start]) || unicode.IsSpace(runes[c.End-1]) {
			t.Fatalf("chunk %d %q is not trimmed", i, c.Text)
		}
		for _, r := range runes[prev:c.Start] {
			if !unicode.IsSpace(r) {
				t.Fatalf("%q: %q before chunk %d is in no chunk", text, r, i)
			}
		}
		prev = c.End
	}
	for _, r := range runes[prev:] {
		if !unicode.IsSpace(r) {
			t.Fatalf("%q: %q after the last chunk is in no chunk", text, r)
		}
	}
}

// randomText returns about n pieces of text mixing scripts, numbers,
// punctuation, sentence ends, abbreviations, white space, emoji, combining
// marks and the occasional very long word.
func randomText(rng *rand.Rand, n int) string {
	alphabets := []string{
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
		"абвгдежзийклмнопрстуфхцчшщыэюяАБВГ",
		"αβγδεζηθικλμνξοπρστυφχψω",
		"的一是不了人我在有他这为之大来以个中上们",
		"あいうえおかきくけこアイウエオ",
		"한국어문장입니다",
		"0123456789",
	}
	pieces := []string{
		" ", " ", " ", " ", "  ", "\n", "\n\n", "\t", "\r\n", "\u00a0", "\u3000", "\u2028",
		". ", "! ", "? ", "?! ", "... ", "… ", "。", "！", "？", ", ", "; ", ": ", "\"", "'", "(", ")",
		"e.g. ", "i.e. ", "Dr. ", "Mr. ", "etc. ", "vs. ", "3.14", "1. ", "p.m. ",
		"😀", "👍🏽", "👨\u200d👩\u200d👧", "🇫🇷", "e\u0301", "\u0301", "\ufe0f", "\u200d",
		"https://example.com/a?b=c", "{\"k\": [1, 2]}", "-", "/", "*", "#",
	}
	var b strings.Builder
	for range n {
		switch k := rng.Intn(10); {
		case k < 5:
			alphabet := []rune(alphabets[rng.Intn(len(alphabets))])
			length := 1 + rng.Intn(12)
			if rng.Intn(100) == 0 {
				length = 100 + rng.Intn(3000) // a very long word
			}
			for range length {
				b.WriteRune(alphabet[rng.Intn(len(alphabet))])
			}
		default:
			b.WriteString(pieces[rng.Intn(len(pieces))])
		}
	}
	return b.String()
}
