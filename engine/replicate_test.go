package engine

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine/record"
	"github.com/loci-memory/loci/wal"
)

// memLog is an ordered, de-duplicating log in memory that delivers every
// message to every engine in order, as a cluster's stream does (package
// cluster is the real one, over JetStream; this is the engine's side of the
// Replicator contract).
type memLog struct {
	mu      sync.Mutex
	seq     uint64
	ids     map[string]uint64
	engines []*DB
	// held is every message as the log stores it (decoded copies, without
	// Apply functions), for a test to deliver one again.
	held [][]wal.Entry
	// before, when set, runs in Replicate before the write is stored, with
	// the log's lock held: a test stores other messages ahead of it there.
	before func(l *memLog)
}

// appendLocked stores entries as the next message and applies it on every
// engine, self's own entries on self. Callers hold mu.
func (l *memLog) appendLocked(self *DB, entries []wal.Entry) error {
	l.seq++
	copies := make([]wal.Entry, len(entries))
	for i, e := range entries {
		copies[i] = wal.Entry{Type: e.Type, Payload: append([]byte(nil), e.Payload...)}
	}
	l.held = append(l.held, copies)
	for _, db := range l.engines {
		es := copies
		if db == self {
			es = entries
		}
		if err := db.ApplyReplicated(l.seq<<16, es); err != nil {
			return err
		}
	}
	return nil
}

type memReplica struct {
	log  *memLog
	self *DB
}

// writeID is the test log's de-duplication id of a write (package cluster
// has the real one): its receipt id, its idempotency keys when every
// artifact has one, else its artifact ids; "" for other writes.
func writeID(w Write) string {
	if w.Receipt != uuid.Nil {
		return "receipt:" + w.Receipt.String()
	}
	keyed := !slices.ContainsFunc(w.Ingested, func(a Ingested) bool { return a.IdempotencyKey == "" })
	id := ""
	for _, a := range w.Ingested {
		if keyed {
			id += w.Tenant + "/" + a.Workspace + "/" + a.IdempotencyKey + ";"
		} else {
			id += a.ID.String() + ";"
		}
	}
	return id
}

func (r memReplica) Replicate(w Write) error {
	msgID, entries := writeID(w), w.Entries
	l := r.log
	l.mu.Lock()
	defer l.mu.Unlock()
	if msgID != "" {
		if _, dup := l.ids[msgID]; dup {
			return ErrDuplicate
		}
	}
	if l.before != nil {
		l.before(l)
	}
	if msgID != "" {
		l.ids[msgID] = l.seq + 1
	}
	return l.appendLocked(r.self, entries)
}

