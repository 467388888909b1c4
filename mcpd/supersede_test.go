package mcpd_test

import (
	"strings"
	"testing"

	"github.com/loci-memory/loci/mcpd"
	"github.com/loci-memory/loci/service"
)

// TestRecallSupersededConflict: recall's conflict lines say which cited
// span is newer and supersedes the other; the newer is cited first.
func TestRecallSupersededConflict(t *testing.T) {
	svc := newService(t, service.Config{})
	p, _ := svc.Authenticate(service.Credentials{})
	cs := connect(t, mcpd.New(svc, mcpd.Options{Principal: &p}))
	var rem mcpd.RememberOutput
	call(t, cs, "remember", map[string]any{"workspace_id": "team", "memories": []map[string]any{
		{"content": "The offsite budget is $12,000.", "timestamp": "2026-10-01T09:00:00Z"},
		{"content": "The offsite budget was raised to $15,500.", "timestamp": "2026-10-09T09:00:00Z"},
	}}, &rem)
	var rec mcpd.RecallOutput
	call(t, cs, "recall", map[string]any{"workspace_id": "team", "query": "what is the offsite budget?"}, &rec)
	if len(rec.Citations) != 2 || !strings.Contains(rec.Citations[0].Text, "raised") {
		t.Fatalf("citations %+v", rec.Citations)
	}
	if len(rec.Conflicts) != 1 || !strings.HasSuffix(rec.Conflicts[0], "; [cite:1] is newer and supersedes [cite:2]") {
		t.Fatalf("conflicts %q", rec.Conflicts)
	}
}
