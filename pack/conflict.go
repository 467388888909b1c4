package pack

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// ClaimOverlap is the term overlap at which a correction's terms are
// about what the corrected span says (correctionClash).
const ClaimOverlap = 0.15

// overlapTerms is the overlap coefficient |a∩b| / min(|a|,|b|) of two term
// sets, rather than the Jaccard similarity, because a correction is often
// a short note about a long span: "the refund window was revised to 45
// days" shares most of its terms with the policy paragraph it corrects,
// but few of the paragraph's.
func overlapTerms(a, b *hashSet) float64 {
	n := min(len(a.keys), len(b.keys))
	if n == 0 {
		return 0
	}
	return float64(intersect(a, b)) / float64(n)
}

// Conflict thresholds of the subject rules.
const (
	// SubjectOverlap is the overlap coefficient of two clauses' subject
	// terms (their terms without units, change cues and numbers) at which
	// they are about the same thing: "the design sync is at 10:00" and "the
	// design sync moved to 14:30" (2 of 2), not "the design sync moved to
	// 14:30" and "who should own the offsite agenda?".
	SubjectOverlap = 0.5
	// NegationOverlap is the term overlap of a clause that states the
	// negative form of a pair and one that states the positive form at
	// which they are about the same thing: "guests can bring pets to the
	// cabin" and "guests cannot bring pets", not "guests can park in the
	// back lot".
	NegationOverlap = 0.6
)

// newerOf compares two spans by artifact time, then ingest sequence: -1
// when the first is newer, 1 when the second is, 0 when neither is.
func newerOf(ta int64, seqA uint64, tb int64, seqB uint64) int {
	switch {
	case ta > tb || ta == tb && seqA > seqB:
		return -1
	case tb > ta || seqB > seqA:
		return 1
	}
	return 0
}

// detectConflict applies the rules in order to two included spans, a
// cited before b, and returns the kind and description of the first that
// fires, or "" when none does. newer says which span is newer (newerOf).
//
//   - value (numerical): a clause of each span is about the same subject
//     (SubjectOverlap) and states a current value of one kind (a quantity
//     in a unit, a rate, a time of day, a date, a weekday, a count of one
//     thing), and the two spans have no current value of that kind in
//     common. Values after "not", "no longer", "instead of", "from" are
//     old, not current; values of different kinds never clash ("$95 per
//     hour" and "$15,500"); spans that name different years are about
//     different times. Or one span corrects a number of the other
//     (correctionClash): "it is 45 minutes, not 30".
//   - supersession: a clause of the newer span states a change ("moved",
//     "pushed", "now", "new", "instead", "no longer", ...; see changeCues)
//     about the subject of a statement of the older one, and the values
//     it states are not among the older span's (else it confirms it).
//   - negation: the pairs of negationPairs, and a word negated in one
//     clause ("not coming", "not signed") stated in the other; the two
//     clauses about the same subject.
//
// chat is true when both spans are chat turns: then a change cue that does
// not move an object changes only a value of a kind both clauses state
// (cueClash).
func detectConflict(a, b *features, newer int, chat bool) (kind, desc string) {
	if qb, qa, ok := correctionClash(b, a); ok {
		return ConflictNumerical, fmt.Sprintf("numerical: %q vs %q (a correction)", qa.text, qb.text)
	}
	if qa, qb, ok := correctionClash(a, b); ok {
		return ConflictNumerical, fmt.Sprintf("numerical: %q vs %q (a correction)", qa.text, qb.text)
	}
	if qa, qb, ok := valueClash(a, b); ok {
		return ConflictNumerical, fmt.Sprintf("numerical: %q vs %q", qa.text, qb.text)
	}
	if newer >= 0 {
		if cue, ok := cueClash(b, a, chat); ok {
			return ConflictSupersession, fmt.Sprintf("supersession: the second says %q", cue)
		}
	}
	if newer <= 0 {
		if cue, ok := cueClash(a, b, chat); ok {
			return ConflictSupersession, fmt.Sprintf("supersession: the first says %q", cue)
		}
	}
	for i, np := range negationPairs {
		bit := uint(1) << i
		switch {
		case opposed(a.polar, b.polar, bit):
			return ConflictNegation, fmt.Sprintf("negation: %q vs %q", np.neg, np.pos)
		case opposed(b.polar, a.polar, bit):
			return ConflictNegation, fmt.Sprintf("negation: %q vs %q", np.pos, np.neg)
		}
	}
	if w, ok := negatedClash(a, b); ok {
		return ConflictNegation, fmt.Sprintf("negation: %q vs %q", "not "+w, w)
	}
	if w, ok := negatedClash(b, a); ok {
		return ConflictNegation, fmt.Sprintf("negation: %q vs %q", w, "not "+w)
	}
	return "", ""
}

