package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/internal/crashtest"
	"github.com/loci-memory/loci/segment"
	"github.com/loci-memory/loci/vfs"
)

const firstFlushChildEnv = "LOCI_FIRST_FLUSH_CHILD_DIR"

// stallAfterSegment is the OS file system, except that once a segment file
// has been renamed into place it says so and stops the process's file
// operations for good: the parent kills it there, between the first segment
// and the manifest naming it.
type stallAfterSegment struct{ vfs.FS }

func (s stallAfterSegment) Rename(oldname, newname string) error {
	err := s.FS.Rename(oldname, newname)
	if err == nil && strings.HasSuffix(newname, ".seg") {
		fmt.Println("segment-renamed")
		time.Sleep(time.Hour) // a sleeper, unlike select{}, never trips the deadlock detector

	}
	return err
}

// firstFlushChild ingests, acknowledging each artifact, then flushes into
// stallAfterSegment.
func firstFlushChild(dir string) {
	db, err := testOpen(dir, Options{FS: stallAfterSegment{vfs.Default}, DisableBackground: true, NoEmbedder: true, Logger: quietLogger()})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	fmt.Println("ready")
	for i := range 20 {
		r, err := db.Ingest("t", chat("ws", fmt.Sprintf("first flush note %d", i)))
		if err != nil {
			fmt.Println("error", err)
			os.Exit(3)
		}
		fmt.Println("ack", r.ArtifactID)
	}
	db.Flush()
	fmt.Println("error flush returned")
	os.Exit(3)
}

// TestKillAtFirstFlush kills a process (SIGKILL) right after its first
// segment reached its final name and before any manifest named it. The
// directory must open with every acknowledged artifact, the orphan removed,
// and verify, run first, must agree: no fault, the orphan reported as
// removed at the next open.
func TestKillAtFirstFlush(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test starts a child process")
	}
	dir := t.TempDir()
	var acked []uuid.UUID
	stalled := false
	crashtest.Round(t, []string{firstFlushChildEnv + "=" + dir}, 2*time.Second, func(l string) {
		f := strings.Fields(l)
		switch {
		case len(f) == 2 && f[0] == "ack":
			acked = append(acked, uuid.MustParse(f[1]))
		case l == "segment-renamed":
			stalled = true
		default:
			t.Fatalf("child: %s", l)
		}
	})
	if !stalled || len(acked) != 20 {
		t.Fatalf("child killed before the segment rename (stalled %v, %d acknowledged)", stalled, len(acked))
	}
	orphan := filepath.Join(dir, segmentDir, segment.FileName(1))
	if _, err := os.Stat(orphan); err != nil {
		t.Fatalf("no segment left by the first flush: %v", err)
	}
	rep, err := Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Faults) != 0 || !strings.Contains(strings.Join(rep.Warnings, "\n"), "would be removed at next open") {
		t.Fatalf("verify: faults %v, warnings %v", rep.Faults, rep.Warnings)
	}
	db := openTest(t, dir, Options{DisableBackground: true, NoEmbedder: true})
	defer db.Close()
	for _, id := range acked {
		if _, err := db.Artifact("t", id); err != nil {
			t.Fatalf("acknowledged artifact %s: %v", id, err)
		}
	}
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Fatalf("orphan segment not removed at open: %v", err)
	}
}
