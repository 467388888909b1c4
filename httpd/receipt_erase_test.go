package httpd

import (
	"strings"
	"testing"
)

// TestReceiptAfterErase: a receipt that cites an erased artifact is still
// served, before and after a restart, with that citation's preview empty
// (the text is gone) and the other citations' previews whole.
func TestReceiptAfterErase(t *testing.T) {
	h := newHarness(t, Config{})
	texts := []string{
		"The refund window for enterprise customers is 45 days after purchase.",
		"Enterprise customers asked about the refund window again on Monday.",
	}
	ids := make([]string, len(texts))
	for i, txt := range texts {
		ids[i] = str(h.do("POST", "/v1/ingest", "", chatTurn("ws-r", txt)).must(t, 201), "artifact_id")
	}
	p := h.do("POST", "/v1/context-pack", "", map[string]any{"workspace_id": "ws-r", "query": "refund window enterprise", "max_tokens": 500}).must(t, 200)
	if n := len(p["citations"].([]any)); n != 2 {
		t.Fatalf("pack cites %d spans, want 2: %v", n, p)
	}
	rid := str(p, "receipt_id")
	h.do("DELETE", "/v1/artifacts/"+ids[0], "", nil).must(t, 200)
	for _, restart := range []bool{false, true} {
		if restart {
			h.restart()
		}
		r := h.do("GET", "/v1/receipts/"+rid, "", nil)
		m := r.must(t, 200)
		if strings.Contains(string(r.body), "45 days") {
			t.Fatalf("restart %v: the receipt still holds the erased text: %s", restart, r.body)
		}
		previews := map[string]string{}
		for _, e := range m["evidence"].([]any) {
			ev := e.(map[string]any)
			previews[str(ev, "artifact_id")] = str(ev, "content_preview")
		}
		if p, ok := previews[ids[0]]; !ok || p != "" {
			t.Fatalf("restart %v: erased artifact's preview %q (cited: %v)", restart, p, ok)
		}
		if previews[ids[1]] != "user: "+texts[1] { // a chat turn's span text names the role
			t.Fatalf("restart %v: kept artifact's preview %q, want %q", restart, previews[ids[1]], "user: "+texts[1])
		}
	}
}