// sameSubject reports whether two clauses that state values are about the
// same thing: the terms before their first values (their heads, such as
// "the offsite budget" in "the offsite budget is $15,500") share at least
// one and overlap by SubjectOverlap, and not both hold a term of their own
// ("the offsite budget" and "the marketing budget" each name their own
// thing).
func sameSubject(x, y *claimClause) bool {
	if !overlaps(x.head(), y.head()) {
		return false
	}
	return !ownHead(x, y) || !ownHead(y, x)
}

// overlaps reports whether two subject sets share at least one term and
// have an overlap coefficient of at least SubjectOverlap.
func overlaps(x, y terms) bool {
	n := min(len(x), len(y))
	if n == 0 {
		return false
	}
	shared := common(x, y)
	return shared > 0 && float64(shared) >= SubjectOverlap*float64(n)
}

// ownHead reports whether x's head holds a term that y's does not.
func ownHead(x, y *claimClause) bool {
	yh := y.head()
	for _, h := range x.head() {
		if !yh.has(h) {
			return true
		}
	}
	return false
}

// valueClash finds a clause of a and one of b about the same subject that
// state current values of one kind, when no current value of that kind is
// common to a and b, and returns the first such value of each.
func valueClash(a, b *features) (va, vb value, ok bool) {
	if !a.hasValues || !b.hasValues || otherYears(a, b) {
		return va, vb, false
	}
	clash := clashKinds(a, b)
	if len(clash) == 0 {
		return va, vb, false
	}
	occasions := -1 // otherOccasions(a, b), when asked
	for i := range a.claims {
		x := &a.claims[i]
		if x.question || len(x.values) == 0 {
			continue
		}
		for j := range b.claims {
			y := &b.claims[j]
			if y.question || len(y.values) == 0 {
				continue
			}
			for _, p := range x.values {
				if p.old || !slices.Contains(clash, p.kind) {
					continue
				}
				k := slices.IndexFunc(y.values, func(q value) bool { return !q.old && q.kind == p.kind })
				if k < 0 {
					continue
				}
				if !temporal(p.kind) {
					if occasions < 0 {
						occasions = 0
						if otherOccasions(a, b) {
							occasions = 1
						}
					}
					if occasions == 1 {
						continue
					}
				}
				if sameSubject(x, y) {
					return p, y.values[k], true
				}
			}
		}
	}
	return va, vb, false
}

// clashKinds returns the kinds of value that both spans state currently
// with no value in common ("30 days or 45 days" and "30 days" agree):
// the kinds the value rule can find a clash in. Years and months only set
// a time (otherYears, otherOccasions).
func clashKinds(a, b *features) []string {
	var out []string
	for _, p := range a.current {
		if p.kind == "year" || p.kind == "month" || slices.Contains(out, p.kind) {
			continue
		}
		inB, shared := false, false
		for _, q := range b.current {
			if q.kind == p.kind {
				inB = true
				shared = shared || statesValue(a.current, q)
			}
		}
		if inB && !shared {
			out = append(out, p.kind)
		}
	}
	return out
}

// statesValue reports whether vs holds q's value in q's kind.
func statesValue(vs []value, q value) bool {
	return slices.ContainsFunc(vs, func(p value) bool { return p.kind == q.kind && p.v == q.v })
}

// temporal reports whether values of kind place a statement in time.
func temporal(kind string) bool {
	return kind == "date" || kind == "weekday" || kind == "year" || kind == "month"
}

