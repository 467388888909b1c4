package invindex

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// analyzerCases are the tricky cases of the analyzer. The expected tokens and
// terms are the output of Lucene 8.7's StandardTokenizer and EnglishAnalyzer
// on the same text, which this package reproduces.
var analyzerCases = []struct {
	name   string
	in     string
	tokens []string // StandardTokenizer
	terms  []string // EnglishAnalyzer
}{
	{
		name:   "empty",
		in:     "",
		tokens: []string{},
		terms:  []string{},
	},
	{
		name:   "whitespace",
		in:     " \t\r\n\u00a0\u3000 ",
		tokens: []string{},
		terms:  []string{},
	},
	{
		name:   "punctuation only",
		in:     "-- !? ... ()[]{} @#$%^&*+=<>/\\|~`",
		tokens: []string{},
		terms:  []string{},
	},
	{
		name:   "plain",
		in:     "The quick brown fox jumps over the lazy dog.",
		tokens: []string{"The", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog"},
		terms:  []string{"quick", "brown", "fox", "jump", "over", "lazi", "dog"},
	},
	{
		name:   "possessive",
		in:     "John's dog; JAMES'S cat; the O’Brien’s house; Ｔａｒｏ＇s",
		tokens: []string{"John's", "dog", "JAMES'S", "cat", "the", "O’Brien’s", "house", "Ｔａｒｏ＇s"},
		terms:  []string{"john", "dog", "jame", "cat", "o’brien", "hous", "ｔａｒｏ"},
	},
	{
		name:   "apostrophes inside",
		in:     "don't can't O'Neil rock'n'roll 'quoted' dogs' tails",
		tokens: []string{"don't", "can't", "O'Neil", "rock'n'roll", "quoted", "dogs", "tails"},
		terms:  []string{"don't", "can't", "o'neil", "rock'n'rol", "quot", "dog", "tail"},
	},
	{
		name:   "numbers",
		in:     "3.14 1,000.5 1.000,5 10:30 v2.0 2.0.1 1e-5 -7 +8 ±9 50% $12.50",
		tokens: []string{"3.14", "1,000.5", "1.000,5", "10", "30", "v2.0", "2.0.1", "1e", "5", "7", "8", "9", "50", "12.50"},
		terms:  []string{"3.14", "1,000.5", "1.000,5", "10", "30", "v2.0", "2.0.1", "1e", "5", "7", "8", "9", "50", "12.50"},
	},
	{
		name:   "letters and digits",
		in:     "covid19 h1n1 COVID-19 IL-6 p53 CD4+ 5mg 10-fold Na+/K+ 1990s 1990's",
		tokens: []string{"covid19", "h1n1", "COVID", "19", "IL", "6", "p53", "CD4", "5mg", "10", "fold", "Na", "K", "1990s", "1990", "s"},
		terms:  []string{"covid19", "h1n1", "covid", "19", "il", "6", "p53", "cd4", "5mg", "10", "fold", "na", "k", "1990", "1990", "s"},
	},
	{
		name:   "hyphens",
		in:     "state-of-the-art well-known e-mail x–y a—b",
		tokens: []string{"state", "of", "the", "art", "well", "known", "e", "mail", "x", "y", "a", "b"},
		terms:  []string{"state", "art", "well", "known", "e", "mail", "x", "y", "b"},
	},
	{
		name:   "email and url",
		in:     "user@example.com http://x.org/a https://www.nih.gov/path?q=1&r=2#frag ftp://a.b",
		tokens: []string{"user", "example.com", "http", "x.org", "a", "https", "www.nih.gov", "path", "q", "1", "r", "2", "frag", "ftp", "a.b"},
		terms:  []string{"user", "example.com", "http", "x.org", "http", "www.nih.gov", "path", "q", "1", "r", "2", "frag", "ftp", "a.b"},
	},
	{
		name:   "dots between letters",
		in:     "e.g. i.e. U.S.A. Ph.D. etc. a.b.c.d a..b .net node.js",
		tokens: []string{"e.g", "i.e", "U.S.A", "Ph.D", "etc", "a.b.c.d", "a", "b", "net", "node.js"},
		terms:  []string{"e.g", "i.", "u.s.a", "ph.d", "etc", "a.b.c.d", "b", "net", "node.j"},
	},
	{
		name:   "colon and middle dot",
		in:     "a:b ab: :ab α:β l·l 1:2",
		tokens: []string{"a:b", "ab", "ab", "α:β", "l·l", "1", "2"},
		terms:  []string{"a:b", "ab", "ab", "α:β", "l·l", "1", "2"},
	},
	{
		name:   "underscores",
		in:     "snake_case __init__ _private trailing_ ___ a_1 1_000",
		tokens: []string{"snake_case", "__init__", "_private", "trailing_", "a_1", "1_000"},
		terms:  []string{"snake_cas", "__init__", "_privat", "trailing_", "a_1", "1_000"},
	},
	{
		name:   "single quote and digits",
		in:     "1'000 '90s rock'n",
		tokens: []string{"1'000", "90s", "rock'n"},
		terms:  []string{"1'000", "90", "rock'n"},
	},
	{
		name:   "stop words",
		in:     "The cat is on the mat and it was not there; such is THE life. To be or not to be, that is the question.",
		tokens: []string{"The", "cat", "is", "on", "the", "mat", "and", "it", "was", "not", "there", "such", "is", "THE", "life", "To", "be", "or", "not", "to", "be", "that", "is", "the", "question"},
		terms:  []string{"cat", "mat", "life", "question"},
	},
	{
		name:   "stemming",
		in:     "Generalizations of oscillators were connected, relating the hopping and hopeful runners' conditional probabilities.",
		tokens: []string{"Generalizations", "of", "oscillators", "were", "connected", "relating", "the", "hopping", "and", "hopeful", "runners", "conditional", "probabilities"},
		terms:  []string{"gener", "oscil", "were", "connect", "relat", "hop", "hope", "runner", "condit", "probabl"},
	},
	{
		name:   "uppercase stems",
		in:     "RUNNING HOPPING CONDITIONAL HAPPINESS SKIES",
		tokens: []string{"RUNNING", "HOPPING", "CONDITIONAL", "HAPPINESS", "SKIES"},
		terms:  []string{"run", "hop", "condit", "happi", "ski"},
	},
	{
		name:   "short words",
		in:     "as is at ha by ox ax",
		tokens: []string{"as", "is", "at", "ha", "by", "ox", "ax"},
		terms:  []string{"ha", "ox", "ax"},
	},
	{
		name:   "accents",
		in:     "café naïve résumé Zürich façade cafe\u0301 nai\u0308ve",
		tokens: []string{"café", "naïve", "résumé", "Zürich", "façade", "cafe\u0301", "nai\u0308ve"},
		terms:  []string{"café", "naïv", "résumé", "zürich", "façad", "cafe\u0301", "nai\u0308v"},
	},
	{
		name:   "combining marks alone",
		in:     "\u0301abc \u0301 a\u0301\u0301b",
		tokens: []string{"abc", "a\u0301\u0301b"},
		terms:  []string{"abc", "a\u0301\u0301b"},
	},
	{
		name:   "greek and cyrillic",
		in:     "α-synuclein TNF-α β2-microglobulin ΑΒΓ москва ПРИВЕТ",
		tokens: []string{"α", "synuclein", "TNF", "α", "β2", "microglobulin", "ΑΒΓ", "москва", "ПРИВЕТ"},
		terms:  []string{"α", "synuclein", "tnf", "α", "β2", "microglobulin", "αβγ", "москва", "привет"},
	},
	{
		name:   "cjk",
		in:     "中文字 日本語 漢字kanji",
		tokens: []string{"中", "文", "字", "日", "本", "語", "漢", "字", "kanji"},
		terms:  []string{"中", "文", "字", "日", "本", "語", "漢", "字", "kanji"},
	},
	{
		name:   "japanese mixed",
		in:     "日本語のテキストとカタカナ、ひらがなー。ｶﾀｶﾅ",
		tokens: []string{"日", "本", "語", "の", "テキスト", "と", "カタカナ", "ひ", "ら", "が", "な", "ー", "ｶﾀｶﾅ"},
		terms:  []string{"日", "本", "語", "の", "テキスト", "と", "カタカナ", "ひ", "ら", "が", "な", "ー", "ｶﾀｶﾅ"},
	},
	{
		name:   "korean",
		in:     "한국어 텍스트 한글abc",
		tokens: []string{"한국어", "텍스트", "한글abc"},
		terms:  []string{"한국어", "텍스트", "한글abc"},
	},
	{
		name:   "thai",
		in:     "ภาษาไทยง\u0e48ายน\u0e34ดเด\u0e35ยว 123 ไทย",
		tokens: []string{"ภาษาไทยง\u0e48ายน\u0e34ดเด\u0e35ยว", "123", "ไทย"},
		terms:  []string{"ภาษาไทยง\u0e48ายน\u0e34ดเด\u0e35ยว", "123", "ไทย"},
	},
	{
		name:   "emoji",
		in:     "poo💩poo 👍\U0001f3fd 👨\u200d👩\u200d👧 🇺🇸 #\ufe0f\u20e3 1\ufe0f\u20e3 ☺\ufe0f ©2020 Lucene™",
		tokens: []string{"poo", "💩", "poo", "👍\U0001f3fd", "👨\u200d👩\u200d👧", "🇺🇸", "#\ufe0f\u20e3", "1\ufe0f\u20e3", "☺\ufe0f", "©", "2020", "Lucene", "™"},
		terms:  []string{"poo", "💩", "poo", "👍\U0001f3fd", "👨\u200d👩\u200d👧", "🇺🇸", "#\ufe0f\u20e3", "1\ufe0f\u20e3", "☺\ufe0f", "©", "2020", "lucen", "™"},
	},
	{
		name:   "hebrew",
		in:     "שלום עולם צה\"ל ג'ירפה א'",
		tokens: []string{"שלום", "עולם", "צה\"ל", "ג'ירפה", "א'"},
		terms:  []string{"שלום", "עולם", "צה\"ל", "ג'ירפה", "א'"},
	},
	{
		name:   "arabic",
		in:     "مرحبا بالعالم ١٢٣٫٤٥",
		tokens: []string{"مرحبا", "بالعالم", "١٢٣٫٤٥"},
		terms:  []string{"مرحبا", "بالعالم", "١٢٣٫٤٥"},
	},
	{
		name:   "soft hyphen and zwsp",
		in:     "co\u00adoperation a\u200bb",
		tokens: []string{"co\u00adoperation", "a", "b"},
		terms:  []string{"co\u00adoper", "b"},
	},
	{
		name:   "kelvin and dotted I",
		in:     "K İT İstanbul",
		tokens: []string{"K", "İT", "İstanbul"},
		terms:  []string{"k", "istanbul"},
	},
	{
		name:   "fullwidth",
		in:     "ＡＢＣ\u3000１２３\u3000ｔｅｓｔ",
		tokens: []string{"ＡＢＣ", "１２３", "ｔｅｓｔ"},
		terms:  []string{"ａｂｃ", "１２３", "ｔｅｓｔ"},
	},
	{
		name:   "math letters",
		in:     "𝑥 + 𝑦 = 𝟙",
		tokens: []string{"𝑥", "𝑦", "𝟙"},
		terms:  []string{"𝑥", "𝑦", "𝟙"},
	},
	{
		// The stop filter runs before the stemmer, so stems can be stop words.
		name:   "stems that are stop words",
		in:     "thes ise Ise tos bes",
		tokens: []string{"thes", "ise", "Ise", "tos", "bes"},
		terms:  []string{"the", "is", "is", "to", "be"},
	},
	{
		// Invalid bytes are separators (Lucene sees U+FFFD, a symbol).
		name:   "invalid utf8",
		in:     "abc\xffdef \xc3( x",
		tokens: []string{"abc", "def", "x"},
		terms:  []string{"abc", "def", "x"},
	},
}

func TestAnalyzeLucene(t *testing.T) {
	for _, tc := range analyzerCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Analyze(tc.in, nil); !slices.Equal(got, tc.terms) {
				t.Errorf("Analyze(%q)\n got %q\nwant %q", tc.in, got, tc.terms)
			}
		})
	}
}

