package httpd

import (
	"testing"

	"github.com/loci-memory/loci/pack"
)

// TestPackEmptyWorkspace: a pack on a workspace that holds nothing, never
// written or emptied by erasure, abstains and says why, over v1 and v2 (v2
// answers carry no reason: its receipt does).
func TestPackEmptyWorkspace(t *testing.T) {
	h := newHarness(t, Config{})
	m := h.do("POST", "/v1/ingest", "", chatTurn("erased", "The gate code is 4711.")).must(t, 201)
	h.do("DELETE", "/v1/artifacts/"+str(m, "artifact_id"), "", nil).must(t, 200)
	for _, ws := range []string{"never-written", "erased"} {
		p := h.do("POST", "/v1/context-pack", "", map[string]any{"workspace_id": ws, "query": "what is the gate code?"}).must(t, 200)
		if p["abstain_flag"] != true || str(p, "abstain_reason") != pack.AbstainEmpty || len(p["citations"].([]any)) != 0 {
			t.Errorf("v1 pack on %s: abstain %v, reason %v", ws, p["abstain_flag"], p["abstain_reason"])
		}
		p2 := h.do("POST", "/v2/context-pack", "", map[string]any{"workspace_id": ws, "query": "what is the gate code?", "max_tokens": 300}).must(t, 200)
		if p2["abstain_flag"] != true {
			t.Errorf("v2 pack on %s: abstain %v", ws, p2["abstain_flag"])
		}
		rc := h.do("GET", "/v1/receipts/"+str(p2, "receipt_id"), "", nil).must(t, 200)
		if str(rc, "abstain_reason") != pack.AbstainEmpty {
			t.Errorf("v2 pack's receipt on %s: reason %v", ws, rc["abstain_reason"])
		}
	}
	// A workspace with something in it but nothing matching gives another reason.
	h.do("POST", "/v1/ingest", "", chatTurn("full", "The gate code is 4711.")).must(t, 201)
	p := h.do("POST", "/v1/context-pack", "", map[string]any{"workspace_id": "full", "query": "zebra migration"}).must(t, 200)
	if p["abstain_flag"] == true && str(p, "abstain_reason") == pack.AbstainEmpty {
		t.Errorf("a workspace with memories: reason %v", p["abstain_reason"])
	}
}
