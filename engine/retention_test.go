package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine/manifest"
	"github.com/loci-memory/loci/vfs"
)

const retentionNeedle = "quokkaferry5519"

// retentionDay is day n of the fixture's artifact times: far before the
// wall clock, so a cutoff taken from the wall clock would erase everything.
func retentionDay(n int) time.Time {
	return time.Date(2020, 1, 1, 9, 0, 0, 0, time.UTC).AddDate(0, 0, n)
}

func ingestAt(t *testing.T, db *DB, tenant string, day int, text string) uuid.UUID {
	t.Helper()
	in := chat("w", text)
	in.Timestamp = retentionDay(day)
	return mustIngest(t, db, tenant, in).ArtifactID
}

// retentionFixture ingests t1/w artifacts on days 0 (the needle), 5, 8 and
// 10, and one of t2/w on day 0; it returns t1's ids in that order.
func retentionFixture(t *testing.T, db *DB) []uuid.UUID {
	t.Helper()
	ids := []uuid.UUID{
		ingestAt(t, db, "t1", 0, "The old launch word is "+retentionNeedle+" for the deploy."),
		ingestAt(t, db, "t1", 5, "The deploy window moved to Tuesday for payments."),
		ingestAt(t, db, "t1", 8, "Alice owns the deploy checklist and the payments runbook."),
		ingestAt(t, db, "t1", 10, "The deploy of the search service is on Thursday."),
	}
	ingestAt(t, db, "t2", 0, "Tenant two keeps its deploy notes "+retentionNeedle+" forever.")
	return ids
}

