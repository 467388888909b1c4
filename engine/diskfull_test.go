package engine

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine/manifest"
	"github.com/loci-memory/loci/segment"
	"github.com/loci-memory/loci/vfs"
)

// diskFullOptions keep maintenance in the test's hands and make the WAL
// check for space often.
func diskFullOptions(fsys vfs.FS) Options {
	return Options{FS: fsys, DisableBackground: true, NoEmbedder: true, WALFileSize: 16 << 10,
		WALRetryInterval: time.Millisecond, Logger: quietLogger()}
}

// checkNoGarbage fails if the data directory holds a segment the manifest
// does not list or a temporary file: a failed flush must leave none.
func checkNoGarbage(t *testing.T, dir string) {
	t.Helper()
	m, err := manifest.Read(dir)
	if err != nil || m == nil {
		t.Fatalf("manifest: %v", err)
	}
	listed := map[string]bool{}
	for _, e := range m.Segments {
		listed[segment.FileName(e.ID)] = true
	}
	entries, _ := os.ReadDir(filepath.Join(dir, segmentDir))
	for _, e := range entries {
		if !listed[e.Name()] {
			t.Fatalf("garbage after a failed write: %s", filepath.Join(segmentDir, e.Name()))
		}
	}
	for _, name := range []string{manifest.FileName + ".tmp", controlName + ".tmp"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Fatalf("garbage after a failed write: %s", name)
		}
	}
}

// diskFullRound fills the disk after budget bytes while a workload ingests
// and flushes, then frees it, and checks the engine's contract: failures
// wrap ENOSPC, Health names the cause, nothing unacknowledged is applied,
// no garbage is left, writes resume without a restart, Close succeeds, and
// a reopen holds exactly the acknowledged artifacts.
func diskFullRound(t *testing.T, budget int64, closeFull bool) {
	dir := t.TempDir()
	fsys := vfs.NewInject(vfs.Default)
	db, err := testOpen(dir, diskFullOptions(fsys))
	if err != nil {
		t.Fatal(err)
	}
	acked := map[uuid.UUID][]byte{}
	ingest := func(i int) error {
		in := chat("ws", fmt.Sprintf("disk full note %d: %s", i, strings.Repeat("filler words ", i%40)))
		r, err := db.Ingest("t", in)
		if err == nil {
			acked[r.ArtifactID] = in.Payload
		}
		return err
	}
	for i := range 10 {
		if err := ingest(i); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	fsys.SetSpace(budget)
	var failures int
	for i := 10; failures < 4 && i < 10000; i++ {
		err := ingest(i)
		if err == nil && i%3 == 0 {
			err = db.Flush()
		}
		if err == nil {
			continue
		}
		failures++
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("budget %d: error does not wrap ENOSPC: %v", budget, err)
		}
		checkNoGarbage(t, dir)
	}
	if failures == 0 {
		t.Fatalf("budget %d: the disk never filled", budget)
	}
	if err := ingest(99); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("budget %d: ingest on a full disk: %v", budget, err)
	}
	if h := db.Health(); !errors.Is(h, syscall.ENOSPC) {
		t.Fatalf("budget %d: Health on a full disk = %v, want an error wrapping ENOSPC", budget, h)
	}
	if closeFull {
		if err := db.Close(); err != nil {
			t.Fatalf("budget %d: Close on a full disk: %v", budget, err)
		}
	} else {
		fsys.SetSpace(-1)
		deadline := time.Now().Add(10 * time.Second)
		for db.Health() != nil {
			if time.Now().After(deadline) {
				t.Fatalf("budget %d: Health still %v after space came back", budget, db.Health())
			}
			time.Sleep(time.Millisecond)
		}
		for i := 20000; i < 20010; i++ {
			if err := ingest(i); err != nil {
				t.Fatalf("budget %d: ingest after space came back: %v", budget, err)
			}
		}
		if err := db.Compact(); err != nil {
			t.Fatalf("budget %d: compact after space came back: %v", budget, err)
		}
		if err := db.Close(); err != nil {
			t.Fatalf("budget %d: Close: %v", budget, err)
		}
	}
	rep, err := Verify(dir)
	if err != nil || len(rep.Faults) != 0 {
		t.Fatalf("budget %d: verify: %+v %v", budget, rep, err)
	}
	if rep.Artifacts != len(acked) {
		t.Fatalf("budget %d: %d artifacts on disk, %d acknowledged", budget, rep.Artifacts, len(acked))
	}
	db, err = testOpen(dir, diskFullOptions(vfs.Default))
	if err != nil {
		t.Fatalf("budget %d: reopen: %v", budget, err)
	}
	defer db.Close()
	for id, p := range acked {
		a, err := db.Artifact("t", id)
		if err != nil || !bytes.Equal(a.Payload, p) {
			t.Fatalf("budget %d: acknowledged artifact %s: %v", budget, id, err)
		}
	}
}

