package fuzz

import (
	"bytes"
	"errors"
	"testing"

	"github.com/loci-memory/loci/engine/manifest"
	"github.com/loci-memory/loci/internal/codec"
)

// FuzzManifest feeds arbitrary bytes to manifest.Decode: every error must
// be a *manifest.Error marked codec.ErrCorrupt, and a manifest that decodes
// must encode to a file that decodes to the same encoding (older versions
// are written as the current one, lists sorted, so the input itself need
// not come back).
func FuzzManifest(f *testing.F) {
	m := &manifest.Manifest{NextSegmentID: 9, Checkpoint: 4, LastSeq: 12345,
		Segments:   []manifest.Segment{{ID: 3, Size: 4096, MinSeq: 1, MaxSeq: 100}},
		Tombstones: []manifest.Tombstone{{Tenant: "t", Workspace: "w", Seq: 50}},
		Versions: []manifest.DataVersion{{Tenant: "t", Workspace: "w", Seq: 12345, Newest: -5,
			Erased: []manifest.ErasedArtifact{{Seq: 7, ID: [16]byte{1}}}}},
		Embedder: "m", EmbedderDim: 384,
		Retention: []manifest.Retention{{Tenant: "t", Workspace: "w", Days: 30, Cutoff: -7}}}
	good := m.Encode()
	f.Add(good)
	f.Add((&manifest.Manifest{NextSegmentID: 1, Checkpoint: 1}).Encode())
	// Two entries per list, sorted: swapping or repeating them must be refused.
	m.Tombstones = append(m.Tombstones, manifest.Tombstone{Tenant: "a", Workspace: "b", Seq: 9})
	m.Versions = append(m.Versions, manifest.DataVersion{Tenant: "a", Workspace: "b", Seq: 3,
		Erased: []manifest.ErasedArtifact{{Seq: 2, ID: [16]byte{2}}}})
	m.Retention = append(m.Retention, manifest.Retention{Tenant: "a", Workspace: "b", Days: 1, Cutoff: 0})
	f.Add(m.Encode())
	f.Add(good[:len(good)-1])
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := manifest.Decode("MANIFEST", b)
		if err != nil {
			var me *manifest.Error
			if !errors.As(err, &me) || !errors.Is(err, codec.ErrCorrupt) {
				t.Fatalf("error %v is not a *manifest.Error marked codec.ErrCorrupt", err)
			}
			return
		}
		enc := m.Encode()
		m2, err := manifest.Decode("MANIFEST", enc)
		if err != nil {
			t.Fatalf("the encoding of a decoded manifest does not decode: %v", err)
		}
		if !bytes.Equal(m2.Encode(), enc) {
			t.Fatal("manifest encoding is not stable")
		}
	})
}