// checkVisible checks that exactly want of t1/w is readable, listed and
// packable.
func checkVisible(t *testing.T, db *DB, all, want []uuid.UUID) {
	t.Helper()
	for _, id := range all {
		_, err := db.Artifact("t1", id)
		if got := err == nil; got != slices.Contains(want, id) {
			t.Fatalf("Artifact(%s): %v, want visible %v", id, err, !got)
		}
	}
	listed := listIDs(t, db, "t1", ListQuery{})
	slices.SortFunc(listed, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	sorted := slices.Clone(want)
	slices.SortFunc(sorted, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	if !slices.Equal(listed, sorted) {
		t.Fatalf("listing %v, want %v", listed, sorted)
	}
	pr := mustPack(t, db, "t1", PackProbe{Workspace: "w", Query: "deploy launch word payments", MaxTokens: 2000})
	for _, c := range pr.Citations {
		if !slices.Contains(want, c.ArtifactID) {
			t.Fatalf("pack cites hidden artifact %s", c.ArtifactID)
		}
	}
	for _, ex := range pr.Exclusions {
		if !slices.Contains(want, ex.ArtifactID) {
			t.Fatalf("pack excludes (so saw) hidden artifact %s", ex.ArtifactID)
		}
	}
}

// TestRetention: the cutoff is taken from the newest artifact time, not the
// wall clock; what it leaves behind is hidden everywhere at once, the pack
// is byte-identical in every layout, and compaction removes the bytes.
func TestRetention(t *testing.T) {
	for _, c := range []struct {
		name       string
		flushFirst bool // the artifacts are in a segment when retention is set
		restart    bool // reopen after setting it (replay of the record)
	}{
		{"head", false, false},
		{"head+restart", false, true},
		{"segment", true, false},
		{"segment+restart", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			db := openTest(t, dir, Options{DisableBackground: true})
			defer func() { db.Close() }()
			ids := retentionFixture(t, db)
			if c.flushFirst {
				if err := db.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			before := db.DataVersion("t1", "w")
			if err := db.SetRetention("t1", "w", 3); err != nil {
				t.Fatal(err)
			}
			if c.restart {
				db.Close()
				db = openTest(t, dir, Options{DisableBackground: true})
			}
			if d, err := db.Retention("t1", "w"); d != 3 || err != nil {
				t.Fatalf("Retention: %d %v", d, err)
			}
			if d, _ := db.Retention("t2", "w"); d != 0 {
				t.Fatalf("another tenant's workspace has retention %d", d)
			}
			if v := db.DataVersion("t1", "w"); v <= before {
				t.Fatalf("data version %d -> %d: did not move", before, v)
			}
			// Newest is day 10: the cutoff is day 7 at midnight.
			checkVisible(t, db, ids, ids[2:])
			if hits, _ := db.SearchLexical("t1", "w", retentionNeedle, 10); len(hits) != 0 {
				t.Fatalf("needle still searchable: %v", hits)
			}
			if hits, _ := db.SearchLexical("t2", "w", retentionNeedle, 10); len(hits) != 1 {
				t.Fatalf("tenant t2 lost its artifact: %v", hits)
			}

			want := packJSON(t, db, "deploy checklist payments")
			for _, step := range []struct {
				name string
				do   func() error
			}{
				{"flush", db.Flush},
				{"compaction", db.Compact},
			} {
				if err := step.do(); err != nil {
					t.Fatal(err)
				}
				if got := packJSON(t, db, "deploy checklist payments"); got != want {
					t.Fatalf("pack changed with %s:\n%s\n%s", step.name, want, got)
				}
			}
			db.Close()
			db = openTest(t, dir, Options{DisableBackground: true})
			if got := packJSON(t, db, "deploy checklist payments"); got != want {
				t.Fatalf("pack changed with restart:\n%s\n%s", want, got)
			}
			checkVisible(t, db, ids, ids[2:])
			if _, err := db.EraseWorkspace("t2", "w"); err != nil {
				t.Fatal(err)
			}
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
			db.Close()
			assertNotOnDisk(t, dir, retentionNeedle)
			db = openTest(t, dir, Options{DisableBackground: true})
			checkVisible(t, db, ids, ids[2:])
			if d, _ := db.Retention("t1", "w"); d != 3 { // from the manifest: the WAL was checkpointed
				t.Fatalf("Retention after checkpoint and restart: %d", d)
			}
		})
	}
}

// TestRetentionCutoffMovesForward: an artifact older than the cutoff
// arriving later is hidden; erasing the newest artifact does not move the
// cutoff back; a newer artifact moves it on; clearing stops further
// exclusion without bringing back what was erased.
func TestRetentionCutoffMovesForward(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, Options{DisableBackground: true})
	defer func() { db.Close() }()
	ids := retentionFixture(t, db)
	if err := db.SetRetention("t1", "w", 3); err != nil {
		t.Fatal(err)
	}
	visible := slices.Clone(ids[2:])
	all := slices.Clone(ids)

	late := ingestAt(t, db, "t1", 6, "A late note about the old deploy.") // before day 7
	all = append(all, late)
	checkVisible(t, db, all, visible)

	if _, err := db.EraseArtifact("t1", ids[3]); err != nil { // the newest: day 8 is now
		t.Fatal(err)
	}
	visible = slices.DeleteFunc(visible, func(id uuid.UUID) bool { return id == ids[3] })
	back := ingestAt(t, db, "t1", 6, "Another late note about the old deploy.")
	all = append(all, back)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	checkVisible(t, db, all, visible) // the cutoff stayed at day 7

	v := db.DataVersion("t1", "w")
	next := ingestAt(t, db, "t1", 12, "The deploy freeze starts on day twelve.") // cutoff: day 9
	all = append(all, next)
	visible = []uuid.UUID{next}
	if got := db.DataVersion("t1", "w"); got <= v {
		t.Fatalf("data version %d -> %d", v, got)
	}
	checkVisible(t, db, all, visible)

	if err := db.SetRetention("t1", "w", 0); err != nil {
		t.Fatal(err)
	}
	if d, _ := db.Retention("t1", "w"); d != 0 {
		t.Fatalf("cleared retention reads %d", d)
	}
	old := ingestAt(t, db, "t1", 1, "An old note kept now that retention is off.")
	all = append(all, old)
	visible = append(visible, old)
	checkVisible(t, db, all, visible)
	db.Close()
	db = openTest(t, dir, Options{DisableBackground: true})
	checkVisible(t, db, all, visible)

	// Setting it again takes the cutoff from the newest time afresh.
	if err := db.SetRetention("t1", "w", 3); err != nil {
		t.Fatal(err)
	}
	checkVisible(t, db, all, []uuid.UUID{next})

	// Erasing the workspace drops its retention.
	if _, err := db.EraseWorkspace("t1", "w"); err != nil {
		t.Fatal(err)
	}
	if d, _ := db.Retention("t1", "w"); d != 0 {
		t.Fatalf("retention %d after the workspace's erasure", d)
	}
	db.Close()
	if rep, err := Verify(dir); err != nil || len(rep.Faults) > 0 {
		t.Fatalf("verify: %v %v", err, rep)
	}
}

func TestSetRetentionInvalid(t *testing.T) {
	db := openTest(t, t.TempDir(), Options{DisableBackground: true})
	defer db.Close()
	for _, c := range []struct {
		ws   string
		days int
	}{{"w", -1}, {"w", MaxRetentionDays + 1}, {"", 3}, {"bad\x01", 3}} {
		var inv *InvalidError
		if err := db.SetRetention("t1", c.ws, c.days); !errors.As(err, &inv) {
			t.Errorf("SetRetention(%q, %d): %v, want InvalidError", c.ws, c.days, err)
		}
	}
	if v := db.DataVersion("t1", "w"); v != 0 {
		t.Fatalf("refused settings moved the data version to %d", v)
	}
}

func TestRetentionCutoff(t *testing.T) {
	for _, c := range []struct {
		newest int64
		days   uint64
		want   int64
	}{
		{math.MinInt64, 3, math.MinInt64},
		{10*dayMicros + 5, 3, 7 * dayMicros},
		{10 * dayMicros, 3, 7 * dayMicros},
		{-1, 1, -2 * dayMicros},
	} {
		if got := retentionCutoff(c.newest, c.days); got != c.want {
			t.Errorf("retentionCutoff(%d, %d) = %d, want %d", c.newest, c.days, got, c.want)
		}
	}
}

// failSegments is the OS file system, except that it refuses to create
// segment files once allow (-1: no limit) have been created: a flush then
// fails at that head, which stays frozen for the next flush.
type failSegments struct {
	vfs.FS
	mu    sync.Mutex
	allow int
}

func (f *failSegments) set(allow int) { f.mu.Lock(); f.allow = allow; f.mu.Unlock() }

func (f *failSegments) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	if flag&os.O_CREATE != 0 && strings.HasSuffix(name, ".tmp") && strings.Contains(filepath.Base(name), ".seg") {
		f.mu.Lock()
		refuse := f.allow == 0
		if f.allow > 0 {
			f.allow--
		}
		f.mu.Unlock()
		if refuse {
			return nil, errors.New("failSegments: no segment now")
		}
	}
	return f.FS.OpenFile(name, flag, perm)
}