// TestDiskFullInjected runs diskFullRound with the disk filling at many
// points: inside WAL batches, segment writes and manifest writes.
func TestDiskFullInjected(t *testing.T) {
	for _, budget := range []int64{0, 1, 40, 300, 1000, 3000, 7000, 12000, 20000, 35000} {
		for _, closeFull := range []bool{false, true} {
			t.Run(fmt.Sprintf("budget=%d,closeFull=%v", budget, closeFull), func(t *testing.T) {
				diskFullRound(t, budget, closeFull)
			})
		}
	}
}

// TestFsyncFailureInjected fails single writes, fsyncs, directory fsyncs and
// renames at many points: the engine returns the error, never acknowledges
// what is not durable, and carries on without a restart.
func TestFsyncFailureInjected(t *testing.T) {
	for _, op := range []vfs.Op{vfs.OpSync, vfs.OpSyncDir, vfs.OpRename, vfs.OpWrite} {
		for nth := 1; nth <= 13; nth += 2 {
			t.Run(fmt.Sprintf("%s#%d", op, nth), func(t *testing.T) {
				dir := t.TempDir()
				fsys := vfs.NewInject(vfs.Default)
				db, err := testOpen(dir, diskFullOptions(fsys))
				if err != nil {
					t.Fatal(err)
				}
				eio := errors.New("injected EIO")
				fsys.FailNth(op, nth, eio)
				acked := map[uuid.UUID][]byte{}
				failed := 0
				for i := range 30 {
					in := chat("ws", fmt.Sprintf("note %d %s", i, strings.Repeat("x ", i*20)))
					r, err := db.Ingest("t", in)
					if err == nil {
						acked[r.ArtifactID] = in.Payload
					} else if !errors.Is(err, eio) {
						t.Fatalf("ingest: %v", err)
					} else {
						failed++
					}
					if i%4 == 3 {
						if err := db.Flush(); err != nil {
							if !errors.Is(err, eio) {
								t.Fatalf("flush: %v", err)
							}
							failed++
						}
					}
				}
				if fsys.Count(op) < nth {
					t.Fatalf("the workload made %d %s operations, fewer than %d", fsys.Count(op), op, nth)
				}
				t.Logf("%d calls failed", failed) // 0 when the failed operation was a cleanup (logged, retried later)
				if err := db.Flush(); err != nil {
					t.Fatalf("flush after the failure: %v", err)
				}
				if err := db.Close(); err != nil {
					t.Fatalf("close: %v", err)
				}
				rep, err := Verify(dir)
				if err != nil || len(rep.Faults) != 0 {
					t.Fatalf("verify: %+v %v", rep, err)
				}
				db, err = testOpen(dir, diskFullOptions(vfs.Default))
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				for id, p := range acked {
					if a, err := db.Artifact("t", id); err != nil || !bytes.Equal(a.Payload, p) {
						t.Fatalf("acknowledged artifact %s: %v", id, err)
					}
				}
				if rep.Artifacts != len(acked) {
					t.Fatalf("%d artifacts on disk, %d acknowledged", rep.Artifacts, len(acked))
				}
			})
		}
	}
}

// TestDiskFullTmpfs fills a real 4 MiB tmpfs, with background maintenance
// on, frees it, and checks that writes resume without a restart.
func TestDiskFullTmpfs(t *testing.T) {
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (needs root and mount permission): %v: %s", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	dir := filepath.Join(mnt, "data")
	db, err := testOpen(dir, Options{NoEmbedder: true, FlushThreshold: 256 << 10, WALFileSize: 256 << 10,
		WALRetryInterval: 10 * time.Millisecond, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	acked := map[uuid.UUID][]byte{}
	filler := filepath.Join(mnt, "filler")
	fill, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	// Fill the disk, leaving a little room for the engine to run into.
	chunk := bytes.Repeat([]byte{'f'}, 64<<10)
	for {
		if _, err := fill.Write(chunk); err != nil {
			break
		}
	}
	fill.Close()
	os.Truncate(filler, max(fileSize(filler)-(512<<10), 0))
	var full error
	for i := 0; i < 100000 && full == nil; i++ {
		in := chat("ws", fmt.Sprintf("tmpfs note %d %s", i, strings.Repeat("payload text ", 50)))
		r, err := db.Ingest("t", in)
		if err != nil {
			full = err
			break
		}
		acked[r.ArtifactID] = in.Payload
	}
	if !errors.Is(full, syscall.ENOSPC) {
		t.Fatalf("filling the tmpfs: %v, want an error wrapping ENOSPC", full)
	}
	if h := db.Health(); h == nil {
		t.Fatal("Health is nil while the disk is full")
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		in := chat("ws", "written once space is back")
		r, err := db.Ingest("t", in)
		if err == nil {
			acked[r.ArtifactID] = in.Payload
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ingest still fails after space came back: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for db.Health() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("Health still %v after space came back", db.Health())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	db, err = testOpen(dir, Options{NoEmbedder: true, DisableBackground: true, Logger: quietLogger()})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	for id, p := range acked {
		if a, err := db.Artifact("t", id); err != nil || !bytes.Equal(a.Payload, p) {
			t.Fatalf("acknowledged artifact %s: %v", id, err)
		}
	}
	t.Logf("%d artifacts acknowledged around a full disk", len(acked))
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}
