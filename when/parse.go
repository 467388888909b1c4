package when

import "time"

// parser matches date expressions at token positions.
type parser struct {
	q    string
	toks []tok
	day  time.Time // the start of the reference day (UTC)
	abs  bool      // the last match was an absolute date (matchDate)
}

// at returns token i, or a zero break token past the end (so rules can
// look ahead without bounds checks: a break matches nothing).
func (p *parser) at(i int) tok {
	if i < 0 || i >= len(p.toks) {
		return tok{kind: tBreak}
	}
	return p.toks[i]
}

// word reports whether token i is a word of class c.
func (p *parser) word(i int, c class) bool {
	t := p.at(i)
	return t.kind == tWord && t.class == c
}

// match tries every rule at token i: the number of tokens the expression
// takes (0: none) and its window.
func (p *parser) match(i int) (int, time.Time, time.Time) {
	t := p.at(i)
	if t.kind == tWord && t.class == cThe {
		if n, s, e := p.matchAfterThe(i + 1); n > 0 {
			return n + 1, s, e
		}
		return 0, time.Time{}, time.Time{}
	}
	if p.word(i, cBetween) {
		if n, s, e := p.between(i + 1); n > 0 {
			return n + 1, s, e
		}
	}
	if n, s, e := p.matchDate(i); n > 0 {
		p.abs = true
		return n, s, e
	}
	return p.matchRelative(i)
}

// between matches "A and B" after "between": the window from A's start to
// B's end ("between August 11 and August 15 2023").
func (p *parser) between(i int) (int, time.Time, time.Time) {
	n1, s1, _ := p.match(i)
	if n1 == 0 || !p.word(i+n1, cAnd) {
		return 0, time.Time{}, time.Time{}
	}
	n2, _, e2 := p.match(i + n1 + 1)
	for k := 0; n2 > 0 && !s1.Before(e2) && k < 8; k++ {
		s1 = s1.AddDate(-1, 0, 0) // "between August 11 and August 15 2023": the year is said once
	}
	if n2 == 0 || !s1.Before(e2) {
		return 0, time.Time{}, time.Time{}
	}
	return n1 + n2 + 1, s1, e2
}

// before matches "before DATE" at i: the tokens taken (0: none) and the
// date's day, the anchor of "two weeks before August 11, 2023", "the week
// before 16 November 2023", "the Sunday before October 25, 2022".
func (p *parser) before(i int) (int, time.Time) {
	if !p.word(i, cBefore) {
		return 0, time.Time{}
	}
	n, s, e := p.matchDate(i + 1)
	if n == 0 || !e.Equal(s.AddDate(0, 0, 1)) {
		return 0, time.Time{}
	}
	return n + 1, s
}

// matchAfterThe matches the expressions that begin with "the": "the day
// before yesterday", "the last week" and "the past 3 days" (rolling: "last
// week" without "the" is the calendar week). Other expressions after "the"
// ("the 13th of October") match from the next token on.
func (p *parser) matchAfterThe(i int) (int, time.Time, time.Time) {
	if p.word(i, cUnit) && p.at(i).v == unitDay && p.word(i+1, cBefore) && p.word(i+2, cYesterday) {
		d := p.day.AddDate(0, 0, -2)
		return 3, d, d.AddDate(0, 0, 1)
	}
	if t := p.at(i); t.kind == tWord && (t.class == cUnit && !t.plural && t.v != unitWeekend || t.class == cWeekday) {
		if n, d := p.before(i + 1); n > 0 {
			switch {
			case t.class == cWeekday: // the Sunday before d
				s := d.AddDate(0, 0, -((int(d.Weekday())-t.v+6)%7 + 1))
				return n + 1, s, s.AddDate(0, 0, 1)
			default: // the day, week, month or year before d
				return n + 1, back(d, t.v, 1), d
			}
		}
	}
	if p.word(i, cLast) || p.word(i, cPast) {
		return p.rolling(i + 1).plus(1)
	}
	return 0, time.Time{}, time.Time{}
}

