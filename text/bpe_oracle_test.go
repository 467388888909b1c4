package text

import (
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// The oracle is github.com/pkoukk/tiktoken-go with the rank files of
// github.com/pkoukk/tiktoken-go-loader, a test-only dependency: a Go port of
// tiktoken whose pre-tokenizer runs the original patterns through a
// backtracking regular expression engine (github.com/dlclark/regexp2).

var bpeEncodingNames = []string{"o200k_base", "cl100k_base"}

var (
	bpeOracleMu sync.Mutex
	bpeOracles  = map[string]*tiktoken.Tiktoken{}
)

// bpeOracle returns the reference encoder of that name, built once.
func bpeOracle(tb testing.TB, name string) *tiktoken.Tiktoken {
	tb.Helper()
	bpeOracleMu.Lock()
	defer bpeOracleMu.Unlock()
	if o := bpeOracles[name]; o != nil {
		return o
	}
	tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
	o, err := tiktoken.GetEncoding(name)
	if err != nil {
		tb.Fatal(err)
	}
	bpeOracles[name] = o
	return o
}

// bpeCompare checks Encode and Count of b against the oracle on s and
// reports the first differing token in context. It returns false on a
// difference.
func bpeCompare(t *testing.T, b *BPE, o *tiktoken.Tiktoken, label, s string) bool {
	t.Helper()
	want := o.EncodeOrdinary(s)
	got := b.Encode(s, nil)
	if n := b.Count(s); n != len(want) {
		t.Errorf("%s %s: Count = %d, oracle %d tokens", b.Name(), label, n, len(want))
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	if i == len(got) && i == len(want) {
		return true
	}
	lo, hi := max(0, i-3), i+4
	t.Errorf("%s %s: token %d of %d/%d differs in %q\n got  %v %q\n want %v %q",
		b.Name(), label, i, len(got), len(want), bpeShorten(s, 300),
		got[lo:min(hi, len(got))], o.Decode(got[lo:min(hi, len(got))]),
		want[lo:min(hi, len(want))], o.Decode(want[lo:min(hi, len(want))]))
	return false
}

func bpeShorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// bpeSyntheticCases are hand-picked texts for the difficult corners of the
// pre-tokenizers and of merging.
var bpeSyntheticCases = []struct{ name, text string }{
	{"empty", ""},
	{"prose", "The quick brown fox jumps over the lazy dog. It's 3:45 p.m.; isn't it?"},
	{"contractions", "I'm you're we've they'll she'd he's it's can't DON'T I'M YOU'RE We'Ve THEY'LL She'D HE'S isn'T 'tis 'Twas o'clock rock'n'roll"},
	{"contractions alone", "'s 't 're 've 'm 'll 'd 'S 'T 'RE 'VE 'M 'LL 'D 'x 'r 'l 'le 'sx 'llama ''s"},
	{"curly apostrophes", "it’s don’t I’M we‘re ’s ’t ‘quoted’ “double”"},
	{"camel case", "camelCaseWord HTTPServer getHTTPResponseCode XMLHttpRequest iOS macOS McDonald's ABCdef aBC"},
	{"numbers", "0 1 12 123 1234 12345 123456 1234567 3.14159 -42 1e10 0x1F 1,234,567.89 ١٢٣٤٥ ⅫⅩ ½¾ ²³ 𝟘𝟙𝟚𝟛"},
	{"long number", strings.Repeat("9876543210", 30)},
	{"whitespace", "a  b   c\t\td\n\ne \r\n f\r\r\ng \u00a0h\u3000i\u2028j\u2029k\u0085l\u1680m\u2003n\u202fo\u205fp\ufeffq\v\fr"},
	{"trailing spaces", "line one   \nline two\t\t\r\nline three \u00a0\n   \n\n\t\n end   "},
	{"leading spaces", "   leading\n    indented code\n\t\ttabs"},
	{"only spaces", "     "},
	{"only newlines", "\n\n\n\r\n\r\n"},
	{"space before digits", "a 1  22   333 \t4\u00a05"},
	{"space before punct", "a ! b  ?? c\t... d \u00a0-- e  \n"},
	{"punct and newlines", "end.\nnext,\r\n(x)\n\n;\n/\n//\n/path/to/file\n"},
	{"slashes", "a/b a//b /usr/local/bin http://example.com/a/b?c=d&e=f#g ./x ../y -/\n/ ./\r\n/z"},
	{"emoji", "I ❤️ Go 👍🏽👍🏿 👨‍👩‍👧‍👦 🏳️‍🌈 🇺🇸🇫🇷🇯🇵 😀😃😄 ✔️ ☕ 🤷‍♀️ 🧑🏾‍💻 #️⃣ 1️⃣"},
	{"cjk", "日本語のテキストです。東京タワーは高い！中文文本，包括标点符号。한국어 텍스트입니다. ｶﾀｶﾅ ＡＢＣ１２３"},
	{"cjk long", strings.Repeat("人工智能正在改变世界", 40)},
	{"arabic", "مرحبا بالعالم، هذا نص عربي. الأرقام ١٢٣ و 456. السَّلَامُ عَلَيْكُمْ"},
	{"hebrew", "שלום עולם! זהו טקסט בעברית, עם נִקּוּד: בְּרֵאשִׁית בָּרָא"},
	{"devanagari", "नमस्ते दुनिया। यह हिंदी पाठ है। क्षत्रिय ज्ञान १२३"},
	{"thai", "สวัสดีชาวโลก นี่คือข้อความภาษาไทย ๑๒๓"},
	{"greek cyrillic", "Γειά σου Κόσμε! ΑΥΤΌ ΕΊΝΑΙ. Привет, мир! ЭТО ТЕКСТ на русском. Ǆemal ǅemal ǆemal"},
	{"combining marks", "e\u0301 a\u0300\u0301\u0302 \u0301start Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334 .\u0301 1\u0301 \u20dd A\u0301B a\u0301A \u0301\u0301"},
	{"marks after upper", "\u0301A \u0301AB. A\u0301\u0301a AB\u0301 ǅ\u0301x ʰA ʰʰ Aʰ"},
	{"modifier letters", "ʰʲʷ ˈstress ˌsecondary ʻokina ꜰꜱ ᵃᵇᶜ"},
	{"special tokens", "<|endoftext|> <|fim_prefix|><|fim_middle|><|fim_suffix|><|endofprompt|> <|im_start|>user"},
	{"control chars", "a\x00b\x01c\x1bd\x7fe\u200bf\u200cg\u200dh\u2060i"},
	{"invalid utf8", "a\xffb \xc3 \xe2\x82 \xed\xa0\x80 \x80\x80 caf\xe9 \xf0\x9f\x98 ok \xef\xbf\xbd"},
	{"invalid only", "\xff\xfe\xfd"},
	{"runs", strings.Repeat("a", 10000)},
	{"run of spaces", strings.Repeat(" ", 5000) + "x" + strings.Repeat("\t", 300)},
	{"run of punct", strings.Repeat("=", 3000) + strings.Repeat("-*", 1000)},
	{"run of digits", strings.Repeat("1", 3001)},
	{"base64", bpeBase64(20000)},
	{"hex", strings.Repeat("deadbeef0123456789abcdef", 200)},
	{"url", "https://www.example.com/path/to/resource?query=value&other=123#fragment_id"},
	{"code", "func (b *BPE) Count(s string) int {\n\tfor i := 0; i < len(s); i++ {\n\t\tif s[i] == '\\n' { return i }\n\t}\n\treturn -1 // done\n}\n"},
	{"markdown", "# Title\n\n* item one\n* item **two**\n\n```go\nx := 1\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"},
	{"json", `{"name":"Ada","age":36,"tags":["x","y"],"nested":{"a":null,"b":true,"c":-1.5e-3},"text":"line\nbreak \u00e9 \"q\""}`},
}

// bpeBase64 returns n bytes of deterministic base64 text.
func bpeBase64(n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	rng := rand.New(rand.NewSource(64))
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.Intn(len(alphabet))]
	}
	return string(b)
}

