package pack

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// quantity is a number with a unit found in a text, such as "30 days",
// "$1,200" or "99.9%".
type quantity struct {
	value float64 // the number times its scale word ("2 million" is 2e6)
	unit  string  // canonical unit, see units
	text  string  // the text it was read from, for conflict descriptions
}

// units maps unit words and symbols, lowercased, to canonical units. A
// number is a quantity when a currency symbol ($ € £ ¥) comes right before
// it or one of these follows it: directly ("5GB", "10%"), after one space
// ("30 days") or after a hyphen ("30-day"), optionally after a scale word
// (thousand, k, million, mn, billion, bn). Bare "m" and "b" are not units:
// too ambiguous.
var units = func() map[string]string {
	m := map[string]string{}
	for _, group := range []string{
		"% percent pct",
		"$ usd dollar dollars", "€ eur euro euros", "£ gbp pound pounds", "¥ jpy yen",
		"ms msec millisecond milliseconds", "s sec secs second seconds",
		"min mins minute minutes", "h hr hrs hour hours", "day days",
		"week weeks wk wks", "month months", "year years yr yrs",
		"byte bytes", "kb kib", "mb mib", "gb gib", "tb tib", "pb pib",
		"kbps", "mbps", "gbps",
		"user users", "customer customers", "employee employees", "person people persons",
		"seat seats", "license licenses licence licences", "request requests", "rps", "qps",
		"transaction transactions", "order orders", "ticket tickets", "token tokens",
		"item items", "instance instances", "node nodes", "server servers",
		"replica replicas", "retry retries", "attempt attempts", "x",
		"km kilometer kilometers", "mi mile miles", "kg kilogram kilograms", "lb lbs",
	} {
		f := strings.Fields(group)
		for _, w := range f {
			m[w] = f[0]
		}
	}
	return m
}()

// scales maps scale words to their factors.
var scales = map[string]float64{
	"thousand": 1e3, "k": 1e3, "million": 1e6, "mn": 1e6, "billion": 1e9, "bn": 1e9,
}

// quantities returns the quantities of s in text order.
func quantities(s string) []quantity {
	var out []quantity
	for i := 0; i < len(s); {
		if c := s[i]; c < '0' || c > '9' || continuesWord(s, i) {
			i++
			continue
		}
		q, next, ok := quantityAt(s, i)
		if ok {
			out = append(out, q)
		}
		i = next
	}
	return out
}

// quantityAt reads the number that starts at s[i], an ASCII digit that
// does not continue a word, and its unit. It returns the quantity, whether
// there was one (a number without a unit is not), and where to look for
// the next.
func quantityAt(s string, i int) (q quantity, next int, ok bool) {
	start := i
	digits, end := scanNumber(s, i)
	value, err := strconv.ParseFloat(digits, 64)
	if err != nil {
		return q, end, false
	}
	unit := ""
	if r, size := utf8.DecodeLastRuneInString(s[:start]); size > 0 && strings.ContainsRune("$€£¥", r) {
		unit, start = units[string(r)], start-size
	}
	if m := minusBefore(s, start); m >= 0 {
		value, start = -value, m
	}
	// Scale word, then unit, each after an optional separator.
	j := end
	if w, k := unitWord(s, j, true); scales[w] != 0 {
		value *= scales[w]
		j = k
	}
	if unit == "" {
		if w, k := unitWord(s, j, true); units[w] != "" {
			unit, j = units[w], k
		}
	}
	if unit == "" {
		return q, end, false
	}
	return quantity{value: value, unit: unit, text: s[start:j]}, j, true
}

// continuesWord reports whether the digit at s[i] continues a word (as in
// "Q3" or "v2") or a number already read (as in "1.5").
func continuesWord(s string, i int) bool {
	if i == 0 {
		return false
	}
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return isWordRune(r) || r == '.' && i >= 2 && s[i-2] >= '0' && s[i-2] <= '9'
}

// minusBefore returns the offset of a minus sign ("-" or U+2212) right
// before s[i], or -1. A hyphen that follows a word or number ("10-20") is
// a dash, not a minus sign.
func minusBefore(s string, i int) int {
	r, size := utf8.DecodeLastRuneInString(s[:i])
	if r != '-' && r != '−' {
		return -1
	}
	m := i - size
	if prev, n := utf8.DecodeLastRuneInString(s[:m]); n > 0 && isWordRune(prev) {
		return -1
	}
	return m
}

// scanNumber reads the number at s[i]: digits, optionally grouped in
// threes by commas, optionally with a decimal part. It returns the number
// without its commas and the offset after it.
func scanNumber(s string, i int) (string, int) {
	var b strings.Builder
	digitsAt := func(j int) int {
		k := j
		for k < len(s) && s[k] >= '0' && s[k] <= '9' {
			k++
		}
		return k - j
	}
	n := digitsAt(i)
	b.WriteString(s[i : i+n])
	i += n
	for i+4 <= len(s) && s[i] == ',' && digitsAt(i+1) == 3 {
		b.WriteString(s[i+1 : i+4])
		i += 4
	}
	if i+1 < len(s) && s[i] == '.' && digitsAt(i+1) > 0 {
		n := digitsAt(i + 1)
		b.WriteString(s[i : i+1+n])
		i += 1 + n
	}
	return b.String(), i
}

// unitWord reads the unit or scale candidate at s[i], after an optional
// single space or hyphen when sep is true: "%" or a whole word of letters,
// lowercased. It returns "" when there is none, and the offset after it.
func unitWord(s string, i int, sep bool) (string, int) {
	if sep && i < len(s) && (s[i] == ' ' || s[i] == '-') {
		if w, j := unitWord(s, i+1, false); w != "" {
			return w, j
		}
	}
	if i < len(s) && s[i] == '%' {
		return "%", i + 1
	}
	j := i
	for j < len(s) {
		r, size := runeAt(s, j)
		if !isLetter(r) {
			break
		}
		j += size
	}
	if j == i {
		return "", i
	}
	if j < len(s) {
		if r, _ := runeAt(s, j); isWordRune(r) {
			return "", i // letters run into digits: not a unit word
		}
	}
	return strings.ToLower(s[i:j]), j
}
