package backup

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/engine/manifest"
	"github.com/loci-memory/loci/internal/crashtest"
	"github.com/loci-memory/loci/vfs"
)

// TestStrictCrashBackupRestore crashes a backup, then a restore of it, at
// every file system operation, on a file system that loses what is not
// fsynced. Whatever the crash point, the backup is either refused as
// incomplete or restores every artifact, and the restored directory either
// has no MANIFEST (Open refuses its files or starts empty) or opens with
// every artifact byte-identical: never readable but wrong.
func TestStrictCrashBackupRestore(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	db, err := engine.Open(src, strictOptions(vfs.Default))
	if err != nil {
		t.Fatal(err)
	}
	acked := map[uuid.UUID][]byte{}
	for i := range 12 {
		in := chat(fmt.Sprintf("note %d before the backup", i))
		r, err := db.Ingest("t", in)
		if err != nil {
			t.Fatal(err)
		}
		acked[r.ArtifactID] = in.Payload
		if i == 7 { // a segment, and a WAL tail after it
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	db.Close()

	run := func(fsys vfs.FS, root string) error {
		if _, err := Take(src, filepath.Join(root, "b"), Options{FS: fsys}); err != nil {
			return err
		}
		return RestoreFS(fsys, filepath.Join(root, "b"), filepath.Join(root, "r"))
	}
	root := t.TempDir()
	s, err := vfs.NewStrict(root)
	if err != nil {
		t.Fatal(err)
	}
	count := &crashtest.FS{Strict: s}
	if err := run(count, root); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d file system operations; crashing before each", count.Ops())
	for n := 1; n <= count.Ops(); n++ {
		root := t.TempDir()
		s, err := vfs.NewStrict(root)
		if err != nil {
			t.Fatal(err)
		}
		c := &crashtest.FS{Strict: s, N: n}
		if err := run(c, root); err == nil || !c.Crashed() {
			t.Fatalf("crash at op %d: the run ended before it (%v)", n, err)
		}
		s.Restart()
		if _, err := ReadInfo(filepath.Join(root, "b")); err == nil {
			again := filepath.Join(t.TempDir(), "again")
			if _, err := restoreVerify(filepath.Join(root, "b"), again); err != nil {
				t.Fatalf("crash at op %d: a backup marked complete does not restore: %v", n, err)
			}
			checkRestored(t, n, again, acked)
		}
		if _, err := os.Stat(filepath.Join(root, "r", manifest.FileName)); err == nil {
			checkRestored(t, n, filepath.Join(root, "r"), acked)
		}
	}
}

// checkRestored opens a restored directory and checks every artifact.
func checkRestored(t *testing.T, n int, dir string, acked map[uuid.UUID][]byte) {
	t.Helper()
	db, err := engine.Open(dir, strictOptions(vfs.Default))
	if err != nil {
		t.Fatalf("crash at op %d: %s has a manifest but does not open: %v", n, dir, err)
	}
	defer db.Close()
	for id, payload := range acked {
		a, err := db.Artifact("t", id)
		if err != nil || !bytes.Equal(a.Payload, payload) {
			t.Fatalf("crash at op %d: %s: artifact %s lost or changed: %v", n, dir, id, err)
		}
	}
}

// strictOptions are those of the engine's strict crash tests: small WAL
// files, so the source has several.
func strictOptions(fsys vfs.FS) engine.Options {
	return engine.Options{FS: fsys, DisableBackground: true, NoEmbedder: true, WALFileSize: 8 << 10,
		CompactionMinSegments: 2, Logger: quietLogger()}
}

func chat(content string) engine.IngestInput {
	return engine.IngestInput{Workspace: "main", ActorID: "alice", Type: "chat_turn",
		Payload:   []byte(fmt.Sprintf(`{"role":"user","content":%q}`, content)),
		Timestamp: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}