func TestBPESyntheticMatchesOracle(t *testing.T) {
	for _, name := range bpeEncodingNames {
		b, o := bpeMust(t, name), bpeOracle(t, name)
		for _, c := range bpeSyntheticCases {
			bpeCompare(t, b, o, c.name, c.text)
		}
	}
}

func TestBPESyntheticJSONMatchesOracle(t *testing.T) {
	doc := bpeSyntheticJSON(400 << 10)
	for _, name := range bpeEncodingNames {
		b, o := bpeMust(t, name), bpeOracle(t, name)
		for i, part := range bpeSplitLines(doc, 16<<10) {
			bpeCompare(t, b, o, fmt.Sprintf("synthetic JSON part %d", i), part)
		}
	}
}

// bpeRandomAtoms are the pieces random strings are made of: characters of
// every class the patterns distinguish, the sequences they treat specially
// and invalid UTF-8.
var bpeRandomAtoms = []string{
	"a", "b", "s", "t", "e", "l", "d", "z", "A", "B", "S", "T", "E", "L", "D", "Z", "0", "1", "9",
	" ", " ", " ", "  ", "\t", "\n", "\r", "\r\n", "\v", "\f", "\x00", "\x1b",
	"'", "'s", "'T", "'re", "'VE", "'m", "'LL", "'d", "'ll", "’", "’s",
	".", ",", "!", "?", "-", "_", "/", "//", "\\", "\"", "(", ")", "{", "}", "[", "]", ":", ";", "#", "@", "<|endoftext|>",
	"é", "ß", "É", "ǅ", "ǈ", "ᾼ", "ʰ", "ˈ", "ꜰ", "漢", "字", "の", "カ", "ا", "ש", "क", "ก", "ъ", "Ж", "ﬁ", "ı", "İ", "K",
	"\u0301", "\u0308", "\u093f", "\u20dd", "\u0e31", "\ufe0f", "\u200d", "\u200c", "\u034f",
	"٣", "Ⅻ", "½", "²", "𝟘", "१",
	"\u00a0", "\u3000", "\u2028", "\u2029", "\u0085", "\u1680", "\u2003", "\u202f", "\ufeff", "\u180e",
	"😀", "👍🏽", "👨‍👩‍👧", "🇺🇸", "❤️", "€", "©", "™", "•", "…", "—", "“", "”", "\ufffd",
	"\xff", "\xc3", "\xe2\x82", "\xed\xa0\x80", "\x80", "\xf4\x90\x80\x80",
}

