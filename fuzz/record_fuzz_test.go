package fuzz

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/engine/record"
	"github.com/loci-memory/loci/internal/codec"
)

// FuzzRecord feeds arbitrary payloads to the decoder of each WAL record
// type of engine/record: every error must be marked codec.ErrCorrupt, and a
// payload that decodes must be exactly what the encoder writes for what was
// decoded (one encoding per value), the artifact record aside, whose
// artifact encoding has more than one form: it must decode again to the
// same value once re-encoded; and the receipt record of version 1, which is
// read but never written.
func FuzzRecord(f *testing.F) {
	id := uuid.UUID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	a := &artifact.Artifact{ID: id, Tenant: "t", Workspace: "ws", Type: "note", Payload: []byte(`"x"`)}
	spans := []artifact.Span{{ID: uuid.UUID{9}, ArtifactID: id, Text: "x"}}
	vecs := &record.SpanVectors{Model: "m", Dim: 2, Data: []int8{1, -1}, Scales: []float32{0.5}}
	f.Add(uint8(record.TypeArtifact), record.AppendArtifact(nil, 0, a, spans, vecs))
	f.Add(uint8(record.TypeArtifact), record.AppendArtifact(nil, 7, a, spans, nil))
	f.Add(uint8(record.TypeEraseWorkspace), record.EncodeEraseWorkspace("t", "ws"))
	f.Add(uint8(record.TypeVectors), record.AppendVectors(nil, &record.Vectors{Tenant: "t", Workspace: "ws", ArtifactID: id, Spans: 1, Vecs: vecs}))
	f.Add(uint8(record.TypeVectors), record.AppendVectors(nil, &record.Vectors{Tenant: "t", Workspace: "ws", ArtifactID: id, Spans: 3}))
	f.Add(uint8(record.TypeEraseArtifact), record.EncodeEraseArtifact(&record.EraseArtifact{Tenant: "t", Workspace: "ws", ArtifactID: id, ArtifactSeq: 300}))
	f.Add(uint8(record.TypeRetention), record.EncodeRetention(&record.Retention{Tenant: "t", Workspace: "ws", Days: 365}))
	f.Add(uint8(record.TypeFeedback), record.EncodeFeedback(&record.Feedback{ID: id, Tenant: "t", Workspace: "ws", ActorID: "a",
		Action: record.ActionPin, ArtifactID: id, Spans: []uuid.UUID{{9}}, CreatedAt: -5}))
	f.Add(uint8(record.TypeFeedback), []byte{})
	f.Add(uint8(record.TypeReceipt), record.EncodeReceipt(&record.Receipt{ID: id, Tenant: "t", Workspace: "ws", Query: "q",
		Confidence: 0.5, TotalTokens: 9, Cuts: []record.ReceiptCut{{At: 1, Len: 4}, {At: 3}}, Body: []byte{0x28, 0xb5}, Compressed: true}))

	f.Fuzz(func(t *testing.T, typ uint8, b []byte) {
		var again []byte
		var err error
		switch record.Type(typ) {
		case record.TypeArtifact:
			var a *artifact.Artifact
			var spans []artifact.Span
			var vecs *record.SpanVectors
			var fence uint64
			if a, spans, vecs, fence, err = record.DecodeArtifact(b); err == nil {
				enc := record.AppendArtifact(nil, fence, a, spans, vecs)
				a2, spans2, vecs2, fence2, err2 := record.DecodeArtifact(enc)
				if err2 != nil || fence2 != fence || len(spans2) != len(spans) || (vecs2 == nil) != (vecs == nil) || a2.ID != a.ID {
					t.Fatalf("re-encoded artifact record does not decode to the same value: %v", err2)
				}
				if !bytes.Equal(record.AppendArtifact(nil, fence2, a2, spans2, vecs2), enc) {
					t.Fatal("artifact record encoding is not stable")
				}
				return
			}
		case record.TypeEraseWorkspace:
			var tenant, ws string
			if tenant, ws, err = record.DecodeEraseWorkspace(b); err == nil {
				again = record.EncodeEraseWorkspace(tenant, ws)
			}
		case record.TypeVectors:
			var r *record.Vectors
			if r, err = record.DecodeVectors(b); err == nil {
				again = record.AppendVectors(nil, r)
			}
		case record.TypeEraseArtifact:
			var r *record.EraseArtifact
			if r, err = record.DecodeEraseArtifact(b); err == nil {
				again = record.EncodeEraseArtifact(r)
			}
		case record.TypeRetention:
			var r *record.Retention
			if r, err = record.DecodeRetention(b); err == nil {
				again = record.EncodeRetention(r)
			}
		case record.TypeFeedback:
			var e *record.Feedback
			if e, err = record.DecodeFeedback(b); err == nil {
				again = record.EncodeFeedback(e)
			}
		case record.TypeReceipt:
			var r *record.Receipt
			if r, err = record.DecodeReceipt(b, true); err == nil {
				if !r.Compressed {
					return // version 1: read, never written
				}
				again = record.EncodeReceipt(r)
			}
		default:
			return
		}
		if err != nil {
			if !errors.Is(err, codec.ErrCorrupt) {
				t.Fatalf("%s record: error %v not marked codec.ErrCorrupt", record.Type(typ), err)
			}
			return
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("%s record % x decodes, but encodes back as % x", record.Type(typ), b, again)
		}
	})
}
