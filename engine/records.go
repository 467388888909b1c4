package engine

import (
	"encoding/binary"
	"fmt"

	"github.com/loci-memory/loci/artifact"
)

// recordType is the type byte of a WAL record. Every durable change of the
// engine's state is one record; docs/format/wal.md lists them. Numbers are
// never reused: a retired type stays reserved.
type recordType uint8

const (
	// recArtifact: one ingested artifact with its spans (empty until indexed).
	recArtifact recordType = 1
	// recEraseWorkspace: hides every earlier artifact of a workspace.
	recEraseWorkspace recordType = 2

	// Reserved for the async indexing, packing and HTTP work. Records 1-15
	// are workspace data, 16-31 workspace events, 32-63 service state.
	recIndexed    recordType = 3  // spans of an artifact stored raw earlier (async indexing)
	recFeedback   recordType = 16 // feedback event
	recReceipt    recordType = 17 // decision receipt of a context pack
	recTenant     recordType = 32 // tenant created or changed (plan)
	recAPIKey     recordType = 33 // API key created or revoked (hash only)
	recUsage      recordType = 34 // usage counters delta
	recJob        recordType = 35 // indexing job state change
	recordVersion byte       = 1  // leading byte of every record payload
)

func (t recordType) String() string {
	switch t {
	case recArtifact:
		return "artifact"
	case recEraseWorkspace:
		return "erase_workspace"
	case recIndexed:
		return "indexed"
	case recFeedback:
		return "feedback"
	case recReceipt:
		return "receipt"
	case recTenant:
		return "tenant"
	case recAPIKey:
		return "api_key"
	case recUsage:
		return "usage"
	case recJob:
		return "job"
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// encodeArtifactRecord: version | artifact encoding | uvarint span count | span encodings.
// Artifact.Seq is not trusted from the payload: the record's WAL seq is the truth.
func encodeArtifactRecord(dst []byte, a *artifact.Artifact, spans []artifact.Span) []byte {
	dst = append(dst, recordVersion)
	dst = artifact.AppendArtifact(dst, a)
	dst = binary.AppendUvarint(dst, uint64(len(spans)))
	for i := range spans {
		dst = artifact.AppendSpan(dst, &spans[i])
	}
	return dst
}

func decodeArtifactRecord(b []byte) (*artifact.Artifact, []artifact.Span, error) {
	if len(b) == 0 || b[0] != recordVersion {
		return nil, nil, fmt.Errorf("artifact record: unsupported version")
	}
	b = b[1:]
	a, n, err := artifact.DecodeArtifact(b)
	if err != nil {
		return nil, nil, fmt.Errorf("artifact record: %w", err)
	}
	b = b[n:]
	cnt, n := binary.Uvarint(b)
	if n <= 0 || cnt > uint64(len(b)) {
		return nil, nil, fmt.Errorf("artifact record: bad span count")
	}
	b = b[n:]
	spans := make([]artifact.Span, 0, cnt)
	for i := uint64(0); i < cnt; i++ {
		s, n, err := artifact.DecodeSpan(b)
		if err != nil {
			return nil, nil, fmt.Errorf("artifact record: span %d: %w", i, err)
		}
		if s.ArtifactID != a.ID {
			return nil, nil, fmt.Errorf("artifact record: span %d belongs to artifact %s, not %s", i, s.ArtifactID, a.ID)
		}
		spans = append(spans, s)
		b = b[n:]
	}
	if len(b) != 0 {
		return nil, nil, fmt.Errorf("artifact record: %d trailing bytes", len(b))
	}
	return &a, spans, nil
}

// encodeEraseRecord: version | tenant | workspace.
func encodeEraseRecord(tenant, ws string) []byte {
	b := []byte{recordVersion}
	b = appendString(b, tenant)
	return appendString(b, ws)
}

func decodeEraseRecord(b []byte) (tenant, ws string, err error) {
	if len(b) == 0 || b[0] != recordVersion {
		return "", "", fmt.Errorf("erase record: unsupported version")
	}
	d := decoder{b: b[1:]}
	tenant, ws = d.string(), d.string()
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return "", "", fmt.Errorf("erase record: %w", d.err)
	}
	return tenant, ws, nil
}
