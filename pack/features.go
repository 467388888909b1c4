package pack

import (
	"strconv"
	"strings"

	"github.com/loci-memory/loci/text"
)

// features are what the conflict rules and query coverage read of a span.
type features struct {
	terms  hashSet    // term hashes (see termHash)
	nums   hashSet    // number hashes
	quants []quantity // numbers with units, in text order
	polar  []clause   // the clauses that state a form of a negation pair

	// Corrections (see correctionClash).
	denied     []quantity // numbers right after "not" or "never" ("45 minutes, not 30"), with their unit or the previous quantity's
	correction bool       // says "actually", "correction" or "corrected"

	// Claims (see valueClash and cueClash): the clauses, with what each
	// is about and the values it states.
	claims []claimClause
	// What the claims hold, so that a pair of spans skips the rules that
	// cannot fire.
	hasValues, hasCue, hasNegated bool
	current                       []value // the clauses' current (not old) values, in text order
}

// negation is a word negated by "not" or "never" before it.
type negation struct {
	term uint64 // its term hash
	word string
}

// claimClause is one clause as the value and change rules read it.
type claimClause struct {
	subject terms      // its terms without units, change cues, scene words and numbers: what it is about
	values  []value    // in text order
	negated []negation // words right after "not" or "never" ("not coming")
	cue     string     // the first change cue, or ""
	// The head is subject[:headEnd], those before its first value: the
	// thing the value is of. The lead is subject[leadFrom:leadEnd], what its
	// change cue says changed ("the offsite budget was raised").
	headEnd, leadFrom, leadEnd uint16
	question                   bool // ends in "?": asks, does not state
}

// head returns the terms before the clause's first value.
func (c *claimClause) head() terms { return c.subject[:c.headEnd:c.headEnd] }

// lead returns what the clause's change cue says changed.
func (c *claimClause) lead() terms { return c.subject[c.leadFrom:c.leadEnd:c.leadEnd] }

// clause is a clause that states a form of a negation pair.
type clause struct {
	terms    hashSet // term hashes of the clause
	pos, neg uint    // bit sets over negationPairs: the forms it states
}

// featuresAfter reads the features of a text in one pass over its words.
// Its first label bytes say who spoke (a chat turn's "Maria: ",
// speakerLabel; 0 for other texts): their terms are terms of the span,
// not of its first claim. As a label ("Refund window: 30 days")
// they would begin the first clause's subject, and every two turns of one
// speaker would share a subject through the name alone ("Maria: That's so
// moving!" would supersede each of Maria's turns).
func featuresAfter(s string, label int) *features {
	f := &features{claims: make([]claimClause, 0, len(s)/64+1)} // a clause is about 60 bytes of text
	all := make([]uint64, 0, len(s)/8)                          // term hashes in text order
	var nums []uint64
	quantEnd := 0 // quantities are read up to here
	clauseStart := 0
	var pos, neg, pending uint // pending: positive forms not yet known to be negated by a "not" after them
	prevNot := false
	cl := claimReader{head: -1, all: make([]uint64, 0, len(s)/8)}
	endClause := func(tail string) {
		pos |= pending
		if pos|neg != 0 && !strings.ContainsRune(tail, '?') { // a question states neither form
			f.polar = append(f.polar, clause{newHashSet(all[clauseStart:]), pos, neg})
		}
		clauseStart, pos, neg, pending, prevNot = len(all), 0, 0, 0, false
	}
	eachWord(s, func(w []byte, start int, brk bool) {
		if brk {
			endClause(s[cl.lastStart:start])
			cl.end(f, s[cl.lastStart:start])
		}
		if c := s[start]; '0' <= c && c <= '9' && start >= quantEnd && !continuesWord(s, start) {
			q, next, ok := quantityAt(s, start)
			if prevNot {
				f.deny(s, start, q, ok)
			}
			if ok {
				f.quants = append(f.quants, q)
				cl.quantity(s, q, next)
			} else if e := cl.number(s, start); e > next {
				next = e // a time or date: its other digits are not numbers
			}
			quantEnd = next
		}
		if !f.correction {
			switch string(w) {
			case "actually", "correction", "corrected":
				f.correction = true
			}
		}
		h := wordKey(w)
		r := lexicon.get(h)
		if start < label { // who spoke: a term of the span, not of a claim
			if h, kind := termOf(w, h, r); kind == kindTerm {
				all = append(all, h)
			}
			return // the ": " after it ends a clause that holds no claim
		}
		cl.word(s, w, start, r)
		if r == nil {
			pos |= pending
			pending, prevNot = 0, false
		} else {
			if r.not {
				neg |= pending
			} else {
				pos |= pending
			}
			pending = 0
			if prevNot {
				neg |= r.pos
			} else {
				pending = r.pos
			}
			neg |= r.neg
			prevNot = r.not
		}
		switch h, kind := termOf(w, h, r); kind {
		case kindTerm:
			all = append(all, h)
			cl.term(h, w, r)
		case kindNumber:
			nums = append(nums, h)
		}
	})
	endClause(s[cl.lastStart:])
	cl.end(f, s[cl.lastStart:])
	f.terms = newHashSet(all)
	f.nums = newHashSet(nums)
	return f
}

// speakerLabel returns the length of the "<speaker>: " or "<role>: " that
// starts a chat turn's first span (text.TurnSpeaker, text.TurnRole), or 0.
// Only there is it known to be one: elsewhere "Refund window: 30 days"
// starts with a label that is the subject.
func (c *cand) speakerLabel() int {
	if c.SourceType != "chat_turn" || c.Start != 0 {
		return 0
	}
	if p := text.TurnSpeaker(c.Text); p != "" {
		return len(p) + 2
	}
	if p := text.TurnRole(c.Text); p != "" {
		return len(p) + 2
	}
	return 0
}

// deny records the number at s[start], which follows "not" or "never", as
// a denied quantity: q when the number has a unit (ok), else the number in
// the unit of the quantity before it ("45 minutes, not 30"); a bare number
// with no quantity before it is not recorded.
func (f *features) deny(s string, start int, q quantity, ok bool) {
	if ok {
		f.denied = append(f.denied, q)
		return
	}
	if len(f.quants) == 0 {
		return
	}
	digits, end := scanNumber(s, start)
	v, err := strconv.ParseFloat(digits, 64)
	if err != nil {
		return
	}
	f.denied = append(f.denied, quantity{value: v, unit: f.quants[len(f.quants)-1].unit, text: s[start:end]})
}