// matchDate matches the absolute expressions: numeric dates, dates with a
// month name, months, years and seasons of a given year, and a weekday
// followed by a date ("Monday, May 8").
func (p *parser) matchDate(i int) (int, time.Time, time.Time) {
	t := p.at(i)
	switch {
	case t.kind == tNum:
		if n, s, e := p.numeric(i); n > 0 {
			return n, s, e
		}
		return p.dayMonth(i)
	case t.kind != tWord:
		return 0, time.Time{}, time.Time{}
	case t.class == cMonth:
		return p.monthFirst(i, false)
	case t.class == cIn || t.class == cLast || t.class == cThis:
		return p.afterTrigger(i)
	case t.class == cWeekday:
		if n, s, e := p.matchDate(i + 1); n > 0 && (p.at(i+1).kind == tNum || p.at(i+1).class == cMonth) {
			return n + 1, s, e
		}
	case t.class == cSeason:
		return p.seasonYear(i)
	}
	return 0, time.Time{}, time.Time{}
}

// adjacent reports whether tokens i and i+1 touch (no space between).
func (p *parser) adjacent(i int) bool {
	return i+1 < len(p.toks) && p.toks[i].hi == p.toks[i+1].lo
}

// year returns token i's value when it reads as a year (four digits,
// 1900-2199, no ordinal), else 0.
func (p *parser) year(i int) int {
	t := p.at(i)
	if t.kind == tNum && t.digits == 4 && !t.ord && t.v >= 1900 && t.v <= 2199 {
		return t.v
	}
	return 0
}

// numeric matches 2023-05-20, 2023/05/20, 2023-05 and 5/20/2023 (5/20/23;
// day first when the first number cannot be a month: 20/5/2023).
func (p *parser) numeric(i int) (int, time.Time, time.Time) {
	a, s1, b, s2, c := p.at(i), p.at(i+1), p.at(i+2), p.at(i+3), p.at(i+4)
	if s1.kind != tSep || b.kind != tNum || a.ord || b.ord || !p.adjacent(i) || !p.adjacent(i+1) {
		return 0, time.Time{}, time.Time{}
	}
	full := s2.kind == tSep && s2.sep == s1.sep && c.kind == tNum && !c.ord && p.adjacent(i+2) && p.adjacent(i+3)
	if y := p.year(i); y != 0 && b.digits <= 2 {
		m := time.Month(b.v)
		if full && c.digits <= 2 && m >= 1 && m <= 12 && validDay(y, m, c.v) {
			d := date(y, m, c.v)
			return 5, d, d.AddDate(0, 0, 1)
		}
		if !full && s1.sep == '-' && m >= 1 && m <= 12 && !(s2.kind == tSep) {
			return 3, date(y, m, 1), date(y, m+1, 1)
		}
		return 0, time.Time{}, time.Time{}
	}
	if !full || a.digits > 2 || b.digits > 2 || (c.digits != 2 && c.digits != 4) {
		return 0, time.Time{}, time.Time{}
	}
	y := c.v
	if c.digits == 2 {
		y += 2000
	}
	m, d := a.v, b.v
	if m > 12 {
		m, d = d, m
	}
	if m < 1 || m > 12 || !validDay(y, time.Month(m), d) {
		return 0, time.Time{}, time.Time{}
	}
	day := date(y, time.Month(m), d)
	return 5, day, day.AddDate(0, 0, 1)
}

// monthOK reports whether month word t may open a date: a lower-case
// "may" or "march" only after a trigger word or before a year, since both
// are common words ("may I ask", "march on").
func monthOK(t tok, triggered, yearFollows bool) bool {
	if triggered || yearFollows || t.upper {
		return true
	}
	return t.v != 3 && t.v != 5 || t.abbr
}

// dayNumber reports whether token i is a day of a month: 1-31, at most two
// digits, not the start of a numeric date or a time ("8:30").
func (p *parser) dayNumber(i int) bool {
	t := p.at(i)
	if t.kind != tNum || t.digits > 2 || t.v < 1 || t.v > 31 {
		return false
	}
	next := p.at(i + 1)
	return !(next.kind == tSep && p.adjacent(i)) && !(next.kind == tBreak && next.lo == t.hi && p.q[next.lo] == ':')
}

