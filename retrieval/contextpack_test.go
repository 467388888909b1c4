package retrieval

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/internal/enginetest"
	"github.com/loci-memory/loci/pack"
)

func TestContextPack(t *testing.T) {
	dir := t.TempDir()
	db := enginetest.Open(t, dir, engine.Options{DisableBackground: true})
	facts := []string{
		"The production deploy is scheduled for Friday at 10:00.",
		"The data platform budget for Q3 is 4000 dollars.",
		"Alice prefers tea over coffee in the morning.",
		"The incident review meeting happens every Monday.",
	}
	var ids []engine.IngestResult
	for _, f := range facts {
		r, err := db.Ingest("t", enginetest.Chat("ws", f))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r)
	}
	ctx := context.Background()
	req := PackRequest{Workspace: "ws", Query: "when is the production deploy?", MaxTokens: 512, ActorID: "alice"}
	res, err := New(db).ContextPack(ctx, "t", req)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Result
	if len(r.Citations) == 0 || r.Citations[0].ArtifactID != ids[0].ArtifactID {
		t.Fatalf("top citation is not the deploy fact: %+v", r.Citations)
	}
	if !strings.Contains(r.ContextText, "[cite:1] ") || !strings.Contains(r.ContextText, "=== TOP EVIDENCE (Most Relevant to Query) ===") {
		t.Fatalf("layout:\n%s", r.ContextText)
	}
	if r.TotalTokens > 512 || r.TotalTokens != db.TokenCounter().Count(r.ContextText) {
		t.Fatalf("total tokens %d", r.TotalTokens)
	}
	// The receipt is stored and says the same.
	rec, err := db.GetReceipt("t", res.ReceiptID)
	if err != nil || rec.PackHash != r.PackHash {
		t.Fatalf("receipt: %+v %v", rec, err)
	}
	served, err := ReceiptBody(db, rec)
	var body map[string]any
	if err != nil || json.Unmarshal(served, &body) != nil || body["pack_hash"] != r.PackHash || body["workspace_id"] != "ws" {
		t.Fatalf("receipt body: %s %v", served, err)
	}
	// The same request on the same data: the same bytes and receipt id; no second receipt.
	again, _ := New(db).ContextPack(ctx, "t", req)
	b1, _ := json.Marshal(res.Result)
	b2, _ := json.Marshal(again.Result)
	if string(b1) != string(b2) || again.ReceiptID != res.ReceiptID {
		t.Fatal("identical requests gave different packs")
	}
	if page, _ := db.ListReceipts("t", "ws", "", 0, 10); page.Total != 1 {
		t.Fatalf("%d receipts for two identical requests", page.Total)
	}
	// Feedback changes later packs: mark the deploy fact wrong, pin the tea fact.
	db.Feedback("t", engine.FeedbackInput{Workspace: "ws", ActorID: "alice", Action: engine.ActionMarkWrong, ArtifactID: ids[0].ArtifactID})
	db.Feedback("t", engine.FeedbackInput{Workspace: "ws", ActorID: "alice", Action: engine.ActionPin, ArtifactID: ids[2].ArtifactID})
	after, _ := New(db).ContextPack(ctx, "t", req)
	if after.ReceiptID == res.ReceiptID {
		t.Fatal("feedback did not change the receipt id")
	}
	for _, c := range after.Result.Citations {
		if c.ArtifactID == ids[0].ArtifactID {
			t.Fatal("a span marked wrong was included")
		}
	}
	if !strings.HasPrefix(after.Result.ContextText, "=== PINNED CONTEXT (Authoritative) ===") || !strings.Contains(after.Result.PrefixText, "tea") {
		t.Fatalf("pinned span not in the prefix:\n%s", after.Result.ContextText)
	}
	found := false
	for _, e := range after.Result.Exclusions {
		found = found || e.ArtifactID == ids[0].ArtifactID && e.Reason == "MARKED_WRONG"
	}
	if !found {
		t.Fatalf("no MARKED_WRONG exclusion: %+v", after.Result.Exclusions)
	}
	// Budgets: never over, for small and large budgets alike.
	for _, budget := range []int{1, 5, 20, 64, 300, 128000} {
		req.MaxTokens = budget
		r, err := New(db).ContextPack(ctx, "t", req)
		if err != nil || r.Result.TotalTokens > budget {
			t.Fatalf("budget %d: %v %v", budget, r.Result.TotalTokens, err)
		}
	}
	// v2 profiles.
	for _, p := range []string{pack.ProfileLowLatency, pack.ProfileBalanced, pack.ProfileHighRecall} {
		r, err := New(db).ContextPack(ctx, "t", PackRequest{Workspace: "ws", Query: "budget for the data platform", MaxTokens: 600, Profile: p})
		if err != nil || r.ServingProfile == "" || r.Result.TotalTokens > 600 {
			t.Fatalf("profile %s: %+v %v", p, r, err)
		}
	}
	// Bad requests are the service's to refuse (service.TestCheckPackRequest).
	db.Close()
}

