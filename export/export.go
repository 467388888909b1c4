// Package export is the JSON Lines export format of a workspace
// (docs/format/export.md): what `loci export` writes and `loci import`
// reads. It encodes what engine.DB.ExportWorkspace emits and decodes lines
// into the engine.ImportItems engine.DB.Import stores; opening data
// directories, staging and committing an import are the caller's and the
// engine's.
package export

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/engine"
)

// Format and Version name the format in an export's header line.
const (
	Format  = "loci-export"
	Version = 1
)

// ErrNoData refuses to export a workspace that holds no data.
var ErrNoData = errors.New("the workspace holds no data")

// Header is what an export's first line says of it.
type Header struct {
	Format      string
	Version     int
	Tenant      string
	Workspace   string
	DataVersion uint64
	Embedder    string
	EmbedderDim int
	ExportedAt  string // RFC 3339, UTC
	LociVersion string
}

// line is every field a line of an export may have; kind says which
// apply (header, artifact, feedback, end).
type line struct {
	Kind string `json:"kind"`

	// header
	Format      string `json:"format,omitempty"`
	Version     int    `json:"version,omitempty"`
	Tenant      string `json:"tenant,omitempty"`
	Workspace   string `json:"workspace,omitempty"`
	DataVersion uint64 `json:"data_version,omitempty"`
	Embedder    string `json:"embedder,omitempty"`
	EmbedderDim int    `json:"embedder_dim,omitempty"`
	ExportedAt  string `json:"exported_at,omitempty"`
	LociVersion string `json:"loci_version,omitempty"`

	// artifact
	ArtifactID     string            `json:"artifact_id,omitempty"`
	ArtifactType   string            `json:"artifact_type,omitempty"`
	ActorID        string            `json:"actor_id,omitempty"`
	SessionID      string            `json:"session_id,omitempty"`
	ThreadID       string            `json:"thread_id,omitempty"`
	IdempotencyKey string            `json:"idempotency_key,omitempty"`
	TimestampUS    *int64            `json:"timestamp_us,omitempty"`
	IngestedAtUS   *int64            `json:"ingested_at_us,omitempty"`
	Permissions    *perms            `json:"permissions,omitempty"`
	Metadata       map[string]string `json:"metadata,omitempty"`
	ContentHash    string            `json:"content_hash,omitempty"`
	RawPayloadJSON *string           `json:"raw_payload_json,omitempty"`
	SpanIDs        []string          `json:"span_ids,omitempty"`
	Vectors        []string          `json:"vectors,omitempty"` // base64 float32 little-endian, one per span (vectors.go)

	// feedback (artifact_id, actor_id and span_ids as above)
	FeedbackID      string `json:"feedback_id,omitempty"`
	Action          string `json:"action,omitempty"`
	Reason          string `json:"reason,omitempty"`
	ConflictID      string `json:"conflict_id,omitempty"`
	PreferredSpanID string `json:"preferred_span_id,omitempty"`
	CreatedAtUS     *int64 `json:"created_at_us,omitempty"`

	// end
	Artifacts *int `json:"artifacts,omitempty"`
	Events    *int `json:"feedback,omitempty"`
}

type perms struct {
	Visibility    string   `json:"visibility,omitempty"`
	AllowedActors []string `json:"allowed_actors,omitempty"`
	DeniedActors  []string `json:"denied_actors,omitempty"`
	RBACTags      []string `json:"rbac_tags,omitempty"`
}

// Write writes workspace ws of tenant in db to w as an export: the header
// (h's Tenant, Workspace, ExportedAt and LociVersion; the rest from db),
// every artifact and feedback event in the order they were written, and
// the end line. A workspace without data is ErrNoData, and nothing is
// written. What was written is flushed to w; on an error the caller
// discards it (an incomplete export is no export).
func Write(w io.Writer, db *engine.DB, tenant, ws string, h Header) (engine.WorkspaceExport, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	sum, err := db.ExportWorkspace(tenant, ws, func(x engine.WorkspaceExport) error {
		if x.DataVersion == 0 {
			return ErrNoData
		}
		return enc.Encode(line{Kind: "header", Format: Format, Version: Version, Tenant: h.Tenant, Workspace: h.Workspace,
			DataVersion: x.DataVersion, Embedder: x.Embedder, EmbedderDim: x.EmbedderDim,
			ExportedAt: h.ExportedAt, LociVersion: h.LociVersion})
	}, func(it engine.ExportItem) error {
		if it.Feedback != nil {
			return enc.Encode(feedbackLine(it.Feedback))
		}
		return enc.Encode(artifactLine(it.Artifact, it.SpanIDs))
	})
	if err == nil {
		a, fb := sum.Artifacts, sum.Feedback
		err = enc.Encode(line{Kind: "end", Artifacts: &a, Events: &fb})
	}
	if err == nil {
		err = bw.Flush()
	}
	return sum, err
}