// monthFirst matches "October 13", "Oct 13th", "October 13, 2023", "May
// 2023" and, when triggered (after "in", "during", ...), "May".
func (p *parser) monthFirst(i int, triggered bool) (int, time.Time, time.Time) {
	t := p.at(i)
	m := time.Month(t.v)
	if p.dayNumber(i + 1) {
		d := p.at(i + 1).v
		if y := p.year(i + 2); y != 0 && monthOK(t, triggered, true) {
			if validDay(y, m, d) {
				return 3, date(y, m, d), date(y, m, d+1)
			}
			return 0, time.Time{}, time.Time{}
		}
		if monthOK(t, triggered, false) {
			if s, ok := p.recentDate(m, d); ok {
				return 2, s, s.AddDate(0, 0, 1)
			}
		}
		return 0, time.Time{}, time.Time{}
	}
	if y := p.year(i + 1); y != 0 && monthOK(t, triggered, true) {
		return 2, date(y, m, 1), date(y, m+1, 1)
	}
	if triggered && (!t.abbr || t.upper) {
		y := p.day.Year()
		if m > p.day.Month() {
			y--
		}
		return 1, date(y, m, 1), date(y, m+1, 1)
	}
	return 0, time.Time{}, time.Time{}
}

// recentDate is the most recent (m, d) on or before the reference day.
func (p *parser) recentDate(m time.Month, d int) (time.Time, bool) {
	for y := p.day.Year(); y > p.day.Year()-8; y-- {
		if validDay(y, m, d) && !date(y, m, d).After(p.day) {
			return date(y, m, d), true
		}
	}
	return time.Time{}, false
}

// dayMonth matches "13 October 2023", "13th of October", "8 May".
func (p *parser) dayMonth(i int) (int, time.Time, time.Time) {
	if !p.dayNumber(i) {
		return 0, time.Time{}, time.Time{}
	}
	j := i + 1
	if p.word(j, cOf) {
		j++
	}
	mt := p.at(j)
	if mt.kind != tWord || mt.class != cMonth {
		return 0, time.Time{}, time.Time{}
	}
	m, d := time.Month(mt.v), p.at(i).v
	if y := p.year(j + 1); y != 0 {
		if validDay(y, m, d) {
			return j + 2 - i, date(y, m, d), date(y, m, d+1)
		}
		return 0, time.Time{}, time.Time{}
	}
	if !monthOK(mt, false, false) {
		return 0, time.Time{}, time.Time{}
	}
	if s, ok := p.recentDate(m, d); ok {
		return j + 1 - i, s, s.AddDate(0, 0, 1)
	}
	return 0, time.Time{}, time.Time{}
}

// afterTrigger matches a month, year or season after "in", "during",
// "early", "since", "last", "this": "in May", "in 2022", "during the
// summer", "last May", "this summer".
func (p *parser) afterTrigger(i int) (int, time.Time, time.Time) {
	trig := p.at(i).class
	j := i + 1
	if trig == cIn && p.word(j, cThe) {
		j++ // "in the summer", "during the spring of 2023"
	}
	t := p.at(j)
	switch {
	case t.kind == tWord && t.class == cMonth && j == i+1:
		n, s, e := p.monthFirst(j, true)
		if n == 0 {
			return 0, s, e
		}
		if n == 1 && trig == cLast && !s.Before(date(p.day.Year(), p.day.Month(), 1)) {
			s, e = s.AddDate(-1, 0, 0), e.AddDate(-1, 0, 0) // "last May", asked in May: a year ago
		}
		if n == 1 && trig == cThis {
			y := p.day.Year()
			s, e = date(y, s.Month(), 1), date(y, s.Month()+1, 1)
		}
		return n + 1, s, e
	case t.kind == tNum && trig == cIn && j == i+1:
		if y := p.year(j); y != 0 && !(p.at(j+1).kind == tSep && p.adjacent(j)) {
			return 2, date(y, 1, 1), date(y+1, 1, 1)
		}
	case t.kind == tWord && t.class == cSeason:
		if n, s, e := p.seasonYear(j); n > 0 {
			return n + j - i, s, e
		}
		s := p.season(t.v, trig == cLast)
		return j + 1 - i, s, s.AddDate(0, 3, 0)
	}
	return 0, time.Time{}, time.Time{}
}

