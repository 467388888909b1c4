package engine

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
)

// futureClock is the engine clock of the far-future tests: 01:00, so a
// cutoff taken from a time a day ahead (the next day's midnight minus one
// day) falls after artifacts 90 minutes old.
var futureClock = time.Date(2026, 6, 1, 1, 0, 0, 0, time.UTC)

func futureOpts() Options {
	return Options{DisableBackground: true, Now: func() time.Time { return futureClock }}
}

func ingestStamped(t *testing.T, db *DB, ts time.Time, text string) uuid.UUID {
	t.Helper()
	in := chat("w", text)
	in.Timestamp = ts
	return mustIngest(t, db, "t1", in).ArtifactID
}

func visibleIDs(t *testing.T, db *DB) []uuid.UUID {
	t.Helper()
	ids := listIDs(t, db, "t1", ListQuery{})
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	return ids
}

// TestRetentionFarFutureArtifact: an artifact stamped far in the future
// (as directories written before timestamps were bounded can hold, and the
// engine still stores: the bound is the API's) or a day ahead (the latest
// the API accepts) erases nothing else, whether retention is set before or
// after it, through flush, compaction and restart. Its retention time is
// its ingest time.
func TestRetentionFarFutureArtifact(t *testing.T) {
	for _, c := range []struct {
		name        string
		ts          time.Time
		setFirst    bool
		flushBefore bool
	}{
		{"2999, retention set first", time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC), true, false},
		{"2999, retention set after", time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC), false, false},
		{"2999 in a segment, retention set after", time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC), false, true},
		{"a day ahead, retention set first", futureClock.Add(24*time.Hour - time.Minute), true, false},
		{"a day ahead, retention set after", futureClock.Add(24*time.Hour - time.Minute), false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			db := openTest(t, dir, futureOpts())
			defer func() { db.Close() }()
			if c.setFirst {
				if err := db.SetRetention("t1", "w", 1); err != nil {
					t.Fatal(err)
				}
			}
			ids := []uuid.UUID{
				ingestStamped(t, db, futureClock.Add(-90*time.Minute), "the heron runbook"),
				ingestStamped(t, db, futureClock.Add(-30*time.Minute), "the heron rota"),
				ingestStamped(t, db, c.ts, "the heron plan"),
			}
			if c.flushBefore {
				if err := db.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			if !c.setFirst {
				if err := db.SetRetention("t1", "w", 1); err != nil {
					t.Fatal(err)
				}
			}
			slices.SortFunc(ids, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
			for _, step := range []struct {
				name string
				do   func() error
			}{
				{"write", func() error { return nil }},
				{"flush", db.Flush},
				{"compaction", db.Compact},
				{"restart", func() error {
					db.Close()
					db = openTest(t, dir, futureOpts())
					return nil
				}},
			} {
				if err := step.do(); err != nil {
					t.Fatal(err)
				}
				if got := visibleIDs(t, db); !slices.Equal(got, ids) {
					t.Fatalf("after %s: visible %v, want %v", step.name, got, ids)
				}
			}
			// An artifact older than the cutoff of the clock is still erased.
			old := ingestStamped(t, db, futureClock.Add(-50*time.Hour), "the heron archive")
			if _, err := db.Artifact("t1", old); err == nil {
				t.Fatalf("an artifact two days old is kept under a one-day retention")
			}
		})
	}
}

// TestRetentionRepairsFarFutureCutoff: a directory whose cutoff an earlier
// version took from a far-future timestamp (which erased the workspace and
// would erase every later write as it is applied) gets it lowered at open,
// to the cutoff of what the workspace holds; a possible cutoff is left as
// it is.
func TestRetentionRepairsFarFutureCutoff(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, futureOpts())
	if err := db.SetRetention("t1", "w", 1); err != nil {
		t.Fatal(err)
	}
	kept := ingestStamped(t, db, futureClock.Add(-30*time.Minute), "the plover runbook")
	k := wsKey{"t1", "w"}
	db.mu.Lock()
	r := db.retention[k]
	possible := r.Cutoff
	r.Cutoff = retentionCutoff(time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro(), 1)
	db.retention[k] = r
	db.mu.Unlock()
	if err := db.Flush(); err != nil { // the manifest holds the far-future cutoff
		t.Fatal(err)
	}
	db.Close()

	db = openTest(t, dir, futureOpts())
	defer db.Close()
	db.mu.RLock()
	got := db.retention[k].Cutoff
	db.mu.RUnlock()
	if got != possible || got == math.MinInt64 {
		t.Fatalf("cutoff after open %s, want %s", cutoffString(got), cutoffString(possible))
	}
	fresh := ingestStamped(t, db, futureClock, "the plover rota")
	for _, id := range []uuid.UUID{kept, fresh} {
		if _, err := db.Artifact("t1", id); err != nil {
			t.Fatalf("artifact %s: %v", id, err)
		}
	}
}

// TestRetentionLengthenedCutoffKeptAtOpen: a retention lengthened after a
// shorter one keeps the shorter one's cutoff (cutoffs only move forward);
// open must not take that possible cutoff for a far-future one and lower
// it, which let artifacts the cutoff refuses back in (found by loci
// torture: RETENTION UNDONE after a restart).
func TestRetentionLengthenedCutoffKeptAtOpen(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, futureOpts())
	ingestStamped(t, db, futureClock.Add(-30*time.Minute), "the plover runbook")
	if err := db.SetRetention("t1", "w", 1); err != nil {
		t.Fatal(err)
	}
	if err := db.SetRetention("t1", "w", 3); err != nil {
		t.Fatal(err)
	}
	k := wsKey{"t1", "w"}
	db.mu.RLock()
	want := db.retention[k].Cutoff
	db.mu.RUnlock()
	if want != retentionCutoff(futureClock.UnixMicro(), 1) {
		t.Fatalf("cutoff %s, want the one-day retention's", cutoffString(want))
	}
	if err := db.Flush(); err != nil { // the manifest holds days 3 with the one-day cutoff
		t.Fatal(err)
	}
	db.Close()

	db = openTest(t, dir, futureOpts())
	defer db.Close()
	db.mu.RLock()
	got := db.retention[k].Cutoff
	db.mu.RUnlock()
	if got != want {
		t.Fatalf("cutoff after open %s, want %s (kept)", cutoffString(got), cutoffString(want))
	}
	// Two days old: after the kept cutoff, erased as it is applied.
	old := ingestStamped(t, db, futureClock.Add(-30*time.Hour), "the heron archive")
	if _, err := db.Artifact("t1", old); err == nil {
		t.Fatalf("an artifact older than the kept cutoff is visible")
	}
}
