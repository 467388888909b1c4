package invindex

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// TestStemPorterPaper checks the examples of Porter's paper, step by step.
func TestStemPorterPaper(t *testing.T) {
	for _, tc := range []struct{ word, want string }{
		// Step 1a.
		{"caresses", "caress"}, {"ponies", "poni"}, {"ties", "ti"},
		{"caress", "caress"}, {"cats", "cat"},
		// Step 1b.
		{"feed", "feed"}, {"agreed", "agre"}, {"plastered", "plaster"},
		{"bled", "bled"}, {"motoring", "motor"}, {"sing", "sing"},
		{"conflated", "conflat"}, {"troubled", "troubl"}, {"sized", "size"},
		{"hopping", "hop"}, {"tanned", "tan"}, {"falling", "fall"},
		{"hissing", "hiss"}, {"fizzed", "fizz"}, {"failing", "fail"},
		{"filing", "file"},
		// Step 1c.
		{"happy", "happi"}, {"sky", "sky"},
		// Step 2.
		{"relational", "relat"}, {"conditional", "condit"}, {"rational", "ration"},
		{"valenci", "valenc"}, {"hesitanci", "hesit"}, {"digitizer", "digit"},
		{"conformabli", "conform"}, {"radicalli", "radic"}, {"differentli", "differ"},
		{"vileli", "vile"}, {"analogousli", "analog"}, {"vietnamization", "vietnam"},
		{"predication", "predic"}, {"operator", "oper"}, {"feudalism", "feudal"},
		{"decisiveness", "decis"}, {"hopefulness", "hope"}, {"callousness", "callous"},
		{"formaliti", "formal"}, {"sensitiviti", "sensit"}, {"sensibiliti", "sensibl"},
		// Step 3.
		{"triplicate", "triplic"}, {"formative", "form"}, {"formalize", "formal"},
		{"electriciti", "electr"}, {"electrical", "electr"}, {"hopeful", "hope"},
		{"goodness", "good"},
		// Step 4.
		{"revival", "reviv"}, {"allowance", "allow"}, {"inference", "infer"},
		{"airliner", "airlin"}, {"gyroscopic", "gyroscop"}, {"adjustable", "adjust"},
		{"defensible", "defens"}, {"irritant", "irrit"}, {"replacement", "replac"},
		{"adjustment", "adjust"}, {"dependent", "depend"}, {"adoption", "adopt"},
		{"homologou", "homolog"}, {"communism", "commun"}, {"activate", "activ"},
		{"angulariti", "angular"}, {"homologous", "homolog"}, {"effective", "effect"},
		{"bowdlerize", "bowdler"},
		// Step 5.
		{"probate", "probat"}, {"rate", "rate"}, {"cease", "ceas"},
		{"controll", "control"}, {"roll", "roll"},
		// Whole words.
		{"generalizations", "gener"}, {"oscillators", "oscil"},
	} {
		if got := Stem(tc.word); got != tc.want {
			t.Errorf("Stem(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
}

// TestStemLucene checks details of Lucene's PorterStemmer, which follows
// Porter's reference implementation rather than the letter of the paper.
func TestStemLucene(t *testing.T) {
	for _, tc := range []struct{ word, want string }{
		// -bli → -ble (the paper has -abli → -able) and -logi → -log.
		{"possibli", "possibl"}, {"archaeology", "archaeolog"}, {"analogi", "analog"},
		// Words of one or two letters are left alone.
		{"", ""}, {"s", "s"}, {"is", "is"}, {"as", "as"}, {"ed", "ed"},
		// Three letters are stemmed.
		{"has", "ha"}, {"ies", "i"}, {"aed", "a"}, {"ion", "ion"},
		// y is a vowel after a consonant: syzygy has a vowel in its stem.
		{"syzygy", "syzygi"}, {"yyyy", "yyyi"}, {"sayings", "sai"}, {"dying", "dy"},
		// Anything but a, e, i, o, u and y is a consonant.
		{"don't", "don't"}, {"1990s", "1990"}, {"3.14", "3.14"}, {"e.g", "e.g"},
		{"i.e", "i."}, {"naïveness", "naïv"}, {"café", "café"},
		// Non-ASCII words are stemmed as UTF-16, as Lucene does: ñ is one
		// consonant in consonant-vowel-consonant, é é is a double consonant,
		// and 𝑥𝑥 (two surrogate pairs) is not.
		{"tañed", "tañe"}, {"aééing", "aé"}, {"𝑥𝑥ing", "𝑥𝑥ing"}, {"a𝑥𝑥ing", "a𝑥𝑥"},
	} {
		if got := Stem(tc.word); got != tc.want {
			t.Errorf("Stem(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
}

// TestStemGolden checks about 15,000 words against the stems Lucene's
// PorterStemFilter gives them (testdata/analyzer/porter.txt).
func TestStemGolden(t *testing.T) {
	f, err := os.Open("testdata/analyzer/porter.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		word, want, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("bad line %q", line)
		}
		if got := Stem(word); got != want {
			t.Errorf("Stem(%q) = %q, want %q", word, got, want)
		}
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 15000 {
		t.Errorf("checked %d words, want at least 15000", n)
	}
}

func TestStemNoAllocWhenUnchanged(t *testing.T) {
	for _, w := range []string{"feed", "caress", "roll", "café"} {
		if got := testing.AllocsPerRun(100, func() { Stem(w) }); got != 0 {
			t.Errorf("Stem(%q) allocated %v times, want 0", w, got)
		}
	}
}

func BenchmarkStem(b *testing.B) {
	words := strings.Fields("caresses ponies agreed hopping happy relational vietnamization " +
		"hopefulness electrical adjustment controll generalizations oscillators the cells " +
		"treatment patients increased associated expression")
	b.ReportAllocs()
	for b.Loop() {
		for _, w := range words {
			Stem(w)
		}
	}
}
