// Package record holds the engine's WAL record codecs: the record types and
// the binary encoding of each payload, byte-exact with docs/format/wal.md.
//
// It lives apart from the engine so that the format can be read, tested and
// fuzzed without a database: the engine decides what a record means when it
// is applied; this package only says how its bytes look. It imports no part
// of the engine. The segment sections that hold records in their WAL encoding
// (FEEDBACK, RECEIPTS; docs/format/segment.md) are framed here too.
package record

import "fmt"

// Type is the type byte of a WAL record. Every durable change of the
// engine's state is one record; docs/format/wal.md lists them. Numbers are
// never reused: a retired type stays reserved. Types 1-15 are workspace
// data, 16-31 workspace events, 32-63 service state.
type Type uint8

const (
	// TypeArtifact: one ingested artifact with its spans (empty until indexed).
	TypeArtifact Type = 1
	// TypeEraseWorkspace: hides every earlier artifact of a workspace.
	TypeEraseWorkspace Type = 2
	// TypeIndexed (reserved): spans of an artifact stored raw earlier
	// (async indexing).
	TypeIndexed Type = 3
	// TypeVectors: the embeddings of an artifact's spans, computed by the
	// background embedder after the artifact was acknowledged.
	TypeVectors Type = 4
	// TypeEraseArtifact: hides one artifact (and its spans) of a workspace.
	TypeEraseArtifact Type = 5
	// TypeRetention: sets or clears a workspace's retention.
	TypeRetention Type = 6
	TypeFeedback  Type = 16 // feedback event
	TypeReceipt   Type = 17 // decision receipt of a context pack
	// 32-47 are control records (engine.ControlState): kind = type - 32.
	TypeTenant    Type = 32 // tenant created or changed (plan)
	TypeAPIKey    Type = 33 // API key created or revoked (hash only)
	TypeUsage     Type = 34 // usage counters delta
	TypeJob       Type = 35 // indexing job state change
	TypeWorkspace Type = 36 // workspace claimed or released by a tenant
)

// MaxControlKind is the highest control record kind: types TypeTenant
// (kind 0) to TypeTenant+MaxControlKind (32-47) are control records, whose
// payloads are the control state's (docs/format/control.md).
const MaxControlKind = 15

// IsControl reports whether t is a control record's type.
func (t Type) IsControl() bool { return t >= TypeTenant && t <= TypeTenant+MaxControlKind }

// Version is the leading byte of every record payload.
const Version byte = 1

func (t Type) String() string {
	switch t {
	case TypeArtifact:
		return "artifact"
	case TypeEraseWorkspace:
		return "erase_workspace"
	case TypeIndexed:
		return "indexed"
	case TypeVectors:
		return "vectors"
	case TypeEraseArtifact:
		return "erase_artifact"
	case TypeRetention:
		return "workspace_retention"
	case TypeFeedback:
		return "feedback"
	case TypeReceipt:
		return "receipt"
	case TypeTenant:
		return "tenant"
	case TypeAPIKey:
		return "api_key"
	case TypeUsage:
		return "usage"
	case TypeJob:
		return "job"
	case TypeWorkspace:
		return "workspace"
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}
