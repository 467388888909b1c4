package artmeta

import (
	"testing"

	"github.com/loci-memory/loci/artifact"
)

func TestMalformed(t *testing.T) {
	a := &artifact.Artifact{ID: [16]byte{1}, Tenant: "t", Workspace: "w", Seq: 7, Type: "note", Payload: []byte(`"x"`)}
	sec := Encode([][]byte{Row(a)})
	if _, err := RowAt(sec, 2, 0); err == nil {
		t.Error("wrong count accepted")
	}
	if _, err := RowAt(sec, 1, 1); err == nil {
		t.Error("row out of range accepted")
	}
	if _, err := RowAt(sec[:len(sec)-1], 1, 0); err == nil {
		t.Error("truncated rows accepted")
	}
	row, err := RowAt(sec, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeRow(row, [16]byte{2}, 7); err == nil {
		t.Error("row of another artifact accepted")
	}
	if _, err := DecodeRow(row, a.ID, 8); err == nil {
		t.Error("row of another seq accepted")
	}
	if _, err := DecodeRow(artifact.AppendArtifact(nil, a), a.ID, 7); err == nil {
		t.Error("row with a payload accepted")
	}
	if m, err := DecodeRow(row, a.ID, 7); err != nil || m.Type != "note" || m.Payload != nil {
		t.Errorf("good row: %+v %v", m, err)
	}
}