// otherOccasions reports whether both spans place what they state in time
// (dates, weekdays, months) and share none of those values: "I ran 5 km
// on Monday" and "I ran 8 km on Wednesday" are two runs; "the January
// invoice" and "the February invoice" two invoices.
func otherOccasions(a, b *features) bool {
	ta, tb := false, false
	for _, p := range a.current {
		if temporal(p.kind) {
			ta = true
			if statesValue(b.current, p) {
				return false
			}
		}
	}
	for _, q := range b.current {
		tb = tb || temporal(q.kind)
	}
	return ta && tb
}

// otherYears reports whether both spans name years and none in common:
// then they are about different times ("in 2022 the team had 6 engineers",
// "in 2024 it has 9").
func otherYears(a, b *features) bool {
	ya, yb := false, false
	for _, p := range a.current {
		if p.kind == "year" {
			ya = true
			if statesValue(b.current, p) {
				return false
			}
		}
	}
	for _, q := range b.current {
		yb = yb || q.kind == "year"
	}
	return ya && yb
}

// cueClash reports whether a clause of n states a change about the
// subject of a statement of o: n says "moved", "now", "new", ... (a change
// cue) in a clause about the same subject as a clause of o, neither clause
// asks a question, and the current values of n's clause are not among o's
// values (a change to a value o already states confirms it). It returns
// the cue. Between chat turns (chat), a cue that does not move an object
// ("now", "new", "went", "reached", ...: movesObject) needs both clauses to
// state a value: people chat in those words about everything ("I'm now
// mentoring the younger players on my team" and "I met up with my
// teammates after my trip" share a subject and state nothing that
// changed), while a chatted change of such a cue states the values ("my
// address is now 48 Birch Lane", "I've got 1250 followers now").
func cueClash(n, o *features, chat bool) (string, bool) {
	if !n.hasCue {
		return "", false
	}
	for i := range n.claims {
		x := &n.claims[i]
		if x.cue == "" || x.question {
			continue
		}
		for j := range o.claims {
			y := &o.claims[j]
			if y.question || chat && !movesObject(x.cue) && !(statesCurrent(x) && statesCurrent(y)) ||
				!overlaps(x.subject, y.subject) && (!movesObject(x.cue) || !within(x.lead(), y.subject)) ||
				!sharesKind(x, y) && !leads(x, y) || confirms(x, o) || otherAttributes(x, y) || statesNothing(x, y) {
				continue
			}
			return x.cue, true
		}
	}
	return "", false
}

// movesObject reports whether cue is a verb that gives its object a new
// place, time or name ("moved", "migrated", "renamed"): a clause with one is
// about the thing its lead names though most of its terms are the new
// value ("Maya moved to 9 Harbour View"). The other cues ("now", "new",
// "went", "reached", ...) say a change only of what the clause itself is
// about: in chat, "I went hiking" does not change every turn about hiking.
func movesObject(cue string) bool {
	switch cue {
	case "now", "new", "newly", "went", "grew", "reached", "passed", "brought", "instead", "anymore", "no longer":
		return false
	}
	return true
}

// otherAttributes reports whether both clauses state current measured
// values (counts aside, which also number streets and rooms) and none of
// one kind: "the planning meeting moved to Tuesday" does not change "the
// planning meeting is 30 minutes".
func otherAttributes(x, y *claimClause) bool {
	any := false
	for _, p := range x.values {
		if p.old || isCount(p.kind) {
			continue
		}
		for _, q := range y.values {
			if q.old || isCount(q.kind) {
				continue
			}
			if q.kind == p.kind {
				return false
			}
			any = true
		}
	}
	return any
}

// statesCurrent reports whether a clause states a current (not old) value.
func statesCurrent(x *claimClause) bool {
	return slices.ContainsFunc(x.values, func(v value) bool { return !v.old })
}

// statesNothing reports whether x states current values and y none: a
// change to a value ("I've got 1250 followers now") contradicts only a
// statement of one ("I have 1,000 followers"), not every clause about the
// thing ("should I ask my followers?").
func statesNothing(x, y *claimClause) bool {
	return statesCurrent(x) && !statesCurrent(y)
}

// sharesKind reports whether two clauses state current values of one kind.
func sharesKind(x, y *claimClause) bool {
	for _, p := range x.values {
		for _, q := range y.values {
			if !p.old && !q.old && p.kind == q.kind {
				return true
			}
		}
	}
	return false
}

