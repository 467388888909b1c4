package pack

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// A value is what a clause states about its subject, in a form two spans
// can compare: a quantity in a unit ("30 days", "$95 per hour"), a time of
// day ("10:00", "2pm"), a calendar date ("December 4", "2026-10-13", "the
// 14th"), a weekday, or a count of something ("600 followers", "124
// points"). Its kind says what it measures; only values of one kind can
// be incompatible, so an hourly rate never conflicts with a budget, nor a
// time with a count.
type value struct {
	kind string  // unit for quantities ("$", "day", "$/h"), "time", "date", "weekday", "n:<word>" for counts
	v    float64 // comparable value: the quantity, minutes after midnight, month*100+day, weekday index, the count
	old  bool    // stated as no longer true: after "not", "never", "no longer", "instead of", "rather than", "from"
	new  bool    // stated after the clause's change cue ("moved to 14:30"): the value it changed to
	text string  // as written, for descriptions
}

// months maps month names and abbreviations to 1..12.
var months = func() map[string]int {
	m := map[string]int{}
	for i, f := range []string{"january jan", "february feb", "march mar", "april apr", "may", "june jun", "july jul",
		"august aug", "september sep sept", "october oct", "november nov", "december dec"} {
		for _, w := range strings.Fields(f) {
			m[w] = i + 1
		}
	}
	return m
}()

// weekdays maps weekday names, singular and plural, to 1..7.
var weekdays = func() map[string]int {
	m := map[string]int{}
	for i, w := range []string{"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"} {
		m[w], m[w+"s"] = i+1, i+1
	}
	return m
}()

// perUnits are what "per X", "/X", "a X" and "an X" after an amount of
// money make of it: a rate.
var perUnits = map[string]string{
	"hour": "h", "hr": "h", "h": "h", "day": "day", "night": "day", "week": "week", "month": "month", "mo": "month",
	"year": "year", "yr": "year", "person": "person", "head": "person", "seat": "seat", "user": "user", "unit": "unit",
	"item": "item", "ticket": "ticket", "mile": "mi", "km": "km", "kg": "kg", "lb": "lb", "session": "session",
}

// Change cues: words that say a statement replaces an earlier one ("moved",
// "pushed to", "now", "no longer", "instead", "new", ...). Cues name a
// change; they are left out of the subject a clause is about.
var changeCues = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`move moved moves moving relocated pushed postponed rescheduled delayed slipped
		brought changed change changes switched switch swapped renamed replaced migrated extended raised increased
		lowered cut reduced dropped updated update revised now instead anymore new newly longer went grew reached
		passed sold scaled supersede supersedes superseded`) {
		m[w] = true
	}
	return m
}()

// isTimeSuffix reports whether w is "am" or "pm" (with or without dots
// the words are the same).
func isTimeSuffix(w string) bool { return w == "am" || w == "pm" }

// digitsAt returns the number of ASCII digits at s[i:].
func digitsAt(s string, i int) int {
	n := 0
	for i+n < len(s) && s[i+n] >= '0' && s[i+n] <= '9' {
		n++
	}
	return n
}

// atoi reads the ASCII digits s[i:i+n].
func atoi(s string, i, n int) int {
	v := 0
	for _, c := range []byte(s[i : i+n]) {
		v = v*10 + int(c-'0')
	}
	return v
}

// wordAfter returns the lowercased word of letters right after s[i],
// after at most one space, and the offset after it.
func wordAfter(s string, i int) (string, int) {
	if i < len(s) && s[i] == ' ' {
		i++
	}
	j := i
	for j < len(s) && (s[j]|0x20 >= 'a' && s[j]|0x20 <= 'z') {
		j++
	}
	return strings.ToLower(s[i:j]), j
}

