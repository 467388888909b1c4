package pack

import (
	"fmt"
	"math"
	"time"
)

// Window is a time the query names ("on October 13", "last week"), as its
// caller resolved it against the request's AsOf (retrieval, with package
// when): [Start, End) in Unix microseconds, and the expression it came
// from.
type Window struct {
	Start, End int64
	Expr       string
}

// WindowWeight is the temporal channel's effective weight when the query
// names a time: the query channels keep their proportion and share the
// rest. A candidate in the window then gains up to WindowWeight of
// relevance over one far from it: enough to lift in-window evidence over
// near-equals elsewhere, not enough to lift what the query channels find
// unrelated over what they find relevant (a preference, never a filter).
// Measured on LongMemEval's temporal-reasoning questions and LoCoMo's
// category 2 (docs/pack.md § Dates in the query).
const WindowWeight = 0.25

// withWindows returns w with the temporal weight WindowWeight and the other
// channels scaled to share the rest in their proportion. w must be
// effective (summing to 1).
func (w Weights) withWindows() Weights {
	rest := w.Lexical + w.Semantic
	if !(rest > 0) {
		return Weights{Temporal: 1}
	}
	k := (1 - WindowWeight) / rest
	return Weights{Lexical: float64(w.Lexical * k), Semantic: float64(w.Semantic * k), Temporal: WindowWeight}
}

// windowScore is the temporal score of artifact time ts for the windows
// ws (not empty): 1 inside one; outside, 2^(-distance / length) for the
// nearest window by that score, where distance is the time from ts to the
// window's nearest edge and length the window's length. The window's own
// length is the scale because it is the precision the query speaks with: a
// day off "on October 13" is a long way, a day off "in May 2023" is none;
// and a question about an event is often answered by a turn said a little
// after it ("we went camping last week"), which the decay keeps close.
func windowScore(ts int64, ws []Window) float64 {
	best := 0.0
	for _, w := range ws {
		length := float64(w.End - w.Start)
		if !(length > 0) {
			continue
		}
		var d float64
		switch {
		case ts < w.Start:
			d = float64(w.Start - ts)
		case ts >= w.End:
			d = float64(ts - w.End)
		default:
			return 1
		}
		best = max(best, math.Exp2(-d/length))
	}
	return clamp01(best)
}

// windowAssumption is the assumption that names the windows a pack
// preferred and the reference time they were resolved against.
func windowAssumption(ws []Window, asOf int64) string {
	s := "query dates resolved against as_of " + micros(asOf) + ", the temporal channel prefers them:"
	for i, w := range ws {
		if i > 0 {
			s += ";"
		}
		s += fmt.Sprintf(" %q = [%s, %s)", w.Expr, micros(w.Start), micros(w.End))
	}
	return s
}

// micros formats Unix microseconds as RFC 3339 in UTC.
func micros(us int64) string { return time.UnixMicro(us).UTC().Format(time.RFC3339) }