// leads reports whether what x says changed (the terms before its cue)
// is mostly what y is about: more than half of them in y's subject. It is
// asked when the clauses state no values of one kind to compare. "The
// offsite budget was raised" does not change "the offsite agenda is owned
// by Nora".
func leads(x, y *claimClause) bool {
	if strings.HasPrefix(x.cue, "supersede") {
		return true // "these rules supersede the travel policy": what changed follows the cue
	}
	lead := x.lead()
	return len(lead) == 0 || 2*common(lead, y.subject) > len(lead)
}

// isCount reports whether kind is a count's ("n:follower", "#platform").
func isCount(kind string) bool {
	return strings.HasPrefix(kind, "n:") || strings.HasPrefix(kind, "#")
}

// within reports whether the non-empty set x lies within y: "Maya moved
// to 9 Harbour View" changes what "Maya lives at 221 Baker Road" says,
// though most of their terms are the two addresses.
func within(x, y terms) bool {
	return len(x) > 0 && common(x, y) == len(x)
}

// confirms reports whether one of the values clause x changed to (after
// its cue, and current) is stated in o, in the same kind: "the design sync
// moved to 14:30" confirms "design sync at 14:30". Values before the cue
// set its scene ("remote work on Fridays is no longer allowed").
func confirms(x *claimClause, o *features) bool {
	for _, p := range x.values {
		if p.old || !p.new {
			continue
		}
		for j := range o.claims {
			for _, q := range o.claims[j].values {
				if q.kind == p.kind && q.v == p.v {
					return true
				}
			}
		}
	}
	return false
}

// negatedClash reports whether a clause of n negates a word ("not
// coming", "never signed") that a clause of p states without negation,
// the two clauses having a term overlap of at least NegationOverlap. It
// returns the word.
func negatedClash(n, p *features) (string, bool) {
	if !n.hasNegated {
		return "", false
	}
	for i := range n.claims {
		x := &n.claims[i]
		if x.question {
			continue
		}
		for _, neg := range x.negated {
			for j := range p.claims {
				y := &p.claims[j]
				if y.question || !y.subject.has(neg.term) || slices.ContainsFunc(y.negated, func(o negation) bool { return o.term == neg.term }) {
					continue
				}
				if restOverlap(x.subject, y.subject, neg.term) >= NegationOverlap {
					return neg.word, true
				}
			}
		}
	}
	return "", false
}

// restOverlap is the overlap coefficient of x and y without the term h:
// "Alex is not coming to dinner" and "Alex is coming to the game" share
// "coming", but the rest, {alex, dinner} and {alex, game}, only half.
func restOverlap(x, y terms, h uint64) float64 {
	nx, ny, shared := 0, 0, 0
	for _, k := range x {
		if k != h {
			nx++
			if y.has(k) {
				shared++
			}
		}
	}
	for _, k := range y {
		if k != h {
			ny++
		}
	}
	if n := min(nx, ny); n > 0 {
		return float64(shared) / float64(n)
	}
	return 0
}

// opposed reports whether a clause of neg states only the negative form of
// the pair bit, a clause of pos only its positive form, and the two overlap.
func opposed(neg, pos []clause, bit uint) bool {
	for i := range neg {
		n := &neg[i]
		if n.neg&bit == 0 || n.pos&bit != 0 {
			continue
		}
		for j := range pos {
			p := &pos[j]
			if p.pos&bit != 0 && p.neg&bit == 0 && overlapTerms(&n.terms, &p.terms) >= NegationOverlap {
				return true
			}
		}
	}
	return false
}

// numericalClash finds the first quantity of a whose unit b also states,
// with no value of that unit in common, and the first quantity of b in that
// unit.
func numericalClash(a, b *features) (qa, qb quantity, ok bool) {
	if len(a.quants) == 0 || len(b.quants) == 0 {
		return qa, qb, false
	}
	var tried []string
	for _, q := range a.quants {
		if slices.Contains(tried, q.unit) {
			continue
		}
		tried = append(tried, q.unit)
		first, shared := -1, false
		for j, r := range b.quants {
			if r.unit != q.unit {
				continue
			}
			if first < 0 {
				first = j
			}
			for _, p := range a.quants {
				if p.unit == q.unit && p.value == r.value {
					shared = true
				}
			}
		}
		if first >= 0 && !shared {
			return q, b.quants[first], true
		}
	}
	return qa, qb, false
}

