package manifest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/loci-memory/loci/engine/record"
	"github.com/loci-memory/loci/internal/codec"
	"github.com/loci-memory/loci/vfs"
)

func sampleManifest() *Manifest {
	return &Manifest{NextSegmentID: 9, Checkpoint: 4, LastSeq: 12345,
		Segments:   []Segment{{ID: 3, Size: 4096, MinSeq: 1, MaxSeq: 100}, {ID: 8, Size: 1 << 20, MinSeq: 101, MaxSeq: 12000}},
		Tombstones: []Tombstone{{Tenant: "t", Workspace: "w", Seq: 50}, {Tenant: "a", Workspace: "é", Seq: 7}},
		Versions:   []DataVersion{{Tenant: "t", Workspace: "w", Seq: 12345, Newest: -5}, {Tenant: "a", Workspace: "b", Seq: 9, Newest: 1700000000000000}}}
}

func TestManifestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	m := sampleManifest()
	if err := Write(vfs.Default, dir, m); err != nil {
		t.Fatal(err)
	}
	got, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := *m
	want.Tombstones = []Tombstone{{Tenant: "a", Workspace: "é", Seq: 7}, {Tenant: "t", Workspace: "w", Seq: 50}} // sorted on write
	want.Versions = []DataVersion{{Tenant: "a", Workspace: "b", Seq: 9, Newest: 1700000000000000}, {Tenant: "t", Workspace: "w", Seq: 12345, Newest: -5}}
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, FileName+".tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("temp file left behind")
	}
	if m, err := Read(t.TempDir()); m != nil || err != nil {
		t.Fatalf("missing manifest: %v %v", m, err)
	}
}

// TestManifestCorruption flips every bit and cuts at every length: each
// damaged file is rejected with a Error naming file and offset.
func TestManifestCorruption(t *testing.T) {
	good := sampleManifest().Encode()
	check := func(what string, b []byte) {
		t.Helper()
		_, err := Decode("MANIFEST", b)
		var me *Error
		if !errors.As(err, &me) {
			t.Fatalf("%s: got %v, want *Error", what, err)
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

// TestManifestRetention: version 4 round-trips the retention entries, sorted;
// a version 3 manifest (no retention section) still reads.
func TestManifestRetention(t *testing.T) {
	m := sampleManifest()
	m.Retention = []Retention{
		{Tenant: "t", Workspace: "w", Days: 30, Cutoff: -7},
		{Tenant: "a", Workspace: "b", Days: 1, Cutoff: math.MinInt64},
	}
	got, err := Decode("m", m.Encode())
	if err != nil {
		t.Fatal(err)
	}
	want := []Retention{m.Retention[1], m.Retention[0]}
	if !reflect.DeepEqual(got.Retention, want) {
		t.Fatalf("retention %+v, want %+v", got.Retention, want)
	}

	// A version 3 file: drop the empty retention section, patch the frame.
	m.Retention = nil
	b := m.Encode()
	if b[len(b)-5] != 0 {
		t.Fatalf("empty retention section is % x", b[len(b)-5:len(b)-4])
	}
	v3 := slices.Clone(b[:len(b)-5])
	binary.LittleEndian.PutUint32(v3[8:], 3)
	binary.LittleEndian.PutUint32(v3[12:], uint32(len(v3)-16))
	v3 = binary.LittleEndian.AppendUint32(v3, crc32.Checksum(v3[8:], castagnoli))
	if got, err := Decode("m", v3); err != nil || got.Retention != nil || len(got.Versions) != 2 {
		t.Fatalf("version 3: %+v %v", got, err)
	}

	for _, bad := range [][]Retention{
		{{Tenant: "t", Workspace: "w", Days: 0}},
		{{Tenant: "t", Workspace: "w", Days: record.MaxRetentionDays + 1}},
	} {
		m.Retention = bad
		if _, err := Decode("m", m.Encode()); err == nil {
			t.Errorf("retention %+v accepted", bad)
		}
	}
}

// TestManifestListsSorted: Encode sorts tombstones, data versions and
// retention by (tenant, workspace), one entry per workspace, and lists
// erased artifacts in the versions' order, so Decode refuses a file whose
// lists are out of order or repeat a workspace (a hand-made file: no build
// wrote one), as it did for retention alone.
func TestManifestListsSorted(t *testing.T) {
	m := sampleManifest()
	m.Retention = []Retention{{Tenant: "a", Workspace: "b", Days: 1, Cutoff: 5}, {Tenant: "t", Workspace: "w", Days: 30, Cutoff: -7}}
	m.Versions[0].Erased = []ErasedArtifact{{Seq: 3, ID: [16]byte{3}}}
	m.Versions[1].Erased = []ErasedArtifact{{Seq: 4, ID: [16]byte{4}}, {Seq: 6, ID: [16]byte{6}}}
	good := m.Encode()
	if _, err := Decode("m", good); err != nil {
		t.Fatal(err)
	}
	tomb := func(e Tombstone) []byte {
		return binary.AppendUvarint(codec.AppendString(codec.AppendString(nil, e.Tenant), e.Workspace), e.Seq)
	}
	version := func(v DataVersion) []byte {
		b := codec.AppendString(codec.AppendString(nil, v.Tenant), v.Workspace)
		return binary.AppendVarint(binary.AppendUvarint(b, v.Seq), v.Newest)
	}
	erased := func(v DataVersion) []byte {
		b := binary.AppendUvarint(codec.AppendString(codec.AppendString(nil, v.Tenant), v.Workspace), uint64(len(v.Erased)))
		for _, e := range v.Erased {
			b = append(binary.AppendUvarint(b, e.Seq), e.ID[:]...)
		}
		return b
	}
	retention := func(r Retention) []byte {
		b := codec.AppendString(codec.AppendString(nil, r.Tenant), r.Workspace)
		return binary.AppendVarint(binary.AppendUvarint(b, r.Days), r.Cutoff)
	}
	// The sorted pairs, as Encode wrote them.
	pairs := map[string][2][]byte{
		"tombstones":    {tomb(m.Tombstones[1]), tomb(m.Tombstones[0])},
		"data versions": {version(m.Versions[1]), version(m.Versions[0])},
		"erased":        {erased(m.Versions[1]), erased(m.Versions[0])},
		"retention":     {retention(m.Retention[0]), retention(m.Retention[1])},
	}
	for name, p := range pairs {
		sorted := slices.Concat(p[0], p[1])
		if bytes.Count(good, sorted) != 1 {
			t.Fatalf("%s: the encoded pair is not in the file once", name)
		}
		for what, repl := range map[string][]byte{"unsorted": slices.Concat(p[1], p[0]), "repeated": slices.Concat(p[1], p[1])} {
			b := bytes.Replace(good, sorted, repl, 1)
			binary.LittleEndian.PutUint32(b[12:], uint32(len(b)-20)) // the frame: body length, checksum
			b = binary.LittleEndian.AppendUint32(b[:len(b)-4], crc32.Checksum(b[8:len(b)-4], castagnoli))
			_, err := Decode("m", b)
			var me *Error
			if !errors.As(err, &me) || !strings.Contains(me.Reason, "out of order") && !strings.Contains(me.Reason, "listed twice") {
				t.Errorf("%s %s: got %v, want *Error", what, name, err)
			}
		}
	}
}
