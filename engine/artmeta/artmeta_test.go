package artmeta

import (
	"testing"

	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/internal/codec/codectest"
)

// TestMalformed refuses damaged sections and rows, each error marked
// codec.ErrCorrupt like every storage decoder's.
func TestMalformed(t *testing.T) {
	a := &artifact.Artifact{ID: [16]byte{1}, Tenant: "t", Workspace: "w", Seq: 7, Type: "note", Payload: []byte(`"x"`)}
	sec := Encode([][]byte{Row(a)})
	row, err := RowAt(sec, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	rowAt := func(sec []byte, count, ord int) func() error {
		return func() error { _, err := RowAt(sec, count, ord); return err }
	}
	decodeRow := func(row []byte, id [16]byte, seq uint64) func() error {
		return func() error { _, err := DecodeRow(row, id, seq); return err }
	}
	bad := Encode([][]byte{row})
	bad[8] = 0xff // the row's end offset past the section
	codectest.ExpectCorrupt(t, []codectest.Case{
		{Name: "wrong count", Decode: rowAt(sec, 2, 0)},
		{Name: "row out of range", Decode: rowAt(sec, 1, 1)},
		{Name: "truncated rows", Decode: rowAt(sec[:len(sec)-1], 1, 0)},
		{Name: "offsets outside the rows", Decode: rowAt(bad, 1, 0)},
		{Name: "row of another artifact", Decode: decodeRow(row, [16]byte{2}, 7)},
		{Name: "row of another seq", Decode: decodeRow(row, a.ID, 8)},
		{Name: "row with a payload", Decode: decodeRow(artifact.AppendArtifact(nil, a), a.ID, 7)},
		{Name: "truncated row", Decode: decodeRow(row[:len(row)-1], a.ID, 7)},
		{Name: "row with trailing bytes", Decode: decodeRow(append(row[:len(row):len(row)], 0), a.ID, 7)},
	})
	if m, err := DecodeRow(row, a.ID, 7); err != nil || m.Type != "note" || m.Payload != nil {
		t.Errorf("good row: %+v %v", m, err)
	}
}
