package retrieval

import (
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/internal/enginetest"
)

// TestMetadataFilterSearchesMatchingSpans: a metadata filter restricts the
// channels' search, not just their results. One artifact of 2,500 carries
// the filtered pair and matches the query less well than all the others; a
// filter applied after the candidate pools would find nothing. The filtered
// pack cites it, and only it, in the head, in a segment, and in a segment
// read through its view without an erased artifact, with the same pack hash.
func TestMetadataFilterSearchesMatchingSpans(t *testing.T) {
	db := enginetest.Open(t, t.TempDir(), engine.Options{DisableBackground: true})
	defer db.Close()
	p := New(db)
	const n = 2500
	var rare uuid.UUID
	var others []uuid.UUID
	for i := range n {
		in := enginetest.Chat("w", fmt.Sprintf("The deploy window for team %d is Tuesday at %d:00, the deploy window is fixed.", i, i%24))
		in.Metadata = map[string]string{"user": fmt.Sprintf("u-%d", i%50)}
		if i == n/2 {
			in = enginetest.Chat("w", "Notes from the planning call: the window moved.")
			in.Metadata = map[string]string{"user": "u-rare", "team": "payments"}
		}
		r := enginetest.MustIngest(t, db, "t", in)
		if i == n/2 {
			rare = r.ArtifactID
		} else {
			others = append(others, r.ArtifactID)
		}
	}
	pack := func(stage string, filter map[string]string) string {
		t.Helper()
		res, err := p.ContextPack(t.Context(), "t", PackRequest{Workspace: "w", Query: "when is the deploy window", MaxTokens: 2000, Metadata: filter})
		if err != nil {
			t.Fatalf("%s: %v", stage, err)
		}
		if len(res.Result.Citations) != 1 || res.Result.Citations[0].ArtifactID != rare {
			t.Fatalf("%s: filter %v cites %d spans (%v), want the rare artifact's only", stage, filter, len(res.Result.Citations), res.Result.Citations)
		}
		// Both channels searched the matching span only, and found it.
		for _, ch := range res.Result.ChannelContributions {
			if (ch.Channel == "lexical" || ch.Channel == "semantic") && ch.CandidateCount != 1 {
				t.Fatalf("%s: the %s channel offered %d candidates, want the one matching span", stage, ch.Channel, ch.CandidateCount)
			}
		}
		return res.Result.PackHash
	}
	filters := []map[string]string{{"user": "u-rare"}, {"team": "payments", "user": "u-rare"}}
	var want []string
	for _, f := range filters {
		want = append(want, pack("head", f))
	}
	if _, err := p.ContextPack(t.Context(), "t", PackRequest{Workspace: "w", Query: "when is the deploy window", MaxTokens: 2000,
		Metadata: map[string]string{"user": "u-rare", "team": "search"}}); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for i, f := range filters {
		if got := pack("segment", f); got != want[i] {
			t.Fatalf("segment: pack hash %s, head gave %s", got, want[i])
		}
	}
	if _, err := db.EraseArtifact("t", others[7]); err != nil { // the segment is now read through a view
		t.Fatal(err)
	}
	for _, f := range filters {
		pack("segment view", f) // the data version moved, so the hash may too
	}
	// A filter no artifact matches gives an empty pack, not another's spans.
	res, err := p.ContextPack(t.Context(), "t", PackRequest{Workspace: "w", Query: "deploy window", MaxTokens: 2000,
		Metadata: map[string]string{"user": "nobody"}})
	if err != nil || len(res.Result.Citations) != 0 {
		t.Fatalf("filter matching nothing: %v, %d citations", err, len(res.Result.Citations))
	}
}