// timeOrDateAt reads a time of day, a date or an ordinal day at s[i] (an
// ASCII digit that starts a number), given the previous word (lowercased):
// "10:00", "6:00 pm", "3pm", "7 am", "2026-10-13", "December 4" (prev is
// the month), "4 December", "14th", "the 28th". It returns the value and
// the offset after it.
func timeOrDateAt(s string, i int, prev string) (value, int, bool) {
	n := digitsAt(s, i)
	// ISO date.
	if n == 4 && i+10 <= len(s) && s[i+4] == '-' && digitsAt(s, i+5) == 2 && s[i+7] == '-' && digitsAt(s, i+8) == 2 {
		v := atoi(s, i, 4)*10000 + atoi(s, i+5, 2)*100 + atoi(s, i+8, 2)
		return value{kind: "date", v: float64(v), text: s[i : i+10]}, i + 10, true
	}
	if n == 0 || n > 2 {
		return value{}, i, false
	}
	h := atoi(s, i, n)
	j := i + n
	// h:mm, optionally am/pm.
	if j+3 <= len(s) && (s[j] == ':' || s[j] == '.' && prev == "at") && digitsAt(s, j+1) == 2 && digitsAt(s, j+3) == 0 {
		m := atoi(s, j+1, 2)
		k := j + 3
		if w, e := wordAfter(s, k); isTimeSuffix(w) {
			h, k = ampm(h, w), e
		}
		if h < 24 && m < 60 {
			return value{kind: "time", v: float64(h*60 + m), text: s[i:k]}, k, true
		}
		return value{}, i, false
	}
	if w, e := wordAfter(s, j); isTimeSuffix(w) && h >= 1 && h <= 12 {
		return value{kind: "time", v: float64(ampm(h, w) * 60), text: s[i:e]}, e, true
	}
	// Ordinal suffix.
	k := j
	if k+2 <= len(s) {
		switch strings.ToLower(s[k : k+2]) {
		case "st", "nd", "rd", "th":
			if k+2 == len(s) || !isWordRune(rune(s[k+2])) {
				k += 2
			}
		}
	}
	if h < 1 || h > 31 {
		return value{}, i, false
	}
	if mo := months[prev]; mo > 0 {
		return value{kind: "date", v: float64(mo*100 + h), text: s[i:k]}, k, true
	}
	if w, e := wordAfter(s, k); months[w] > 0 {
		return value{kind: "date", v: float64(months[w]*100 + h), text: s[i:e]}, e, true
	}
	if k > j && prev == "the" {
		return value{kind: "date", v: float64(h), text: s[i:k]}, k, true
	}
	return value{}, i, false
}

// ampm converts an hour on a 12-hour clock to 0..23.
func ampm(h int, suffix string) int {
	switch {
	case suffix == "am" && h == 12:
		return 0
	case suffix == "pm" && h < 12:
		return h + 12
	}
	return h
}

// rateAfter reads "per X", "/X", "a X" or "an X" at s[i] (after a
// quantity of money) and returns the rate's unit, "" if there is none, and
// the offset after it.
func rateAfter(s string, i int) (string, int) {
	j := i
	if j < len(s) && s[j] == '/' {
		w, e := wordAfter(s, j+1)
		if u := perUnits[strings.TrimSuffix(w, "s")]; u != "" {
			return u, e
		}
		return "", i
	}
	w, e := wordAfter(s, j)
	if w != "per" && w != "a" && w != "an" && w != "each" {
		return "", i
	}
	x, e2 := wordAfter(s, e)
	if u := perUnits[strings.TrimSuffix(x, "s")]; u != "" {
		return u, e2
	}
	return "", i
}

// claimReader collects the claims of a text's clauses as featuresAfter reads
// its words.
type claimReader struct {
	lastStart int      // offset of the last word seen
	prevAt    int      // offset of prev
	prev      string   // the last word when it is a month name, "the", "at", "no", "instead" or "rather"; else ""
	all       []uint64 // subject terms of the clauses so far, each clause's in one run (claimClause slices it)
	from      int      // where the current clause's run starts
	head      int      // how many of them came before its first value (-1: no value yet)
	values    []value
	cue       string
	cueAt     int    // subject terms before the cue
	leadAt    int    // subject terms before the last conjunction before the cue ("Maya got married and changed ...")
	old       int    // words left in which a value is old (after "not", "no longer", ...)
	count     *value // a number waiting for the word that says what it counts
	countGap  int    // stopwords skipped since the count's number
	notNext   bool   // the previous word was "not" or "never"
	cueJust   bool   // the previous word was the clause's cue
	negated   []negation
	lastTerm  uint64 // the hash of the last subject term of the clause, for "platform 7" (0: none)
}

// word reads a word that is not a quantity's number: change cues, markers
// of old values, weekdays, and what a pending count counts. rl is the
// word's lexicon role: every word the claims look at has one (claimWords),
// so a word without one only ends the previous word's state.
func (r *claimReader) word(s string, w []byte, start int, rl *role) {
	r.lastStart = start
	if r.old > 0 {
		r.old--
	}
	if w[0] >= '0' && w[0] <= '9' {
		r.prev, r.notNext, r.cueJust = "", false, false
		return
	}
	prev, cueJust := r.prev, r.cueJust
	r.prev, r.cueJust = "", false
	if rl != nil {
		r.special(s, w, start, prev, cueJust)
	}
	if r.count != nil {
		switch h, kind := termHash(w); {
		case kind == kindTerm:
			r.count.kind = "n:" + strconv.FormatUint(h, 36)
			r.add(*r.count)
			r.count = nil
		case r.countGap < 1:
			r.countGap++
		default:
			r.flushCount()
		}
	}
}

// special reads a word the claims look at (claimWords), given the previous
// one's marker and whether the previous word was the clause's cue.
func (r *claimReader) special(s string, w []byte, start int, prev string, cueJust bool) {
	ws := string(w) // not kept: switches and map lookups do not copy
	switch ws {
	case "and", "but", "so", "then":
		if r.cue == "" {
			r.leadAt = len(r.all) - r.from
		}
	case "not", "never":
		r.notNext = true
	case "be", "been", "being", "is", "was", "are", "were", "have", "has", "had", "do", "does", "did", "yet", "the", "a", "an":
		// "not be signed", "not yet approved": the negated word is further on
	default:
		if rl := lexicon.get(wordKey(w)); r.notNext && rl != nil && rl.stop {
			r.notNext = false
		}
	}
	if cueJust && r.cue != "" && cancelsCue(r.cue, ws) {
		r.cue = "" // "it pushed me to", "I reached out"
	}
	if changeCues[ws] && r.cue == "" && (ws != "longer" || prev == "no") && !incidental(ws, prev) {
		r.cue, r.cueAt, r.cueJust = cueWords[ws], len(r.all)-r.from, true
	}
	if ws == "that" && prev == "now" && r.cue == "now" {
		r.cue = "" // "now that it's raining"
	}
	text := s[start : start+len(w)] // claim words are ASCII
	switch {
	case ws == "not" || ws == "never" || ws == "longer" && prev == "no" || ws == "of" && prev == "instead" ||
		ws == "than" && prev == "rather" || ws == "from" && r.cue != "":
		r.old = 4
	case months[ws] > 0 && len(ws) >= 3 && ws != "may" && ws != "march":
		r.add(value{kind: "month", v: float64(months[ws]), text: text}) // a context, see valueClash
	case weekdays[ws] > 0:
		r.add(value{kind: "weekday", v: float64(weekdays[ws]), text: text})
	case ws == "noon" || ws == "midday":
		r.add(value{kind: "time", v: 720, text: text})
	}
	switch {
	case months[ws] > 0 && len(ws) >= 3:
		r.prev, r.prevAt = monthNames[months[ws]-1], start
	case ws == "the":
		r.prev = "the"
	case ws == "at":
		r.prev = "at"
	case ws == "no":
		r.prev = "no"
	case ws == "instead":
		r.prev = "instead"
	case ws == "rather":
		r.prev = "rather"
	case ws == "now":
		r.prev = "now"
	case ws == "a" || ws == "an" || ws == "some" || ws == "any":
		r.prev = "a"
	case ws == "right" || ws == "for" || ws == "by" || ws == "until" || ws == "just":
		r.prev = "for"
	case ws == "so" || ws == "very" || ws == "too" || ws == "really" || ws == "truly":
		r.prev = "very"
	}
}

// incidental reports whether a change cue, after the previous word's
// marker, names no change: "a new pair of sandals" (a new thing, not a
// new value of one), "for now", "right now", "until now", "a move" and "a
// change" (a noun: "this is a big move towards my goal" names none),
// "so moving" (an adjective).
func incidental(cue, prev string) bool {
	switch {
	case prev == "a":
		return cue == "new" || cue == "move" || cue == "moves" || cue == "change" || cue == "changes" || cue == "switch"
	case prev == "for":
		return cue == "now"
	case prev == "very":
		return cue == "moving"
	}
	return false
}