// luceneGoldenLine is one line of testdata/analyzer/lucene.jsonl: random text
// mixing the character classes the tokenizer distinguishes, with Lucene
// 8.7's StandardTokenizer tokens and EnglishAnalyzer terms for it.
type luceneGoldenLine struct {
	Text   string
	Tokens []string
	Terms  []string
}

func readLuceneGolden(t *testing.T) []luceneGoldenLine {
	t.Helper()
	f, err := os.Open("testdata/analyzer/lucene.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []luceneGoldenLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l luceneGoldenLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(lines) < 1000 {
		t.Fatalf("read %d golden lines, want at least 1000", len(lines))
	}
	return lines
}

func TestAnalyzeLuceneGolden(t *testing.T) {
	for i, l := range readLuceneGolden(t) {
		if got := Tokenize(l.Text, nil); !slices.Equal(got, l.Tokens) {
			t.Errorf("line %d: Tokenize(%q)\n got %q\nwant %q", i+1, l.Text, got, l.Tokens)
		}
		if got := Analyze(l.Text, nil); !slices.Equal(got, l.Terms) {
			t.Errorf("line %d: Analyze(%q)\n got %q\nwant %q", i+1, l.Text, got, l.Terms)
		}
	}
}

// SciFact digests: SHA-256 of Lucene 8.7 EnglishAnalyzer's terms for every
// document (title, a space, text) of corpus.jsonl and every query of
// queries.jsonl, one line per document in file order, terms joined by U+0001.
const (
	sciFactCorpusTerms  = 838128
	sciFactCorpusDigest = "f64f633b5ab9e2ff7f2635730dbfed732ca9fb4ada1e2aae7a4e98eb508d7220"
	sciFactQueryTerms   = 10915
	sciFactQueryDigest  = "8f7033cfbe6dc867f11520ba69f18365a0b14d51f7785d4820e1a6e611e00db6"
)

// TestAnalyzeSciFact checks that Analyze produces exactly Lucene's terms for
// all of BEIR SciFact, the benchmark the lexical channel is measured on.
func TestAnalyzeSciFact(t *testing.T) {
	for _, tc := range []struct {
		file   string
		terms  int
		digest string
	}{
		{"corpus.jsonl", sciFactCorpusTerms, sciFactCorpusDigest},
		{"queries.jsonl", sciFactQueryTerms, sciFactQueryDigest},
	} {
		docs := readSciFact(t, tc.file)
		h := sha256.New()
		n := 0
		var terms []string
		for _, doc := range docs {
			terms = Analyze(doc.Title+" "+doc.Text, terms[:0])
			n += len(terms)
			h.Write([]byte(strings.Join(terms, "\x01") + "\n"))
		}
		if got := hex.EncodeToString(h.Sum(nil)); n != tc.terms || got != tc.digest {
			t.Errorf("%s: %d terms, digest %s; Lucene gives %d terms, digest %s",
				tc.file, n, got, tc.terms, tc.digest)
		}
	}
}

// sciFactDoc is a document or query of BEIR SciFact.
type sciFactDoc struct{ Title, Text string }

// readSciFact reads one file of the shared SciFact data set, skipping the
// test when it is not checked out.
func readSciFact(t *testing.T, file string) []sciFactDoc {
	t.Helper()
	f, err := os.Open("../../shared/data/scifact/" + file)
	if err != nil {
		t.Skipf("SciFact not available: %v", err)
	}
	defer f.Close()
	var docs []sciFactDoc
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var doc sciFactDoc
		if err := json.Unmarshal(sc.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, doc)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return docs
}

