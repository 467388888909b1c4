package engine

import (
	"testing"

	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/vecindex"
)

// TestSegmentTieKeys: after a flush, every span's search keys (the lexical
// key read from its row's stored checksum, and the key stored in the VECTORS
// section) equal the tie key of its text and time, as the head computed
// them; and a VECTORS section written with span ids as keys (before keys
// were tie keys) gets tie keys at open.
func TestSegmentTieKeys(t *testing.T) {
	db := openTest(t, t.TempDir(), Options{DisableBackground: true})
	defer db.Close()
	for _, s := range []string{"The deploy moved to Friday.", "Friday the deploy moved to.", "The deploy moved to Friday."} {
		mustIngest(t, db, "t", chat("ws", s))
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if len(db.segments) != 1 {
		t.Fatalf("%d segments after one flush", len(db.segments))
	}
	s := db.segments[0]
	wi, ok := s.FindWorkspace("t", "ws")
	if !ok {
		t.Fatal("workspace not in the segment")
	}
	var spans []artifact.Span
	if err := s.Spans(wi, func(sp artifact.Span) error { spans = append(spans, sp); return nil }); err != nil {
		t.Fatal(err)
	}
	vec := s.parts[wi].vec
	if vec == nil {
		t.Fatal("no vectors")
	}
	ids := make([][16]byte, len(spans))
	for i := range spans {
		want := spanTieKey(&spans[i])
		if got := s.parts[wi].lex.Key(uint32(i)); got != want {
			t.Errorf("span %d: lexical key %x, want %x", i, got, want)
		}
		if got := vec.Key(uint32(i)); got != want {
			t.Errorf("span %d: vector key %x, want %x", i, got, want)
		}
		ids[i] = spans[i].ID
	}
	if spans[0].Text != spans[2].Text || spanTieKey(&spans[0]) != spanTieKey(&spans[2]) || spanTieKey(&spans[0]) == spanTieKey(&spans[1]) {
		t.Fatalf("equal texts at one time must share a key, others not: %q %q %q", spans[0].Text, spans[1].Text, spans[2].Text)
	}

	// A section of the former kind: span ids as keys.
	rows := make([][]int8, len(spans))
	for i := range rows {
		rows[i], _ = memRow(vec, i)
	}
	old, err := vecindex.BuildSection(vec.Dim(), vec.Model(), ids, rows, vec.Scales())
	if err != nil {
		t.Fatal(err)
	}
	oldVec, err := vecindex.OpenSegVectors(old)
	if err != nil {
		t.Fatal(err)
	}
	fixed := withTieKeys(oldVec, s.Segment, wi)
	for i := range spans {
		if got, want := fixed.Key(uint32(i)), spanTieKey(&spans[i]); got != want {
			t.Errorf("former section, span %d: key %x, want the tie key %x", i, got, want)
		}
	}
	if withTieKeys(vec, s.Segment, wi) != vec {
		t.Error("a section with tie keys was replaced")
	}
}
