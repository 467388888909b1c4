package pack

import (
	"fmt"
	"strings"
	"testing"
)

// TestTiesIgnoreIDs: candidates equal on every score are ordered by their
// content and ingest position, whatever ids they carry: each case packs the
// same candidates under two assignments of span and artifact ids (one the
// reverse of the other) and must give the same pack, span for span.
func TestTiesIgnoreIDs(t *testing.T) {
	const ts = 1_700_000_000_000_000
	type c struct {
		text    string
		lex     float64
		sem     float64
		minutes int    // before AsOf
		session string // "" none
		art     int    // artifact number: spans of one artifact share it
	}
	cases := []struct {
		name   string
		cands  []c
		mode   string
		budget int
	}{
		{"lexical ties, all fit", []c{{"deploy moved to Friday", 3, 0, 0, "", 0}, {"Friday deploy moved to", 3, 0, 0, "", 1},
			{"to Friday moved deploy", 3, 0, 0, "", 2}}, ModeRelevance, 1000},
		{"lexical ties, one fits", []c{{"deploy moved to Friday", 3, 0, 0, "", 0}, {"Friday deploy moved to", 3, 0, 0, "", 1}},
			ModeRelevance, 50},
		{"semantic and lexical ties", []c{{"alpha beta gamma", 2, 0.5, 0, "", 0}, {"gamma beta alpha", 2, 0.5, 0, "", 1},
			{"beta alpha gamma", 1, 0.5, 0, "", 2}}, ModeRelevance, 1000},
		{"exact duplicates: ingest position decides", []c{{"the refund window is 30 days", 2, 0, 0, "", 0},
			{"the refund window is 30 days", 2, 0, 0, "", 1}, {"the refund window is 30 days", 2, 0, 0, "", 2}}, ModeRelevance, 1000},
		{"exact duplicates at other times", []c{{"the refund window is 30 days", 2, 0, 3, "", 0},
			{"the refund window is 30 days", 2, 0, 0, "", 1}}, ModeRelevance, 1000},
		{"coverage mode", []c{{"a b c d", 2, 0, 0, "", 0}, {"d c b a", 2, 0, 0, "", 0}, {"c d a b", 2, 0, 0, "", 1},
			{"b a d c", 2, 0, 0, "", 1}}, ModeCoverage, 1000},
		{"session neighbours at one time", []c{{"what is the budget", 3, 0, 0, "s", 0}, {"it is 4000 dollars", 0, 0, 0, "s", 1},
			{"and the deadline", 0, 0, 0, "s", 2}, {"is Friday", 0, 0, 0, "s", 3}}, ModeRelevance, 1000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := len(tc.cands)
			build := func(reverse bool) ([]Candidate, map[string]string) {
				names := map[string]string{}
				var out []Candidate
				for i, x := range tc.cands {
					id, art := i, x.art
					if reverse {
						id, art = n-1-i, n-1-x.art
					}
					cd := cnd(id+1, art+1, x.text, x.lex)
					cd.Semantic, cd.InSemantic = x.sem, x.sem > 0
					cd.Timestamp = ts - int64(x.minutes)*60e6
					cd.SessionID = x.session
					cd.Seq = uint64(10 + x.art)
					cd.Start, cd.End = 100*i, 100*i+len(x.text)
					names[cd.SpanID.String()] = fmt.Sprintf("c%d", i)
					out = append(out, cd)
				}
				return out, names
			}
			project := func(reverse bool) string {
				cands, names := build(reverse)
				r := req("deploy Friday refund budget alpha", tc.budget)
				r.Mode = tc.mode
				res := Pack(r, nil, cands, est)
				var b strings.Builder
				b.WriteString(res.ContextText)
				for _, ct := range res.Citations {
					fmt.Fprintf(&b, "cite %d %s %v\n", ct.Index, names[ct.SpanID.String()], ct.RelevanceScore)
				}
				for _, e := range res.Exclusions {
					d := e.Detail
					for id, nm := range names {
						d = strings.ReplaceAll(d, id, nm)
					}
					fmt.Fprintf(&b, "excl %s %s %s %v\n", names[e.SpanID.String()], e.Reason, d, e.RelevanceScore)
				}
				fmt.Fprintf(&b, "confidence %v abstain %v", res.Confidence, res.Abstain)
				return b.String()
			}
			a, b := project(false), project(true)
			if a != b {
				t.Fatalf("the pack depends on the ids drawn:\n%s\n--- with other ids:\n%s", a, b)
			}
			if !strings.Contains(a, "cite 1") {
				t.Fatalf("nothing cited; the case tests nothing:\n%s", a)
			}
		})
	}
}