// TestHighRecallNeverLessThanBalanced: for the same request, the
// high_recall profile returns at least the snippets and evidence tokens of
// balanced. In this workspace (twelve notes of about 100 tokens, all on the
// query's topic) high_recall once packed with a base budget of
// max_tokens/4 and kept it, since three or more citations are not sparse:
// at max_tokens 1,500 it returned 3 snippets where balanced (budget
// max_tokens/1.5) returned 9.
func TestHighRecallNeverLessThanBalanced(t *testing.T) {
	db := enginetest.Open(t, t.TempDir(), engine.Options{DisableBackground: true, NoEmbedder: true})
	defer db.Close()
	fill := strings.Fields("granite harbour ledger violet copper orchard lantern meadow saddle thimble walnut quiver " +
		"bramble cobalt drizzle ember falcon glacier hazel indigo juniper kettle lilac marble nectar opal pepper quartz")
	for i := 0; i < 12; i++ {
		var b strings.Builder
		fmt.Fprintf(&b, "Crane inspection report %d for the north pier: the crane inspection found wear on cable %d.", i, i)
		for j := 0; j < 60; j++ {
			b.WriteString(" " + fill[(i*7+j*(i+3))%len(fill)])
		}
		enginetest.MustIngest(t, db, "t", ppNote("cranes", "u1", "note", b.String(), artifact.Permissions{}, i))
	}
	evidence := func(r *pack.Result) (n, tokens int) {
		for _, s := range pack.Snippets(r) {
			n++
			tokens += len(strings.Fields(s.Content))
		}
		return n, tokens
	}
	for _, maxTokens := range []int{300, 600, 1000, 1500, 3000, 8000} {
		req := PackRequest{Workspace: "cranes", Query: "crane inspection report", MaxTokens: maxTokens}
		req.Profile = pack.ProfileBalanced
		bal := mustPack(t, db, "t", req)
		req.Profile = pack.ProfileHighRecall
		high := mustPack(t, db, "t", req)
		bn, bt := evidence(bal.Result)
		hn, ht := evidence(high.Result)
		if hn < bn || ht < bt {
			t.Errorf("max_tokens %d: high_recall %d snippets (%d words) < balanced (served by %s) %d snippets (%d words)",
				maxTokens, hn, ht, bal.ServingProfile, bn, bt)
		}
		if high.Result.TotalTokens > maxTokens {
			t.Errorf("max_tokens %d: high_recall used %d tokens", maxTokens, high.Result.TotalTokens)
		}
	}
}

// TestPoolDepths: a pass's pool depth per channel by workspace size and
// budget. Small workspaces (a conversation) gather every span up to
// wholeWorkspaceSpans, then poolMax up to smallWorkspaceSpans; larger ones
// grow with the budget; high_recall is never shallower than the default.
func TestPoolDepths(t *testing.T) {
	for _, tt := range []struct {
		pool, maxTokens, spans int
		want                   int
	}{
		{0, 2048, 300, 300}, // a small workspace: every span
		{0, 2048, 680, 680}, // a LoCoMo conversation: every turn
		{0, 2048, wholeWorkspaceSpans, wholeWorkspaceSpans},
		{0, 2048, wholeWorkspaceSpans + 1, poolMax},
		{0, 2048, smallWorkspaceSpans, poolMax},
		{0, 2048, smallWorkspaceSpans + 1, poolDefault},
		{0, 4096, 100_000, 4096 / 24},
		{0, 128_000, 100_000, poolMax},
		{poolLowLatency, 2048, 680, poolLowLatency}, // low_latency keeps its shallow pool
		{poolHighRecall, 2048, 100_000, poolHighRecall},
		{poolHighRecall, 2048, 900, 900}, // never shallower than the default pass
		{poolHighRecall, 2048, 1500, poolHighRecall},
	} {
		if got := poolOf(tt.pool, tt.maxTokens, tt.spans); got != tt.want {
			t.Errorf("poolOf(%d, %d, %d) = %d, want %d", tt.pool, tt.maxTokens, tt.spans, got, tt.want)
		}
	}
}
