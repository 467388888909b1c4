package engine

import (
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/engine/record"
	"github.com/loci-memory/loci/invindex"
	"github.com/loci-memory/loci/segment"
	"github.com/loci-memory/loci/wal"
)

// Feedback actions (decisions.md § Feedback): the ones a feedback record
// may hold (engine/record).
const (
	ActionPin             = record.ActionPin
	ActionUnpin           = record.ActionUnpin
	ActionPrivate         = record.ActionPrivate
	ActionMarkWrong       = record.ActionMarkWrong
	ActionOutdated        = record.ActionOutdated
	ActionResolveConflict = record.ActionResolveConflict
	ActionClear           = record.ActionClear
)

// FeedbackActions lists the accepted actions.
var FeedbackActions = record.FeedbackActions

// FeedbackInput is one feedback event. SpanID zero means every span of the
// artifact. resolve_conflict names the conflict and, optionally, the
// preferred span; the other span of the conflict becomes outdated.
type FeedbackInput struct {
	Workspace       string
	ActorID         string
	Action          string
	ArtifactID      uuid.UUID
	SpanID          uuid.UUID
	Reason          string
	ConflictID      string
	PreferredSpanID uuid.UUID
	// ConflictSpans are the two spans of the conflict being resolved, as the
	// caller found them (the service, in the workspace's receipts); required
	// for resolve_conflict, whose ArtifactID the caller sets to the artifact
	// of the span made outdated (the marks live with it).
	ConflictSpans [2]uuid.UUID
	// ID, when set, is the event's id, and CreatedAt, when set, its time
	// (CheckWriteTime); zero: a random id and the engine's clock. A replica
	// applying a publisher's event sets the publisher's, so every replica
	// stores the same event. The engine never looks events up by id: a
	// caller that fixes ids keeps them unique.
	ID        uuid.UUID
	CreatedAt time.Time
}

// FeedbackResult acknowledges a durable feedback event.
type FeedbackResult struct {
	FeedbackID uuid.UUID
	Action     string
	Applied    int // spans whose state the event changed or confirmed
	CreatedAt  time.Time
}

// SpanMarks is the effective feedback state of one span.
type SpanMarks struct {
	ArtifactID  uuid.UUID // the span's artifact
	Pinned      bool
	PinnedSeq   uint64 // orders pinned spans in the prefix: first pinned first
	Private     bool
	PrivateFor  []string // actors who marked it private, sorted
	MarkedWrong bool
	Outdated    bool
	OutdatedBy  string
}

// feedbackState is a workspace's effective feedback state, derived from its
// event log in order.
type feedbackState struct {
	spans map[uuid.UUID]*SpanMarks
	// conflicts resolved: conflict id -> the event, for receipts
	resolved map[string]*record.Feedback
}

func newFeedbackState() *feedbackState {
	return &feedbackState{spans: map[uuid.UUID]*SpanMarks{}, resolved: map[string]*record.Feedback{}}
}

// apply folds one event into the state.
func (f *feedbackState) apply(e *record.Feedback) {
	mark := func(id uuid.UUID) *SpanMarks {
		m := f.spans[id]
		if m == nil {
			m = &SpanMarks{ArtifactID: e.ArtifactID}
			f.spans[id] = m
		}
		return m
	}
	for _, id := range e.Spans {
		switch e.Action {
		case ActionPin:
			m := mark(id)
			if !m.Pinned {
				m.Pinned, m.PinnedSeq = true, e.Seq
			}
		case ActionUnpin:
			if m := f.spans[id]; m != nil {
				m.Pinned, m.PinnedSeq = false, 0
			}
		case ActionPrivate:
			m := mark(id)
			m.Private = true
			if e.ActorID == "" {
				break // anonymous: private for nobody
			}
			if i, found := slices.BinarySearch(m.PrivateFor, e.ActorID); !found {
				m.PrivateFor = slices.Insert(m.PrivateFor, i, e.ActorID)
			}
		case ActionMarkWrong:
			mark(id).MarkedWrong = true
		case ActionOutdated:
			m := mark(id)
			m.Outdated, m.OutdatedBy = true, "marked outdated"
			if e.Reason != "" {
				m.OutdatedBy += ": " + e.Reason
			}
		case ActionResolveConflict:
			m := mark(id)
			m.Outdated, m.OutdatedBy = true, fmt.Sprintf("conflict %s resolved in favour of span %s", e.ConflictID, e.Preferred)
		case ActionClear:
			delete(f.spans, id)
		}
	}
	if e.Action == ActionResolveConflict {
		f.resolved[e.ConflictID] = e
	}
}

// marks returns a copy of a span's marks (zero when it has none).
func (f *feedbackState) marks(id uuid.UUID) SpanMarks {
	if f == nil {
		return SpanMarks{}
	}
	if m := f.spans[id]; m != nil {
		c := *m
		c.PrivateFor = slices.Clone(m.PrivateFor)
		return c
	}
	return SpanMarks{}
}