// cancelsCue reports whether the word right after a clause's cue shows it
// names no change of a stated value: its object is the speaker ("it
// pushed me to start", "that changed me", "it moved us"), "reached out" (got
// in touch), "new to me" (unfamiliar).
func cancelsCue(cue, next string) bool {
	switch next {
	case "me", "myself", "us", "ourselves":
		return true
	case "out":
		return cue == "reached"
	case "to":
		return cue == "new"
	}
	return false
}

// monthNames are the canonical month names, the keys of months a
// claimReader keeps as its previous word.
var monthNames = []string{"january", "february", "march", "april", "may", "june", "july", "august", "september",
	"october", "november", "december"}

// cueWords maps each change cue to itself as a constant (so that keeping
// one allocates nothing); "longer" is kept as "no longer".
var cueWords = func() map[string]string {
	m := map[string]string{}
	for w := range changeCues {
		m[w] = w
	}
	m["longer"] = "no longer"
	return m
}()

// claimWords are the words special reads: they get a lexicon role (maybe
// empty), so that every other word is known not to be one with the lookup
// featuresAfter makes anyway.
var claimWords = func() []string {
	ws := strings.Fields(`and but so then not never be been being is was are were have has had do does did yet the a an
		longer of than from noon midday at no instead rather some any right for by until just that very too really
		truly me myself us ourselves out to`)
	return appendKeys(appendKeys(appendKeys(ws, changeCues), months), weekdays)
}()

// appendKeys appends the keys of m to ws, in no particular order.
func appendKeys[V any](ws []string, m map[string]V) []string {
	for w := range m {
		ws = append(ws, w)
	}
	return ws
}

// term records a term of the clause as part of its subject unless it is a
// unit or a change cue.
func (r *claimReader) term(h uint64, w []byte, rl *role) {
	if r.notNext {
		r.negated = append(r.negated, negation{h, string(w)})
	}
	r.notNext = false
	if rl == nil || !rl.scene {
		if !slices.Contains(r.all[r.from:], h) {
			r.all = append(r.all, h)
		}
		r.lastTerm = h
	}
}

// quantity records a quantity that ends at s[next], as a rate when money
// is followed by "per hour", "a month", "/night" and the like.
func (r *claimReader) quantity(s string, q quantity, next int) {
	if r.count != nil && r.countGap == 1 {
		// "30 or 45 days", "10 to 15 minutes": the first number has the unit too.
		c := *r.count
		c.kind = q.unit
		r.count = nil
		r.add(c)
	}
	v := value{kind: q.unit, v: q.value, text: q.text}
	switch q.unit {
	case "$", "€", "£", "¥":
		if u, e := rateAfter(s, next); u != "" {
			v.kind, v.text = q.unit+"/"+u, q.text+s[next:e]
		}
	}
	r.add(v)
}

// number reads the number at s[start] that is not a quantity: a time of
// day, a date, or else a count of the next term ("600 followers", "124
// points"). It returns the offset after a time or date, or start.
func (r *claimReader) number(s string, start int) int {
	if v, e, ok := timeOrDateAt(s, start, r.prev); ok {
		if v.kind == "date" && months[r.prev] > 0 {
			v.text = s[r.prevAt:e] // "December 4"
			if n := len(r.values) - 1; n >= 0 && r.values[n].kind == "month" {
				r.values = r.values[:n] // the month was the date's, not a context of its own
			}
		}
		r.add(v)
		return e
	}
	digits, end := scanNumber(s, start)
	if end < len(s) && (s[end] == '-' || s[end] == '/' || s[end] == ':') ||
		start >= 2 && (s[start-1] == '-' || s[start-1] == '/' || s[start-1] == ':') && '0' <= s[start-2] && s[start-2] <= '9' {
		return start // a phone number, a range, a fraction: not a count
	}
	n := 0.0
	for _, c := range []byte(digits) {
		if c == '.' {
			return start
		}
		n = n*10 + float64(c-'0')
	}
	if len(digits) == 4 && n >= 1900 && n <= 2100 {
		r.add(value{kind: "year", v: n, text: digits})
		return start
	}
	r.flushCount()
	r.count, r.countGap = &value{v: n, text: s[start:end]}, 0
	if r.lastTerm != 0 {
		r.count.kind = "#" + strconv.FormatUint(r.lastTerm, 36) // "platform 7", unless a word follows that says what it counts
	}
	return start
}

