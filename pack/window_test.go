package pack

import (
	"math"
	"slices"
	"strings"
	"testing"
)

const day = int64(24 * 3600e6) // a day in microseconds

func TestWindowScore(t *testing.T) {
	w := Window{Start: 10 * day, End: 11 * day, Expr: "on the 10th"}
	month := Window{Start: 40 * day, End: 70 * day, Expr: "in May"}
	for _, c := range []struct {
		ts   int64
		ws   []Window
		want float64
	}{
		{10 * day, []Window{w}, 1},                            // the start is inside
		{11*day - 1, []Window{w}, 1},                          // the last microsecond too
		{11 * day, []Window{w}, 1},                            // the end is outside, at distance 0
		{9 * day, []Window{w}, 0.5},                           // one window length before
		{13 * day, []Window{w}, 0.25},                         // two after
		{40*day - 30*day, []Window{month}, 0.5},               // a month's distance from a month
		{12 * day, []Window{w, month}, math.Exp2(-28.0 / 30)}, // the nearest by score: the month
		{45 * day, []Window{w, month}, 1},
		{5 * day, []Window{{Start: day, End: day}}, 0}, // an empty window scores nothing
	} {
		if got := windowScore(c.ts, c.ws); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("windowScore(%d days, %v) = %v, want %v", c.ts/day, c.ws, got, c.want)
		}
	}
}

// TestWeightsWithWindows: the temporal weight becomes WindowWeight and the
// query channels keep their proportion.
func TestWeightsWithWindows(t *testing.T) {
	w := DefaultWeights().effective(true).withWindows()
	if w.Temporal != WindowWeight || math.Abs(w.Lexical+w.Semantic+w.Temporal-1) > 1e-12 {
		t.Errorf("weights %+v: want temporal %v, summing to 1", w, WindowWeight)
	}
	if d := DefaultWeights(); math.Abs(w.Lexical/w.Semantic-d.Lexical/d.Semantic) > 1e-12 {
		t.Errorf("lexical/semantic %v, want %v", w.Lexical/w.Semantic, d.Lexical/d.Semantic)
	}
	if w := (Weights{Temporal: 1}).withWindows(); w != (Weights{Temporal: 1}) {
		t.Errorf("temporal only: %+v", w)
	}
}

// TestPackPrefersWindow: with equal query scores the span in the query's
// window comes first (without the window the newest does); a span the
// query channels find far more relevant stays first wherever it lies in
// time (a preference, never a filter), and the receipt's assumptions name
// the window.
func TestPackPrefersWindow(t *testing.T) {
	const asOf = 100 * day
	oct13 := cnd(1, 1, "The launch moves to December.", 5)
	oct13.Timestamp = 90*day + 3600e6
	later := cnd(2, 2, "The launch checklist is in the wiki.", 5)
	later.Timestamp = 99 * day
	strong := cnd(3, 3, "Launch decision: the launch moves to December, decided by Maya.", 20)
	strong.Timestamp = 60 * day
	for _, c := range []*Candidate{&oct13, &later, &strong} {
		c.Semantic, c.InSemantic = 0.3, true
	}
	strong.Semantic = 0.9
	win := []Window{{Start: 90 * day, End: 91 * day, Expr: "October 13"}}

	first := func(r *Result) string {
		if len(r.Citations) == 0 {
			return ""
		}
		return r.Citations[0].ContentPreview
	}
	rq := req("What did we decide on October 13?", 1000)
	rq.AsOf = asOf
	if got := first(Pack(rq, nil, []Candidate{oct13, later}, est)); got != later.Text {
		t.Fatalf("without a window the newest should lead, got %q", got)
	}
	rq.Windows = win
	r := Pack(rq, nil, []Candidate{oct13, later}, est)
	if got := first(r); got != oct13.Text {
		t.Errorf("with the window the span of October 13 should lead, got %q", got)
	}
	if len(r.Citations) != 2 {
		t.Errorf("%d citations, want both spans: a window is no filter", len(r.Citations))
	}
	var note string
	for _, a := range r.Assumptions {
		if strings.Contains(a, `"October 13"`) {
			note = a
		}
	}
	if !strings.Contains(note, "[1970-04-01T00:00:00Z, 1970-04-02T00:00:00Z)") || !strings.Contains(note, "as_of 1970-04-11T00:00:00Z") {
		t.Errorf("assumptions %q: want the window and as_of", r.Assumptions)
	}
	for _, c := range r.ChannelContributions {
		if c.Channel == ChannelTemporal && c.Weight != WindowWeight {
			t.Errorf("temporal weight %v, want %v", c.Weight, WindowWeight)
		}
	}
	if got := first(Pack(rq, nil, []Candidate{oct13, later, strong}, est)); got != strong.Text {
		t.Errorf("the far stronger span should still lead, got %q", got)
	}
}

// TestDatedTermsCoverage: the words of a date the query names count as
// held, for query coverage, by a span of that time, and by no other: the
// turn of that day that answers "What did I buy 10 days ago?" holds none
// of them in its text.
func TestDatedTermsCoverage(t *testing.T) {
	const asOf = 100 * day
	q := "What kitchen appliance did I buy 10 days ago?"
	query := queryTerms(q)
	win := []Window{{Start: 90 * day, End: 91 * day, Expr: "10 days ago"}}
	dated := datedTerms(query, win)
	if want := queryTerms("10 days ago"); !slices.Equal(sortedSet(slices.Clone(dated)), want) || len(want) != 3 {
		t.Fatalf("dated terms %v, want the terms of the expression %v", dated, want)
	}
	if got := datedTerms(query, nil); got != nil {
		t.Errorf("dated terms %v without windows", got)
	}
	smoker := cnd(1, 1, "I just got a smoker today, a new kitchen appliance to buy wood for.", 5)
	confidenceAt := func(ts int64, windows []Window) float64 {
		c := smoker
		c.Timestamp = ts
		rq := req(q, 1000)
		rq.AsOf, rq.Windows = asOf, windows
		return Pack(rq, nil, []Candidate{c}, est).Confidence
	}
	in, out, none := confidenceAt(90*day+3600e6, win), confidenceAt(80*day, win), confidenceAt(90*day+3600e6, nil)
	if !(in > out) || out != none {
		t.Errorf("confidence in the window %v, outside it %v, without windows %v: want in > outside = without", in, out, none)
	}
}
