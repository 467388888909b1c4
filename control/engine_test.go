package control

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/loci-memory/loci/engine"
)

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
