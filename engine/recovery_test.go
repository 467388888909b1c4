package engine

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-memory/loci/engine/manifest"
	"github.com/loci-memory/loci/segment"
	"github.com/loci-memory/loci/wal"
)

// ingestN ingests n chat artifacts into workspace "ws" of tenant "t" and
// returns them with their inputs.
func ingestN(t *testing.T, db *DB, n int) ([]IngestResult, []IngestInput) {
	t.Helper()
	var res []IngestResult
	var ins []IngestInput
	for i := range n {
		in := chat("ws", fmt.Sprintf("note %d: the build for release %d passed after %d retries", i, i*7, i%5))
		r, err := db.Ingest("t", in)
		if err != nil {
			t.Fatal(err)
		}
		res, ins = append(res, r), append(ins, in)
	}
	return res, ins
}

// checkArtifacts fails unless every artifact, except those listed in
// missing, reads back byte-identical.
func checkArtifacts(t *testing.T, db *DB, res []IngestResult, ins []IngestInput, missing map[int]bool) {
	t.Helper()
	for i, r := range res {
		a, err := db.Artifact("t", r.ArtifactID)
		if missing[i] {
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("artifact %d: %v, want not found", i, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("artifact %d lost: %v", i, err)
		}
		if !bytes.Equal(a.Payload, ins[i].Payload) || a.ContentHash != r.ContentHash {
			t.Fatalf("artifact %d differs", i)
		}
	}
}

// TestWALFlipInLastFile flips one byte at many offsets of the last (and
// only) WAL file. A flip in any record but the last must make Open refuse,
// naming file and offset, and Verify report a fault; a flip in the last
// record is cut as a torn tail and costs that record alone. Before the
// distinction, any flip silently dropped every later record.
func TestWALFlipInLastFile(t *testing.T) {
	base := t.TempDir()
	db := openTest(t, base, Options{DisableBackground: true, NoEmbedder: true})
	res, ins := ingestN(t, db, 60)
	db.Close()
	walPath := filepath.Join(base, walDir, wal.FileName(1))
	var offs []int64
	if err := wal.ScanFile(walPath, func(off int64, _ wal.Record) error { offs = append(offs, off); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(offs) != len(res) {
		t.Fatalf("%d records for %d artifacts", len(offs), len(res))
	}
	data, err := os.ReadFile(walPath)
	if err != nil {
		t.Fatal(err)
	}
	var at []int64
	for _, o := range offs { // around every record boundary
		at = append(at, o, o+1, o+4, o+8, o+9, o+16, o+17)
	}
	rng := rand.New(rand.NewPCG(3, 9))
	for range 60 {
		at = append(at, 8+rng.Int64N(int64(len(data))-8))
	}
	for _, off := range at {
		dir := t.TempDir()
		copyDir(t, base, dir)
		path := filepath.Join(dir, walDir, wal.FileName(1))
		flipByte(t, path, off)
		k := 0
		for i, o := range offs {
			if o <= off {
				k = i
			}
		}
		rep, err := Verify(dir)
		if err != nil {
			t.Fatal(err)
		}
		db, err := testOpen(dir, Options{DisableBackground: true, NoEmbedder: true, Logger: quietLogger()})
		if k == len(offs)-1 {
			if err != nil {
				t.Fatalf("flip at %d (last record): Open: %v", off, err)
			}
			if len(rep.Faults) != 0 {
				t.Fatalf("flip at %d (last record): verify faults %v for a tail open cuts", off, rep.Faults)
			}
			checkArtifacts(t, db, res, ins, map[int]bool{k: true})
			db.Close()
			continue
		}
		var ce *wal.CorruptionError
		if err == nil || !errors.As(err, &ce) || ce.File != path || ce.Offset != offs[k] {
			if db != nil {
				db.Close()
			}
			t.Fatalf("flip at %d (record %d at %d): Open = %v, want a corruption error naming %s and offset %d", off, k, offs[k], err, path, offs[k])
		}
		if !strings.Contains(strings.Join(rep.Faults, "\n"), fmt.Sprintf("%s at offset %d", path, offs[k])) {
			t.Fatalf("flip at %d: verify faults %v warnings %v do not report the damage", off, rep.Faults, rep.Warnings)
		}
	}
}

// firstFlushCrash builds the directory a crash leaves between the first
// segment write and the first manifest naming it: WAL file 1 with every
// record, plus an orphan segment file. withManifest keeps the empty
// manifest written at creation; without it the directory is one an older
// version left.
func firstFlushCrash(t *testing.T, withManifest bool) (string, []IngestResult, []IngestInput) {
	t.Helper()
	dir := t.TempDir()
	db := openTest(t, dir, Options{DisableBackground: true, NoEmbedder: true})
	res, ins := ingestN(t, db, 10)
	db.Close()
	flushed := t.TempDir()
	copyDir(t, dir, flushed)
	db = openTest(t, flushed, Options{DisableBackground: true, NoEmbedder: true})
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	seg, err := os.ReadFile(filepath.Join(flushed, segmentDir, segment.FileName(1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, segmentDir, segment.FileName(1)), seg, 0o644); err != nil {
		t.Fatal(err)
	}
	if !withManifest {
		if err := os.Remove(filepath.Join(dir, manifest.FileName)); err != nil {
			t.Fatal(err)
		}
	}
	return dir, res, ins
}

// TestCrashAtFirstFlush: the directory opens with every artifact, the
// orphan segment is removed, and verify, run before, reports no fault and
// says the orphan would be removed.
func TestCrashAtFirstFlush(t *testing.T) {
	for _, withManifest := range []bool{true, false} {
		t.Run(fmt.Sprintf("manifest=%v", withManifest), func(t *testing.T) {
			dir, res, ins := firstFlushCrash(t, withManifest)
			rep, err := Verify(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Faults) != 0 || !strings.Contains(strings.Join(rep.Warnings, "\n"), segment.FileName(1)+" is not listed in the manifest") {
				t.Fatalf("verify: faults %v, warnings %v", rep.Faults, rep.Warnings)
			}
			db := openTest(t, dir, Options{DisableBackground: true, NoEmbedder: true})
			checkArtifacts(t, db, res, ins, nil)
			if _, err := os.Stat(filepath.Join(dir, segmentDir, segment.FileName(1))); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("orphan segment still there: %v", err)
			}
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			db.Close()
			if rep, err := Verify(dir); err != nil || len(rep.Faults)+len(rep.Warnings) != 0 {
				t.Fatalf("verify after reopen: %+v %v", rep, err)
			}
			db = openTest(t, dir, Options{DisableBackground: true, NoEmbedder: true})
			checkArtifacts(t, db, res, ins, nil)
			db.Close()
		})
	}
}

// TestManifestAtCreation: a new data directory has a manifest before any
// write, and a directory of an older version holding only WAL files opens.
func TestManifestAtCreation(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, Options{DisableBackground: true, NoEmbedder: true})
	if _, err := os.Stat(filepath.Join(dir, manifest.FileName)); err != nil {
		t.Fatalf("new data directory without manifest: %v", err)
	}
	res, ins := ingestN(t, db, 3)
	db.Close()
	os.Remove(filepath.Join(dir, manifest.FileName)) // as an older version left it
	if rep, err := Verify(dir); err != nil || len(rep.Faults) != 0 {
		t.Fatalf("verify of WAL-only directory: %+v %v", rep, err)
	}
	db = openTest(t, dir, Options{DisableBackground: true, NoEmbedder: true})
	checkArtifacts(t, db, res, ins, nil)
	db.Close()
	if _, err := os.Stat(filepath.Join(dir, manifest.FileName)); err != nil {
		t.Fatalf("manifest not written at open: %v", err)
	}
}

// TestLostManifest: segments without a manifest and without the first WAL
// file mean the manifest is lost: open refuses and verify reports a fault.
func TestLostManifest(t *testing.T) {
	dir, _, _ := corruptDir(t)
	os.Remove(filepath.Join(dir, manifest.FileName))
	_, err := testOpen(dir, Options{DisableBackground: true, NoEmbedder: true, Logger: quietLogger()})
	if err == nil || !strings.Contains(err.Error(), "no MANIFEST") {
		t.Fatalf("open: %v", err)
	}
	rep, err := Verify(dir)
	if err != nil || len(rep.Faults) == 0 || !strings.Contains(rep.Faults[0], "no MANIFEST") {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}
