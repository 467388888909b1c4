package retrieval

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/internal/enginetest"
	"github.com/loci-memory/loci/pack"
)

// TestWindowSearchesInWindowSpans: since/until restrict the channels'
// search, not their pools. 2,400 turns a day apart match the query better
// than the three of one week, which say it in other words; a window cut
// after the pools (400 deep) would hold none of them. The windowed pack
// cites exactly the spans of the window, bounds included, in the head, in
// a segment, and in a segment read through its view without an erased
// artifact; a pinned span outside the window is kept; two windows never
// share a receipt, and the receipt records the window.
func TestWindowSearchesInWindowSpans(t *testing.T) {
	db := enginetest.Open(t, t.TempDir(), engine.Options{DisableBackground: true})
	defer db.Close()
	p := New(db)
	base := time.Date(2020, 1, 1, 12, 0, 0, 0, time.UTC)
	const n = 2400
	var week []uuid.UUID                  // the artifacts of the window, in time order
	var others []engine.IngestResult      // the rest
	weekStart := base.AddDate(0, 0, 1000) // the window: days 1000 to 1002, noon to noon
	for i := range n {
		in := enginetest.Chat("w", fmt.Sprintf("The deploy window for team %d is Tuesday at %d:00, the deploy window is fixed.", i, i%24))
		in.Timestamp = base.AddDate(0, 0, i)
		if i >= 1000 && i <= 1002 {
			in = enginetest.Chat("w", fmt.Sprintf("Planning call %d: the release slot moved.", i))
			in.Timestamp = base.AddDate(0, 0, i)
		}
		r := enginetest.MustIngest(t, db, "t", in)
		if i >= 1000 && i <= 1002 {
			week = append(week, r.ArtifactID)
		} else {
			others = append(others, r)
		}
	}
	// A pinned span from long before the window.
	pinned := others[3]
	if _, err := db.Feedback("t", engine.FeedbackInput{Workspace: "w", ActorID: "alice", Action: engine.ActionPin, ArtifactID: pinned.ArtifactID}); err != nil {
		t.Fatal(err)
	}
	us := func(t time.Time) *int64 { v := t.UnixMicro(); return &v }
	since, until := us(weekStart), us(weekStart.AddDate(0, 0, 2)) // inclusive: days 1000, 1001 and 1002
	run := func(stage string, since, until *int64) *PackResponse {
		t.Helper()
		res, err := p.ContextPack(t.Context(), "t", PackRequest{Workspace: "w", Query: "when is the deploy window", MaxTokens: 2000,
			Since: since, Until: until})
		if err != nil {
			t.Fatalf("%s: %v", stage, err)
		}
		return res
	}
	check := func(stage string, since, until *int64, want []uuid.UUID) *PackResponse {
		t.Helper()
		res := run(stage, since, until)
		var got []uuid.UUID
		for _, c := range res.Result.Citations {
			if c.ArtifactID == pinned.ArtifactID {
				if !c.Pinned {
					t.Fatalf("%s: the pinned span is cited unpinned", stage)
				}
				continue
			}
			got = append(got, c.ArtifactID)
		}
		slices.SortFunc(got, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
		want = slices.Clone(want)
		slices.SortFunc(want, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
		if !slices.Equal(got, want) {
			t.Fatalf("%s: window cites %v, want %v", stage, got, want)
		}
		if !slices.ContainsFunc(res.Result.Citations, func(c pack.Citation) bool { return c.Pinned }) {
			t.Fatalf("%s: the pinned span outside the window was dropped", stage)
		}
		for _, ch := range res.Result.ChannelContributions {
			if ch.Channel == "lexical" && ch.CandidateCount > len(want) {
				t.Fatalf("%s: the lexical channel offered %d candidates, more than the window's %d spans", stage, ch.CandidateCount, len(want))
			}
		}
		return res
	}
	head := check("head", since, until, week)
	check("head, one bound each", us(weekStart.AddDate(0, 0, 2)), until, week[2:])
	check("head, until only: the first day, inclusive", nil, us(base), []uuid.UUID{others[0].ArtifactID})
	// The receipt records the window; another window is another receipt.
	rec, err := db.GetReceipt("t", head.ReceiptID)
	if err != nil {
		t.Fatalf("receipt: %v", err)
	}
	body, err := ReceiptBody(db, rec)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"since":"2022-09-27T12:00:00Z"`, `"until":"2022-09-29T12:00:00Z"`} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("receipt without %s: %s", want, body)
		}
	}
	if other := run("wider", since, us(weekStart.AddDate(0, 0, 3).Add(-time.Microsecond))); other.ReceiptID == head.ReceiptID {
		t.Fatal("two windows share a receipt")
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if seg := check("segment", since, until, week); seg.Result.PackHash != head.Result.PackHash {
		t.Fatalf("segment: pack hash %s, head gave %s", seg.Result.PackHash, head.Result.PackHash)
	}
	if _, err := db.EraseArtifact("t", week[1]); err != nil { // the segment is now read through a view
		t.Fatal(err)
	}
	check("segment view", since, until, []uuid.UUID{week[0], week[2]})
}
