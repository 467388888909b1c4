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
//     order.
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
