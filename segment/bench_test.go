package segment

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/loci-memory/loci/artifact"
)

// benchSegment writes a segment of n artifacts with 4 spans each and opens it.
func benchSegment(b *testing.B, n int) (*Segment, []*artifact.Artifact) {
	b.Helper()
	r := rand.New(rand.NewPCG(5, 6))
	ws := WorkspaceData{Tenant: "bench", Workspace: "main"}
	for i := 0; i < n; i++ {
		payload := fmt.Appendf(nil, `{"turn":%d,"text":"the quick brown fox %d jumps over the lazy dog, again and again and again"}`, i, r.Int())
		a := newArtifact(r, "bench", "main", uint64(i+1), fmt.Sprintf("key-%d", i), payload)
		ws.Artifacts = append(ws.Artifacts, a)
		ws.Spans = append(ws.Spans, spansFor(r, a, 4)...)
	}
	dir := b.TempDir()
	if _, err := Write(dir, 1, []WorkspaceData{ws}); err != nil {
		b.Fatal(err)
	}
	s, err := Open(filepath.Join(dir, FileName(1)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s, ws.Artifacts
}

func BenchmarkArtifactByID(b *testing.B) {
	s, arts := benchSegment(b, 5000)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		ref, ok := s.FindArtifact(arts[i%len(arts)].ID)
		if !ok {
			b.Fatal("not found")
		}
		if _, err := s.Artifact(ref); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkSpans(b *testing.B) {
	s, _ := benchSegment(b, 5000)
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		if err := s.Spans(0, func(artifact.Span) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		if n != 20000 {
			b.Fatalf("%d spans", n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/20000, "ns/span")
}

func BenchmarkWrite(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	ws := WorkspaceData{Tenant: "bench", Workspace: "main"}
	for i := 0; i < 1000; i++ {
		a := newArtifact(r, "bench", "main", uint64(i+1), "", fmt.Appendf(nil, `{"turn":%d,"text":"hello hello hello hello hello hello"}`, i))
		ws.Artifacts = append(ws.Artifacts, a)
		ws.Spans = append(ws.Spans, spansFor(r, a, 2)...)
	}
	dir := b.TempDir()
	for b.Loop() {
		if _, err := Write(dir, 1, []WorkspaceData{ws}); err != nil {
			b.Fatal(err)
		}
	}
}
