package engine

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine/manifest"
	"github.com/loci-memory/loci/internal/codec/codectest"
	"github.com/loci-memory/loci/segment"
	"github.com/loci-memory/loci/wal"
)

// corruptDir builds a directory with one segment and a WAL tail.
func corruptDir(t *testing.T) (string, []IngestResult, []IngestInput) {
	dir := t.TempDir()
	db := openTest(t, dir, Options{DisableBackground: true})
	var res []IngestResult
	var ins []IngestInput
	for i := 0; i < 12; i++ {
		in := chat("ws", fmt.Sprintf("fact number %d is that the sky is blue %d", i, i*i))
		r, err := db.Ingest("t", in)
		if err != nil {
			t.Fatal(err)
		}
		res, ins = append(res, r), append(ins, in)
		if i == 7 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	db.Close()
	return dir, res, ins
}

func flipByte(t *testing.T, path string, off int64) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0x40
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSegmentCorruptionNeverServesWrongData flips bytes across the segment
// file: Open, Verify or the read fails naming the file, or the read returns
// exactly what was ingested.
func TestSegmentCorruptionNeverServesWrongData(t *testing.T) {
	base, res, ins := corruptDir(t)
	seg := filepath.Join(base, segmentDir, segment.FileName(1))
	st, err := os.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}
	step := max(st.Size()/300, 1)
	var detectedAtOpen, detectedAtRead, detectedByVerify int
	for off := int64(0); off < st.Size(); off += step {
		dir := t.TempDir()
		copyDir(t, base, dir)
		path := filepath.Join(dir, segmentDir, segment.FileName(1))
		flipByte(t, path, off)
		rep, err := Verify(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Faults) == 0 {
			t.Fatalf("offset %d: verify found no fault", off)
		}
		if !strings.Contains(strings.Join(rep.Faults, "\n"), segment.FileName(1)) {
			t.Fatalf("offset %d: verify faults do not name the file: %v", off, rep.Faults)
		}
		detectedByVerify++
		db, err := testOpen(dir, Options{DisableBackground: true, Logger: quietLogger()})
		if err != nil {
			var ce *segment.CorruptionError
			if !errors.As(err, &ce) || !strings.HasSuffix(ce.File, segment.FileName(1)) {
				t.Fatalf("offset %d: open error does not name the segment: %v", off, err)
			}
			detectedAtOpen++
			continue
		}
		for i, r := range res {
			a, err := db.Artifact("t", r.ArtifactID)
			if err != nil {
				if !errors.Is(err, ErrNotFound) {
					detectedAtRead++
				}
				continue
			}
			if !bytes.Equal(a.Payload, ins[i].Payload) || a.ContentHash != r.ContentHash {
				t.Fatalf("offset %d: artifact %d served wrong data", off, i)
			}
		}
		db.Close()
	}
	t.Logf("segment flips: %d detected by verify, %d at open, %d at read", detectedByVerify, detectedAtOpen, detectedAtRead)
}

func TestManifestCorruptionFailsOpen(t *testing.T) {
	dir, _, _ := corruptDir(t)
	flipByte(t, filepath.Join(dir, manifest.FileName), 20)
	_, err := testOpen(dir, Options{DisableBackground: true, Logger: quietLogger()})
	var me *manifest.Error
	if !errors.As(err, &me) || me.Offset == 0 {
		t.Fatalf("open with damaged manifest: %v", err)
	}
	rep, _ := Verify(dir)
	if len(rep.Faults) == 0 {
		t.Fatal("verify missed a damaged manifest")
	}
}

func TestMissingSegmentFailsOpen(t *testing.T) {
	dir, _, _ := corruptDir(t)
	os.Remove(filepath.Join(dir, segmentDir, segment.FileName(1)))
	if _, err := testOpen(dir, Options{DisableBackground: true, Logger: quietLogger()}); err == nil {
		t.Fatal("open succeeded without a listed segment")
	}
	os.Remove(filepath.Join(dir, manifest.FileName))
	os.WriteFile(filepath.Join(dir, segmentDir, segment.FileName(2)), []byte("x"), 0o644)
	if _, err := testOpen(dir, Options{DisableBackground: true, Logger: quietLogger()}); err == nil || !strings.Contains(err.Error(), "no MANIFEST") {
		t.Fatalf("open of segments without manifest: %v", err)
	}
}