// season is the start of the most recent season starting in month first
// that has begun by the reference day (ended, when over).
func (p *parser) season(first int, over bool) time.Time {
	s := date(p.day.Year(), time.Month(first), 1)
	for s.After(p.day) || over && s.AddDate(0, 3, 0).After(p.day) {
		s = s.AddDate(-1, 0, 0)
	}
	return s
}

// seasonYear matches "summer 2023" and "summer of 2023" (a season of year
// Y starts in Y: winter 2023 is December 2023 to February 2024).
func (p *parser) seasonYear(i int) (int, time.Time, time.Time) {
	j := i + 1
	if p.word(j, cOf) {
		j++
	}
	if y := p.year(j); y != 0 {
		s := date(y, time.Month(p.at(i).v), 1)
		return j + 1 - i, s, s.AddDate(0, 3, 0)
	}
	return 0, time.Time{}, time.Time{}
}

// count matches a count: "3", "three", "a", "a couple of", "a few",
// "several". It returns the tokens taken (0: none) and the count.
func (p *parser) count(i int) (int, int) {
	t := p.at(i)
	switch {
	case t.kind == tNum && !t.ord && t.digits <= 3 && t.v > 0 && !(p.at(i+1).kind == tSep && p.adjacent(i)):
		return 1, t.v
	case t.kind != tWord:
		return 0, 0
	case t.class == cNumber:
		return 1, t.v
	case t.class == cA && p.word(i+1, cCouple):
		if p.word(i+2, cOf) {
			return 3, 2
		}
		return 2, 2
	case t.class == cA && p.word(i+1, cNumber) && p.at(i+1).v == 3: // "a few"
		return 2, 3
	case t.class == cA:
		return 1, 1
	case t.class == cCouple && p.word(i+1, cOf):
		return 2, 2
	}
	return 0, 0
}

// matchRelative matches the expressions relative to the reference day.
func (p *parser) matchRelative(i int) (int, time.Time, time.Time) {
	t := p.at(i)
	day := p.day
	if t.kind == tNum || t.kind == tWord && (t.class == cNumber || t.class == cA || t.class == cCouple) {
		return p.ago(i)
	}
	if t.kind != tWord {
		return 0, time.Time{}, time.Time{}
	}
	switch t.class {
	case cToday:
		return 1, day, day.AddDate(0, 0, 1)
	case cYesterday:
		return 1, day.AddDate(0, 0, -1), day
	case cPast:
		return p.rolling(i + 1).plus(1)
	case cEarlier:
		if p.word(i+1, cToday) {
			return 2, day, day.AddDate(0, 0, 1)
		}
		if p.word(i+1, cThis) && p.word(i+2, cUnit) {
			s, _ := p.calendar(p.at(i+2).v, 0)
			if s.IsZero() || !s.Before(day) {
				return 0, time.Time{}, time.Time{}
			}
			return 3, s, day
		}
	case cThis:
		if p.word(i+1, cDayPart) {
			return 2, day, day.AddDate(0, 0, 1)
		}
		if p.word(i+1, cWeekday) {
			d := weekStart(day).AddDate(0, 0, (p.at(i+1).v+6)%7)
			return 2, d, d.AddDate(0, 0, 1)
		}
		if p.word(i+1, cUnit) && !p.at(i+1).plural {
			if s, e := p.calendar(p.at(i+1).v, 0); !s.IsZero() {
				return 2, s, e
			}
		}
	case cLast:
		if p.word(i+1, cNight) {
			return 2, day.AddDate(0, 0, -1), day
		}
		if p.word(i+1, cWeekday) {
			back := (int(day.Weekday()) - p.at(i+1).v + 7) % 7
			if back == 0 {
				back = 7
			}
			d := day.AddDate(0, 0, -back)
			return 2, d, d.AddDate(0, 0, 1)
		}
		if p.word(i+1, cUnit) && !p.at(i+1).plural {
			if s, e := p.calendar(p.at(i+1).v, -1); !s.IsZero() {
				return 2, s, e
			}
		}
		return p.rolling(i + 1).plus(1) // "last 3 days"
	case cWeekday:
		// "on Monday", or a weekday ending the sentence ("What did we do
		// Monday?"); not "the Sunday mass", "next Friday", "every Monday".
		if !p.word(i-1, cOn) && (p.at(i+1).kind != tBreak || p.word(i-1, cNext) || p.word(i-1, cThe)) {
			return 0, time.Time{}, time.Time{}
		}
		d := day.AddDate(0, 0, -((int(day.Weekday()) - t.v + 7) % 7))
		return 1, d, d.AddDate(0, 0, 1)
	}
	return 0, time.Time{}, time.Time{}
}