// pinned returns the pinned spans, first pinned first (ties by span id).
func (f *feedbackState) pinned() []uuid.UUID {
	if f == nil {
		return nil
	}
	var ids []uuid.UUID
	for id, m := range f.spans {
		if m.Pinned {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b uuid.UUID) int {
		if sa, sb := f.spans[a].PinnedSeq, f.spans[b].PinnedSeq; sa != sb {
			if sa < sb {
				return -1
			}
			return 1
		}
		return slices.Compare(a[:], b[:])
	})
	return ids
}

// applyFeedback folds an event into its workspace's state. Callers hold mu
// (or are recovering).
func (db *DB) applyFeedback(k wsKey, e *record.Feedback) {
	f := db.feedback[k]
	if f == nil {
		f = newFeedbackState()
		db.feedback[k] = f
	}
	f.apply(e)
}

// readFeedbackSection returns the feedback events of workspace wi of s.
func readFeedbackSection(s *liveSegment, wi int) ([]*record.Feedback, error) {
	b, ok := s.Section(wi, segment.KindFeedback)
	if !ok {
		return nil, nil
	}
	evs, err := record.DecodeFeedbackSection(b)
	if err != nil {
		return nil, fmt.Errorf("segment %s: workspace %d: %w", s.Path(), wi, err)
	}
	return evs, nil
}

// withFeedbackSections attaches the visible events, grouped by workspace in
// order, as FEEDBACK sections; a workspace with events but no artifacts in
// this segment gets an entry of its own.
func withFeedbackSections(ws []segment.WorkspaceData, events []*record.Feedback, hidden func(wsKey, uint64) bool) []segment.WorkspaceData {
	byWS := map[wsKey][]*record.Feedback{}
	var order []wsKey
	for _, e := range events {
		k := wsKey{e.Tenant, e.Workspace}
		if hidden(k, e.Seq) {
			continue
		}
		if byWS[k] == nil {
			order = append(order, k)
		}
		byWS[k] = append(byWS[k], e)
	}
	for _, k := range order {
		ws = appendSection(ws, k, segment.Section{Kind: segment.KindFeedback, Data: record.EncodeFeedbackSection(byWS[k])})
	}
	return ws
}

// appendSection adds an extension section to workspace k of a new segment,
// creating an entry (with an empty BM25 index) when k has no artifacts in it.
func appendSection(ws []segment.WorkspaceData, k wsKey, sec segment.Section) []segment.WorkspaceData {
	i := slices.IndexFunc(ws, func(w segment.WorkspaceData) bool { return w.Tenant == k.Tenant && w.Workspace == k.Workspace })
	if i < 0 {
		lex, _ := invindex.BuildSections(nil, nil)
		ws = append(ws, segment.WorkspaceData{Tenant: k.Tenant, Workspace: k.Workspace, Sections: lexicalSections(lex)})
		i = len(ws) - 1
	}
	ws[i].Sections = append(ws[i].Sections, sec)
	return ws
}

// loadEvents rebuilds the feedback state from the segments' FEEDBACK
// sections, in sequence order, skipping erased events, and indexes their
// receipts. WAL replay then applies the later ones.
func (db *DB) loadEvents() error {
	for _, s := range db.segments {
		if err := db.receipts.place(s); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		for wi := range s.Workspaces() {
			evs, err := readFeedbackSection(s, wi)
			if err != nil {
				return fmt.Errorf("engine: %w", err)
			}
			for _, e := range evs {
				k := wsKey{e.Tenant, e.Workspace}
				if !db.hidden(k, e.Seq) {
					db.applyFeedback(k, e)
				}
			}
		}
	}
	return nil
}