// TestOpenNamesFirstBadSegment: segments open in parallel, but of several
// damaged ones the error names the first the manifest lists, every time,
// and the directory opens again once it is repaired.
func TestOpenNamesFirstBadSegment(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, Options{DisableBackground: true})
	for i := range 6 {
		if _, err := db.Ingest("t", chat(fmt.Sprintf("ws%d", i), fmt.Sprintf("fact %d: the sky is blue", i))); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	m, err := manifest.Read(dir)
	if err != nil || len(m.Segments) != 6 {
		t.Fatalf("manifest: %v, %d segments", err, len(m.Segments))
	}
	first, last := m.Segments[2], m.Segments[5]
	for _, e := range []manifest.Segment{last, first} {
		flipByte(t, filepath.Join(dir, segmentDir, segment.FileName(e.ID)), e.Size-3)
	}
	for range 20 {
		_, err := testOpen(dir, Options{DisableBackground: true, Logger: quietLogger()})
		if err == nil || !strings.Contains(err.Error(), segment.FileName(first.ID)) {
			t.Fatalf("open with segments %d and %d damaged: %v", first.ID, last.ID, err)
		}
	}
	for _, e := range []manifest.Segment{last, first} {
		flipByte(t, filepath.Join(dir, segmentDir, segment.FileName(e.ID)), e.Size-3)
	}
	db, err = testOpen(dir, Options{DisableBackground: true, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
}

// TestWALCorruptionInOlderFileFailsOpen: damage before the last WAL file is
// an error naming file and offset; a damaged tail of the last file is cut.
func TestWALCorruption(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, Options{DisableBackground: true, WALFileSize: 2048})
	var ids []uuid.UUID
	for i := 0; i < 20; i++ {
		r, err := db.Ingest("t", chat("ws", fmt.Sprintf("message %d with some words to fill the log", i)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ArtifactID)
	}
	db.Close()
	files, _ := wal.Files(filepath.Join(dir, walDir))
	if len(files) < 3 {
		t.Fatalf("want several wal files, got %v", files)
	}
	last := filepath.Join(dir, walDir, wal.FileName(files[len(files)-1]))
	first := filepath.Join(dir, walDir, wal.FileName(files[0]))

	// Damage in the last file: truncated there, everything before survives.
	tailDir := t.TempDir()
	copyDir(t, dir, tailDir)
	st, _ := os.Stat(last)
	flipByte(t, filepath.Join(tailDir, walDir, filepath.Base(last)), st.Size()-3)
	db = openTest(t, tailDir, Options{DisableBackground: true})
	if _, err := db.Artifact("t", ids[len(ids)-1]); !errors.Is(err, ErrNotFound) {
		t.Fatalf("record with damaged tail served: %v", err)
	}
	if _, err := db.Artifact("t", ids[0]); err != nil {
		t.Fatalf("earlier record lost: %v", err)
	}
	db.Close()

	// Damage in an older file: Open refuses, naming file and offset.
	flipByte(t, first, 30)
	_, err := testOpen(dir, Options{DisableBackground: true, Logger: quietLogger()})
	var ce *wal.CorruptionError
	if !errors.As(err, &ce) || filepath.Base(ce.File) != wal.FileName(files[0]) {
		t.Fatalf("open with damaged older wal file: %v", err)
	}
	rep, _ := Verify(dir)
	if len(rep.Faults) == 0 {
		t.Fatal("verify missed a damaged wal file")
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if info.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if info.Name() == "LOCK" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRecordDecodersMarkCorruption feeds decoders the engine calls (receipt
// records and sections as the engine decodes them, the MANIFEST, framed
// files; engine/record tests the record codecs) damaged bytes: each error
// must match codec.ErrCorrupt, so that a caller tells damage from an I/O
// failure with one errors.Is.
func TestRecordDecodersMarkCorruption(t *testing.T) {
	junk := bytes.Repeat([]byte{0xff}, 40)
	codectest.ExpectCorrupt(t, []codectest.Case{
		{Name: "manifest", Decode: func() error { _, err := manifest.Decode("MANIFEST", junk); return err }},
		{Name: "control file", Decode: func() error { _, err := decodeControlFile("CONTROL", junk); return err }},
		{Name: "receipt record", Decode: func() error { _, err := decodeReceiptRecord(junk, true); return err }},
		{Name: "receipts section", Decode: func() error { _, err := decodeReceiptSection(junk); return err }},
	})
}
