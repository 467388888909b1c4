package bench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
)

// lmeSmall is a two-question file in LongMemEval's layout: the answer of
// the first is in its second session (listed first, dated later); the
// second is unanswerable.
const lmeSmall = `[
 {"question_id":"q1","question_type":"single-session-user","question":"Where did I go hiking last weekend?",
  "question_date":"2023/06/01 (Thu) 10:00","answer":"Mount Rainier","answer_session_ids":["s2"],
  "haystack_session_ids":["s2","s1"],"haystack_dates":["2023/05/30 (Tue) 23:42","2023/05/01 (Mon) 09:15"],
  "haystack_sessions":[
   [{"role":"user","content":"I went hiking on Mount Rainier last weekend.","has_answer":true},
    {"role":"assistant","content":"That sounds wonderful! How was the weather?"}],
   [{"role":"user","content":"Can you suggest a recipe for banana bread?"},
    {"role":"assistant","content":"Sure: mash three ripe bananas, mix with flour, sugar and butter, and bake for an hour."}]]},
 {"question_id":"q2_abs","question_type":"single-session-user","question":"What is my passport number?",
  "question_date":"2023/06/01 (Thu) 10:00","answer":"unknown","answer_session_ids":["s1"],
  "haystack_session_ids":["s1"],"haystack_dates":["2023/05/01 (Mon) 09:15"],
  "haystack_sessions":[[{"role":"user","content":"I bought a new bike yesterday."}]]}
]`

// TestLongMemEvalRead: dates parse, sessions go in date order, and a pack
// is scored by the evidence turns and sessions it cites.
func TestLongMemEvalRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lme.json")
	os.WriteFile(path, []byte(lmeSmall), 0o644)
	qs, err := readLongMemEval(path)
	if err != nil {
		t.Fatal(err)
	}
	q := &qs[0]
	if len(qs) != 2 || q.abstains() || !qs[1].abstains() || q.asked.Format("2006-01-02 15:04") != "2023-06-01 10:00" {
		t.Fatalf("read %+v", qs)
	}
	if o := q.order(); o[0] != 1 || o[1] != 0 {
		t.Errorf("session order %v, want the earlier date first", o)
	}
	ids := [][]uuid.UUID{{uuid.New(), uuid.New()}, {uuid.New(), uuid.New()}}
	for _, tc := range []struct {
		name  string
		cited []uuid.UUID
		found int
		all   bool
	}{
		{"evidence turn", []uuid.UUID{ids[0][0]}, 1, true},
		{"its session only", []uuid.UUID{ids[0][1], ids[1][0]}, 0, true},
		{"another session", []uuid.UUID{ids[1][1]}, 0, false},
		{"nothing", nil, 0, false},
	} {
		sc := q.score(ids, tc.cited)
		if sc.evidence != 1 || sc.evidenceFound != tc.found || sc.sessionsAll != tc.all || !sc.hasSessions {
			t.Errorf("%s: %+v", tc.name, sc)
		}
	}
	if _, err := parseLMEDate("2023-06-01"); err == nil {
		t.Error("a date in another layout was accepted")
	}
}

// TestLongMemEvalSmall runs the evaluation end to end over HTTP on the
// small file.
func TestLongMemEvalSmall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lme.json")
	os.WriteFile(path, []byte(lmeSmall), 0o644)
	r, err := EvalLongMemEval(LongMemEvalConfig{Data: path, Budgets: []int{64, 512}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Questions != 2 || r.Unanswerable != 1 || r.Sessions != 3 || r.Turns != 5 || r.EvidenceTurns != 1 || len(r.Budgets) != 2 {
		t.Fatalf("implausible result %+v", r)
	}
	b := r.Budgets[1]
	if b.TurnRecall != 1 || b.SessionRecall != 1 || b.ByType["single-session-user"].Questions != 1 || b.MeanTokens <= 0 ||
		b.AnswerCoverage != 1 {
		t.Errorf("at 512 tokens: %+v", b)
	}
	if auc := b.ConfidenceAUC; auc < 0 || auc > 1 {
		t.Errorf("confidence AUC %v", auc)
	}
	if r, err := EvalLongMemEval(LongMemEvalConfig{Data: path, Budgets: []int{512}, Limit: 1}); err != nil || r.Questions != 1 {
		t.Errorf("limit 1: %+v, %v", r, err)
	}
}