func artifactLine(a *artifact.Artifact, spanIDs []uuid.UUID) line {
	ts, ing := a.Timestamp, a.IngestedAt
	l := line{Kind: "artifact", ArtifactID: a.ID.String(), ArtifactType: a.Type, ActorID: a.ActorID,
		SessionID: a.SessionID, ThreadID: a.ThreadID, IdempotencyKey: a.IdempotencyKey,
		TimestampUS: &ts, IngestedAtUS: &ing, ContentHash: hex.EncodeToString(a.ContentHash[:])}
	p := a.Permissions
	if p.Visibility != "" || len(p.AllowedActors)+len(p.DeniedActors)+len(p.RBACTags) > 0 {
		l.Permissions = &perms{Visibility: p.Visibility, AllowedActors: p.AllowedActors, DeniedActors: p.DeniedActors, RBACTags: p.RBACTags}
	}
	if a.Payload != nil {
		s := string(a.Payload)
		l.RawPayloadJSON = &s
	}
	l.Metadata = a.Metadata
	l.SpanIDs = uuidStrings(spanIDs)
	return l
}

func feedbackLine(e *engine.ExportedFeedback) line {
	at := e.CreatedAt
	l := line{Kind: "feedback", FeedbackID: e.ID.String(), ActorID: e.ActorID, Action: e.Action,
		ArtifactID: e.ArtifactID.String(), SpanIDs: uuidStrings(e.Spans), Reason: e.Reason, ConflictID: e.ConflictID,
		CreatedAtUS: &at}
	if e.Preferred != uuid.Nil {
		l.PreferredSpanID = e.Preferred.String()
	}
	return l
}

func uuidStrings(ids []uuid.UUID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return out
}

// ImportBatchItems and importBatchBytes bound one engine.Import call (one
// WAL group).
const (
	ImportBatchItems = 1024
	importBatchBytes = 16 << 20
)

// Reader reads an export line by line.
type Reader struct {
	// Vectors makes Import store the span vectors the artifact lines carry
	// (`loci import --vectors`): every artifact line must carry one per
	// span, and nothing is embedded. Without it, vectors in the file are
	// not read, and the spans are embedded again.
	Vectors bool

	r    *bufio.Reader
	line int // the number of the last line read
}

// NewReader returns a reader of the export r holds.
func NewReader(r io.Reader) *Reader { return &Reader{r: bufio.NewReaderSize(r, 1<<20)} }

// next reads and decodes the next line (unknown fields refused).
func (r *Reader) next() (*line, error) {
	b, err := r.r.ReadBytes('\n')
	if len(b) == 0 && err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("ends after line %d without its end line: the export is incomplete", r.line)
		}
		return nil, err
	}
	r.line++
	var l line
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("line %d: %w", r.line, err)
	}
	return &l, nil
}

// Header reads the first line. Kind "header" and its Format and Version are
// for the caller to check.
func (r *Reader) Header() (Header, bool, error) {
	l, err := r.next()
	if err != nil {
		return Header{}, false, err
	}
	return Header{Format: l.Format, Version: l.Version, Tenant: l.Tenant, Workspace: l.Workspace, DataVersion: l.DataVersion,
		Embedder: l.Embedder, EmbedderDim: l.EmbedderDim, ExportedAt: l.ExportedAt, LociVersion: l.LociVersion}, l.Kind == "header", nil
}

// Import stores the lines after the header, up to the end line, into
// workspace ws of tenant in db, in batches (engine.DB.Import), and returns
// the counts read; the end line's counts must match them.
func (r *Reader) Import(db *engine.DB, tenant, ws string) (arts, events int, err error) {
	var batch []engine.ImportItem
	var batchBytes int
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := db.Import(tenant, ws, batch); err != nil {
			return err // it names the record's line
		}
		batch, batchBytes = batch[:0], 0
		return nil
	}
	for {
		l, err := r.next()
		if err != nil {
			return arts, events, err
		}
		if l.Kind == "end" {
			if l.Artifacts == nil || l.Events == nil || *l.Artifacts != arts || *l.Events != events {
				return arts, events, fmt.Errorf("the end line counts do not match the %d artifacts and %d feedback events read", arts, events)
			}
			break
		}
		it, size, err := importItem(l, r.Vectors)
		if err != nil {
			return arts, events, fmt.Errorf("line %d: %w", r.line, err)
		}
		it.Line = r.line
		if it.Artifact != nil {
			arts++
		} else {
			events++
		}
		batch = append(batch, it)
		if batchBytes += size; len(batch) >= ImportBatchItems || batchBytes >= importBatchBytes {
			if err := flush(); err != nil {
				return arts, events, err
			}
		}
	}
	return arts, events, flush()
}

