package control

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-memory/loci/engine"
)

// Store is the engine's control state (asserted here: control imports no
// engine).
var _ engine.ControlState = (*Store)(nil)

func openEngine(t *testing.T, dir string, s *Store) *engine.DB {
	t.Helper()
	db, err := engine.Open(dir, engine.Options{DisableBackground: true, NoEmbedder: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Control: s})
	if err != nil {
		t.Fatal(err)
	}
	s.Attach(db.AppendControl)
	return db
}

// TestWithEngine runs the store on the real engine: state made before and
// after a flush (which writes the control snapshot) survives a restart.
func TestWithEngine(t *testing.T) {
	dir := t.TempDir()
	s := New((&fakeClock{}).now)
	db := openEngine(t, dir, s)
	tn, secret := mustRegister(t, s, "ann@example.com", "pro")
	if err := s.ClaimWorkspace(tn.ID, "ws-1"); err != nil {
		t.Fatal(err)
	}
	s.Count(tn.ID, march, UsageDelta{Endpoint: "POST /v1/ingest", Artifacts: 1})
	if _, _, ok := s.Authenticate(secret); !ok {
		t.Fatal("no authentication")
	}
	if err := s.FlushUsage(); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "CONTROL")); err != nil {
		t.Fatalf("no control snapshot after a flush: %v", err)
	}
	jobs, err := s.CreateJobs(tn.ID, "ws-1", []JobInput{{ArtifactID: newUUID(t), Input: []byte("x")}, {ArtifactID: newUUID(t)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetJobStatus(jobs[0].ID, StatusDone, ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateKey(tn.ID); err != nil {
		t.Fatal(err)
	}
	want := s.SnapshotControl()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	r := New(nil)
	db = openEngine(t, dir, r)
	defer db.Close()
	if got := r.SnapshotControl(); !bytes.Equal(got, want) {
		t.Fatal("state after restart differs")
	}
	if _, _, ok := r.Authenticate(secret); !ok {
		t.Fatal("key lost in restart")
	}
	if u := r.Usage(tn.ID, "2025-03"); u.ArtifactsIngested != 1 || u.Requests["POST /v1/ingest"] != 1 {
		t.Fatalf("usage after restart: %+v", u)
	}
	if un := r.Unfinished(); len(un) != 1 || un[0].ID != jobs[1].ID {
		t.Fatalf("Unfinished after restart: %+v", un)
	}
}

// TestPendingInputsOutOfSnapshot checks that pending jobs' inputs live in
// the payloads file, not in CONTROL, that they survive restarts with and
// without flushes in between, and that the payloads file is rewritten only
// when the pending set changed.
func TestPendingInputsOutOfSnapshot(t *testing.T) {
	dir := t.TempDir()
	s := New((&fakeClock{}).now)
	db := openEngine(t, dir, s)
	input := bytes.Repeat([]byte("pending input "), 100)
	jobs, err := s.CreateJobs(DefaultTenant, "ws", []JobInput{{ArtifactID: newUUID(t), Input: input}, {ArtifactID: newUUID(t), Input: []byte("done soon")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	ctl, _ := os.ReadFile(filepath.Join(dir, "CONTROL"))
	payloads, err := os.ReadFile(filepath.Join(dir, "CONTROL_PAYLOADS"))
	if err != nil || !bytes.Contains(payloads, input) || bytes.Contains(ctl, []byte("pending input")) {
		t.Fatalf("after a flush: CONTROL holds inputs %v, payloads file %d bytes (%v)", bytes.Contains(ctl, []byte("pending input")), len(payloads), err)
	}
	st, _ := os.Stat(filepath.Join(dir, "CONTROL_PAYLOADS"))
	s.ClaimWorkspace(DefaultTenant, "ws") // a change that leaves the pending set alone
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if st2, _ := os.Stat(filepath.Join(dir, "CONTROL_PAYLOADS")); !st2.ModTime().Equal(st.ModTime()) || !os.SameFile(st, st2) {
		t.Fatal("payloads file rewritten without a change")
	}
	if err := s.SetJobStatus(jobs[1].ID, StatusDone, ""); err != nil {
		t.Fatal(err)
	}
	for round, flush := range []bool{false, true, false} {
		if flush {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		want := s.Unfinished()
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		s = New(nil)
		db = openEngine(t, dir, s)
		got := s.Unfinished()
		if len(got) != 1 || len(want) != 1 || got[0].ID != jobs[0].ID || !bytes.Equal(got[0].Input, input) {
			t.Fatalf("round %d: unfinished after restart %+v", round, got)
		}
	}
	db.Close()
	// A damaged payloads file is refused by open and reported by verify.
	path := filepath.Join(dir, "CONTROL_PAYLOADS")
	b, _ := os.ReadFile(path)
	b[len(b)-3] ^= 0x40
	os.WriteFile(path, b, 0o644)
	if _, err := engine.Open(dir, engine.Options{DisableBackground: true, NoEmbedder: true, Control: New(nil),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}); err == nil || !strings.Contains(err.Error(), "CONTROL_PAYLOADS") {
		t.Fatalf("open with a damaged payloads file: %v", err)
	}
	if rep, err := engine.Verify(dir); err != nil || len(rep.Faults) == 0 {
		t.Fatalf("verify of a damaged payloads file: %+v, %v", rep, err)
	}
}
