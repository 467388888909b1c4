package pack

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// labelledPair is one line of testdata/conflicts.jsonl: two span texts,
// their times, whether they conflict and, when they do, which is newer.
type labelledPair struct {
	ID       string `json:"id"`
	Split    string `json:"split"` // "dev" (rules were tuned on it) or "heldout"
	Case     string `json:"case"`
	Conflict bool   `json:"conflict"`
	Newer    string `json:"newer"` // "a" or "b" for conflicts
	TimeA    string `json:"time_a"`
	A        string `json:"a"`
	TimeB    string `json:"time_b"`
	B        string `json:"b"`
	Source   string `json:"source"`
}

// chat reports whether the pair's texts are chat turns (LongMemEval's and
// τ-bench's), which the pack reads by detectConflict's chat rule.
func (p labelledPair) chat() bool {
	return strings.HasPrefix(p.Source, "longmemeval") || p.Source == "tau-bench"
}

func readLabelled(t testing.TB) []labelledPair {
	f, err := os.Open("testdata/conflicts.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []labelledPair
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var p labelledPair
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// micros parses an RFC 3339 time of the labelled set.
func parseMicros(t testing.TB, s string) int64 {
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm.UnixMicro()
}

// counts are a confusion matrix.
type counts struct{ tp, fp, fn, tn int }

func (c counts) precision() float64 {
	if c.tp+c.fp == 0 {
		return 1
	}
	return float64(c.tp) / float64(c.tp+c.fp)
}

func (c counts) recall() float64 {
	if c.tp+c.fn == 0 {
		return 1
	}
	return float64(c.tp) / float64(c.tp+c.fn)
}

// TestConflictLabelledSet scores the conflict rules on the labelled span
// pairs of testdata/conflicts.jsonl (README.md there says how they were
// made): precision at least 0.90 and recall at least 0.80 over the whole
// set, and each split reported.
func TestConflictLabelledSet(t *testing.T) {
	pairs := readLabelled(t)
	if len(pairs) < 300 {
		t.Fatalf("%d labelled pairs, want at least 300", len(pairs))
	}
	by := map[string]*counts{"all": {}, "dev": {}, "heldout": {}}
	for _, p := range pairs {
		ta, tb := parseMicros(t, p.TimeA), parseMicros(t, p.TimeB)
		kind, desc := detectConflict(featuresOf(p.A), featuresOf(p.B), newerOf(ta, 0, tb, 0), p.chat())
		got := kind != ""
		for _, k := range []string{"all", p.Split} {
			c := by[k]
			switch {
			case got && p.Conflict:
				c.tp++
			case got:
				c.fp++
			case p.Conflict:
				c.fn++
			default:
				c.tn++
			}
		}
		if got != p.Conflict && testing.Verbose() {
			t.Logf("%s %s [%s] want %v, got %q %q\n  A: %.160s\n  B: %.160s", p.ID, p.Split, p.Case, p.Conflict, kind, desc, p.A, p.B)
		}
	}
	for _, k := range []string{"dev", "heldout", "all"} {
		c := by[k]
		t.Logf("%-8s precision %.3f recall %.3f (tp %d fp %d fn %d tn %d)", k, c.precision(), c.recall(), c.tp, c.fp, c.fn, c.tn)
	}
	// Asserted on the whole set. The rules were written against the dev
	// split; the held-out third scores lower (precision 0.921, recall 0.778
	// when this was written, against 0.970 / 0.835 on dev): docs/pack.md §
	// Conflicts.
	if c := by["all"]; c.precision() < 0.90 || c.recall() < 0.80 {
		t.Errorf("precision %.3f recall %.3f, want at least 0.90 and 0.80", c.precision(), c.recall())
	}
}