// Trailing refuses anything but white space after the end line.
func (r *Reader) Trailing() error {
	for {
		c, err := r.r.ReadByte()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return fmt.Errorf("data after the end line")
		}
	}
}

// importItem converts an artifact or feedback line, with its vectors if
// vectors is set; size is its payload's and vectors'.
func importItem(l *line, vectors bool) (engine.ImportItem, int, error) {
	ids := func(field string, ss []string) ([]uuid.UUID, error) {
		out := make([]uuid.UUID, len(ss))
		for i, s := range ss {
			id, err := uuid.Parse(s)
			if err != nil {
				return nil, fmt.Errorf("%s[%d]: %w", field, i, err)
			}
			out[i] = id
		}
		return out, nil
	}
	one := func(field, s string) (uuid.UUID, error) {
		if s == "" {
			return uuid.Nil, nil
		}
		id, err := uuid.Parse(s)
		if err != nil {
			return uuid.Nil, fmt.Errorf("%s: %w", field, err)
		}
		return id, nil
	}
	switch l.Kind {
	case "artifact":
		id, err := one("artifact_id", l.ArtifactID)
		if err != nil {
			return engine.ImportItem{}, 0, err
		}
		var spans []uuid.UUID // absent: the engine derives them (engine.SpanID)
		if l.SpanIDs != nil {
			if spans, err = ids("span_ids", l.SpanIDs); err != nil {
				return engine.ImportItem{}, 0, err
			}
		}
		if l.TimestampUS == nil || l.IngestedAtUS == nil {
			return engine.ImportItem{}, 0, fmt.Errorf("artifact %s: timestamp_us and ingested_at_us are required", l.ArtifactID)
		}
		a := &artifact.Artifact{ID: id, Type: l.ArtifactType, ActorID: l.ActorID, SessionID: l.SessionID, ThreadID: l.ThreadID,
			IdempotencyKey: l.IdempotencyKey, Timestamp: *l.TimestampUS, IngestedAt: *l.IngestedAtUS, Metadata: l.Metadata}
		if p := l.Permissions; p != nil {
			a.Permissions = artifact.Permissions{Visibility: p.Visibility, AllowedActors: p.AllowedActors, DeniedActors: p.DeniedActors, RBACTags: p.RBACTags}
		}
		if l.RawPayloadJSON != nil {
			a.Payload = []byte(*l.RawPayloadJSON)
		}
		if l.ContentHash == "" {
			// A line a user wrote: its hash is its payload's (an export's
			// line always has one, which is checked).
			a.ContentHash = artifact.ContentHash(a.Payload)
		} else {
			hash, err := hex.DecodeString(l.ContentHash)
			if err != nil || len(hash) != 32 {
				return engine.ImportItem{}, 0, fmt.Errorf("artifact %s: content_hash is not 64 hex digits", l.ArtifactID)
			}
			a.ContentHash = [32]byte(hash)
		}
		it, size := engine.ImportItem{Artifact: a, SpanIDs: spans}, len(a.Payload)
		if vectors {
			// Present even when empty: an artifact line without vectors
			// gives none, which its span count then refuses.
			it.Vectors = make([][]float32, len(l.Vectors))
			for i, s := range l.Vectors {
				if it.Vectors[i], err = DecodeVector(s); err != nil {
					return engine.ImportItem{}, 0, fmt.Errorf("artifact %s: vectors[%d]: %w", l.ArtifactID, i, err)
				}
				size += 4 * len(it.Vectors[i])
			}
		}
		return it, size, nil
	case "feedback":
		var e engine.ExportedFeedback
		var err error
		if e.ID, err = one("feedback_id", l.FeedbackID); err == nil {
			if e.ArtifactID, err = one("artifact_id", l.ArtifactID); err == nil {
				if e.Preferred, err = one("preferred_span_id", l.PreferredSpanID); err == nil {
					e.Spans, err = ids("span_ids", l.SpanIDs)
				}
			}
		}
		if err != nil {
			return engine.ImportItem{}, 0, err
		}
		if l.CreatedAtUS == nil {
			return engine.ImportItem{}, 0, fmt.Errorf("feedback %s: created_at_us is required", l.FeedbackID)
		}
		e.ActorID, e.Action, e.Reason, e.ConflictID, e.CreatedAt = l.ActorID, l.Action, l.Reason, l.ConflictID, *l.CreatedAtUS
		return engine.ImportItem{Feedback: &e}, 0, nil
	}
	return engine.ImportItem{}, 0, fmt.Errorf("unknown kind %q (want artifact, feedback or end)", l.Kind)
}