// correctionClash reports whether x corrects a number that y states, and
// returns x's value and y's. Corrections are short ("it is 45 minutes, not
// 30") and share few terms with the statement they correct ("the weekly
// planning meeting is 30 minutes"), so the Jaccard bound of the numerical
// rule misses them; what ties them together instead is:
//
//   - x denies a value y states: "not N" or "never N" in x, with N's unit
//     or else the unit of x's quantity before it, while y states N in that
//     unit and x states another value in it. When x has terms of its own
//     besides units, they must overlap y's (overlap coefficient >=
//     ClaimOverlap): "lunch is 45 minutes, not 30" does not correct "the
//     deploy takes 30 minutes".
//   - or x says "actually", "correction" or "corrected", x and y state
//     quantities in a unit with no value in common (as the numerical rule
//     asks), and their terms besides units overlap (>= ClaimOverlap, and at
//     least one shared).
func correctionClash(x, y *features) (qx, qy quantity, ok bool) {
	if len(x.denied) == 0 && !x.correction {
		return qx, qy, false
	}
	subject := unitFreeOverlap(&x.terms, &y.terms)
	for _, d := range x.denied {
		if subject.own > 0 && subject.coef < ClaimOverlap {
			break
		}
		iy := slices.IndexFunc(y.quants, func(q quantity) bool { return q.unit == d.unit && q.value == d.value })
		ix := slices.IndexFunc(x.quants, func(q quantity) bool { return q.unit == d.unit && q.value != d.value })
		if iy >= 0 && ix >= 0 {
			return x.quants[ix], y.quants[iy], true
		}
	}
	if x.correction && subject.shared > 0 && subject.coef >= ClaimOverlap {
		if qx, qy, ok := numericalClash(x, y); ok {
			return qx, qy, true
		}
	}
	return qx, qy, false
}

// overlap is the overlap of two term sets without unit words.
type overlap struct {
	own    int     // terms of the first set that are not units
	shared int     // of them, those in the second set
	coef   float64 // overlap coefficient of the two sets without units
}

// unitFreeOverlap compares two term sets leaving out unit words ("minutes",
// "days"): a shared unit says the two spans measure the same kind of thing,
// not that they are about the same thing.
func unitFreeOverlap(a, b *hashSet) overlap {
	var o overlap
	for _, h := range a.keys {
		if !unitTerms.has(h) {
			o.own++
			if b.has(h) {
				o.shared++
			}
		}
	}
	other := 0
	for _, h := range b.keys {
		if !unitTerms.has(h) {
			other++
		}
	}
	if n := min(o.own, other); n > 0 {
		o.coef = float64(o.shared) / float64(n)
	}
	return o
}

// unitTerms are the term hashes of the unit and scale words.
var unitTerms = func() hashSet {
	var hs []uint64
	add := func(w string) {
		if h, kind := termHash([]byte(w)); kind == kindTerm {
			hs = append(hs, h)
		}
	}
	for w := range units {
		add(w)
	}
	for w := range scales {
		add(w)
	}
	return newHashSet(sortedSet(hs)) // sorted: the same set whatever the map order
}()

// conflictNamespace is the namespace of conflict ids.
var conflictNamespace = uuid.MustParse("6c6f6369-636f-4e66-8c69-637473000001")

// ConflictID returns the id of the conflict between two spans, the same
// whichever order they are given in: the UUID (version 8, RFC 4122
// variant) made of the first 16 bytes of SHA-256 over the namespace
// 6c6f6369-636f-4e66-8c69-637473000001 followed by the 16 bytes of the
// smaller span id and then of the larger.
func ConflictID(a, b uuid.UUID) uuid.UUID {
	if compareID(a, b) > 0 {
		a, b = b, a
	}
	return uuid.NewHash(sha256.New(), conflictNamespace, append(a[:], b[:]...), 8)
}