func TestAnalyzeAppends(t *testing.T) {
	dst := []string{"keep"}
	dst = Analyze("Running dogs", dst)
	dst = Analyze("and the cats", dst)
	if want := []string{"keep", "run", "dog", "cat"}; !slices.Equal(dst, want) {
		t.Errorf("got %q, want %q", dst, want)
	}
}

func TestAnalyzeDuplicatesKept(t *testing.T) {
	got := Analyze("cell cells CELL cell's", nil)
	if want := []string{"cell", "cell", "cell", "cell"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestAnalyzeConcurrent runs Analyze from several goroutines on text that
// makes them build the tokenizer's lazily cached class tables at the same
// time (run with -race).
func TestAnalyzeConcurrent(t *testing.T) {
	var sb strings.Builder
	for r := rune(0x80); r < 0x3000; r += 7 {
		sb.WriteRune(r)
		sb.WriteString("ab ")
	}
	text := sb.String()
	want := referenceAnalyze(text)
	done := make(chan []string)
	for range 4 {
		go func() { done <- Analyze(text, nil) }()
	}
	for range 4 {
		if got := <-done; !slices.Equal(got, want) {
			t.Errorf("concurrent Analyze differs from the sequential pipeline")
		}
	}
}

// TestAnalyzeAllocs checks that the term strings are the only allocations.
// Go does not allocate for strings of one byte, so only longer terms count.
func TestAnalyzeAllocs(t *testing.T) {
	for _, text := range []string{
		"The quick brown foxes jumped over the lazy dogs' backs in 1999.",
		"Café naïve résumé: α-synuclein and TNF-α in the U.S.A. (e.g. 3.14).",
	} {
		dst := Analyze(text, nil)
		want := 0
		for _, term := range dst {
			if len(term) > 1 {
				want++
			}
		}
		got := testing.AllocsPerRun(100, func() { dst = Analyze(text, dst[:0]) })
		if got != float64(want) {
			t.Errorf("Analyze(%q): %v allocations, want %d (one per term)", text, got, want)
		}
	}
}

// referenceAnalyze composes the analysis from the exported pieces —
// Tokenize, lowercase, possessive removal, IsStopWord, Stem — in the order
// of Lucene's EnglishAnalyzer.
func referenceAnalyze(text string) []string {
	var terms []string
	for _, tok := range Tokenize(text, nil) {
		w := strings.Map(unicode.ToLower, tok)
		for _, p := range []string{"'s", "\u2019s", "\uff07s"} {
			if strings.HasSuffix(w, p) {
				w = w[:len(w)-len(p)]
				break
			}
		}
		if w != "" && !IsStopWord(w) {
			terms = append(terms, Stem(w))
		}
	}
	return terms
}

// checkAnalyzed checks the properties every output of Analyze has, whatever
// the input: it is the composition of the pipeline's stages, and its terms
// are non-empty, valid UTF-8 and lowercase. Stop words are removed before
// stemming, as in Lucene, so a stem may still be one ("thes" → "the").
func checkAnalyzed(t *testing.T, text string, terms []string) {
	t.Helper()
	if want := referenceAnalyze(text); !slices.Equal(terms, want) {
		t.Errorf("Analyze(%q) = %q, but its stages give %q", text, terms, want)
	}
	for _, term := range terms {
		switch {
		case term == "":
			t.Errorf("Analyze(%q): empty term", text)
		case !utf8.ValidString(term):
			t.Errorf("Analyze(%q): term %q is not valid UTF-8", text, term)
		}
		for _, r := range term {
			if unicode.ToLower(r) != r {
				t.Errorf("Analyze(%q): term %q is not lowercase", text, term)
				break
			}
		}
	}
}

// checkTokenized checks the properties every output of Tokenize has: tokens
// are non-empty, valid, at most maxTokenUnits UTF-16 code units, and
// successive non-overlapping substrings of the text.
func checkTokenized(t *testing.T, text string, tokens []string) {
	t.Helper()
	rest := text
	for _, tok := range tokens {
		units := 0
		for _, r := range tok {
			units += utf16Units(utf8.RuneLen(r))
		}
		i := strings.Index(rest, tok)
		switch {
		case tok == "":
			t.Errorf("Tokenize(%q): empty token", text)
		case !utf8.ValidString(tok):
			t.Errorf("Tokenize(%q): token %q is not valid UTF-8", text, tok)
		case units > maxTokenUnits:
			t.Errorf("Tokenize(%q): token of %d UTF-16 units", text, units)
		case i < 0:
			t.Errorf("Tokenize(%q): token %q is not in the rest of the text", text, tok)
		default:
			rest = rest[i+len(tok):]
		}
	}
}

// randomAnalyzerText returns n characters mixing ASCII, the classes the tokenizer
// distinguishes, arbitrary code points and (with invalid) arbitrary bytes.
func randomAnalyzerText(r *rand.Rand, n int, invalid bool) string {
	pool := []string{"a", "Z", "s", "e", "y", "1", " ", ".", ",", ":", "'", "\"", "_", "-",
		"’", "＇", "é", "\u0301", "\u200d", "\ufe0f", "\u20e3", "#", "ב", "中", "の", "カ",
		"ก", "\u0e31", "😀", "🏽", "🇺", "ℹ", "İ", "\u212a", "𝑥", "٣", "\u00ad"}
	var sb strings.Builder
	for range n {
		switch k := r.IntN(10); {
		case k < 6:
			sb.WriteString(pool[r.IntN(len(pool))])
		case k < 9 || !invalid:
			sb.WriteRune(rune(r.IntN(0x110000)))
		default:
			sb.WriteByte(byte(r.IntN(256)))
		}
	}
	return sb.String()
}

func TestAnalyzeProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for i := range 20000 {
		text := randomAnalyzerText(r, r.IntN(40), i%2 == 1)
		if i%500 == 0 {
			// Long runs, to reach the token length limit.
			text = strings.Repeat(text, 1+r.IntN(50))
		}
		checkTokenized(t, text, Tokenize(text, nil))
		checkAnalyzed(t, text, Analyze(text, nil))
		if t.Failed() {
			return
		}
	}
}

// TestAnalyzePathological runs long repetitive inputs that stress the
// resumption logic of the tokenizer: each must take linear time (a quadratic
// scan would take minutes here) and give well-formed output.
func TestAnalyzePathological(t *testing.T) {
	for _, unit := range []string{
		"_", "\u200d", "_\u0e31", "_\u200d", "\u0301", "_\u0301", "\u200d\u0301",
		"a.", "1,", "ב'", "ב\"", "😀\u200d", "中\u0301", "_a", "🇺\u00ad", "#\u0301",
	} {
		text := strings.Repeat(unit, 200_000/len(unit))
		checkTokenized(t, text, Tokenize(text, nil))
		checkAnalyzed(t, text, Analyze(text, nil))
	}
}

func FuzzAnalyze(f *testing.F) {
	for _, tc := range analyzerCases {
		f.Add(tc.in)
	}
	f.Add(strings.Repeat("_", 300) + "a")
	f.Add(strings.Repeat("\u200d", 300) + "😀")
	f.Add("\xff\xfe\xc3(\xe2\x82")
	f.Fuzz(func(t *testing.T, text string) {
		checkTokenized(t, text, Tokenize(text, nil))
		checkAnalyzed(t, text, Analyze(text, nil))
	})
}

// analyzerProse returns about 100 KB of deterministic English-like prose:
// common words, biomedical vocabulary, capitals, numbers, possessives and
// punctuation.
func analyzerProse() string {
	words := strings.Fields(`the of and to in a is that for it as was with be by on
		not he this are or his from at which but have an they you were her she
		there been one all we their has would when if so no will more can about
		out up them some could what into than its only two other new time these
		may then do first any now such like over even most made after also did
		many before must through back years where much way well down should
		because each just those people how too little state good very make world
		still own see work long get here between both life being under never day
		same another know while last might great old year off come since against
		go came right used take three during without again place around however
		home small found thought went say part once general high upon every
		don't does got left number course until always away something fact
		though water less public put think almost hand enough far took head yet
		system better set told nothing end why called find going look asked later
		knew point next program city business give group toward young days let
		cells protein expression patients treatment increased associated cancer
		disease risk clinical gene mice levels studies response analysis results
		activity factor role effect human tumor receptor mechanisms pathway
		induced reduced mutations signaling inhibition therapy infection`)
	punct := []string{".", ",", ";", ":", "?", "'s", "'", ")"}
	r := rand.New(rand.NewPCG(1, 2))
	var sb strings.Builder
	for sb.Len() < 100_000 {
		n := 8 + r.IntN(20)
		for i := range n {
			w := words[r.IntN(len(words))]
			switch {
			case i == 0:
				w = strings.ToUpper(w[:1]) + w[1:]
			case r.IntN(40) == 0:
				w = "1" + strings.Repeat("0", r.IntN(3)) + ".5"
			case r.IntN(60) == 0:
				w = "IL-" + string(rune('0'+r.IntN(10)))
			case r.IntN(30) == 0:
				w = "(" + w
			}
			sb.WriteString(w)
			if r.IntN(8) == 0 {
				sb.WriteString(punct[r.IntN(len(punct))])
			}
			sb.WriteByte(' ')
		}
		sb.WriteString(". ")
	}
	return sb.String()
}

// analyzerSciFactText returns about limit bytes of SciFact titles and abstracts, or
// "" when the shared data set is not checked out next to the repository.
func analyzerSciFactText(tb testing.TB, limit int) string {
	f, err := os.Open("../../shared/data/scifact/corpus.jsonl")
	if err != nil {
		return ""
	}
	defer f.Close()
	var sb strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() && sb.Len() < limit {
		var doc struct{ Title, Text string }
		if err := json.Unmarshal(sc.Bytes(), &doc); err != nil {
			tb.Fatal(err)
		}
		sb.WriteString(doc.Title)
		sb.WriteString("\n")
		sb.WriteString(doc.Text)
		sb.WriteString("\n")
	}
	return sb.String()
}

func benchmarkAnalyze(b *testing.B, text string) {
	dst := Analyze(text, nil)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		dst = Analyze(text, dst[:0])
	}
	b.ReportMetric(float64(len(dst)), "terms/op")
}

