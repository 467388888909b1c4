package codec_test

import (
	"errors"
	"testing"

	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/embed/minilm"
	"github.com/loci-memory/loci/internal/codec"
	"github.com/loci-memory/loci/internal/codec/codectest"
	"github.com/loci-memory/loci/invindex"
	"github.com/loci-memory/loci/segment"
	"github.com/loci-memory/loci/vecindex"
	"github.com/loci-memory/loci/wal"
)

// TestEveryDecoderMarksCorruption feeds each exported decoder of a storage
// format damaged bytes and checks that the error it returns matches
// codec.ErrCorrupt, whatever its own type. The engine's record, manifest
// and framed-file decoders and the cluster message decoder, which are not
// exported, have the same check in their packages.
func TestEveryDecoderMarksCorruption(t *testing.T) {
	junk := []byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff")
	codectest.ExpectCorrupt(t, []codectest.Case{
		{Name: "wal record", Decode: func() error { _, _, err := wal.DecodeRecord(junk); return err }},
		{Name: "segment file", Decode: func() error { _, err := segment.OpenBytes("junk.seg", junk); return err }},
		{Name: "inverted index sections", Decode: func() error {
			_, err := invindex.OpenSegIndex(invindex.Sections{TermDict: junk, Postings: junk, DocLengths: junk}, nil)
			return err
		}},
		{Name: "vector section", Decode: func() error { _, err := vecindex.OpenSegVectors(junk); return err }},
		{Name: "minilm model file", Decode: func() error { _, err := minilm.ParseModel(junk); return err }},
		{Name: "artifact encoding", Decode: func() error { _, _, err := artifact.DecodeArtifact(junk); return err }},
		{Name: "span encoding", Decode: func() error { _, _, err := artifact.DecodeSpan(junk); return err }},
		{Name: "framed file", Decode: func() error { _, err := codec.DecodeFramed("F", []byte("MAGIC"), 1, junk); return err }},
		{Name: "control snapshot", Decode: func() error { return control.New(nil).RestoreControl(junk) }},
	})
}

// TestMarkKeepsText checks that marking changes no error's text and keeps
// the wrapped error reachable.
func TestMarkKeepsText(t *testing.T) {
	inner := errors.New("inner")
	err := codec.Errorf("record %d: %w", 7, inner)
	if err.Error() != "record 7: inner" || !errors.Is(err, inner) || !errors.Is(err, codec.ErrCorrupt) {
		t.Fatalf("got %q", err)
	}
	if codec.Mark(nil) != nil {
		t.Fatal("Mark(nil) is not nil")
	}
	s := codec.Sentinel("pkg: corrupt thing")
	//lint:ignore SA1032 the reversed call is the point: ErrCorrupt is not the sentinel
	if s.Error() != "pkg: corrupt thing" || !errors.Is(s, codec.ErrCorrupt) || errors.Is(codec.ErrCorrupt, s) {
		t.Fatalf("sentinel %q", s)
	}
}