// calendar is the calendar unit (week, month, year, weekend) containing the
// reference day (rel 0) or the one before it (rel -1); zero for days.
func (p *parser) calendar(unit, rel int) (time.Time, time.Time) {
	day := p.day
	switch unit {
	case unitWeek:
		s := weekStart(day).AddDate(0, 0, 7*rel)
		return s, s.AddDate(0, 0, 7)
	case unitWeekend:
		s := weekStart(day).AddDate(0, 0, 5+7*rel)
		return s, s.AddDate(0, 0, 2)
	case unitMonth:
		s := date(day.Year(), day.Month()+time.Month(rel), 1)
		return s, s.AddDate(0, 1, 0)
	case unitYear:
		s := date(day.Year()+rel, 1, 1)
		return s, s.AddDate(1, 0, 0)
	}
	return time.Time{}, time.Time{}
}

// span is a match's length and window, so that a rule's result can be
// passed on with its extra tokens counted (plus).
type span struct {
	n    int
	s, e time.Time
}

func (m span) plus(k int) (int, time.Time, time.Time) {
	if m.n == 0 {
		return 0, time.Time{}, time.Time{}
	}
	return m.n + k, m.s, m.e
}

// rolling matches "[N] units" after "past" or "the last": the N units up to
// and including the reference day ("the past week", "last 3 days", "past few
// months"). Without a count, a day is no window ("the last day of the trip").
func (p *parser) rolling(i int) span {
	n, c := p.count(i)
	if n == 0 {
		c = 1
	}
	u := p.at(i + n)
	if u.kind != tWord || u.class != cUnit || u.v == unitWeekend || n == 0 && (u.plural || u.v == unitDay) {
		return span{}
	}
	return span{n + 1, back(p.day, u.v, c), p.day.AddDate(0, 0, 1)}
}

// back is day moved back c units.
func back(day time.Time, unit, c int) time.Time {
	switch unit {
	case unitDay:
		return day.AddDate(0, 0, -c)
	case unitWeek:
		return day.AddDate(0, 0, -7*c)
	case unitMonth:
		return addMonths(day, -c)
	default:
		return addMonths(day, -12*c)
	}
}

// addMonths moves day by k months, keeping the day of the month where the
// month is long enough and taking its last day where not (March 31 less one
// month is February 28 or 29, not March 3).
func addMonths(day time.Time, k int) time.Time {
	y, m, d := day.Date()
	first := date(y, m+time.Month(k), 1)
	last := first.AddDate(0, 1, -1).Day()
	return date(first.Year(), first.Month(), min(d, last))
}

// Half-widths of "N units ago" windows, in days, for weeks, months and
// years: the window is one unit wide, centred on the day N units back.
const (
	agoWeekHalf  = 3
	agoMonthHalf = 15
	agoYearHalf  = 182
)

// ago matches "3 days ago", "two weeks ago", "a month ago", "a couple of
// years ago", and the same before a date ("two weeks before August 11,
// 2023").
func (p *parser) ago(i int) (int, time.Time, time.Time) {
	n, c := p.count(i)
	u := p.at(i + n)
	if n == 0 || u.kind != tWord || u.class != cUnit || u.v == unitWeekend {
		return 0, time.Time{}, time.Time{}
	}
	from := p.day
	took := n + 2
	if nb, d := p.before(i + n + 1); nb > 0 {
		from, took = d, n+1+nb // "two weeks before August 11, 2023"
	} else if !p.word(i+n+1, cAgo) {
		return 0, time.Time{}, time.Time{}
	}
	d := back(from, u.v, c)
	half := 0
	switch u.v {
	case unitWeek:
		half = agoWeekHalf
	case unitMonth:
		half = agoMonthHalf
	case unitYear:
		half = agoYearHalf
	}
	return took, d.AddDate(0, 0, -half), d.AddDate(0, 0, half+1)
}
