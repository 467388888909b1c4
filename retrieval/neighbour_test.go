package retrieval

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/internal/enginetest"
	"github.com/loci-memory/loci/pack"
)

// TestSessionNeighbourContext: the turn that answers a question without
// sharing its words gets context from the turn before it (ContextShare of
// that turn's relevance, then the speaker prior) however the client stamps time: one timestamp for
// the whole session, none in one batch, none with turns sent 20 minutes
// apart (the store stamps each at ingest), or an hour between turns. A
// turn three after it gets none, and the pack is the same after a flush and a
// compaction.
func TestSessionNeighbourContext(t *testing.T) {
	turns := []string{
		"Gina: the bakery on the corner finally reopened today",
		"Gina: they had the cinnamon rolls back too",
		"Jon: guess which city my sister is moving to next spring!",
		"Gina: Lisbon? She always talked about the sea there",
		"Jon: yes, and she already found a flat near the river",
		"Gina: my cat knocked a plant off the shelf this morning",
	}
	const hit, answer, far = 2, 3, 5
	base := time.Date(2026, 4, 2, 18, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		stamp   func(i int) time.Time // zero: none
		oneCall bool                  // all turns in one IngestBatch, else one call per turn
	}{
		{"one timestamp for the session", func(int) time.Time { return base }, true},
		{"no timestamps, one batch", func(int) time.Time { return time.Time{} }, true},
		{"no timestamps, turns sent 20 minutes apart", func(int) time.Time { return time.Time{} }, false},
		{"an hour between turns", func(i int) time.Time { return base.Add(time.Duration(i) * time.Hour) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := base.Add(24 * time.Hour)
			now := func() time.Time { return clock }
			db := enginetest.Open(t, t.TempDir(), engine.Options{DisableBackground: true, Now: now})
			defer db.Close()
			// Another session at the same time, ingested first, must not lend context.
			other := enginetest.Chat("ws", "Jon: my brother is moving to a new city as well")
			other.SessionID, other.Timestamp = "s0", tc.stamp(hit)
			enginetest.MustIngest(t, db, "t", other)
			var ins []engine.IngestInput
			for i, text := range turns {
				in := enginetest.Chat("ws", text)
				in.SessionID, in.Timestamp, in.IdempotencyKey = "s1", tc.stamp(i), fmt.Sprint(i)
				ins = append(ins, in)
			}
			ids := make([]uuid.UUID, len(turns))
			if tc.oneCall {
				rs, err := db.IngestBatch("t", ins)
				if err != nil {
					t.Fatal(err)
				}
				for i, r := range rs {
					ids[i] = r.ArtifactID
				}
			} else {
				for i, in := range ins {
					ids[i] = enginetest.MustIngest(t, db, "t", in).ArtifactID
					clock = clock.Add(20 * time.Minute)
				}
			}
			req := PackRequest{Workspace: "ws", Query: "Which city is Jon's sister moving to?", MaxTokens: 2048}
			pr := mustPack(t, db, "t", req)
			rel := map[uuid.UUID]float64{}
			for _, c := range pr.Result.Citations {
				rel[c.ArtifactID] = max(rel[c.ArtifactID], c.RelevanceScore)
			}
			for _, e := range pr.Result.Exclusions {
				rel[e.ArtifactID] = max(rel[e.ArtifactID], e.RelevanceScore)
			}
			// The answer is Gina's and the question names Jon, so the
			// speaker prior weighs it after the context step (the turns
			// name their speakers in the content, under role user).
			share := round6(pack.SpeakerPrior * round6(0.75*rel[ids[hit]]))
			if rel[ids[hit]] == 0 || rel[ids[answer]] < share {
				t.Errorf("answer turn relevance %v, want at least %v (%v of 0.75 of the question turn's %v)", rel[ids[answer]], share, pack.SpeakerPrior, rel[ids[hit]])
			}
			if rel[ids[far]] >= share {
				t.Errorf("turn three after the question: relevance %v, want below %v", rel[ids[far]], share)
			}
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
			if again := mustPack(t, db, "t", req); again.Result.PackHash != pr.Result.PackHash {
				t.Errorf("pack hash %s after flush and compaction, %s before", again.Result.PackHash, pr.Result.PackHash)
			}
		})
	}
}

// round6 rounds as the packer does (pack.round6).
func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }
