package pack

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

// TestConflictLongMemEval measures the conflict rules on LongMemEval's
// knowledge-update questions (../shared/data/longmemeval, skipped when
// absent). Per answerable question, every pair of its evidence turns from
// different sessions is a changed fact, a positive (newer: the later
// session); every pair of an evidence turn and another user turn of the
// question's haystack is taken as a negative. Recall is the share of
// positives flagged; precision the share of flagged pairs that are
// positives. The negatives are not read one by one: the haystacks hold
// paraphrases of the evidence, so some flagged "negatives" are real
// changes and precision is a lower bound. Floors guard against
// regressions (docs/pack.md § Conflicts has the figures).
func TestConflictLongMemEval(t *testing.T) {
	raw, err := os.ReadFile("../../shared/data/longmemeval/longmemeval-s-dev.json") // the project root's ../shared
	if err != nil {
		t.Skip("LongMemEval not found:", err)
	}
	var qs []struct {
		ID    string   `json:"question_id"`
		Type  string   `json:"question_type"`
		Dates []string `json:"haystack_dates"`
		Sess  [][]struct {
			Role      string `json:"role"`
			Content   string `json:"content"`
			HasAnswer bool   `json:"has_answer"`
		} `json:"haystack_sessions"`
	}
	if err := json.Unmarshal(raw, &qs); err != nil {
		t.Fatal(err)
	}
	type turn struct {
		f       *features
		at      int64
		session int
	}
	var c counts
	questions := 0
	for _, q := range qs {
		if q.Type != "knowledge-update" {
			continue
		}
		var ev, other []turn
		for si, sess := range q.Sess {
			tm, err := time.Parse("2006/01/02 (Mon) 15:04", q.Dates[si])
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range sess {
				if u.Role != "user" {
					continue
				}
				tu := turn{featuresOf(u.Content), tm.UnixMicro(), si}
				if u.HasAnswer {
					ev = append(ev, tu)
				} else {
					other = append(other, tu)
				}
			}
		}
		if len(ev) < 2 {
			continue // unanswerable: no evidence
		}
		questions++
		flag := func(a, b turn) bool {
			kind, _ := detectConflict(a.f, b.f, newerOf(a.at, 0, b.at, 0), true)
			return kind != ""
		}
		for i := range ev {
			for j := i + 1; j < len(ev); j++ {
				if ev[i].session == ev[j].session {
					continue // one session restating itself
				}
				if flag(ev[i], ev[j]) {
					c.tp++
				} else {
					c.fn++
				}
			}
			for _, o := range other {
				if flag(ev[i], o) {
					c.fp++
				} else {
					c.tn++
				}
			}
		}
	}
	t.Logf("LongMemEval knowledge-update: %d questions, %d evidence pairs, %d other pairs: precision %.3f recall %.3f (tp %d fp %d fn %d tn %d)",
		questions, c.tp+c.fn, c.fp+c.tn, c.precision(), c.recall(), c.tp, c.fp, c.fn, c.tn)
	if questions < 10 || c.recall() < 0.2 || c.precision() < 0.15 {
		t.Errorf("below the floors (10 questions, recall 0.2, precision 0.15)")
	}
}
