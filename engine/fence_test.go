package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/loci-memory/loci/engine/record"
	"github.com/loci-memory/loci/wal"
)

// TestIngestFence checks that an artifact fenced before an erasure of its
// workspace is never stored: refused before appending, refused when applied
// (an appender that passed the early check while the erasure landed), and
// refused again by replay, with or without a flush in between.
func TestIngestFence(t *testing.T) {
	for _, flush := range []bool{false, true} {
		dir := t.TempDir()
		db := openTest(t, dir, Options{DisableBackground: true})
		note := func(text string, fence uint64) IngestInput {
			return IngestInput{Workspace: "ws", ActorID: "a", Type: "note", Payload: []byte(`"` + text + `"`), Fence: fence}
		}
		before, err := db.Ingest("t", note("stored before the erasure", 0))
		if err != nil {
			t.Fatal(err)
		}
		res, err := db.EraseWorkspace("t", "ws")
		if err != nil || res.Seq == 0 || res.Artifacts != 1 {
			t.Fatalf("erase: %+v %v", res, err)
		}
		accepted := res.Seq - 1 // a job accepted before the erasure

		if _, err := db.Ingest("t", note("early refusal", accepted)); !errors.Is(err, ErrWorkspaceErased) {
			t.Fatalf("fenced ingest: %v", err)
		}
		ha := appendFenced(t, db, "racing appender", accepted)
		after, err := db.Ingest("t", note("accepted after the erasure", res.Seq+1))
		if err != nil {
			t.Fatalf("ingest fenced after the erasure: %v", err)
		}
		check := func(when string) {
			t.Helper()
			arts, _, err := db.WorkspaceContent("t", "ws")
			if err != nil || len(arts) != 1 || arts[0].ID != after.ArtifactID {
				t.Fatalf("%s: workspace holds %d artifacts (%v), want only the one accepted after the erasure", when, len(arts), err)
			}
			for _, id := range []uuid.UUID{before.ArtifactID, ha.a.ID} {
				if _, err := db.Artifact("t", id); !errors.Is(err, ErrNotFound) {
					t.Fatalf("%s: artifact %s readable: %v", when, id, err)
				}
			}
			if hits, _ := db.SearchLexical("t", "ws", "erasure racing appender refusal", 10); len(hits) != 1 {
				t.Fatalf("%s: search finds %d spans, want 1", when, len(hits))
			}
		}
		check("live")
		if flush {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		db.Close()
		db = openTest(t, dir, Options{DisableBackground: true})
		check("after restart")
		db.Close()
		if flush {
			assertNotOnDisk(t, dir, "racing appender")
		}
	}
}

// appendFenced appends an artifact record with fence as an appender does
// that checked the fence before an erasure and appends after it, and
// requires applying it to refuse it.
func appendFenced(t *testing.T, db *DB, text string, fence uint64) *headArtifact {
	t.Helper()
	ha, err := db.prepare("t", &IngestInput{Workspace: "ws", ActorID: "a", Type: "note", Payload: []byte(`"` + text + `"`)}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ha.fence = fence
	if _, err := db.wal.Append(wal.Entry{Type: uint8(record.TypeArtifact), Payload: record.AppendArtifact(nil, fence, ha.a, ha.spans, nil),
		Apply: func(seq uint64) { db.apply(record.TypeArtifact, seq, nil, ha) }}); err != nil {
		t.Fatal(err)
	}
	if !ha.fenced {
		t.Fatal("applying a fenced record did not refuse it")
	}
	return ha
}

// TestFenceOutlivesSpentTombstone erases a workspace, flushes past the erase
// record and compacts, so the tombstone hides no data any more, while jobs
// accepted before the erasure ingest: one whose record was refused when
// applied and stays in the WAL after the checkpoint, and one after the
// compaction (a worker held up). Neither may be stored, live or after a
// restart: the erase record is no longer replayed, so only the tombstone
// remembers the erasure.
func TestFenceOutlivesSpentTombstone(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, Options{DisableBackground: true})
	note := func(text string, fence uint64) IngestInput {
		return IngestInput{Workspace: "ws", ActorID: "a", Type: "note", Payload: []byte(`"` + text + `"`), Fence: fence}
	}
	if _, err := db.Ingest("t", note("stored before the erasure", 0)); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil { // old data in a segment
		t.Fatal(err)
	}
	res, err := db.EraseWorkspace("t", "ws")
	if err != nil {
		t.Fatal(err)
	}
	accepted := res.Seq - 1 // jobs accepted before the erasure
	// The checkpoint passes the erase record.
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	// A worker that checked its fence before the erasure: its record is in
	// the WAL after the checkpoint.
	racing := appendFenced(t, db, "racing appender", accepted)
	// The maintainer's compaction, without a flush first (the refused record
	// may land between its flush and its compaction): it rewrites the
	// segment, so the tombstone hides nothing any more.
	db.maintMu.Lock()
	err = db.compactLocked(2)
	db.maintMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Ingest("t", note("refused after the compaction", accepted)); !errors.Is(err, ErrWorkspaceErased) {
		t.Fatalf("fenced ingest after the compaction: %v", err)
	}
	check := func(when string) {
		t.Helper()
		if arts, _, err := db.WorkspaceContent("t", "ws"); err != nil || len(arts) != 0 {
			t.Fatalf("%s: erased workspace holds %d artifacts (%v)", when, len(arts), err)
		}
		if _, err := db.Artifact("t", racing.a.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s: fenced artifact readable: %v", when, err)
		}
	}
	check("live")
	db.Close()
	db = openTest(t, dir, Options{DisableBackground: true})
	defer db.Close()
	check("after restart")
	if _, err := db.Ingest("t", note("refused after the restart", accepted)); !errors.Is(err, ErrWorkspaceErased) {
		t.Fatalf("fenced ingest after the restart: %v", err)
	}
}
