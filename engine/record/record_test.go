package record

import (
	"bytes"
	"reflect"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/internal/codec/codectest"
)

func TestArtifactRecordVectors(t *testing.T) {
	a := &artifact.Artifact{ID: uuid.New(), Type: "note", Payload: []byte(`"x y"`)}
	spans := []artifact.Span{{ID: uuid.New(), ArtifactID: a.ID, Text: "x"}, {ID: uuid.New(), ArtifactID: a.ID, Ordinal: 1, Text: "y"}}
	vecs := &SpanVectors{Model: "m", Dim: 3, Data: []int8{1, -2, 127, -128, 0, 5}, Scales: []float32{0.5, 0}}
	for _, v := range []*SpanVectors{nil, vecs} {
		rec := AppendArtifact(nil, 0, a, spans, v)
		_, gotSpans, gotVecs, _, err := DecodeArtifact(rec)
		if err != nil || len(gotSpans) != 2 || !reflect.DeepEqual(gotVecs, v) {
			t.Fatalf("round trip with %v: %+v %v", v, gotVecs, err)
		}
		for n := 1; n < len(rec); n++ {
			if _, _, _, _, err := DecodeArtifact(rec[:n]); err == nil {
				t.Fatalf("truncation at %d/%d accepted", n, len(rec))
			}
		}
	}
}

// TestEraseArtifactRecordRoundTrip pins the record's bytes (docs/format/wal.md).
func TestEraseArtifactRecordRoundTrip(t *testing.T) {
	r := &EraseArtifact{Tenant: "t", Workspace: "ws", ArtifactID: uuid.UUID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, ArtifactSeq: 300}
	b := EncodeEraseArtifact(r)
	want := []byte{1, 1, 't', 2, 'w', 's', 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0xac, 0x02}
	if !slices.Equal(b, want) {
		t.Fatalf("encoding % x, want % x", b, want)
	}
	got, err := DecodeEraseArtifact(b)
	if err != nil || *got != *r {
		t.Fatalf("decode: %+v %v", got, err)
	}
	for _, bad := range [][]byte{nil, {2}, b[:len(b)-1], append(slices.Clone(b), 0)} {
		if _, err := DecodeEraseArtifact(bad); err == nil {
			t.Errorf("decoded % x", bad)
		}
	}
}

// TestDecodersMarkCorruption feeds every record decoder damaged bytes: each
// error must match codec.ErrCorrupt, so that a caller tells damage from an
// I/O failure with one errors.Is.
func TestDecodersMarkCorruption(t *testing.T) {
	junk := bytes.Repeat([]byte{0xff}, 40)
	codectest.ExpectCorrupt(t, []codectest.Case{
		{Name: "artifact record", Decode: func() error { _, _, _, _, err := DecodeArtifact(junk); return err }},
		{Name: "erase record", Decode: func() error { _, _, err := DecodeEraseWorkspace(junk); return err }},
		{Name: "vectors record", Decode: func() error { _, err := DecodeVectors(junk); return err }},
		{Name: "erase artifact record", Decode: func() error { _, err := DecodeEraseArtifact(junk); return err }},
		{Name: "retention record", Decode: func() error { _, err := DecodeRetention(junk); return err }},
		{Name: "feedback record", Decode: func() error { _, err := DecodeFeedback(junk); return err }},
		{Name: "vector block", Decode: func() error { _, err := decodeVectorBlock(junk, 1); return err }},
	})
}
