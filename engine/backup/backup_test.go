package backup

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/engine/manifest"
	"github.com/loci-memory/loci/engine/verify"
)

// Backups taken while writers ingest and flushes and compactions run as
// fast as they can hold every artifact acknowledged before each backup
// began, verify clean, and open; Restore brings them back the same.
func TestBackupRacesMaintenance(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	db, err := engine.Open(src, engine.Options{FlushThreshold: 32 << 10, CompactionMinSegments: 2, NoEmbedder: true, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mu sync.Mutex
	var acked []uuid.UUID
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				res, err := db.Ingest("t", engine.IngestInput{Workspace: "ws", ActorID: "a", Type: "note",
					Payload: []byte(fmt.Sprintf(`{"content":"writer %d note %d about the %s deploy window"}`, w, i, strings.Repeat("quarterly ", 20)))})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked = append(acked, res.ArtifactID)
				mu.Unlock()
			}
		}(w)
	}
	wg.Add(1)
	go func() { // maintenance as often as it can run
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := db.Flush(); err != nil {
				t.Error(err)
			}
			if err := db.Compact(); err != nil {
				t.Error(err)
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()

	raced := 0
	for round := 0; round < 6; round++ {
		time.Sleep(100 * time.Millisecond)
		mu.Lock()
		before := slices.Clone(acked)
		mu.Unlock()
		dst := filepath.Join(t.TempDir(), "backup")
		info, err := Take(src, dst, Options{Link: round%2 == 1})
		if err != nil {
			t.Fatal(err)
		}
		raced += info.Attempts - 1
		restored := filepath.Join(t.TempDir(), "restored")
		r, err := restoreVerify(dst, restored)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Faults) > 0 {
			t.Fatalf("round %d: verify of the restored backup: %v", round, r.Faults)
		}
		got, err := engine.Open(restored, engine.Options{DisableBackground: true, NoEmbedder: true, Logger: quietLogger()})
		if err != nil {
			t.Fatalf("round %d: open restored: %v", round, err)
		}
		for _, id := range before {
			if _, err := got.Artifact("t", id); err != nil {
				t.Fatalf("round %d: artifact %s acknowledged before the backup: %v (%d acknowledged, backup %+v)", round, id, err, len(before), info)
			}
		}
		got.Close()
		t.Logf("round %d: %d acknowledged before, %d segments, %d wal files, %d attempts", round, len(before), info.Segments, info.WALFiles, info.Attempts)
	}
	st := db.Stats()
	t.Logf("source: %d segments; attempts lost to maintenance: %d", st.Segments, raced)
}