// Feedback records a feedback event durably and applies it: later packs see
// it, and it changes the workspace's data version. The artifact (and span)
// must belong to tenant's workspace, else ErrNotFound.
func (db *DB) Feedback(tenant string, in FeedbackInput) (FeedbackResult, error) {
	if err := db.enter(); err != nil {
		return FeedbackResult{}, err
	}
	defer db.leave()
	if err := checkFeedback(in); err != nil {
		return FeedbackResult{}, err
	}
	a, spans, err := db.artifactAndSpans(tenant, in.ArtifactID)
	if err != nil {
		return FeedbackResult{}, err
	}
	if a.Workspace != in.Workspace {
		return FeedbackResult{}, ErrNotFound // ids of other workspaces do not leak either
	}
	id, at := in.ID, in.CreatedAt
	if id == uuid.Nil {
		id = uuid.New()
	}
	if at.IsZero() {
		at = db.opts.Now()
	}
	e := &record.Feedback{ID: id, Tenant: tenant, Workspace: in.Workspace, ActorID: in.ActorID, Action: in.Action,
		ArtifactID: in.ArtifactID, Reason: in.Reason, CreatedAt: at.UTC().UnixMicro()}
	has := func(id uuid.UUID) bool {
		return slices.ContainsFunc(spans, func(s artifact.Span) bool { return s.ID == id })
	}
	switch {
	case in.Action == ActionResolveConflict:
		if in.ConflictID == "" {
			return FeedbackResult{}, &InvalidError{"ConflictID", "is required for resolve_conflict"}
		}
		a, b := in.ConflictSpans[0], in.ConflictSpans[1]
		if a == (uuid.UUID{}) || b == (uuid.UUID{}) || a == b {
			return FeedbackResult{}, &InvalidError{"ConflictSpans", "must be two different spans"}
		}
		keep := in.PreferredSpanID
		if keep == (uuid.UUID{}) {
			keep = in.SpanID
		}
		var other uuid.UUID
		switch keep {
		case a:
			other = b
		case b:
			other = a
		default:
			return FeedbackResult{}, &InvalidError{"PreferredSpanID", "is not one of ConflictSpans"}
		}
		e.ConflictID, e.Preferred, e.Spans = in.ConflictID, keep, []uuid.UUID{other}
	case in.SpanID != uuid.UUID{}:
		if !has(in.SpanID) {
			return FeedbackResult{}, ErrNotFound
		}
		e.Spans = []uuid.UUID{in.SpanID}
	default:
		for _, s := range spans {
			e.Spans = append(e.Spans, s.ID)
		}
		slices.SortFunc(e.Spans, func(x, y uuid.UUID) int { return slices.Compare(x[:], y[:]) })
	}
	err = db.append(wal.Entry{Type: uint8(record.TypeFeedback), Payload: record.EncodeFeedback(e),
		Apply: func(seq uint64) { db.apply(record.TypeFeedback, seq, nil, e) }})
	if err != nil {
		return FeedbackResult{}, fmt.Errorf("engine: feedback: %w", err)
	}
	return FeedbackResult{FeedbackID: e.ID, Action: e.Action, Applied: len(e.Spans), CreatedAt: time.UnixMicro(e.CreatedAt).UTC()}, nil
}

// MaxReasonLength bounds a feedback event's reason, in bytes.
const MaxReasonLength = 4096

// checkFeedback checks a feedback event against the engine's invariants
// that do not depend on stored data (Feedback checks the conflict's fields
// after the artifact's lookup). Every caller's event meets them; the API's
// validation, with the API's field names and in its order, is the
// service's. Errors name FeedbackInput's fields.
func checkFeedback(in FeedbackInput) error {
	if err := CheckID("Workspace", in.Workspace, true); err != nil {
		return err
	}
	// Feedback without an actor is anonymous (private then hides the span
	// from every actor).
	if err := CheckID("ActorID", in.ActorID, false); err != nil {
		return err
	}
	if !slices.Contains(FeedbackActions, in.Action) {
		return &InvalidError{"Action", fmt.Sprintf("unknown value %q; allowed: %v", in.Action, FeedbackActions)}
	}
	if len(in.Reason) > MaxReasonLength {
		return &InvalidError{"Reason", fmt.Sprintf("is longer than %d bytes", MaxReasonLength)}
	}
	if err := CheckWriteTime("CreatedAt", in.CreatedAt); err != nil {
		return err
	}
	return nil
}

// Marks returns the effective feedback state of a workspace's spans (only
// spans with any mark) and its pinned spans, first pinned first.
func (db *DB) Marks(tenant, ws string) (map[uuid.UUID]SpanMarks, []uuid.UUID) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	f := db.feedback[wsKey{tenant, ws}]
	out := map[uuid.UUID]SpanMarks{}
	if f == nil {
		return out, nil
	}
	for id := range f.spans {
		out[id] = f.marks(id)
	}
	return out, f.pinned()
}

// DataVersion is the workspace's data version: the sequence number of its
// latest ingest, feedback event or erasure (0: never written). Reads and
// receipts never change it.
func (db *DB) DataVersion(tenant, ws string) uint64 {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return db.versions[wsKey{tenant, ws}].Seq
}

// holdsHidden reports whether workspace wi of s holds data an erasure hides:
// artifacts, or feedback events (sorted by seq, so the first decides), older
// than the workspace's tombstone. hidden is the caller's tombstone check.
func holdsHidden(s *liveSegment, wi int, hidden func(wsKey, uint64) bool) bool {
	w := s.Workspace(wi)
	k := wsKey{w.Tenant, w.Workspace}
	if w.Artifacts > 0 && (hidden(k, w.MinSeq) || s.holdsErased(wi)) {
		return true
	}
	// Feedback and receipt sections are in seq order: the first decides.
	for _, kind := range []uint16{segment.KindFeedback, segment.KindReceipts} {
		b, _ := s.Section(wi, kind)
		if first, ok := record.FirstSeq(b); ok && hidden(k, first) {
			return true
		}
	}
	return false
}

func (m SpanMarks) isZero() bool { // ArtifactID is where the marks live, not a mark
	return !m.Pinned && !m.Private && !m.MarkedWrong && !m.Outdated && len(m.PrivateFor) == 0
}
