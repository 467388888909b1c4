// Package artifact defines what Loci stores: an Artifact (one ingested item, its
// raw payload kept byte for byte) and its Spans (the chunks that retrieval, packing
// and feedback address). Its binary encoding is shared by WAL records and segment
// files, so there is exactly one way to write an artifact down.
package artifact

import (
	"crypto/sha256"
	"encoding/json"

	"github.com/google/uuid"
)

// Types lists the allowed values of Artifact.Type, in the order of the contract.
var Types = []string{
	"chat_turn", "tool_call", "tool_result", "document", "note",
	"meeting_transcript", "email", "calendar_event", "attachment",
}

// ValidType reports whether t is one of Types.
func ValidType(t string) bool {
	for _, v := range Types {
		if v == t {
			return true
		}
	}
	return false
}

// Permissions is an artifact's access control, as given at ingest.
type Permissions struct {
	Visibility    string // "public" (default when empty), "private" or "restricted"
	AllowedActors []string
	DeniedActors  []string
	RBACTags      []string
}

// Artifact is one ingested item. Artifacts are immutable once acknowledged.
type Artifact struct {
	ID             uuid.UUID
	Tenant         string
	Workspace      string
	Seq            uint64 // sequence number of the WAL record that created it; orders artifacts
	Type           string
	ActorID        string
	SessionID      string
	ThreadID       string
	IdempotencyKey string
	Timestamp      int64 // creation time given by the client (or ingest time), Unix microseconds UTC
	IngestedAt     int64 // when the engine accepted it, Unix microseconds UTC
	Permissions    Permissions
	ContentHash    [32]byte // see ContentHash
	Indexed        bool     // spans exist (text extraction and chunking done)
	Payload        []byte   // the raw_payload JSON value exactly as received
	// Metadata is the client's string key-value pairs (nil when none). It
	// is not part of ContentHash.
	Metadata map[string]string
}

// Span is a chunk of an artifact's extracted text: the unit of retrieval.
type Span struct {
	ID         uuid.UUID
	ArtifactID uuid.UUID
	Ordinal    uint32 // position of the span within its artifact, from 0
	Start, End uint32 // offsets into the extracted text, in Unicode code points
	Tokens     uint32 // token count of Text, computed once at indexing
	Timestamp  int64  // the artifact's Timestamp
	Text       string
}

// ContentHash returns the SHA-256 of a raw_payload JSON value: of its decoded
// UTF-8 text when it is a JSON string, else of its exact bytes.
func ContentHash(payload []byte) [32]byte {
	if len(payload) > 0 && payload[0] == '"' {
		var s string
		if json.Unmarshal(payload, &s) == nil {
			return sha256.Sum256([]byte(s))
		}
	}
	return sha256.Sum256(payload)
}