// Backup and Restore refuse what they cannot do, saying why.
func TestBackupRestoreRefusals(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	db, err := engine.Open(src, engine.Options{NoEmbedder: true, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Ingest("t", engine.IngestInput{Workspace: "ws", ActorID: "a", Type: "note", Payload: []byte(`"x"`)}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	good := filepath.Join(t.TempDir(), "good")
	if _, err := Take(src, good, Options{}); err != nil {
		t.Fatal(err)
	}
	nonEmpty := t.TempDir()
	os.WriteFile(filepath.Join(nonEmpty, "keep"), []byte("x"), 0o644)
	incomplete := filepath.Join(t.TempDir(), "incomplete")
	os.MkdirAll(incomplete, 0o755)
	notData := t.TempDir()
	for _, tc := range []struct {
		name string
		run  func() error
		want string
	}{
		{"backup of a missing directory", func() error {
			_, err := Take(filepath.Join(src, "nope"), filepath.Join(t.TempDir(), "b"), Options{})
			return err
		}, "no such file"},
		{"backup of a directory without a manifest", func() error { _, err := Take(notData, filepath.Join(t.TempDir(), "b"), Options{}); return err }, "not a Loci data directory"},
		{"backup into a non-empty directory", func() error { _, err := Take(src, nonEmpty, Options{}); return err }, "is not empty"},
		{"restore into a non-empty directory", func() error { _, err := restoreVerify(good, nonEmpty); return err }, "is not empty"},
		{"restore from a missing directory", func() error {
			_, err := restoreVerify(filepath.Join(src, "nope"), filepath.Join(t.TempDir(), "r"))
			return err
		}, "no such file"},
		{"restore of an incomplete backup", func() error { _, err := restoreVerify(incomplete, filepath.Join(t.TempDir(), "r")); return err }, "not a complete Loci backup"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// A damaged file in the backup is found by Restore.
	seg, _ := filepath.Glob(filepath.Join(good, manifest.WALDir, "*.wal"))
	b, _ := os.ReadFile(seg[0])
	b[len(b)-1] ^= 0xff
	os.WriteFile(seg[0], b, 0o644)
	if _, err := restoreVerify(good, filepath.Join(t.TempDir(), "r")); err == nil || !strings.Contains(err.Error(), "the backup is damaged") {
		t.Fatalf("restore of a damaged backup: %v", err)
	}
}

// A compaction and a flush between reading the manifest and opening its
// files (the segments it names deleted, the WAL checkpoint moved) make the
// attempt start over, and the backup taken then is complete.
func TestBackupRetriesAfterCompaction(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	db, err := engine.Open(src, engine.Options{DisableBackground: true, CompactionMinSegments: 2, NoEmbedder: true, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ids []uuid.UUID
	ingest := func(n int) {
		for i := 0; i < n; i++ {
			res, err := db.Ingest("t", engine.IngestInput{Workspace: "ws", ActorID: "a", Type: "note",
				Payload: []byte(fmt.Sprintf(`{"content":"note %d"}`, len(ids)))})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, res.ArtifactID)
		}
	}
	for range 3 {
		ingest(10)
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	ingest(5) // in the WAL only
	calls := 0
	manifestRead = func() {
		if calls++; calls == 1 {
			ingest(5)
			if err := db.Compact(); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { manifestRead = nil }()
	dst := filepath.Join(t.TempDir(), "backup")
	info, err := Take(src, dst, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Attempts != 2 {
		t.Fatalf("attempts %d, want 2 (the first raced the compaction)", info.Attempts)
	}
	got, err := engine.Open(dst, engine.Options{DisableBackground: true, NoEmbedder: true, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	for _, id := range ids {
		if _, err := got.Artifact("t", id); err != nil {
			t.Fatalf("artifact %s: %v", id, err)
		}
	}
}

// A record still being written at the end of the last WAL file is cut from
// the copy, as replay would cut it, so the backup verifies without warnings.
func TestBackupCutsTornTail(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	db, err := engine.Open(src, engine.Options{DisableBackground: true, NoEmbedder: true, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.Ingest("t", engine.IngestInput{Workspace: "ws", ActorID: "a", Type: "note", Payload: []byte(`"kept"`)})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	files, _ := filepath.Glob(filepath.Join(src, manifest.WALDir, "*.wal"))
	f, err := os.OpenFile(files[len(files)-1], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{40, 0, 0, 0, 1, 2, 3, 4, 1, 9}) // a frame header cut short
	f.Close()
	dst := filepath.Join(t.TempDir(), "backup")
	info, err := Take(src, dst, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if info.WALCut != 10 {
		t.Fatalf("cut %d bytes, want 10", info.WALCut)
	}
	r, err := verify.Dir(dst)
	if err != nil || len(r.Faults)+len(r.Warnings) > 0 || r.Artifacts != 1 {
		t.Fatalf("verify: %v %+v", err, r)
	}
	got, err := engine.Open(dst, engine.Options{DisableBackground: true, NoEmbedder: true, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	if _, err := got.Artifact("t", res.ArtifactID); err != nil {
		t.Fatal(err)
	}
}

// restoreVerify is Restore and then verify.Dir of the result, as loci
// restore runs them.
func restoreVerify(from, dir string) (*verify.Report, error) {
	if err := Restore(from, dir); err != nil {
		return nil, err
	}
	r, err := verify.Dir(dir)
	if err != nil {
		return nil, fmt.Errorf("restore: verify: %w", err)
	}
	return r, nil
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// countRows is a TokenRower of one 4-byte row per word that counts its
// calls.
type countRows struct{ calls atomic.Int64 }

func (r *countRows) Model() string { return "count/rows" }
func (r *countRows) RowBytes() int { return 4 }
func (r *countRows) Rows(text string) ([]byte, error) {
	r.calls.Add(1)
	var b []byte
	for _, w := range strings.Fields(text) {
		b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE([]byte(w)))
	}
	return b, nil
}

// A backup carries the segments' token-row files, copied or linked, so a
// server opened on the restored directory computes none of them again; a
// segment whose file the source lacked is left to the worker.
func TestBackupTokenRows(t *testing.T) {
	for _, link := range []bool{false, true} {
		t.Run(fmt.Sprintf("link=%v", link), func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "src")
			rows := &countRows{}
			opts := engine.Options{TokenRows: rows, DisableBackground: true, NoEmbedder: true, Logger: quietLogger()}
			db, err := engine.Open(src, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for seg := range 3 {
				for i := range 5 {
					if _, err := db.Ingest("t", engine.IngestInput{Workspace: "ws", ActorID: "a", Type: "note",
						Payload: []byte(fmt.Sprintf(`{"content":"segment %d note %d about the harbour crane"}`, seg, i))}); err != nil {
						t.Fatal(err)
					}
				}
				if err := db.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			if n, err := db.BuildTokenRows(); err != nil || n != 3 {
				t.Fatalf("BuildTokenRows: %d files, %v; want 3", n, err)
			}
			dst := filepath.Join(t.TempDir(), "backup")
			info, err := Take(src, dst, Options{Link: link})
			if err != nil {
				t.Fatal(err)
			}
			if info.TokenRowFiles != 3 {
				t.Fatalf("token_row_files %d, want 3", info.TokenRowFiles)
			}
			linked := 0
			for _, f := range info.Files {
				if strings.HasPrefix(f.Path, manifest.TokenRowDir+string(filepath.Separator)) && f.Linked {
					linked++
				}
			}
			if link && linked != 3 || !link && linked != 0 {
				t.Fatalf("%d token-row files linked with link=%v", linked, link)
			}
			check := func(restored string, pending int) {
				t.Helper()
				r, err := restoreVerify(dst, restored)
				if err != nil {
					t.Fatal(err)
				}
				if len(r.Faults) > 0 {
					t.Fatalf("verify: %v", r.Faults)
				}
				again := &countRows{}
				o := opts
				o.TokenRows = again
				got, err := engine.Open(restored, o)
				if err != nil {
					t.Fatal(err)
				}
				defer got.Close()
				if p := got.TokenRowsPending(); p != pending {
					t.Fatalf("restored: %d segments without token rows, want %d", p, pending)
				}
				n, err := got.BuildTokenRows()
				if err != nil || n != pending {
					t.Fatalf("restored: BuildTokenRows wrote %d files (%v), want %d", n, err, pending)
				}
				if c := again.calls.Load(); pending == 0 && c != 0 {
					t.Fatalf("restored: %d texts computed again", c)
				}
			}
			check(filepath.Join(t.TempDir(), "restored"), 0)

			// A segment without its file: the backup holds the others.
			files, err := filepath.Glob(filepath.Join(src, manifest.TokenRowDir, "*", "*.rows"))
			if err != nil || len(files) != 3 {
				t.Fatalf("source token-row files %v (%v)", files, err)
			}
			if err := os.Remove(files[0]); err != nil {
				t.Fatal(err)
			}
			dst = filepath.Join(t.TempDir(), "backup2")
			if info, err = Take(src, dst, Options{Link: link}); err != nil || info.TokenRowFiles != 2 {
				t.Fatalf("backup without one file: %+v, %v", info, err)
			}
			check(filepath.Join(t.TempDir(), "restored2"), 1)
		})
	}
}
