package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
)

// logControl is a ControlState that remembers every record it applied; its
// snapshot is the applied seq followed by the records.
type logControl struct {
	mu      sync.Mutex
	applied uint64
	recs    []string // "kind:payload"
}

func (c *logControl) ApplyControl(kind uint8, seq uint64, payload []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if seq <= c.applied {
		return nil
	}
	if string(payload) == "bad" {
		return errors.New("malformed")
	}
	c.applied = seq
	c.recs = append(c.recs, fmt.Sprintf("%d:%s", kind, payload))
	return nil
}

func (c *logControl) SnapshotControl() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := binary.AppendUvarint(nil, c.applied)
	return append(b, strings.Join(c.recs, ",")...)
}

func (c *logControl) RestoreControl(b []byte) error {
	seq, n := binary.Uvarint(b)
	if n <= 0 {
		return errors.New("bad snapshot")
	}
	c.applied = seq
	c.recs = nil
	if len(b) > n {
		c.recs = strings.Split(string(b[n:]), ",")
	}
	return nil
}

func (c *logControl) state() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.recs, ",")
}

func openControl(t *testing.T, dir string, c ControlState) *DB {
	t.Helper()
	db, err := testOpen(dir, Options{DisableBackground: true, NoEmbedder: true, Logger: quietLogger(), Control: c})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestControlRecordsSurviveRestartAndFlush(t *testing.T) {
	dir := t.TempDir()
	c := &logControl{}
	db := openControl(t, dir, c)
	for i := 0; i < 3; i++ {
		if err := db.AppendControl(uint8(i), []byte(fmt.Sprintf("r%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.state(); got != "0:r0,1:r1,2:r2" {
		t.Fatalf("applied before return: %q", got)
	}
	// Restart from the WAL alone.
	db.Close()
	c2 := &logControl{}
	db = openControl(t, dir, c2)
	if got := c2.state(); got != "0:r0,1:r1,2:r2" {
		t.Fatalf("after replay: %q", got)
	}
	// A flush snapshots the state and checkpoints the WAL away.
	if err := db.AppendControl(3, []byte("r3")); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, controlName)); err != nil {
		t.Fatalf("no control snapshot after flush: %v", err)
	}
	if err := db.AppendControl(4, []byte("r4")); err != nil {
		t.Fatal(err)
	}
	db.Close()
	c3 := &logControl{}
	db = openControl(t, dir, c3)
	defer db.Close()
	if got := c3.state(); got != "0:r0,1:r1,2:r2,3:r3,4:r4" {
		t.Fatalf("after snapshot + replay: %q", got)
	}
	rep, err := verifyClosed(t, db, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Faults) != 0 || rep.ControlBytes == 0 {
		t.Fatalf("verify: %+v", rep)
	}
}

// verifyClosed closes db and verifies dir.
func verifyClosed(t *testing.T, db *DB, dir string) (*VerifyReport, error) {
	t.Helper()
	db.Close()
	return Verify(dir)
}

// A snapshot newer than the manifest (crash between the two writes) must
// not apply records twice: replay skips seqs the snapshot covers.
func TestControlSnapshotNewerThanCheckpoint(t *testing.T) {
	dir := t.TempDir()
	c := &logControl{}
	db := openControl(t, dir, c)
	db.AppendControl(0, []byte("a"))
	db.AppendControl(0, []byte("b"))
	// Write a snapshot by hand without moving the checkpoint, as if the
	// manifest write that follows it never happened.
	if err := db.writeControlSnapshot(c.SnapshotControl()); err != nil {
		t.Fatal(err)
	}
	db.Close()
	c2 := &logControl{}
	db = openControl(t, dir, c2)
	defer db.Close()
	if got := c2.state(); got != "0:a,0:b" {
		t.Fatalf("state %q, want each record once", got)
	}
}

func TestControlWithoutControlState(t *testing.T) {
	dir := t.TempDir()
	db, err := testOpen(dir, Options{DisableBackground: true, NoEmbedder: true, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.AppendControl(0, []byte("x")); !errors.Is(err, ErrNoControl) {
		t.Fatalf("append without control state: %v", err)
	}
	db.Close()

	// A WAL holding control records refuses to open without a control state,
	// and so does a snapshot: flushing without it would lose them.
	db = openControl(t, dir, &logControl{})
	db.AppendControl(0, []byte("x"))
	db.Close()
	if _, err := testOpen(dir, Options{DisableBackground: true, NoEmbedder: true, Logger: quietLogger()}); !errors.Is(err, ErrNoControl) {
		t.Fatalf("open with control records in the WAL: %v", err)
	}
	db = openControl(t, dir, &logControl{})
	db.Flush()
	db.Close()
	if _, err := testOpen(dir, Options{DisableBackground: true, NoEmbedder: true, Logger: quietLogger()}); !errors.Is(err, ErrNoControl) {
		t.Fatalf("open with a control snapshot: %v", err)
	}
}

func TestControlAppendErrors(t *testing.T) {
	db := openControl(t, t.TempDir(), &logControl{})
	defer db.Close()
	if err := db.AppendControl(MaxControlKind+1, []byte("x")); err == nil {
		t.Fatal("kind out of range accepted")
	}
	if err := db.AppendControl(0, []byte("bad")); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("apply error not returned: %v", err)
	}
}

func TestControlFileCorruption(t *testing.T) {
	dir := t.TempDir()
	db := openControl(t, dir, &logControl{})
	db.AppendControl(1, []byte("payload"))
	db.Flush()
	db.Close()
	path := filepath.Join(dir, controlName)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(orig); off++ {
		b := append([]byte(nil), orig...)
		b[off] ^= 0x10
		os.WriteFile(path, b, 0o644)
		_, err := testOpen(dir, Options{DisableBackground: true, NoEmbedder: true, Logger: quietLogger(), Control: &logControl{}})
		if err == nil || !strings.Contains(err.Error(), controlName) {
			t.Fatalf("flip at %d: open error %v, want one naming %s", off, err, controlName)
		}
		rep, err := Verify(dir)
		if err != nil || len(rep.Faults) == 0 {
			t.Fatalf("flip at %d: verify found nothing (%v)", off, err)
		}
	}
	os.WriteFile(path, orig[:5], 0o644)
	if _, err := testOpen(dir, Options{DisableBackground: true, NoEmbedder: true, Logger: quietLogger(), Control: &logControl{}}); err == nil {
		t.Fatal("truncated control file accepted")
	}
}

func TestIngestWithAssignedID(t *testing.T) {
	db := openControl(t, t.TempDir(), &logControl{})
	defer db.Close()
	id := uuid.New()
	in := IngestInput{Workspace: "w", ActorID: "a", Type: "note", Payload: []byte(`{"content":"assigned ids"}`), ArtifactID: id}
	r1, err := db.Ingest("t", in)
	if err != nil {
		t.Fatal(err)
	}
	if r1.ArtifactID != id || r1.Replayed {
		t.Fatalf("first ingest: %+v", r1)
	}
	r2, err := db.Ingest("t", in)
	if err != nil {
		t.Fatal(err)
	}
	if r2.ArtifactID != id || !r2.Replayed || len(r2.SpanIDs) != len(r1.SpanIDs) || r2.SpanIDs[0] != r1.SpanIDs[0] {
		t.Fatalf("resumed ingest stored again: %+v vs %+v", r2, r1)
	}
	a, _, err := db.WorkspaceContent("t", "w")
	if err != nil || len(a) != 1 {
		t.Fatalf("workspace holds %d artifacts (%v), want 1", len(a), err)
	}
}