func openReplicated(t *testing.T, l *memLog, dir string) *DB {
	t.Helper()
	db, err := testOpen(dir, Options{Replicated: true, NoEmbedder: true, DisableBackground: true, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	db.SetReplicator(memReplica{l, db})
	l.engines = append(l.engines, db)
	return db
}

// TestReplicatedEngines: two replicated engines fed by one log through
// either of them reach the same reads, with sequence numbers that are log
// positions; de-duplicated writes answer with what the first stored; a
// message applied twice, or an artifact published twice, is stored once;
// and a reopened engine resumes at its last position.
func TestReplicatedEngines(t *testing.T) {
	l := &memLog{ids: map[string]uint64{}}
	dirs := []string{t.TempDir(), t.TempDir()}
	a, b := openReplicated(t, l, dirs[0]), openReplicated(t, l, dirs[1])
	if _, err := a.Ingest("t", replicaInput("w", 0)); err != nil {
		t.Fatal(err)
	}
	batch := []IngestInput{replicaInput("w", 1), replicaInput("w", 2)}
	if _, err := b.IngestBatch("t", batch); err != nil {
		t.Fatal(err)
	}
	for _, db := range []*DB{a, b} {
		for i, want := range []uint64{1 << 16, 2 << 16, 2<<16 + 1} {
			art, err := db.Artifact("t", replicaID(fmt.Sprint("w/", i)))
			if err != nil || art.Seq != want {
				t.Fatalf("artifact %d: seq %v (err %v), want the log position %d", i, art, err, want)
			}
		}
	}

	// An idempotency key sent through the other engine: the log drops the
	// copy and the engine answers with the first artifact.
	in := replicaInput("w", 3)
	in.IdempotencyKey, in.ArtifactID = "k1", [16]byte{}
	first, err := a.Ingest("t", in)
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.Ingest("t", in)
	if err != nil || again.ArtifactID != first.ArtifactID || !again.Replayed {
		t.Fatalf("replay through the other engine: %+v, %v; want artifact %s replayed", again, err, first.ArtifactID)
	}

	// The same message applied again (a consumer delivering it twice), and
	// the same artifact in a later message (two nodes publishing it): once.
	l.mu.Lock()
	last := l.held[len(l.held)-1]
	seq := l.seq
	l.mu.Unlock()
	if err := a.ApplyReplicated(seq<<16, last); err != nil {
		t.Fatal(err)
	}
	dup := replicaInput("w", 1)
	dup.ArtifactID = replicaID("w/1")
	l.mu.Lock()
	l.seq++
	ha := mustPrepare(t, a, dup)
	payload := record.AppendArtifact(nil, 0, ha.a, ha.spans, nil)
	for _, db := range l.engines {
		if err := db.ApplyReplicated(l.seq<<16, []wal.Entry{{Type: uint8(record.TypeArtifact), Payload: payload}}); err != nil {
			l.mu.Unlock()
			t.Fatal(err)
		}
	}
	l.mu.Unlock()
	for name, db := range map[string]*DB{"a": a, "b": b} {
		page, err := db.ListArtifacts("t", "w", ListQuery{Limit: 100})
		if err != nil || len(page.Artifacts) != 4 {
			t.Fatalf("engine %s lists %d artifacts (err %v), want 4", name, len(page.Artifacts), err)
		}
	}
	// Feedback and an artifact erasure through one engine, a workspace
	// erasure through the other: both engines agree.
	if _, err := a.Feedback("t", FeedbackInput{Workspace: "w", Action: "pin", ArtifactID: replicaID("w/0")}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.EraseArtifact("t", replicaID("w/2")); err != nil {
		t.Fatal(err)
	}
	for name, db := range map[string]*DB{"a": a, "b": b} {
		if _, err := db.Artifact("t", replicaID("w/2")); !errors.Is(err, ErrNotFound) {
			t.Fatalf("engine %s: erased artifact: %v", name, err)
		}
		if _, pinned := db.Marks("t", "w"); len(pinned) == 0 {
			t.Fatalf("engine %s: no pinned span after the pin", name)
		}
	}
	if _, err := b.IngestBatch("t", []IngestInput{replicaInput("v", 1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.EraseWorkspace("t", "v"); err != nil {
		t.Fatal(err)
	}
	for name, db := range map[string]*DB{"a": a, "b": b} {
		if page, err := db.ListArtifacts("t", "v", ListQuery{Limit: 10}); err != nil || len(page.Artifacts) != 0 {
			t.Fatalf("engine %s: erased workspace lists %d artifacts (%v)", name, len(page.Artifacts), err)
		}
	}
	if a.AppliedSeq() != b.AppliedSeq() {
		t.Fatalf("applied %d and %d", a.AppliedSeq(), b.AppliedSeq())
	}
	if err := a.ApplyReplicated(1, nil); err != nil {
		t.Fatalf("an empty message: %v", err)
	}
	if _, err := a.wal.AppendAt(1, wal.Entry{Type: 1, Payload: []byte("x")}); err == nil {
		t.Fatal("the WAL took a number below its last")
	}

	applied := a.AppliedSeq()
	a.Close()
	b.Close()
	re := reopenReplicated(t, dirs[0])
	if re.AppliedSeq() != applied {
		t.Fatalf("reopened at %d, want %d", re.AppliedSeq(), applied)
	}
	if _, err := re.Ingest("t", replicaInput("w", 9)); !errors.Is(err, ErrNotReplicating) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("a write before SetReplicator: %v, want ErrNotReplicating", err)
	}
}

// TestReplicatedKeyStoredTwice: the log's de-duplication can miss a retry
// (JetStream's, across a leader change, stored a write sent without quorum
// and its retry both). Every replica keeps the first copy alone, also after
// a restart replays the log, and the retry's writer answers with the first
// copy's artifact as a replay.
func TestReplicatedKeyStoredTwice(t *testing.T) {
	l := &memLog{ids: map[string]uint64{}}
	dirs := []string{t.TempDir(), t.TempDir()}
	a, b := openReplicated(t, l, dirs[0]), openReplicated(t, l, dirs[1])
	earlier := replicaInput("w", 1)
	earlier.IdempotencyKey = "k"
	earlier.ArtifactID = replicaID("earlier")
	retry := earlier
	retry.ArtifactID = replicaID("retry")
	// The earlier copy reaches the log while the retry is on its way, past
	// the log's de-duplication.
	l.before = func(l *memLog) {
		l.before = nil
		ha := mustPrepare(t, b, earlier)
		payload := record.AppendArtifact(nil, 0, ha.a, ha.spans, nil)
		if err := l.appendLocked(nil, []wal.Entry{{Type: uint8(record.TypeArtifact), Payload: payload}}); err != nil {
			t.Error(err)
		}
	}
	got, err := a.Ingest("t", retry)
	if err != nil {
		t.Fatal(err)
	}
	if got.ArtifactID != earlier.ArtifactID || !got.Replayed {
		t.Fatalf("the retry answered artifact %s (replayed %v), want the earlier copy %s replayed", got.ArtifactID, got.Replayed, earlier.ArtifactID)
	}
	if l.seq != 2 {
		t.Fatalf("the log holds %d messages, want both copies", l.seq)
	}
	check := func(name string, db *DB) {
		t.Helper()
		page, err := db.ListArtifacts("t", "w", ListQuery{Limit: 10})
		if err != nil || len(page.Artifacts) != 1 || page.Artifacts[0].ID != earlier.ArtifactID {
			t.Fatalf("engine %s lists %v (err %v), want the earlier copy alone", name, page.Artifacts, err)
		}
		if _, err := db.Artifact("t", retry.ArtifactID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("engine %s: the retry's artifact: %v, want not found", name, err)
		}
	}
	check("a", a)
	check("b", b)

	// The same with the first copy flushed into a segment on every engine:
	// the key is found there.
	flushed := replicaInput("v", 2)
	flushed.IdempotencyKey = "k"
	flushed.ArtifactID = replicaID("flushed")
	if _, err := b.Ingest("t", flushed); err != nil {
		t.Fatal(err)
	}
	for _, db := range []*DB{a, b} {
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	again := flushed
	again.ArtifactID = replicaID("flushed-again")
	l.mu.Lock()
	ha := mustPrepare(t, a, again)
	err = l.appendLocked(nil, []wal.Entry{{Type: uint8(record.TypeArtifact), Payload: record.AppendArtifact(nil, 0, ha.a, ha.spans, nil)}})
	l.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	for name, db := range map[string]*DB{"a": a, "b": b} {
		page, err := db.ListArtifacts("t", "v", ListQuery{Limit: 10})
		if err != nil || len(page.Artifacts) != 1 || page.Artifacts[0].ID != flushed.ArtifactID {
			t.Fatalf("engine %s lists %v in v (err %v), want the flushed copy alone", name, page.Artifacts, err)
		}
	}
	a.Close()
	b.Close()
	check("a reopened", reopenReplicated(t, dirs[0]))
}

// reopenReplicated opens a closed replicated engine again, without a
// replicator, closed when the test ends.
func reopenReplicated(t *testing.T, dir string) *DB {
	t.Helper()
	db, err := testOpen(dir, Options{Replicated: true, NoEmbedder: true, DisableBackground: true, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustPrepare(t *testing.T, db *DB, in IngestInput) *headArtifact {
	t.Helper()
	ha, err := db.prepare("t", &in, in.IngestedAt)
	if err != nil {
		t.Fatal(err)
	}
	return ha
}
