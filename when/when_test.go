package when

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// ref is the reference time of the table: Thursday 15 October 2026, 14:30
// UTC. Its week starts on Monday 12 October.
var ref = time.Date(2026, 10, 15, 14, 30, 0, 0, time.UTC)

// day parses "2006-01-02" as a UTC day.
func day(s string) time.Time {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestResolve is the table of date expressions and their windows at ref
// (and at other reference times where the edge is the point). Each query
// must resolve to exactly one window, from the expression expr.
func TestResolve(t *testing.T) {
	cases := []struct {
		query, expr, start, end string
		ref                     time.Time // zero: ref
	}{
		// Absolute dates.
		{"What did we decide on October 13?", "October 13", "2026-10-13", "2026-10-14", time.Time{}},
		{"notes from Oct 13th", "Oct 13th", "2026-10-13", "2026-10-14", time.Time{}},
		{"what happened on 13 October 2023", "13 October 2023", "2023-10-13", "2023-10-14", time.Time{}},
		{"on October 13, 2023 we met", "October 13, 2023", "2023-10-13", "2023-10-14", time.Time{}},
		{"the call on 2023-05-20", "2023-05-20", "2023-05-20", "2023-05-21", time.Time{}},
		{"the call on 2023/05/20", "2023/05/20", "2023-05-20", "2023-05-21", time.Time{}},
		{"the call on 5/20/2023", "5/20/2023", "2023-05-20", "2023-05-21", time.Time{}},
		{"the call on 20/5/2023", "20/5/2023", "2023-05-20", "2023-05-21", time.Time{}},
		{"the call on 5/20/23", "5/20/23", "2023-05-20", "2023-05-21", time.Time{}},
		{"what shipped in 2023-05", "2023-05", "2023-05-01", "2023-06-01", time.Time{}},
		{"What did I do on Monday, May 8?", "Monday, May 8", "2026-05-08", "2026-05-09", time.Time{}},
		{"May 8, 2023", "May 8, 2023", "2023-05-08", "2023-05-09", time.Time{}},
		{"the review on October 16", "October 16", "2025-10-16", "2025-10-17", time.Time{}},
		{"anything on October 15?", "October 15", "2026-10-15", "2026-10-16", time.Time{}},
		{"on the 13th of October", "13th of October", "2026-10-13", "2026-10-14", time.Time{}},
		{"13th of October 2022", "13th of October 2022", "2022-10-13", "2022-10-14", time.Time{}},
		{"what about Feb 29", "Feb 29", "2024-02-29", "2024-03-01", time.Time{}},
		{"the Sept. 3 release", "Sept. 3", "2026-09-03", "2026-09-04", time.Time{}},
		{"on 3 September", "3 September", "2026-09-03", "2026-09-04", time.Time{}},
		{"the dec 24 party", "dec 24", "2025-12-24", "2025-12-25", time.Time{}},
		// Months, years, seasons.
		{"What did I buy in May 2023?", "in May 2023", "2023-05-01", "2023-06-01", time.Time{}},
		{"budget for May 2023", "May 2023", "2023-05-01", "2023-06-01", time.Time{}},
		{"Where did we go in 2022?", "in 2022", "2022-01-01", "2023-01-01", time.Time{}},
		{"trips in May", "in May", "2026-05-01", "2026-06-01", time.Time{}},
		{"what did I do in may", "in may", "2026-05-01", "2026-06-01", time.Time{}},
		{"the offsite in November", "in November", "2025-11-01", "2025-12-01", time.Time{}},
		{"meetings in October", "in October", "2026-10-01", "2026-11-01", time.Time{}},
		{"camping during June", "during June", "2026-06-01", "2026-07-01", time.Time{}},
		{"early March", "early March", "2026-03-01", "2026-04-01", time.Time{}},
		{"last May", "last May", "2026-05-01", "2026-06-01", time.Time{}},
		{"last May", "last May", "2025-05-01", "2025-06-01", day("2026-05-20")},
		{"this May", "this May", "2026-05-01", "2026-06-01", day("2026-02-20")},
		{"what did we do last summer", "last summer", "2026-06-01", "2026-09-01", time.Time{}},
		{"a parade during the summer", "during the summer", "2026-06-01", "2026-09-01", time.Time{}},
		{"this winter", "this winter", "2025-12-01", "2026-03-01", time.Time{}},
		{"in the spring of 2023", "in the spring of 2023", "2023-03-01", "2023-06-01", time.Time{}},
		{"summer 2023", "summer 2023", "2023-06-01", "2023-09-01", time.Time{}},
		{"last fall", "last fall", "2025-09-01", "2025-12-01", time.Time{}},
		// Days relative to the reference.
		{"what did we decide yesterday", "yesterday", "2026-10-14", "2026-10-15", time.Time{}},
		{"today's plan", "today", "2026-10-15", "2026-10-16", time.Time{}},
		{"tonight", "tonight", "2026-10-15", "2026-10-16", time.Time{}},
		{"what did I say this morning", "this morning", "2026-10-15", "2026-10-16", time.Time{}},
		{"last night", "last night", "2026-10-14", "2026-10-15", time.Time{}},
		{"the day before yesterday", "the day before yesterday", "2026-10-13", "2026-10-14", time.Time{}},
		{"yesterday", "yesterday", "2024-02-29", "2024-03-01", day("2024-03-01")},
		{"Who did I meet with during the lunch last Tuesday?", "last Tuesday", "2026-10-13", "2026-10-14", time.Time{}},
		{"last Thursday", "last Thursday", "2026-10-08", "2026-10-09", time.Time{}},
		{"this Friday", "this Friday", "2026-10-16", "2026-10-17", time.Time{}},
		{"this Monday", "this Monday", "2026-10-12", "2026-10-13", time.Time{}},
		{"what happened on Monday", "Monday", "2026-10-12", "2026-10-13", time.Time{}},
		{"Thursday", "Thursday", "2026-10-15", "2026-10-16", time.Time{}},
		{"on Saturday", "Saturday", "2026-10-10", "2026-10-11", time.Time{}},
		// N units ago.
		{"two weeks ago", "two weeks ago", "2026-09-28", "2026-10-05", time.Time{}},
		{"3 days ago", "3 days ago", "2026-10-12", "2026-10-13", time.Time{}},
		{"What charity event did I participate in a month ago?", "a month ago", "2026-08-31", "2026-10-01", time.Time{}},
		{"a year ago", "a year ago", "2025-04-16", "2026-04-16", time.Time{}},
		{"I mentioned an investment four weeks ago", "four weeks ago", "2026-09-14", "2026-09-21", time.Time{}},
		{"What kitchen appliance did I buy 10 days ago?", "10 days ago", "2026-10-05", "2026-10-06", time.Time{}},
		{"a couple of days ago", "a couple of days ago", "2026-10-13", "2026-10-14", time.Time{}},
		{"a few days ago", "a few days ago", "2026-10-12", "2026-10-13", time.Time{}},
		{"six months ago", "six months ago", "2026-03-31", "2026-05-01", time.Time{}},
		{"two years ago", "two years ago", "2024-04-16", "2025-04-16", time.Time{}},
		{"a week ago", "a week ago", "2026-10-05", "2026-10-12", time.Time{}},
		{"a month ago", "a month ago", "2026-02-13", "2026-03-16", day("2026-03-31")},
		// Calendar units.
		{"Where did I attend the religious activity last week?", "last week", "2026-10-05", "2026-10-12", time.Time{}},
		{"this week", "this week", "2026-10-12", "2026-10-19", time.Time{}},
		{"what did we ship last month", "last month", "2026-09-01", "2026-10-01", time.Time{}},
		{"last month", "last month", "2026-12-01", "2027-01-01", day("2027-01-10")},
		{"this month", "this month", "2026-10-01", "2026-11-01", time.Time{}},
		{"goals this year", "this year", "2026-01-01", "2027-01-01", time.Time{}},
		{"last year", "last year", "2025-01-01", "2026-01-01", time.Time{}},
		{"last weekend", "last weekend", "2026-10-10", "2026-10-12", time.Time{}},
		{"last weekend", "last weekend", "2026-10-10", "2026-10-12", day("2026-10-18")},
		{"this weekend", "this weekend", "2026-10-17", "2026-10-19", time.Time{}},
		{"earlier this month", "earlier this month", "2026-10-01", "2026-10-15", time.Time{}},
		{"earlier this month", "this month", "2026-10-01", "2026-11-01", day("2026-10-01")},
		{"earlier this week", "earlier this week", "2026-10-12", "2026-10-15", time.Time{}},
		{"earlier this year", "earlier this year", "2026-01-01", "2026-10-15", time.Time{}},
		{"earlier today", "earlier today", "2026-10-15", "2026-10-16", time.Time{}},
		// Rolling periods.
		{"in the past week", "the past week", "2026-10-08", "2026-10-16", time.Time{}},
		{"in the last week", "the last week", "2026-10-08", "2026-10-16", time.Time{}},
		{"over the past 3 days", "the past 3 days", "2026-10-12", "2026-10-16", time.Time{}},
		{"last 3 days", "last 3 days", "2026-10-12", "2026-10-16", time.Time{}},
		{"the past few months", "the past few months", "2026-07-15", "2026-10-16", time.Time{}},
		{"past two weeks", "past two weeks", "2026-10-01", "2026-10-16", time.Time{}},
		// Spans and anchors.
		{"Where was John between August 11 and August 15 2023?", "between August 11 and August 15 2023", "2023-08-11", "2023-08-16", time.Time{}},
		{"between yesterday and today", "between yesterday and today", "2026-10-14", "2026-10-16", time.Time{}},
		{"the puppy she got two weeks before August 11, 2023", "two weeks before August 11, 2023", "2023-07-25", "2023-08-01", time.Time{}},
		{"Where was Tim in the week before 16 November 2023?", "the week before 16 November 2023", "2023-11-09", "2023-11-16", time.Time{}},
		{"on the Sunday before October 25, 2022", "the Sunday before October 25, 2022", "2022-10-23", "2022-10-24", time.Time{}},
		{"the day before 2023-05-20", "the day before 2023-05-20", "2023-05-19", "2023-05-20", time.Time{}},
	}
	for _, c := range cases {
		r := c.ref
		if r.IsZero() {
			r = ref
		}
		t.Run(fmt.Sprintf("%s@%s", c.query, r.Format("2006-01-02")), func(t *testing.T) {
			ws := Resolve(c.query, r)
			if len(ws) != 1 {
				t.Fatalf("Resolve(%q) = %v, want one window", c.query, ws)
			}
			w := ws[0]
			if w.Expr != c.expr || !w.Start.Equal(day(c.start)) || !w.End.Equal(day(c.end)) {
				t.Errorf("Resolve(%q) = %q [%s, %s), want %q [%s, %s)", c.query, w.Expr, w.Start.Format("2006-01-02"),
					w.End.Format("2006-01-02"), c.expr, c.start, c.end)
			}
			if c.query[w.Lo:w.Hi] != w.Expr {
				t.Errorf("offsets [%d, %d) do not locate %q", w.Lo, w.Hi, w.Expr)
			}
		})
	}
	if len(cases) < 60 {
		t.Fatalf("the table holds %d expressions, want at least 60", len(cases))
	}
	// docs/dates.md is this table, as a user reads it; -update rewrites it.
	var b strings.Builder
	b.WriteString(datesDocHead)
	for _, c := range cases {
		r := c.ref
		if r.IsZero() {
			r = ref
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", mdCell(c.query), mdCell(c.expr), c.start, c.end, r.Format("Mon 2006-01-02 15:04"))
	}
	checkDoc(t, "../docs/dates.md", b.String())
}

// update rewrites the documents the tests check (go test ./when -update).
var update = flag.Bool("update", false, "rewrite docs/dates.md from the table")

const datesDocHead = `# Dates in a query: the resolved windows

Generated from ` + "`when.TestResolve`" + ` (` + "`go test ./when -run TestResolve -update`" + ` rewrites it; the test
fails while this file differs from its table). Each query resolves to one window [start, end) of UTC days, against
the reference time (as_of, UTC) in the last column; the temporal channel prefers evidence in it
(docs/pack.md § Dates in the query). Texts that must not resolve are in ` + "`TestResolveNone`" + `.

| query | expression | start | end (exclusive) | reference |
|---|---|---|---|---|
`

// mdCell escapes a table cell's pipes.
func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// checkDoc compares a generated document with its file, or writes it with
// -update.
func checkDoc(t *testing.T, path, want string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Errorf("%s is not the table (%v): run go test ./when -run TestResolve -update", path, err)
	}
}

// TestResolveNone checks that ordinary text, the future, vague words and
// bare numbers resolve to no window.
func TestResolveNone(t *testing.T) {
	for _, q := range []string{
		"May I ask what you think?",
		"Let's march on",
		"march 3 miles to camp",
		"may 5 people join?",
		"the 4th item on the list",
		"What did Jan say about the budget?",
		"what is planned for next week",
		"what is due tomorrow",
		"what have I been reading recently",
		"what do I do lately",
		"what happens every Monday",
		"the meeting next Friday",
		"in the past",
		"the last day of the trip",
		"I have 3 days of leave",
		"in a month",
		"a few weeks",
		"room 2023",
		"version 5/20",
		"at 8:30",
		"Chapter 13 of the book",
		"What is my current highest score in Ticket to Ride?",
		"How many days had passed between the Sunday mass and the Ash Wednesday service?",
		"",
		"2023",
	} {
		if ws := Resolve(q, ref); len(ws) != 0 {
			t.Errorf("Resolve(%q) = %q [%s, %s), want none", q, ws[0].Expr, ws[0].Start, ws[0].End)
		}
	}
}

// TestResolveSeveral checks that a query naming several dates gets one
// window each, in order, a repeated window once, and at most MaxWindows.
func TestResolveSeveral(t *testing.T) {
	ws := Resolve("on May 1 or on May 5, and again on 2026-05-05", ref)
	var got []string
	for _, w := range ws {
		got = append(got, w.Expr+"@"+w.Start.Format("2006-01-02"))
	}
	if want := "May 1@2026-05-01 May 5@2026-05-05"; strings.Join(got, " ") != want {
		t.Errorf("windows %v, want %s", got, want)
	}
	if n := len(Resolve("on May 1, May 2, May 3, May 4, May 5 and May 6", ref)); n != MaxWindows {
		t.Errorf("%d windows, want MaxWindows = %d", n, MaxWindows)
	}
}

// TestResolveAnchored checks that relative expressions in a query that
// names one day by its date are resolved against that day.
func TestResolveAnchored(t *testing.T) {
	for _, c := range []struct{ query, want string }{
		{"What did Maria participate in last weekend before April 10, 2023?",
			"last weekend [2023-04-08, 2023-04-10) April 10, 2023 [2023-04-10, 2023-04-11)"},
		{"What did Joanna just finish last Friday on 23 January, 2022?",
			"last Friday [2022-01-21, 2022-01-22) 23 January, 2022 [2022-01-23, 2022-01-24)"},
		// Two dates: no anchor, "yesterday" is the reference's.
		{"yesterday, on May 1, 2023 or May 3, 2023",
			"yesterday [2026-10-14, 2026-10-15) May 1, 2023 [2023-05-01, 2023-05-02) May 3, 2023 [2023-05-03, 2023-05-04)"},
	} {
		var got []string
		for _, w := range Resolve(c.query, ref) {
			got = append(got, fmt.Sprintf("%s [%s, %s)", w.Expr, w.Start.Format("2006-01-02"), w.End.Format("2006-01-02")))
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("Resolve(%q) = %s, want %s", c.query, strings.Join(got, " "), c.want)
		}
	}
}

// TestResolveDeterministic checks that the reference time's zone does not
// matter (it is taken in UTC) and that the same input gives the same
// answer.
func TestResolveDeterministic(t *testing.T) {
	zone := time.FixedZone("UTC-9", -9*3600)
	a := Resolve("yesterday", ref)
	b := Resolve("yesterday", ref.In(zone))
	if len(a) != 1 || len(b) != 1 || a[0] != b[0] {
		t.Errorf("Resolve in UTC %v, in UTC-9 %v: want the same", a, b)
	}
}

// BenchmarkResolve measures a query with a date and one without.
func BenchmarkResolve(b *testing.B) {
	for _, q := range []string{
		"What did we decide on October 13 about the launch plan?",
		"Which streaming service did I start using most recently, and what did it cost per month?",
	} {
		b.Run(fmt.Sprintf("%d", len(q)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Resolve(q, ref)
			}
		})
	}
}