// TestRetentionCheckpointState: a manifest starts replay from its
// checkpoint, so the retention and newest artifact time it records must be
// those of the checkpoint's log position. Here a head frozen after the
// first artifact is flushed only after retention was set to 2 days, then
// to 4, and a newer artifact came in; the crash comes before the next
// head's manifest. Replaying "2 days" on top of the later newest time
// (day 3) would cut at day 1 and erase the day-0 artifact that the live
// engine kept (4 days before day 3 is day -1).
func TestRetentionCheckpointState(t *testing.T) {
	dir := t.TempDir()
	fsys := &failSegments{FS: vfs.Default, allow: -1}
	opts := Options{FS: fsys, DisableBackground: true, NoEmbedder: true}
	db := openTest(t, dir, opts)
	defer func() { db.Close() }()
	a := ingestAt(t, db, "t1", 0, "The day zero deploy note stays.")
	fsys.set(0)
	if err := db.Flush(); err == nil { // rotation after a: its head stays frozen
		t.Fatal("flush succeeded without segment files")
	}
	for _, d := range []int{2, 4} {
		if err := db.SetRetention("t1", "w", d); err != nil {
			t.Fatal(err)
		}
	}
	b := ingestAt(t, db, "t1", 3, "The day three deploy note.")
	fsys.set(1)
	if err := db.Flush(); err == nil { // a's head is flushed, the next one is not
		t.Fatal("flush of the second head succeeded")
	}
	ids := []uuid.UUID{a, b}
	check := func(when string) (manifest.Retention, uint64) {
		t.Helper()
		listed := listIDs(t, db, "t1", ListQuery{})
		slices.SortFunc(listed, func(x, y uuid.UUID) int { return slices.Compare(x[:], y[:]) })
		want := slices.Clone(ids)
		slices.SortFunc(want, func(x, y uuid.UUID) int { return slices.Compare(x[:], y[:]) })
		if !slices.Equal(listed, want) {
			t.Fatalf("%s: listed %v, want %v", when, listed, want)
		}
		if _, err := db.Artifact("t1", a); err != nil {
			t.Fatalf("%s: day-0 artifact: %v", when, err)
		}
		if d, _ := db.Retention("t1", "w"); d != 4 {
			t.Fatalf("%s: retention %d, want 4", when, d)
		}
		db.mu.RLock()
		r := db.retention[wsKey{"t1", "w"}]
		db.mu.RUnlock()
		if wantCut := time.Date(2019, 12, 31, 0, 0, 0, 0, time.UTC).UnixMicro(); r.Cutoff != wantCut {
			t.Fatalf("%s: cutoff %s, want %s", when, time.UnixMicro(r.Cutoff).UTC(), time.UnixMicro(wantCut).UTC())
		}
		return r, db.DataVersion("t1", "w")
	}
	liveR, liveV := check("live")
	db.Close() // Close does not flush: the reopen replays the WAL from the checkpoint as after a crash
	db = openTest(t, dir, Options{DisableBackground: true, NoEmbedder: true})
	replayR, replayV := check("after reopen")
	if liveR != replayR || liveV != replayV {
		t.Fatalf("replay %+v v%d != live %+v v%d", replayR, replayV, liveR, liveV)
	}
}

// TestRetentionDropsOnceEqualsFresh: a cutoff that erases many artifacts of
// a head workspace at once (one rebuild) leaves the head's lexical index and
// vectors byte-identical to a head that only ever held the kept artifacts.
func TestRetentionDropsOnceEqualsFresh(t *testing.T) {
	const n = 40
	text := func(i int) string {
		return fmt.Sprintf("Turn %d: the deploy of service %d moved to day %d; budget %d dollars.", i, i%7, i/2, 1000+i*13)
	}
	ingest := func(db *DB, from int) {
		for i := from; i < n; i++ {
			in := chat("w", text(i))
			in.Timestamp = retentionDay(i / 2) // days 0..19, two artifacts a day
			mustIngest(t, db, "t", in)
			other := chat("w2", text(i)) // another workspace, untouched
			other.Timestamp = in.Timestamp
			mustIngest(t, db, "t", other)
		}
	}
	db := openTest(t, t.TempDir(), Options{DisableBackground: true})
	defer db.Close()
	ingest(db, 0)
	if err := db.SetRetention("t", "w", 9); err != nil { // newest day 19: keeps days 10..19
		t.Fatal(err)
	}
	fresh := openTest(t, t.TempDir(), Options{DisableBackground: true})
	defer fresh.Close()
	ingest(fresh, 20)
	if w2 := db.head.workspaces[wsKey{"t", "w2"}]; w2 == nil || len(w2.artifacts) != n {
		t.Fatalf("the other workspace lost artifacts: %v", w2)
	}
	got, want := db.head.workspaces[wsKey{"t", "w"}], fresh.head.workspaces[wsKey{"t", "w"}]
	if got == nil || want == nil || len(got.artifacts) != len(want.artifacts) || len(got.artifacts) != n/2 {
		t.Fatalf("w: %d artifacts kept, want %d", len(got.artifacts), n/2)
	}
	gs, err := got.lex.Sections()
	if err != nil {
		t.Fatal(err)
	}
	ws2, err := want.lex.Sections()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gs, ws2) {
		t.Fatal("lexical index after the cutoff differs from a fresh index of the kept artifacts")
	}
	if got.vec == nil || !slices.Equal(got.vec.Rows(), want.vec.Rows()) || !slices.Equal(got.vec.Scales(), want.vec.Scales()) ||
		!slices.Equal(got.vec.Keys(), want.vec.Keys()) {
		t.Fatal("vectors after the cutoff differ from a fresh head's")
	}
	if got.spans != want.spans || len(got.refs) != len(want.refs) {
		t.Fatalf("spans %d refs %d, want %d and %d", got.spans, len(got.refs), want.spans, len(want.refs))
	}
}
