package engine

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/internal/crashtest"
	"github.com/loci-memory/loci/vfs"
)

// strictWorkload ingests, flushes, compacts and erases on db until an
// operation fails (the file system crashed), and returns the artifacts
// acknowledged, by id, with their payloads, and those erased before being
// acknowledged as gone.
func strictWorkload(db *DB) (acked map[uuid.UUID][]byte, erased map[uuid.UUID]bool) {
	acked, erased = map[uuid.UUID][]byte{}, map[uuid.UUID]bool{}
	var scratch []uuid.UUID
	for i := range 40 {
		ws := "main"
		if i%4 == 3 {
			ws = "scratch"
		}
		key := fmt.Sprintf("k%d", i)
		in := IngestInput{Workspace: ws, ActorID: "crash", Type: "chat_turn", Payload: crashPayload(key), IdempotencyKey: key,
			Timestamp: chat("", "").Timestamp}
		r, err := db.Ingest("t", in)
		if err != nil {
			return
		}
		acked[r.ArtifactID] = in.Payload
		if ws == "scratch" {
			scratch = append(scratch, r.ArtifactID)
		}
		switch {
		case i%13 == 12:
			if _, err := db.EraseWorkspace("t", "scratch"); err != nil {
				return
			}
			for _, id := range scratch {
				erased[id] = true
			}
			scratch = nil
		case i%10 == 9:
			if err := db.Compact(); err != nil {
				return
			}
		case i%5 == 4:
			if err := db.Flush(); err != nil {
				return
			}
		}
	}
	return
}

// strictOptions are small enough that the workload rotates WAL files,
// writes segments and control-free manifests often.
func strictOptions(fsys vfs.FS) Options {
	return Options{FS: fsys, DisableBackground: true, NoEmbedder: true, WALFileSize: 8 << 10,
		CompactionMinSegments: 2, Logger: quietLogger()}
}

// TestStrictCrash crashes a workload at every file system operation, on a
// file system that loses everything not fsynced (a SIGKILL keeps the page
// cache, so only this catches a missing fsync), and checks that the
// directory opens, verify finds no fault, and every acknowledged artifact
// reads back byte-identical (erased ones stay erased).
func TestStrictCrash(t *testing.T) {
	// A run without a crash counts the operations.
	dir := t.TempDir()
	s, err := vfs.NewStrict(dir)
	if err != nil {
		t.Fatal(err)
	}
	count := &crashtest.FS{Strict: s}
	db, err := testOpen(dir, strictOptions(count))
	if err != nil {
		t.Fatal(err)
	}
	strictWorkload(db)
	db.Close()
	total := count.Ops()
	step := 2
	if testing.Short() {
		step = 7
	}
	t.Logf("%d file system operations; crashing before each %d", total, step)
	for n := 1; n <= total; n += step {
		checkStrictCrash(t, n)
	}
}

func checkStrictCrash(t *testing.T, n int) {
	t.Helper()
	dir := t.TempDir()
	s, err := vfs.NewStrict(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := &crashtest.FS{Strict: s, N: n}
	var acked map[uuid.UUID][]byte
	var erased map[uuid.UUID]bool
	if db, err := testOpen(dir, strictOptions(c)); err == nil {
		acked, erased = strictWorkload(db)
		db.Close() // after the crash: its errors are the dead process's
	} else if !errors.Is(err, vfs.ErrCrashed) {
		t.Fatalf("crash at op %d: Open before the crash: %v", n, err)
	}
	if !c.Crashed() {
		t.Fatalf("crash at op %d: the workload ended before it", n)
	}
	s.Restart()
	rep, err := Verify(dir)
	if err != nil {
		t.Fatalf("crash at op %d: verify: %v", n, err)
	}
	if len(rep.Faults) != 0 {
		t.Fatalf("crash at op %d: verify faults: %v", n, rep.Faults)
	}
	db, err := testOpen(dir, strictOptions(s))
	if err != nil {
		t.Fatalf("crash at op %d: reopen: %v", n, err)
	}
	defer db.Close()
	for id, payload := range acked {
		a, err := db.Artifact("t", id)
		if erased[id] {
			if err == nil {
				t.Fatalf("crash at op %d: erased artifact %s is back", n, id)
			}
			continue
		}
		if err != nil {
			t.Fatalf("crash at op %d: acknowledged artifact %s lost: %v (%d acknowledged)", n, id, err, len(acked))
		}
		if !bytes.Equal(a.Payload, payload) {
			t.Fatalf("crash at op %d: artifact %s differs", n, id)
		}
	}
	// The recovered directory takes writes and survives another crash.
	if _, err := db.Ingest("t", chat("main", "after the crash")); err != nil {
		t.Fatalf("crash at op %d: ingest after recovery: %v", n, err)
	}
}

// TestStrictCrashConcurrent crashes concurrent writers, with background
// flushes and compactions running, at pseudo-random file system operations
// (seeded: a failure reproduces), and checks every acknowledged artifact
// after the restart.
func TestStrictCrashConcurrent(t *testing.T) {
	rounds := 12
	if testing.Short() {
		rounds = 4
	}
	for round := range rounds {
		n := 40 + (round*7919)%600
		dir := t.TempDir()
		s, err := vfs.NewStrict(dir)
		if err != nil {
			t.Fatal(err)
		}
		c := &crashtest.FS{Strict: s, N: n}
		opts := strictOptions(c)
		opts.DisableBackground = false
		opts.FlushThreshold = 24 << 10
		db, err := testOpen(dir, opts)
		if err != nil {
			t.Fatalf("round %d: open: %v", round, err)
		}
		var mu sync.Mutex
		acked := map[uuid.UUID][]byte{}
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := 0; i < 500; i++ {
					key := fmt.Sprintf("r%d-w%d-%d", round, w, i)
					in := IngestInput{Workspace: "main", ActorID: "crash", Type: "chat_turn", Payload: crashPayload(key),
						IdempotencyKey: key, Timestamp: chat("", "").Timestamp}
					r, err := db.Ingest("t", in)
					if err != nil {
						return
					}
					mu.Lock()
					acked[r.ArtifactID] = in.Payload
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		db.Close()
		if !c.Crashed() {
			t.Fatalf("round %d: the workload ended before op %d", round, n)
		}
		s.Restart()
		if rep, err := Verify(dir); err != nil || len(rep.Faults) != 0 {
			t.Fatalf("round %d (crash at op %d): verify: %+v %v", round, n, rep, err)
		}
		db, err = testOpen(dir, strictOptions(s))
		if err != nil {
			t.Fatalf("round %d (crash at op %d): reopen: %v", round, n, err)
		}
		for id, p := range acked {
			if a, err := db.Artifact("t", id); err != nil || !bytes.Equal(a.Payload, p) {
				db.Close()
				t.Fatalf("round %d (crash at op %d): acknowledged artifact %s: %v", round, n, id, err)
			}
		}
		db.Close()
		t.Logf("round %d: crash at op %d, %d acknowledged", round, n, len(acked))
	}
}
