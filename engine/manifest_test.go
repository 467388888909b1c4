package engine

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/loci-memory/loci/vfs"
)

func sampleManifest() *manifest {
	return &manifest{NextSegmentID: 9, Checkpoint: 4, LastSeq: 12345,
		Segments:   []segmentEntry{{ID: 3, Size: 4096, MinSeq: 1, MaxSeq: 100}, {ID: 8, Size: 1 << 20, MinSeq: 101, MaxSeq: 12000}},
		Tombstones: []tombstone{{Tenant: "t", Workspace: "w", Seq: 50}, {Tenant: "a", Workspace: "é", Seq: 7}},
		Versions:   []wsVersion{{Tenant: "t", Workspace: "w", Seq: 12345, Newest: -5}, {Tenant: "a", Workspace: "b", Seq: 9, Newest: 1700000000000000}}}
}

func TestManifestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	m := sampleManifest()
	if err := writeManifest(vfs.Default, dir, m); err != nil {
		t.Fatal(err)
	}
	got, err := readManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := *m
	want.Tombstones = []tombstone{{Tenant: "a", Workspace: "é", Seq: 7}, {Tenant: "t", Workspace: "w", Seq: 50}} // sorted on write
	want.Versions = []wsVersion{{Tenant: "a", Workspace: "b", Seq: 9, Newest: 1700000000000000}, {Tenant: "t", Workspace: "w", Seq: 12345, Newest: -5}}
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, manifestName+".tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("temp file left behind")
	}
	if m, err := readManifest(t.TempDir()); m != nil || err != nil {
		t.Fatalf("missing manifest: %v %v", m, err)
	}
}

// TestManifestCorruption flips every bit and cuts at every length: each
// damaged file is rejected with a ManifestError naming file and offset.
func TestManifestCorruption(t *testing.T) {
	good := sampleManifest().encode()
	check := func(what string, b []byte) {
		t.Helper()
		_, err := decodeManifest("MANIFEST", b)
		var me *ManifestError
		if !errors.As(err, &me) {
			t.Fatalf("%s: got %v, want *ManifestError", what, err)
		}
		if me.File != "MANIFEST" || me.Offset < 0 || me.Offset > int64(len(b)) {
			t.Fatalf("%s: bad location in %v", what, err)
		}
	}
	for i := 0; i < len(good)*8; i++ {
		b := append([]byte(nil), good...)
		b[i/8] ^= 1 << (i % 8)
		check("bit flip", b)
	}
	for n := 0; n < len(good); n++ {
		check("truncation", good[:n])
	}
	check("extra byte", append(append([]byte(nil), good...), 0))
}