func BenchmarkAnalyzeProse(b *testing.B) { benchmarkAnalyze(b, analyzerProse()) }

func BenchmarkAnalyzeSciFact(b *testing.B) {
	text := analyzerSciFactText(b, 100_000)
	if text == "" {
		b.Skip("SciFact corpus not found at ../../shared/data/scifact")
	}
	benchmarkAnalyze(b, text)
}

// BenchmarkAnalyzeQuery analyzes a typical SciFact claim.
func BenchmarkAnalyzeQuery(b *testing.B) {
	benchmarkAnalyze(b, "Angiotensin converting enzyme inhibitors are associated with increased risk for functional renal insufficiency.")
}

func TestAnalyzeQuestion(t *testing.T) {
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"When did Caroline go to the support group?", []string{"carolin", "go", "support", "group"}},
		{"What has Melanie painted?", []string{"melani", "paint"}},
		{"How could the deploy fail, and why does it?", []string{"deploi", "fail"}},
		{"Where is the refund policy", []string{"refund", "polici"}},
		{"What did you do?", []string{"you"}},
		{"What? When? How?", []string{"what", "when", "how"}}, // nothing else left: kept as they are
		{"deploy window Tuesday", []string{"deploi", "window", "tuesdai"}},
	} {
		if got := AnalyzeQuestion(c.query); !slices.Equal(got, c.want) {
			t.Errorf("AnalyzeQuestion(%q) = %q, want %q", c.query, got, c.want)
		}
	}
}
