package record

import (
	"encoding/binary"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/internal/codec"
)

// EncodeEraseWorkspace encodes an erase workspace record: version | string
// tenant | string workspace.
func EncodeEraseWorkspace(tenant, ws string) []byte {
	b := []byte{Version}
	b = codec.AppendString(b, tenant)
	return codec.AppendString(b, ws)
}

// DecodeEraseWorkspace decodes an erase workspace record.
func DecodeEraseWorkspace(b []byte) (tenant, ws string, err error) {
	if len(b) == 0 || b[0] != Version {
		return "", "", codec.Errorf("erase record: unsupported version")
	}
	d := codec.Decoder{B: b[1:]}
	tenant, ws = d.Str(""), d.Str("")
	if d.Err == nil && d.Remaining() != 0 {
		d.Failf("", d.Off, "trailing bytes")
	}
	if d.Err != nil {
		return "", "", codec.Errorf("erase record: %w", d.Err)
	}
	return tenant, ws, nil
}

// EraseArtifact is an erase artifact record (TypeEraseArtifact): the
// artifact and the seq of the record that stored it, so that applying it
// needs no lookup to know what it hides.
type EraseArtifact struct {
	Tenant, Workspace string
	ArtifactID        uuid.UUID
	ArtifactSeq       uint64
}

// EncodeEraseArtifact: version | string tenant | string workspace | 16-byte
// artifact id | uvarint artifact seq.
func EncodeEraseArtifact(r *EraseArtifact) []byte {
	b := []byte{Version}
	b = codec.AppendString(b, r.Tenant)
	b = codec.AppendString(b, r.Workspace)
	b = append(b, r.ArtifactID[:]...)
	return binary.AppendUvarint(b, r.ArtifactSeq)
}

// DecodeEraseArtifact decodes an erase artifact record.
func DecodeEraseArtifact(b []byte) (*EraseArtifact, error) {
	if len(b) == 0 || b[0] != Version {
		return nil, codec.Errorf("erase artifact record: unsupported version")
	}
	d := codec.Decoder{B: b[1:]}
	r := &EraseArtifact{Tenant: d.Str(""), Workspace: d.Str("")}
	r.ArtifactID = d.UUID("")
	r.ArtifactSeq = d.Uvarint("")
	if d.Err == nil && r.ArtifactSeq == 0 {
		d.Failf("", d.Off, "artifact seq 0")
	}
	if d.Err == nil && d.Remaining() != 0 {
		d.Failf("", d.Off, "trailing bytes")
	}
	if d.Err != nil {
		return nil, codec.Errorf("erase artifact record: %w", d.Err)
	}
	return r, nil
}

// MaxRetentionDays bounds a workspace's retention (100 years).
const MaxRetentionDays = 36500

// Retention is a workspace retention record (TypeRetention).
type Retention struct {
	Tenant, Workspace string
	Days              uint64 // 0: clear
}

// EncodeRetention: version | string tenant | string workspace | uvarint
// days (0 clears).
func EncodeRetention(r *Retention) []byte {
	b := []byte{Version}
	b = codec.AppendString(b, r.Tenant)
	b = codec.AppendString(b, r.Workspace)
	return binary.AppendUvarint(b, r.Days)
}

// DecodeRetention decodes a workspace retention record.
func DecodeRetention(b []byte) (*Retention, error) {
	if len(b) == 0 || b[0] != Version {
		return nil, codec.Errorf("retention record: unsupported version")
	}
	d := codec.Decoder{B: b[1:]}
	r := &Retention{Tenant: d.Str(""), Workspace: d.Str(""), Days: d.Uvarint("")}
	if d.Err == nil && r.Days > MaxRetentionDays {
		d.Failf("", d.Off, "retention of %d days exceeds %d", r.Days, MaxRetentionDays)
	}
	if d.Err == nil && d.Remaining() != 0 {
		d.Failf("", d.Off, "trailing bytes")
	}
	if d.Err != nil {
		return nil, codec.Errorf("retention record: %w", d.Err)
	}
	return r, nil
}
