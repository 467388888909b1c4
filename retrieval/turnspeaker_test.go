package retrieval

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/internal/enginetest"
)

// TestLongTurnSpeaker: a long chat turn is split into spans, and only the
// first starts with its speaker; every later one still reads as said by
// that speaker, whether found by a search or pinned, in the head, before
// and after a flush: "assistant: " under a role, the name when the turn
// names one ("Caroline: " in the content), never the client's actor id.
func TestLongTurnSpeaker(t *testing.T) {
	long := func(topic string) string {
		var b strings.Builder
		for i := range 120 {
			fmt.Fprintf(&b, "Tip %d: keep the %s journal by the window and water it twice a week. ", i, topic)
		}
		return b.String()
	}
	db := enginetest.Open(t, t.TempDir(), engine.Options{DisableBackground: true})
	defer db.Close()
	user := enginetest.Chat("ws", "I bought a fern for my desk.")
	agent := enginetest.Chat("ws", long("fern"))
	agent.Payload = []byte(fmt.Sprintf(`{"role":"assistant","content":%q}`, long("fern")))
	named := enginetest.Chat("ws", "Caroline: "+long("orchid"))
	for _, in := range []engine.IngestInput{user, agent, named} {
		enginetest.MustIngest(t, db, "t", in)
	}
	pinned := enginetest.MustIngest(t, db, "t", enginetest.Chat("ws", "Caroline: "+long("cactus")))
	if len(pinned.SpanIDs) < 2 {
		t.Fatalf("the long turn has %d spans", len(pinned.SpanIDs))
	}
	if _, err := db.Feedback("t", engine.FeedbackInput{Workspace: "ws", ActorID: "alice", Action: engine.ActionPin, ArtifactID: pinned.ArtifactID, SpanID: pinned.SpanIDs[1]}); err != nil {
		t.Fatal(err)
	}
	check := func(layout string) {
		t.Helper()
		pr := mustPack(t, db, "t", PackRequest{Workspace: "ws", Query: "fern orchid cactus journal window", MaxTokens: 16000})
		heads := map[string]int{}
		for _, line := range strings.Split(pr.Result.ContextText, "\n") {
			if !strings.HasPrefix(line, "[cite:") {
				continue
			}
			// "[cite:N] 2026-03-01 12:00 <speaker>: ..."
			f := strings.SplitN(line, " ", 5)
			if len(f) < 5 {
				t.Fatalf("%s: line %q", layout, line)
			}
			if strings.HasPrefix(f[4], "Tip ") || strings.HasPrefix(f[4], "keep ") { // a later span
				for _, topic := range []string{"fern", "orchid", "cactus"} {
					if strings.Contains(f[4], topic) {
						heads[f[3]+" "+topic]++
					}
				}
			}
		}
		want := []string{"assistant: fern", "Caroline: orchid", "Caroline: cactus"}
		for k := range heads {
			if !slices.Contains(want, k) {
				t.Errorf("%s: a later span's head and topic %q", layout, k)
			}
		}
		for _, k := range want {
			if heads[k] == 0 {
				t.Errorf("%s: no later span with head and topic %q (heads: %v)", layout, k, heads)
			}
		}
	}
	check("head")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	check("segment")
}
