package pack

import (
	"crypto/sha256"
	"fmt"
	"slices"

	"github.com/google/uuid"
)

// Conflict thresholds.
const (
	// NumericalJaccard is the Jaccard similarity of term sets at which two
	// spans that state different numbers with the same unit conflict.
	NumericalJaccard = 0.3
	// ClaimOverlap is the term overlap at which a supersession phrase or a
	// negation pair makes two spans conflict.
	ClaimOverlap = 0.15
)

// jaccardTerms is the Jaccard similarity of two term sets (0 when both are
// empty).
func jaccardTerms(a, b *hashSet) float64 {
	inter := intersect(a, b)
	union := len(a.keys) + len(b.keys) - inter
	if union == 0 {
		return 0
	}
	return float64(inter) / float64(union)
}

// overlapTerms is the overlap coefficient |a∩b| / min(|a|,|b|) of two term
// sets. It is used for ClaimOverlap rather than the Jaccard similarity
// because a correction is often a short note about a long span: "the
// refund window was revised to 45 days" shares most of its terms with the
// policy paragraph it corrects, but few of the paragraph's.
func overlapTerms(a, b *hashSet) float64 {
	n := min(len(a.keys), len(b.keys))
	if n == 0 {
		return 0
	}
	return float64(intersect(a, b)) / float64(n)
}

// detectConflict applies the rules in order (numerical, supersession,
// negation) to two included spans, a cited before b, and returns the kind
// and description of the first that fires, or "" when none does.
//
//   - numerical: the term sets have Jaccard >= NumericalJaccard, and for
//     some unit both spans state quantities in it but no value in common
//     (so "30 days" against "45 days" conflicts; "3 days or 5 days"
//     against "3 days" does not). The unit is the first such in a's text
//     order. Or one span corrects a number of the other (correctionClash):
//     "it is 45 minutes, not 30", too short for the Jaccard bound.
//   - supersession: one span contains a supersession phrase (supersede,
//     supersedes, superseded, "revised to", "no longer", "updated to",
//     "replaced by", as whole words) and the term overlap is >=
//     ClaimOverlap.
//   - negation: the term overlap is >= ClaimOverlap, and for one of the
//     pairs of negationPairs a clause of one span states only the negative
//     form and a clause of the other only the positive form, and those two
//     clauses have a term overlap >= ClaimOverlap too. Clauses end at
//     . ! ? ; and :, so "will" in an unrelated sentence does not count.
func detectConflict(a, b *features) (kind, desc string) {
	if qa, qb, ok := numericalClash(a, b); ok && jaccardTerms(&a.terms, &b.terms) >= NumericalJaccard {
		return ConflictNumerical, fmt.Sprintf("numerical: %q vs %q", qa.text, qb.text)
	}
	if qb, qa, ok := correctionClash(b, a); ok {
		return ConflictNumerical, fmt.Sprintf("numerical: %q vs %q (a correction)", qa.text, qb.text)
	}
	if qa, qb, ok := correctionClash(a, b); ok {
		return ConflictNumerical, fmt.Sprintf("numerical: %q vs %q (a correction)", qa.text, qb.text)
	}
	if a.phrase == "" && b.phrase == "" && (len(a.polar) == 0 || len(b.polar) == 0) {
		return "", "" // neither of the other rules can fire
	}
	if overlapTerms(&a.terms, &b.terms) < ClaimOverlap {
		return "", ""
	}
	if a.phrase != "" {
		return ConflictSupersession, fmt.Sprintf("supersession: the first says %q", a.phrase)
	}
	if b.phrase != "" {
		return ConflictSupersession, fmt.Sprintf("supersession: the second says %q", b.phrase)
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
	return "", ""
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
			if p.pos&bit != 0 && p.neg&bit == 0 && overlapTerms(&n.terms, &p.terms) >= ClaimOverlap {
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