// lead returns what the clause says changed: its subject terms between
// the last conjunction before the cue and the cue ("the offsite budget"
// in "the offsite budget was raised"), or, when there are none, the term
// right after the cue ("I moved the painting").
func (r *claimReader) lead() (from, end int) {
	if r.cue == "" {
		return 0, 0
	}
	if from := min(r.leadAt, r.cueAt); from < r.cueAt {
		return from, r.cueAt
	}
	if n := len(r.all) - r.from; r.cueAt < n {
		return r.cueAt, r.cueAt + 1
	}
	return 0, 0
}

// flushCount records a count that no word followed as numbering the term
// before it ("platform 7", "room 4"), or drops it.
func (r *claimReader) flushCount() {
	if r.count != nil && r.count.kind != "" {
		r.add(*r.count)
	}
	r.count = nil
}

// add records a value of the clause, old when a marker of old values came
// just before it.
func (r *claimReader) add(v value) {
	v.old = r.old > 0
	v.new = r.cue != "" && !v.old
	if len(r.values) == 0 && r.head < 0 {
		r.head = len(r.all) - r.from
	}
	r.values = append(r.values, v)
}

// end closes the clause whose text since its last word is tail. A clause
// that ends in ":" and states no value is a label ("Refund window: 30
// days"): its subject starts the next clause instead.
func (r *claimReader) end(f *features, tail string) {
	r.flushCount()
	label := len(r.values) == 0 && strings.HasSuffix(strings.TrimRight(tail, " \t"), ":")
	subject := terms(r.all[r.from:len(r.all):len(r.all)])
	if !label && (len(subject) > 0 || len(r.values) > 0) {
		head := len(subject)
		if r.head >= 0 {
			head = r.head
		}
		from, end := r.lead()
		if len(subject) > math.MaxUint16 {
			subject, head, from, end = subject[:math.MaxUint16], min(head, math.MaxUint16), min(from, math.MaxUint16), min(end, math.MaxUint16)
		}
		f.hasValues = f.hasValues || len(r.values) > 0
		f.hasCue = f.hasCue || r.cue != ""
		f.hasNegated = f.hasNegated || len(r.negated) > 0
		for _, v := range r.values {
			if !v.old {
				f.current = append(f.current, v)
			}
		}
		f.claims = append(f.claims, claimClause{
			subject:  subject,
			headEnd:  uint16(head),
			leadFrom: uint16(from),
			leadEnd:  uint16(end),
			values:   r.values,
			cue:      r.cue,
			question: strings.ContainsRune(tail, '?'),
			negated:  r.negated,
		})
	}
	from := len(r.all)
	if label {
		from = r.from // the label's terms begin the next clause
	}
	*r = claimReader{lastStart: r.lastStart, all: r.all, from: from, head: -1}
}

// terms is a clause's set of term hashes, in text order: clauses are
// short, so a scan is as quick as a hash set and costs no allocation.
type terms []uint64

// has reports whether h is in t.
func (t terms) has(h uint64) bool { return slices.Contains(t, h) }

// common returns how many terms of x are in y.
func common(x, y terms) int {
	n := 0
	for _, h := range x {
		if y.has(h) {
			n++
		}
	}
	return n
}

// sceneWords set a scene rather than name what a clause is about: "heads
// up", "next week", "these days"; months and weekdays are values of their
// own.
var sceneWords = strings.Fields(`today tomorrow yesterday tonight week weekend weeks month months year years next last
	morning evening night afternoon day days heads fyi reminder please note currently recently lately already
	still usually every season spring summer autumn fall winter time times ago soon later earlier okay ok hey
	got get gets getting`)

// notSubjectWords are the words whose terms claimReader.term leaves out of
// a clause's subject: units and scale words (a shared unit says two spans
// measure the same kind of thing, not that they are about the same thing),
// change cues, scene words, months and weekdays.
func notSubjectWords() []string {
	ws := appendKeys(appendKeys(appendKeys(nil, changeCues), units), scales)
	return append(appendKeys(appendKeys(ws, months), weekdays), sceneWords...)
}
