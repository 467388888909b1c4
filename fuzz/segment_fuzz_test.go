package fuzz

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/segment"
)

// segmentSeed writes a small valid segment with the current writer, so the
// fuzzer starts from the format as it is now even if the stored corpus ages.
func segmentSeed(f *testing.F) []byte {
	mk := func(id byte, tenant string, seq uint64, key, payload string) *artifact.Artifact {
		return &artifact.Artifact{ID: uuid.UUID{id, 7}, Tenant: tenant, Workspace: "w", Seq: seq, Type: "note",
			IdempotencyKey: key, Permissions: artifact.Permissions{RBACTags: []string{"x"}},
			ContentHash: artifact.ContentHash([]byte(payload)), Payload: []byte(payload)}
	}
	a1 := mk(1, "t1", 1, "k", `{"text":"compressible compressible compressible compressible compressible"}`)
	a2 := mk(2, "t2", 2, "", `"s"`)
	ws := []segment.WorkspaceData{
		{Tenant: "t1", Workspace: "w", Artifacts: []*artifact.Artifact{a1},
			Spans: []artifact.Span{{ID: uuid.UUID{9}, ArtifactID: a1.ID, End: 4, Text: "text"}}},
		{Tenant: "t2", Workspace: "w", Artifacts: []*artifact.Artifact{a2}},
	}
	dir := f.TempDir()
	if _, err := segment.Write(dir, 1, ws); err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, segment.FileName(1)))
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// FuzzSegmentOpen feeds arbitrary bytes to segment.OpenBytes. Nothing may
// panic; every fault must be a *segment.CorruptionError; and a segment that
// passes Verify must read back without errors.
func FuzzSegmentOpen(f *testing.F) {
	seed := segmentSeed(f)
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := segment.OpenBytes("fuzz.seg", b)
		if err != nil {
			var ce *segment.CorruptionError
			if !errors.As(err, &ce) {
				t.Fatalf("OpenBytes: %v (%T), want *CorruptionError", err, err)
			}
			return
		}
		defer s.Close()
		verified := s.Verify() == nil
		must := func(err error, what string) {
			if err != nil && verified {
				t.Fatalf("%s failed on a verified segment: %v", what, err)
			}
		}
		_ = s.Info()
		s.FindArtifact(uuid.Nil)
		for i, w := range s.Workspaces() {
			if got, ok := s.FindWorkspace(w.Tenant, w.Workspace); !ok || got != i {
				t.Fatalf("FindWorkspace(%q, %q) = %d, %v; want %d", w.Tenant, w.Workspace, got, ok, i)
			}
			s.SpanCount(i)
			s.FindIdempotencyKey(i, "k")
			must(s.Artifacts(i, func(a *artifact.Artifact) error {
				ref, ok := s.FindArtifact(a.ID)
				if verified && !ok {
					t.Fatalf("FindArtifact(%s) missed on a verified segment", a.ID)
				}
				if a.IdempotencyKey != "" {
					s.FindIdempotencyKey(i, a.IdempotencyKey)
				}
				if ok {
					_, err := s.ArtifactSpans(ref)
					must(err, "ArtifactSpans")
				}
				return nil
			}), "Artifacts")
			must(s.Spans(i, func(artifact.Span) error { return nil }), "Spans")
		}
	})
}
