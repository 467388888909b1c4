// Package when finds date expressions in a query ("on October 13", "in May
// 2023", "2023-05-20", "last Tuesday", "two weeks ago", "this year") and
// resolves them against a reference time into windows of time [Start, End),
// which the packer's temporal channel prefers (docs/pack.md § Dates in the
// query).
//
// Resolve is a pure function of the query and the reference time: no clock,
// no locale, no map iteration in what it returns. It reads English only. Days
// are UTC calendar days (the reference time is taken in UTC) and weeks start
// on Monday (ISO 8601). A date without a year is its most recent occurrence on
// or before the reference day ("October 13" asked on 12 October 2026 is 13
// October 2025); a month or season without a year is its most recent one that
// has begun ("in May" asked in May is this May).
//
// What is a window and what is not (docs/pack.md has the table):
//
//   - Dates, months, years, weekdays, seasons and the calendar units named
//     relative to the reference ("yesterday", "last week", "this month", "last
//     weekend", "earlier this year") are windows of that extent.
//   - "N days ago" is that day; "N weeks / months / years ago" is a window of
//     one week / month / year centred on the reference moved back N units:
//     people count such distances roughly, and a calendar unit would cut the
//     intended day off at a boundary as often as not.
//   - "in the past week", "over the last 3 days", "the past few months" are
//     the N units up to and including the reference day.
//   - Not windows: the future ("tomorrow", "next week"): the temporal channel
//     scores when something was said, and what is said about tomorrow was said
//     at no particular past time; vague words ("recently", "lately",
//     "nowadays", "currently"): they name no extent, and recency already
//     prefers newer evidence; expressions relative to an event ("two days
//     before the party"): the event's date is unknown to the query; bare
//     ordinals and numbers ("the 4th item", "5/20") and a lowercase "may" or
//     "march" with neither a preposition before nor a year after ("may I ask",
//     "march on"): too often not dates.
package when

import (
	"time"
)

// Window is one date expression of a query and the time it names: [Start,
// End), UTC. Expr is the expression as written in the query (query[Lo:Hi]).
type Window struct {
	Start, End time.Time
	Expr       string
	Lo, Hi     int // byte offsets of Expr in the query
}

// MaxWindows bounds how many windows Resolve returns: a query naming more
// dates than this names a history rather than a time.
const MaxWindows = 4

// MaxQueryBytes bounds how much of a query Resolve reads; the rest is
// ignored (queries are at most 16 KiB; a date is named near the question).
const MaxQueryBytes = 4096

// Resolve returns the windows of the date expressions in query, in the
// order they appear (at most MaxWindows, duplicates of one window left out),
// resolved against ref. None when the query names no date.
//
// A query that names one day by its date and also relative expressions
// ("What did Maria do last weekend before April 10, 2023?", "last Friday on
// 23 January, 2022") speaks from that day: the relative expressions are
// resolved against it instead of ref.
func Resolve(query string, ref time.Time) []Window {
	if len(query) > MaxQueryBytes {
		query = query[:MaxQueryBytes]
	}
	p := parser{q: query, day: dayOf(ref.UTC())}
	p.toks = tokenize(query, make([]tok, 0, 16))
	out, anchor, relative := p.scan()
	if relative && !anchor.IsZero() && !anchor.Equal(p.day) {
		p.day = anchor
		out, _, _ = p.scan()
	}
	return out
}

// scan reads the query's windows. anchor is the day of the query's one
// absolute date of a day (zero: none, or several); relative says whether
// some window is relative to the reference day.
func (p *parser) scan() (out []Window, anchor time.Time, relative bool) {
	days := 0
	for i := 0; i < len(p.toks) && len(out) < MaxWindows; {
		p.abs = false
		n, start, end := p.match(i)
		if n == 0 {
			i++
			continue
		}
		if p.abs && end.Equal(start.AddDate(0, 0, 1)) {
			if days == 0 || !anchor.Equal(start) {
				days++
			}
			anchor = start
		}
		relative = relative || !p.abs
		w := Window{Start: start, End: end, Lo: p.toks[i].lo, Hi: p.toks[i+n-1].hi}
		w.Expr = p.q[w.Lo:w.Hi]
		dup := false
		for _, o := range out {
			dup = dup || (o.Start.Equal(w.Start) && o.End.Equal(w.End))
		}
		if !dup {
			out = append(out, w)
		}
		i += n
	}
	if days != 1 {
		anchor = time.Time{}
	}
	return out, anchor, relative
}

// dayOf is the start of t's UTC day.
func dayOf(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// date is the start of a UTC day, normalising out-of-range values as
// time.Date does.
func date(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// validDay reports whether d is a day of month m of year y.
func validDay(y int, m time.Month, d int) bool {
	return d >= 1 && d <= 31 && date(y, m, d).Day() == d
}

// weekStart is the Monday that starts t's week.
func weekStart(t time.Time) time.Time {
	back := (int(t.Weekday()) + 6) % 7 // Monday 0 .. Sunday 6
	return t.AddDate(0, 0, -back)
}
