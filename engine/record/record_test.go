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
		{Name: "receipt record", Decode: func() error { _, err := DecodeReceipt(junk, true); return err }},
		{Name: "receipts section", Decode: func() error { _, err := DecodeReceiptSection(junk); return err }},
		{Name: "feedback section", Decode: func() error { _, err := DecodeFeedbackSection(junk); return err }},
		{Name: "vector block", Decode: func() error { _, err := decodeVectorBlock(junk, 1); return err }},
	})
}

// TestReceiptRecordRoundTrip pins a receipt record's bytes
// (docs/format/wal.md) and decodes them back, cuts and body included.
func TestReceiptRecordRoundTrip(t *testing.T) {
	r := &Receipt{ID: uuid.UUID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, Tenant: "t", Workspace: "ws", Query: "q",
		ActorID: "a", PackHash: "h", Timestamp: -1, Confidence: 0.5, Abstain: true, TotalTokens: 300,
		Cuts: []ReceiptCut{{At: 5, Len: 3}, {At: 7, Len: 0}}, Body: []byte("zz"), Compressed: true}
	b := EncodeReceipt(r)
	want := []byte{2, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 1, 't', 2, 'w', 's', 1, 'q', 1, 'a', 1, 'h',
		0x01, 0, 0, 0, 0, 0, 0, 0xe0, 0x3f, 1, 0xac, 0x02, 2, 5, 3, 2, 0, 2, 'z', 'z'}
	if !slices.Equal(b, want) {
		t.Fatalf("encoding % x, want % x", b, want)
	}
	got, err := DecodeReceipt(b, true)
	if err != nil || !reflect.DeepEqual(got, r) {
		t.Fatalf("decode: %+v %v", got, err)
	}
	if got, err := DecodeReceipt(b, false); err != nil || got.Body != nil || got.Cuts != nil || got.PackHash != "h" {
		t.Fatalf("decode without body: %+v %v", got, err)
	}
	for _, bad := range [][]byte{nil, {3}, b[:len(b)-1], append(slices.Clone(b), 0)} {
		if _, err := DecodeReceipt(bad, true); err == nil {
			t.Errorf("decoded % x", bad)
		}
	}
}

// TestEventSectionsRoundTrip writes FEEDBACK and RECEIPTS sections and
// reads them back; a RECEIPTS section's id table must order the ids.
func TestEventSectionsRoundTrip(t *testing.T) {
	evs := []*Feedback{{ID: uuid.New(), Action: ActionPin, Seq: 3}, {ID: uuid.New(), Action: ActionClear, Seq: 9}}
	b := EncodeFeedbackSection(evs)
	if first, ok := FirstSeq(b); !ok || first != 3 {
		t.Fatalf("first seq %d %v", first, ok)
	}
	got, err := DecodeFeedbackSection(b)
	if err != nil || !reflect.DeepEqual(got, evs) {
		t.Fatalf("feedback section: %+v %v", got, err)
	}
	if _, ok := FirstSeq(EncodeFeedbackSection(nil)); ok {
		t.Fatal("an empty section has a first seq")
	}
	rs := []*Receipt{{ID: uuid.UUID{9}, Body: []byte{}, Compressed: true, Seq: 4}, {ID: uuid.UUID{1}, Body: []byte("x"), Compressed: true, Seq: 5}}
	b = EncodeReceiptSection(rs)
	if !slices.Equal(b[len(b)-8:], []byte{1, 0, 0, 0, 0, 0, 0, 0}) {
		t.Fatalf("id order table % x", b[len(b)-8:])
	}
	gotRs, err := DecodeReceiptSection(b)
	if err != nil || !reflect.DeepEqual(gotRs, rs) {
		t.Fatalf("receipts section: %+v %v", gotRs, err)
	}
	b[len(b)-8] = 0 // the table no longer orders the ids
	if _, err := DecodeReceiptSection(b); err == nil {
		t.Fatal("a wrong id table was accepted")
	}
}
