// Package artmeta is the codec of a segment's ARTIFACT_META section
// (docs/format/segment.md § ARTIFACT_META), which the engine writes for every
// workspace: each artifact's metadata (the artifact encoding with an empty
// payload), so that a context pack reads an artifact's type, creator,
// session, time and permissions without decompressing its entry. Layout: u32
// count, then count+1 u32 offsets into the rows (the first 0, the last their
// length), then the rows in ordinal order.
//
// It is apart from the engine as the other formats the engine writes are
// (engine/record, engine/manifest): bytes only, testable alone. It imports
// no part of the engine. Its decoders' errors match codec.ErrCorrupt.
package artmeta

import (
	"encoding/binary"

	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/internal/codec"
	"github.com/loci-memory/loci/segment"
)

// Row encodes one artifact's row: a without its payload.
func Row(a *artifact.Artifact) []byte {
	m := *a
	m.Payload = nil
	return artifact.AppendArtifact(nil, &m)
}

// Encode builds the section's bytes from rows in ordinal order.
func Encode(rows [][]byte) []byte {
	n := 0
	for _, r := range rows {
		n += len(r)
	}
	b := make([]byte, 0, 4+4*(len(rows)+1)+n)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(rows)))
	off := uint32(0)
	b = binary.LittleEndian.AppendUint32(b, off)
	for _, r := range rows {
		off += uint32(len(r))
		b = binary.LittleEndian.AppendUint32(b, off)
	}
	for _, r := range rows {
		b = append(b, r...)
	}
	return b
}

// Section returns the section of a workspace's artifacts, in ordinal
// order.
func Section(arts []*artifact.Artifact) segment.Section {
	rows := make([][]byte, len(arts))
	for i, a := range arts {
		rows[i] = Row(a)
	}
	return segment.Section{Kind: segment.KindArtifactMeta, Data: Encode(rows)}
}

// RowAt returns row ord of an ARTIFACT_META section holding count rows
// (the workspace's artifact count); the row aliases sec.
func RowAt(sec []byte, count, ord int) ([]byte, error) {
	le := binary.LittleEndian
	if len(sec) < 4 || int(le.Uint32(sec)) != count {
		return nil, codec.Errorf("ARTIFACT_META: header does not hold %d rows", count)
	}
	rowsAt := 4 + 4*(count+1)
	if ord < 0 || ord >= count || len(sec) < rowsAt {
		return nil, codec.Errorf("ARTIFACT_META: row %d of %d outside the section", ord, count)
	}
	lo, hi := int(le.Uint32(sec[4+4*ord:])), int(le.Uint32(sec[4+4*(ord+1):]))
	if lo > hi || rowsAt+hi > len(sec) {
		return nil, codec.Errorf("ARTIFACT_META: row %d at [%d, %d) outside the %d-byte rows", ord, lo, hi, len(sec)-rowsAt)
	}
	return sec[rowsAt+lo : rowsAt+hi], nil
}

// DecodeRow decodes a row and checks that it is the artifact the
// segment's table says (id and seq) and carries no payload.
func DecodeRow(row []byte, id [16]byte, seq uint64) (*artifact.Artifact, error) {
	a, n, err := artifact.DecodeArtifact(row)
	switch {
	case err != nil:
		return nil, codec.Errorf("ARTIFACT_META: %w", err)
	case n != len(row):
		return nil, codec.Errorf("ARTIFACT_META: row of artifact %x has %d trailing bytes", id, len(row)-n)
	case a.ID != id || a.Seq != seq:
		return nil, codec.Errorf("ARTIFACT_META: row holds artifact %s seq %d, the table says %x seq %d", a.ID, a.Seq, id, seq)
	case len(a.Payload) != 0:
		return nil, codec.Errorf("ARTIFACT_META: row of artifact %s carries a payload", a.ID)
	}
	return &a, nil
}
