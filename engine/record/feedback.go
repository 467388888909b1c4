package record

import (
	"encoding/binary"
	"slices"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/internal/codec"
)

// Feedback actions (decisions.md § Feedback), as a feedback record spells
// them.
const (
	ActionPin             = "pin"
	ActionUnpin           = "unpin"
	ActionPrivate         = "private"
	ActionMarkWrong       = "mark_wrong"
	ActionOutdated        = "outdated"
	ActionResolveConflict = "resolve_conflict"
	ActionClear           = "clear"
)

// FeedbackActions lists the actions a feedback record may hold.
var FeedbackActions = []string{ActionPin, ActionUnpin, ActionPrivate, ActionMarkWrong, ActionOutdated, ActionResolveConflict, ActionClear}

// Feedback is a feedback record (TypeFeedback), the durable form of a
// feedback event: the spans it acts on are resolved when it is written, so
// replay needs no lookups.
type Feedback struct {
	ID         uuid.UUID
	Tenant     string
	Workspace  string
	ActorID    string
	Action     string
	ArtifactID uuid.UUID
	Spans      []uuid.UUID // the spans the action applies to, sorted
	Reason     string
	ConflictID string
	Preferred  uuid.UUID // resolve_conflict: the span kept (Spans holds the one made outdated)
	CreatedAt  int64     // Unix µs
	// Seq is the record's WAL sequence number, set when applied: not part
	// of the payload (the log, or a segment's section frame, carries it).
	Seq uint64
}

// EncodeFeedback: version | 16 id | tenant | workspace | actor | action |
// 16 artifact | uvarint n | n × 16 span | reason | conflict id | 16
// preferred | varint created_at.
func EncodeFeedback(e *Feedback) []byte {
	b := []byte{Version}
	b = append(b, e.ID[:]...)
	for _, s := range []string{e.Tenant, e.Workspace, e.ActorID, e.Action} {
		b = codec.AppendString(b, s)
	}
	b = append(b, e.ArtifactID[:]...)
	b = binary.AppendUvarint(b, uint64(len(e.Spans)))
	for _, s := range e.Spans {
		b = append(b, s[:]...)
	}
	b = codec.AppendString(b, e.Reason)
	b = codec.AppendString(b, e.ConflictID)
	b = append(b, e.Preferred[:]...)
	return binary.AppendVarint(b, e.CreatedAt)
}

// DecodeFeedback decodes a feedback record; an action not in
// FeedbackActions is corruption.
func DecodeFeedback(b []byte) (*Feedback, error) {
	if len(b) == 0 || b[0] != Version {
		return nil, codec.Errorf("feedback record: unsupported version")
	}
	d := codec.Decoder{B: b[1:]}
	e := &Feedback{}
	e.ID = d.UUID("")
	e.Tenant, e.Workspace, e.ActorID, e.Action = d.Str(""), d.Str(""), d.Str(""), d.Str("")
	e.ArtifactID = d.UUID("")
	n := d.Count("", 16)
	for i := 0; i < n && d.Err == nil; i++ {
		e.Spans = append(e.Spans, d.UUID(""))
	}
	e.Reason, e.ConflictID = d.Str(""), d.Str("")
	e.Preferred = d.UUID("")
	e.CreatedAt = d.Varint("")
	if d.Err == nil && d.Remaining() != 0 {
		d.Failf("", d.Off, "trailing bytes")
	}
	if d.Err != nil {
		return nil, codec.Errorf("feedback record: %w", d.Err)
	}
	if !slices.Contains(FeedbackActions, e.Action) {
		return nil, codec.Errorf("feedback record: unknown action %q", e.Action)
	}
	return e, nil
}
