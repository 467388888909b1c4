package when

// The query is read as a list of tokens: words (with their class, when
// they are one of the few words date expressions are made of), numbers
// (with their digit count and whether an ordinal suffix follows: "13th"),
// the separators of numeric dates ('-', '/') and sentence breaks. Commas
// and other punctuation separate tokens and are otherwise ignored, so that
// "Monday, May 8" and "October 13, 2023" read as their words.

// kind is a token's kind.
type kind uint8

const (
	tWord  kind = iota
	tNum        // a run of digits, possibly with an ordinal suffix
	tSep        // '-' or '/'
	tBreak      // '.', '!', '?', ';', ':' (except the '.' of "Oct.")
)

// class is what a word means to the parser; cNone for every other word.
type class uint8

const (
	cNone      class = iota
	cMonth           // v: 1..12
	cWeekday         // v: time.Weekday
	cUnit            // v: unitDay, unitWeek, unitMonth, unitYear, unitWeekend
	cNumber          // v: the number ("two", "a", "few")
	cSeason          // v: the first month of the season
	cAgo             // ago
	cLast            // last, previous
	cThis            // this
	cPast            // past
	cIn              // in, during, throughout, early, late, mid: may open a month or a year
	cThe             // the
	cOn              // on
	cOf              // of
	cToday           // today, tonight
	cYesterday       // yesterday
	cEarlier         // earlier
	cNight           // night
	cDayPart         // morning, afternoon, evening
	cBefore          // before
	cNext            // next, every, tomorrow: what follows is not a past window
	cA               // a, an
	cCouple          // couple
	cBetween         // between
	cAnd             // and
)

// Units of cUnit words.
const (
	unitDay = iota + 1
	unitWeek
	unitMonth
	unitYear
	unitWeekend
)

// tok is one token of the query; lo and hi are its byte offsets.
type tok struct {
	lo, hi int
	kind   kind
	sep    byte  // tSep: '-' or '/'
	class  class // tWord
	v      int   // the class's value (tWord), the number (tNum)
	digits int   // tNum: digit count
	ord    bool  // tNum: followed by st, nd, rd or th
	upper  bool  // tWord: starts with an upper-case letter
	abbr   bool  // tWord: an abbreviated month name ("Oct")
	plural bool  // tWord: a unit in the plural ("days")
}

// keyword is a word's class and value.
type keyword struct {
	class  class
	v      int
	abbr   bool
	plural bool
}

// keywords maps lower-case words to their meaning. Read-only after init.
var keywords = func() map[string]keyword {
	m := map[string]keyword{}
	months := []string{"january", "february", "march", "april", "may", "june", "july", "august", "september",
		"october", "november", "december"}
	for i, name := range months {
		m[name] = keyword{class: cMonth, v: i + 1}
		if len(name) > 3 {
			m[name[:3]] = keyword{class: cMonth, v: i + 1, abbr: true}
		}
	}
	m["sept"] = keyword{class: cMonth, v: 9, abbr: true}
	for i, name := range []string{"sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"} {
		m[name] = keyword{class: cWeekday, v: i}
	}
	for _, u := range []struct {
		name string
		v    int
	}{{"day", unitDay}, {"week", unitWeek}, {"month", unitMonth}, {"year", unitYear}, {"weekend", unitWeekend}} {
		m[u.name] = keyword{class: cUnit, v: u.v}
		m[u.name+"s"] = keyword{class: cUnit, v: u.v, plural: true}
	}
	for i, name := range []string{"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
		"eleven", "twelve"} {
		m[name] = keyword{class: cNumber, v: i + 1}
	}
	m["twenty"] = keyword{class: cNumber, v: 20}
	m["thirty"] = keyword{class: cNumber, v: 30}
	m["few"] = keyword{class: cNumber, v: 3}
	m["several"] = keyword{class: cNumber, v: 3}
	for name, s := range map[string]int{"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12} {
		m[name] = keyword{class: cSeason, v: s}
	}
	for name, c := range map[string]class{
		"ago": cAgo, "last": cLast, "previous": cLast, "this": cThis, "past": cPast,
		"in": cIn, "during": cIn, "throughout": cIn, "early": cIn, "late": cIn, "mid": cIn,
		"the": cThe, "on": cOn, "of": cOf, "today": cToday, "tonight": cToday, "yesterday": cYesterday, "earlier": cEarlier,
		"night": cNight, "morning": cDayPart, "afternoon": cDayPart, "evening": cDayPart, "before": cBefore,
		"next": cNext, "every": cNext, "tomorrow": cNext, "a": cA, "an": cA, "couple": cCouple,
		"between": cBetween, "and": cAnd,
	} {
		m[name] = keyword{class: c}
	}
	return m
}()

// maxKeyword is the length of the longest keyword: longer words are none.
const maxKeyword = len("throughout")

// tokenize appends the tokens of q to toks.
func tokenize(q string, toks []tok) []tok {
	var low [maxKeyword]byte
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case isLetter(c):
			j := i
			for j < len(q) && isLetter(q[j]) {
				j++
			}
			t := tok{lo: i, hi: j, kind: tWord, upper: c >= 'A' && c <= 'Z'}
			if j-i <= maxKeyword {
				for k := i; k < j; k++ {
					low[k-i] = q[k] | 0x20
				}
				if kw, ok := keywords[string(low[:j-i])]; ok { // no allocation: a map index by a converted slice
					t.class, t.v, t.abbr, t.plural = kw.class, kw.v, kw.abbr, kw.plural
				}
			}
			if t.abbr && j < len(q) && q[j] == '.' {
				j++ // "Oct." is not the end of a sentence
				t.hi = j
			}
			toks = append(toks, t)
			i = j
		case c >= '0' && c <= '9':
			j, v := i, 0
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				if v < 1e6 {
					v = v*10 + int(q[j]-'0')
				}
				j++
			}
			t := tok{lo: i, hi: j, kind: tNum, v: v, digits: j - i}
			if j+2 <= len(q) && (j+2 == len(q) || !isLetter(q[j+2])) {
				if a, b := q[j]|0x20, q[j+1]|0x20; a == 's' && b == 't' || a == 'n' && b == 'd' || a == 'r' && b == 'd' || a == 't' && b == 'h' {
					t.ord, t.hi = true, j+2
					j += 2
				}
			}
			toks = append(toks, t)
			i = j
		case c == '-' || c == '/':
			toks = append(toks, tok{lo: i, hi: i + 1, kind: tSep, sep: c})
			i++
		case c == '.' || c == '!' || c == '?' || c == ';' || c == ':':
			toks = append(toks, tok{lo: i, hi: i + 1, kind: tBreak})
			i++
		default:
			i++
		}
	}
	return toks
}

func isLetter(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }
