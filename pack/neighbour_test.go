package pack

import (
	"fmt"
	"slices"
	"testing"
)

// TestNeighboursFollowConversationOrder: context flows to the candidates
// just before and after the one strong hit in conversation order (session,
// then timestamp, then ingest sequence, then offset), whatever the
// timestamps look like: shared by a whole session, absent (zero), or hours
// apart. It never crosses sessions or, without a session, artifacts; and
// the neighbours do not depend on the input order or on the span ids.
func TestNeighboursFollowConversationOrder(t *testing.T) {
	const (
		t0   = int64(1_700_000_000_000_000)
		min_ = int64(60e6)
		hour = 60 * min_
	)
	// turn describes one candidate; the one with hit gets a lexical score.
	type turn struct {
		name     string
		session  string
		artifact int
		ts       int64
		seq      uint64
		start    int
		hit      bool
	}
	s := func(name, session string, ts int64, seq uint64) turn {
		return turn{name: name, session: session, artifact: int(seq), ts: ts, seq: seq}
	}
	hit := func(tr turn) turn { tr.hit = true; return tr }
	for _, tc := range []struct {
		name  string
		turns []turn
		want  []string // names that get context, sorted
	}{
		{"one timestamp for the whole session: ingest order decides",
			[]turn{s("a", "s1", t0, 1), s("b", "s1", t0, 2), hit(s("c", "s1", t0, 3)), s("d", "s1", t0, 4), s("e", "s1", t0, 5)},
			[]string{"b", "d"}},
		{"no timestamps at all",
			[]turn{s("a", "s1", 0, 1), hit(s("b", "s1", 0, 2)), s("c", "s1", 0, 3), s("d", "s1", 0, 4)},
			[]string{"a", "c"}},
		{"first turn of a session has one neighbour",
			[]turn{hit(s("a", "s1", t0, 1)), s("b", "s1", t0, 2), s("c", "s1", t0, 3)},
			[]string{"b"}},
		{"turns an hour apart are still next to each other",
			[]turn{s("a", "s1", t0, 1), hit(s("b", "s1", t0+hour, 2)), s("c", "s1", t0+2*hour, 3)},
			[]string{"a", "c"}},
		{"stamped at ingest, 15 minutes apart",
			[]turn{s("a", "s1", t0, 1), s("b", "s1", t0+15*min_, 2), hit(s("c", "s1", t0+30*min_, 3)), s("d", "s1", t0+45*min_, 4)},
			[]string{"b", "d"}},
		{"timestamp comes before ingest order",
			[]turn{s("late", "s1", t0+2, 1), hit(s("mid", "s1", t0+1, 2)), s("early", "s1", t0, 3)},
			[]string{"early", "late"}},
		{"another session interleaved in ingest order is not a neighbour",
			[]turn{s("a", "s1", t0, 1), s("x", "s2", t0, 2), hit(s("b", "s1", t0, 3)), s("y", "s2", t0, 4), s("c", "s1", t0, 5)},
			[]string{"a", "c"}},
		{"without a session: chunks of the artifact by offset, not other artifacts",
			[]turn{
				{name: "p1", artifact: 7, ts: t0, seq: 7, start: 0},
				{name: "p2", artifact: 7, ts: t0, seq: 7, start: 100, hit: true},
				{name: "p3", artifact: 7, ts: t0, seq: 7, start: 200},
				{name: "other", artifact: 8, ts: t0, seq: 8},
				{name: "earlier", artifact: 6, ts: t0, seq: 6},
			},
			[]string{"p1", "p3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Every input order, and span ids that sort against the
			// conversation, must give the same neighbours.
			orders := [][]int{}
			fwd := make([]int, len(tc.turns))
			for i := range fwd {
				fwd[i] = i
			}
			rev := slices.Clone(fwd)
			slices.Reverse(rev)
			orders = append(orders, fwd, rev)
			for oi, order := range orders {
				var in []Candidate
				for _, i := range order {
					tr := tc.turns[i]
					lex := 0.0
					if tr.hit {
						lex = 5
					}
					// Span ids descend as the conversation goes on, and differ by order.
					c := cnd(200-10*i-oi, tr.artifact, fmt.Sprintf("turn %s", tr.name), lex)
					c.SessionID, c.Timestamp, c.Seq, c.Start = tr.session, tr.ts, tr.seq, tr.start
					c.End = tr.start + len(c.Text)
					in = append(in, c)
				}
				cs := gather(nil, in, "")
				score(cs, DefaultWeights().effective(true), t0+3*hour, 720, nil, nil, false, nil, nil)
				var hitRel float64
				for _, c := range cs {
					if c.InLexical {
						hitRel = c.rel
					}
				}
				var got []string
				for _, c := range cs {
					if !c.InLexical && c.rel == round6(ContextShare*hitRel) {
						got = append(got, c.Text[len("turn "):])
					}
				}
				slices.Sort(got)
				if !slices.Equal(got, tc.want) {
					t.Errorf("order %d: context reached %v, want %v", oi, got, tc.want)
				}
			}
		})
	}
}
