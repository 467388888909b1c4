package httpd

import (
	"fmt"
	"strings"
	"testing"
)

// TestMinRelevanceOverHTTP: a budget is a ceiling. Over a memory of one
// matching note and notes that share only a common word with the query,
// the default v1 pack (and v2 balanced) stops at the matching note and
// reports the others LOW_RELEVANCE, using less than max_tokens;
// min_relevance 0 fills the budget with them; v2 high_recall's floor is
// 0.2; a share outside [0, 1] is refused naming the field.
func TestMinRelevanceOverHTTP(t *testing.T) {
	h := newHarness(t, Config{})
	in := map[string]any{"workspace_id": "floor", "actor_id": "a", "artifact_type": "note",
		"raw_payload": "The deploy window for the billing service is Tuesday at 10:00 UTC."}
	h.do("POST", "/v1/ingest", "", in).must(t, 201)
	for i := range 8 {
		in["raw_payload"] = fmt.Sprintf("Lunch note %d: the catering service brought pizza and salad for the team.", i)
		h.do("POST", "/v1/ingest", "", in).must(t, 201)
	}
	var detail string // the last LOW_RELEVANCE detail seen
	pack := func(path string, extra map[string]any) (cites int, low int, tokens int) {
		body := map[string]any{"workspace_id": "floor", "query": "When is the deploy window of the billing service?", "max_tokens": 2000}
		for k, v := range extra {
			body[k] = v
		}
		m := h.do("POST", path, "", body).must(t, 200)
		r := h.do("GET", "/v1/receipts/"+str(m, "receipt_id"), "", nil).must(t, 200)
		for _, e := range r["exclusions"].([]any) {
			if e.(map[string]any)["reason"] == "LOW_RELEVANCE" {
				low++
				detail = str(e.(map[string]any), "detail")
			}
		}
		ta := r["token_accounting"].(map[string]any)
		return len(r["evidence"].([]any)), low, int(ta["total_used"].(float64))
	}
	c, low, tok := pack("/v1/context-pack", nil)
	if c != 1 || low != 8 || tok >= 200 {
		t.Errorf("default v1: %d citations, %d LOW_RELEVANCE, %d tokens; want 1, 8, few", c, low, tok)
	}
	if !strings.Contains(detail, "min_relevance 0.4 ") {
		t.Errorf("default v1 floor: %q", detail)
	}
	if c, low, _ := pack("/v2/context-pack", nil); c != 1 || low != 8 || !strings.Contains(detail, "min_relevance 0.4 ") {
		t.Errorf("v2 balanced: %d citations, %d LOW_RELEVANCE (%q); want 1, 8 at 0.4", c, low, detail)
	}
	if c, low, tok2 := pack("/v1/context-pack", map[string]any{"min_relevance": 0}); c != 9 || low != 0 || tok2 <= tok {
		t.Errorf("min_relevance 0: %d citations, %d LOW_RELEVANCE, %d tokens; want 9, 0, more than %d", c, low, tok2, tok)
	}
	if _, low, _ := pack("/v2/context-pack", map[string]any{"profile": "high_recall"}); low == 0 || !strings.Contains(detail, "min_relevance 0.2 ") {
		t.Errorf("v2 high_recall: %d LOW_RELEVANCE (%q), want its floor at 0.2", low, detail)
	}
	bad := h.do("POST", "/v1/context-pack", "", map[string]any{"workspace_id": "floor", "query": "q", "min_relevance": 1.5}).must(t, 400)
	if d := str(bad, "detail"); !strings.Contains(d, "min_relevance: must be between 0 and 1") {
		t.Errorf("detail %q", d)
	}
}