// bpeRandomString returns a random string of up to maxAtoms atoms, some of
// them random code points from all of Unicode.
func bpeRandomString(rng *rand.Rand, maxAtoms int) string {
	var sb strings.Builder
	for range 1 + rng.Intn(maxAtoms) {
		switch k := rng.Intn(20); {
		case k == 0:
			sb.WriteRune(rune(rng.Intn(0x10000)))
		case k == 1:
			sb.WriteRune(rune(0x10000 + rng.Intn(0x100000)))
		case k < 4:
			sb.WriteString(strings.Repeat(bpeRandomAtoms[rng.Intn(len(bpeRandomAtoms))], 1+rng.Intn(5)))
		default:
			sb.WriteString(bpeRandomAtoms[rng.Intn(len(bpeRandomAtoms))])
		}
	}
	return sb.String()
}

func TestBPERandomMatchesOracle(t *testing.T) {
	cases := 4000
	if testing.Short() {
		cases = 500
	}
	for _, name := range bpeEncodingNames {
		b, o := bpeMust(t, name), bpeOracle(t, name)
		rng := rand.New(rand.NewSource(20240501))
		failures := 0
		for i := range cases {
			s := bpeRandomString(rng, 40)
			if !bpeCompare(t, b, o, fmt.Sprintf("random case %d", i), s) {
				if failures++; failures == 10 {
					t.Fatal("too many failures")
				}
			}
		}
	}
}

// bpeSplitLines cuts s into parts of about n bytes at line ends, so that a
// difference is reported in a part of readable size.
func bpeSplitLines(s string, n int) []string {
	var parts []string
	for len(s) > 0 {
		cut := len(s)
		if cut > n {
			cut = n
			if nl := strings.IndexByte(s[cut:], '\n'); nl >= 0 {
				cut += nl + 1
			} else {
				cut = len(s)
			}
		}
		parts = append(parts, s[:cut])
		s = s[cut:]
	}
	return parts
}

// bpeTruncate cuts s to at most n bytes at a rune boundary.
func bpeTruncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
