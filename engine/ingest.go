package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/engine/record"
	"github.com/loci-memory/loci/invindex"
	"github.com/loci-memory/loci/text"
	"github.com/loci-memory/loci/vecindex"
	"github.com/loci-memory/loci/wal"
)

// Chunking targets of the span splitter, in tokens.
const (
	SpanTargetTokens = 200
	SpanMaxTokens    = 512
)

// embedTimeout bounds one Embed call at ingest.
const embedTimeout = 30 * time.Second

// MaxIDLength bounds workspace, actor, session, thread ids and idempotency keys, in bytes.
const MaxIDLength = 256

// IngestInput is one artifact to store. Payload is the artifact's JSON value
// (an object, string or array) exactly as received (nil when absent); the
// engine copies it. The engine checks an input only against its own
// invariants (checkInput: what its formats bound); the API's validation,
// with the API's field names, is the service's.
type IngestInput struct {
	Workspace      string
	ActorID        string
	Type           string
	Payload        []byte
	Timestamp      time.Time // zero: the time of ingest
	Permissions    artifact.Permissions
	IdempotencyKey string
	SessionID      string
	ThreadID       string
	// Metadata is the artifact's string key-value pairs (CheckMetadata).
	Metadata map[string]string
	// ArtifactID, when set, is the id the artifact gets (an asynchronous
	// indexing job assigns it when it accepts the artifact). If the tenant
	// already has an artifact with this id, ingest returns it (Replayed), so
	// a job resumed after a crash never stores its artifact twice.
	ArtifactID uuid.UUID
	// Fence, when non-zero, is the seq at which an asynchronous job accepted
	// the artifact: if the workspace was erased after it, nothing is stored
	// and ingest returns ErrWorkspaceErased. The fence travels in the WAL
	// record, so replay refuses the artifact the same way.
	Fence uint64
	// IngestedAt, when set, is the time the artifact is recorded as ingested
	// (its created time, and its timestamp when Timestamp is zero); zero is
	// the engine's clock. A replica applying a publisher's write sets the
	// publisher's time here, so every replica stores the same artifact. It
	// must lie in years 2000 to 9999 (CheckWriteTime).
	IngestedAt time.Time
	// Text, when Extracted, is the payload's text as text.Extract(Type,
	// Payload) gives it: the caller has validated the input and parsed the
	// payload, and the engine indexes Text as given instead of parsing the
	// payload again. Without Extracted the engine extracts the text itself.
	Text      string
	Extracted bool
}

// IngestResult says what was stored, or found again by idempotency key.
type IngestResult struct {
	ArtifactID  uuid.UUID
	ContentHash [32]byte
	SpanIDs     []uuid.UUID
	Created     time.Time // when the engine first accepted the artifact
	Indexed     bool
	Embedded    bool // its spans have vectors (false: no embedder, or it was unavailable)
	Replayed    bool // an earlier artifact with the same idempotency key was returned
}

type idemKey struct {
	ws  wsKey
	key string
}

// inflightIngest is an idempotency key whose artifact is being written; a
// concurrent ingest with the same key waits for it instead of duplicating it.
type inflightIngest struct{ done chan struct{} }

// Ingest stores one artifact durably: it returns once the WAL record is
// synced (per the fsync policy) and the artifact is readable.
func (db *DB) Ingest(tenant string, in IngestInput) (IngestResult, error) {
	res, err := db.IngestBatch(tenant, []IngestInput{in})
	if err != nil {
		return IngestResult{}, err
	}
	return res[0], nil
}

// IngestBatch stores several artifacts as one WAL group: all are checked
// first (an item that breaks an invariant is an *InvalidError, wrapped in
// an error naming its index, and nothing is stored), then written with one
// group commit.
func (db *DB) IngestBatch(tenant string, ins []IngestInput) ([]IngestResult, error) {
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.leave()
	db.embedding.enterForeground()
	defer db.embedding.leaveForeground()
	res, err := db.ingestBatch(tenant, ins)
	if errors.Is(err, ErrDuplicate) {
		// The replicated log held this write already (the same idempotency
		// keys or artifact ids, sent through another node, or an earlier
		// attempt that was not acknowledged), and this engine has applied
		// the first copy: another pass answers with what it stored. Should
		// the log answer so again, the first copy stored nothing this pass
		// finds (and the client is asked to retry).
		res, err = db.ingestBatch(tenant, ins)
		if errors.Is(err, ErrDuplicate) {
			return nil, fmt.Errorf("%w: an earlier copy of this write is not applied yet", ErrUnavailable)
		}
	}
	return res, err
}

func (db *DB) ingestBatch(tenant string, ins []IngestInput) ([]IngestResult, error) {
	if err := CheckID("tenant", tenant, true); err != nil {
		return nil, err
	}
	now := db.opts.Now().UTC()
	prepared := make([]*headArtifact, len(ins))
	for i := range ins {
		// The payload's JSON is checked by the parse of text extraction in
		// prepare (or was, by the caller that extracted it).
		if err := checkInput(&ins[i]); err != nil {
			return nil, fmt.Errorf("engine: ingest item %d: %w", i, err)
		}
		at := now
		if !ins[i].IngestedAt.IsZero() {
			at = ins[i].IngestedAt.UTC()
		}
		ha, err := db.prepare(tenant, &ins[i], at)
		if err != nil {
			return nil, fmt.Errorf("engine: ingest item %d: %w", i, err)
		}
		prepared[i] = ha
	}

	db.lastWrite.Store(time.Now().UnixNano())
	results := make([]IngestResult, len(ins))
	reserved, err := db.resolveIdempotency(tenant, ins, prepared, results)
	if err != nil {
		return nil, err
	}
	defer db.release(reserved)
	for i, ha := range prepared {
		if ha == nil || ins[i].ArtifactID == uuid.Nil {
			continue
		}
		if a, spans, err := db.artifactAndSpans(tenant, ins[i].ArtifactID); err == nil {
			prepared[i] = nil
			results[i] = resultOf(a, spans, true)
		}
	}
	// Room is needed only for what will be stored: a retry whose items are
	// all stored already is answered at once, under back-pressure too.
	if slices.ContainsFunc(prepared, func(ha *headArtifact) bool { return ha != nil }) && !db.roomNow() {
		db.embedding.foreground.Add(-1)
		err := db.waitForRoom()
		db.embedding.foreground.Add(1)
		if err != nil {
			return nil, err
		}
	}

	if anyFence(ins) {
		if err := db.checkFences(prepared, ins); err != nil {
			return nil, err
		}
	}
	// Embedding comes after idempotency: a retried request must not pay the
	// embedder again.
	if !db.opts.EmbedInBackground {
		db.embed(prepared)
	}
	var entries []wal.Entry
	for i, ha := range prepared {
		if ha == nil {
			continue
		}
		ha.fence = ins[i].Fence
		entries = append(entries, wal.Entry{
			Type:    uint8(record.TypeArtifact),
			Payload: record.AppendArtifact(nil, ha.fence, ha.a, ha.spans, ha.vecs),
			Apply:   func(seq uint64) { db.apply(record.TypeArtifact, seq, nil, ha) },
		})
		results[i] = resultOf(ha.a, ha.spans, false)
		results[i].Embedded = ha.vecs != nil
	}
	if len(entries) > 0 {
		if err := db.appendWrite(Write{Entries: entries, Tenant: tenant, Ingested: ingested(ins, prepared)}); err != nil {
			if errors.Is(err, ErrDuplicate) {
				return nil, err
			}
			return nil, fmt.Errorf("engine: ingest: %w", err)
		}
		if anyFenced(prepared) {
			return nil, ErrWorkspaceErased
		}
		for i, ha := range prepared {
			if ha == nil || !ha.keyTaken {
				continue
			}
			// The log held an earlier copy of this write, stored under its
			// keys: answer with what that copy stored.
			a, spans, ok, err := db.findIdempotent(idemKey{wsKey{tenant, ins[i].Workspace}, ins[i].IdempotencyKey})
			if err != nil {
				return nil, err
			}
			if !ok { // erased since: the client retries and stores it anew
				return nil, fmt.Errorf("%w: an earlier copy of this write was erased while it was applied", ErrUnavailable)
			}
			results[i] = resultOf(a, spans, true)
		}
	}
	return results, nil
}

// roomNow is waitForRoom's test without its mutex and without blocking on
// the lock: it reports true when the unflushed heads are below the stall
// limit (or background maintenance is off), so the caller need not wait.
// While the WAL applies records it holds the write lock; rather than wait
// for it in line (every ingest would then queue on waitForRoom's mutex
// behind a reader that waits for the lock, and the applier, in turn, for
// that reader to be scheduled), roomNow tries again a few times after a
// yield or a short sleep: the lock is free between records. After
// roomTries it reports false and the caller waits for room as before.
func (db *DB) roomNow() bool {
	if db.opts.DisableBackground {
		return true
	}
	for try := 0; !db.mu.TryRLock(); try++ {
		switch {
		case try == roomTries:
			return false
		case try < 2:
			runtime.Gosched()
		default:
			time.Sleep(20 * time.Microsecond)
		}
	}
	used, _ := db.unflushedLocked()
	db.mu.RUnlock()
	return used < stallFactor*db.opts.FlushThreshold
}

// roomTries bounds roomNow's attempts at the read lock.
const roomTries = 8

// anyIdempotencyKey reports whether an item carries an idempotency key.
func anyIdempotencyKey(ins []IngestInput) bool {
	for i := range ins {
		if ins[i].IdempotencyKey != "" {
			return true
		}
	}
	return false
}

// anyFence reports whether an item carries an erasure fence; only then can
// checkFences refuse the batch.
func anyFence(ins []IngestInput) bool {
	for i := range ins {
		if ins[i].Fence != 0 {
			return true
		}
	}
	return false
}

// resolveIdempotency fills results for items whose key is already stored (or
// repeated earlier in the batch) and nils their prepared entry; it reserves the
// keys of the new items. Reservation is all-or-nothing under idemMu, so two
// batches sharing keys cannot deadlock.
func (db *DB) resolveIdempotency(tenant string, ins []IngestInput, prepared []*headArtifact, results []IngestResult) ([]idemKey, error) {
	if !anyIdempotencyKey(ins) {
		return nil, nil // nothing to resolve or reserve: idemMu is not needed
	}
	for {
		var wait *inflightIngest
		db.idemMu.Lock()
		for i := range ins {
			if ins[i].IdempotencyKey == "" {
				continue
			}
			if f := db.inflight[idemKey{wsKey{tenant, ins[i].Workspace}, ins[i].IdempotencyKey}]; f != nil {
				wait = f
				break
			}
		}
		if wait != nil {
			db.idemMu.Unlock()
			<-wait.done
			continue
		}
		var reserved []idemKey
		firstInBatch := map[idemKey]int{}
		for i := range ins {
			if ins[i].IdempotencyKey == "" {
				continue
			}
			k := idemKey{wsKey{tenant, ins[i].Workspace}, ins[i].IdempotencyKey}
			// A key reused with another artifact is refused (nothing of
			// the batch is stored): returning the stored artifact would
			// silently drop the new one.
			fail := func(err error) ([]idemKey, error) {
				for _, r := range reserved {
					close(db.inflight[r].done)
					delete(db.inflight, r)
				}
				db.idemMu.Unlock()
				return nil, err
			}
			if j, ok := firstInBatch[k]; ok {
				if diff := IdempotencyDiff(prepared[j].a, &ins[i]); diff != nil {
					return fail(&IdempotencyRepeatError{Item: i, Earlier: j, Key: k.key, Differs: diff})
				}
				prepared[i] = nil
				results[i] = resultOf(prepared[j].a, prepared[j].spans, true)
				continue
			}
			a, spans, ok, err := db.findIdempotent(k)
			if err != nil {
				return fail(err)
			}
			if ok {
				if diff := IdempotencyDiff(a, &ins[i]); diff != nil {
					return fail(&IdempotencyConflictError{Item: i, Key: k.key, Workspace: ins[i].Workspace, ArtifactID: a.ID, Differs: diff})
				}
				prepared[i] = nil
				results[i] = resultOf(a, spans, true)
				continue
			}
			firstInBatch[k] = i
			db.inflight[k] = &inflightIngest{done: make(chan struct{})}
			reserved = append(reserved, k)
		}
		db.idemMu.Unlock()
		return reserved, nil
	}
}

// IdempotencyConflictError is an ingest whose idempotency key is already
// the key of a stored artifact that differs from it (IdempotencyDiff):
// nothing of the batch is stored. It is data for the caller to word (the
// service names the API's fields and answers 409); its Error is the
// engine's own wording.
type IdempotencyConflictError struct {
	Item       int // the batch item (0 for Ingest)
	Key        string
	Workspace  string
	ArtifactID uuid.UUID // the artifact stored under Key
	Differs    []string  // the fields that differ, as IdempotencyDiff names them
}

func (e *IdempotencyConflictError) Error() string {
	return fmt.Sprintf("engine: ingest item %d: idempotency key %q is already the key of artifact %s in workspace %q, which differs in %s",
		e.Item, e.Key, e.ArtifactID, e.Workspace, strings.Join(e.Differs, ", "))
}

// IdempotencyRepeatError is a batch in which two items with one idempotency
// key differ (IdempotencyDiff): one key names one artifact, so nothing of
// the batch is stored. Like IdempotencyConflictError it is data for the
// caller to word (the service answers 400).
type IdempotencyRepeatError struct {
	Item    int // the later item
	Earlier int // the earlier item with the same key
	Key     string
	Differs []string // the fields that differ, as IdempotencyDiff names them
}

func (e *IdempotencyRepeatError) Error() string {
	return fmt.Sprintf("engine: ingest item %d: idempotency key %q is also the key of item %d, which differs in %s",
		e.Item, e.Key, e.Earlier, strings.Join(e.Differs, ", "))
}

// IdempotencyDiff names the fields in which in differs from a, the artifact
// stored under the same idempotency key, by IngestInput's field names, in
// that order: Type, Payload, ActorID, SessionID, ThreadID, Permissions,
// Metadata. nil means in is a retry of a. The fields compared are those
// that make the artifact what it is; the payload is compared by content
// hash (the exact bytes sent; a JSON string by its decoded text). The
// timestamp is not compared: it defaults to the time of ingest, so a retry
// without one always differs from the original.
func IdempotencyDiff(a *artifact.Artifact, in *IngestInput) []string {
	var diff []string
	if a.Type != in.Type {
		diff = append(diff, "Type")
	}
	if a.ContentHash != artifact.ContentHash(in.Payload) {
		diff = append(diff, "Payload")
	}
	if a.ActorID != in.ActorID {
		diff = append(diff, "ActorID")
	}
	if a.SessionID != in.SessionID {
		diff = append(diff, "SessionID")
	}
	if a.ThreadID != in.ThreadID {
		diff = append(diff, "ThreadID")
	}
	if !samePermissions(a.Permissions, in.Permissions) {
		diff = append(diff, "Permissions")
	}
	if !sameMetadata(a.Metadata, in.Metadata) {
		diff = append(diff, "Metadata")
	}
	return diff
}

// samePermissions compares permissions as stored: an empty visibility is
// public and an empty list is absent.
func samePermissions(p, q artifact.Permissions) bool {
	vis := func(v string) string {
		if v == "" {
			return "public"
		}
		return v
	}
	return vis(p.Visibility) == vis(q.Visibility) && slices.Equal(p.AllowedActors, q.AllowedActors) &&
		slices.Equal(p.DeniedActors, q.DeniedActors) && slices.Equal(p.RBACTags, q.RBACTags)
}

func (db *DB) release(keys []idemKey) {
	if len(keys) == 0 {
		return
	}
	db.idemMu.Lock()
	for _, k := range keys {
		close(db.inflight[k].done)
		delete(db.inflight, k)
	}
	db.idemMu.Unlock()
}

func resultOf(a *artifact.Artifact, spans []artifact.Span, replayed bool) IngestResult {
	ids := make([]uuid.UUID, len(spans))
	for i := range spans {
		ids[i] = spans[i].ID
	}
	return IngestResult{ArtifactID: a.ID, ContentHash: a.ContentHash, SpanIDs: ids,
		Created: time.UnixMicro(a.IngestedAt).UTC(), Indexed: a.Indexed, Replayed: replayed}
}

// embed computes the quantized vectors of every span of the prepared
// artifacts with one Embed call. When the embedder fails the artifacts are
// stored without vectors (lexical retrieval still finds them) and the
// failure is logged: ingest never fails because embeddings are unavailable.
func (db *DB) embed(prepared []*headArtifact) {
	if db.opts.Embedder == nil {
		return
	}
	var texts []string
	for _, ha := range prepared {
		if ha == nil {
			continue
		}
		for i := range ha.spans {
			texts = append(texts, ha.spans[i].Text)
		}
	}
	if len(texts) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), embedTimeout)
	defer cancel()
	vecs, err := db.opts.Embedder.Embed(ctx, texts)
	if err == nil && len(vecs) != len(texts) {
		err = fmt.Errorf("embedder returned %d vectors for %d texts", len(vecs), len(texts))
	}
	if err != nil {
		db.log.Warn("engine: embedding failed; artifacts stored without vectors", "texts", len(texts), "err", err)
		return
	}
	model, dim := db.embedModel()
	base := 0
	for _, ha := range prepared {
		if ha == nil {
			continue
		}
		own := vecs[base : base+len(ha.spans)]
		base += len(ha.spans)
		if len(own) == 0 {
			continue
		}
		sv := &record.SpanVectors{Model: model, Dim: dim, Data: make([]int8, len(own)*dim), Scales: make([]float32, len(own))}
		for i, v := range own {
			if len(v) != dim {
				db.log.Warn("engine: embedder returned a vector of the wrong dimension; artifact stored without vectors", "got", len(v), "want", dim)
				sv = nil
				break
			}
			sv.Scales[i] = vecindex.Quantize(v, sv.Data[i*dim:(i+1)*dim])
		}
		ha.vecs = sv
	}
}

// prepare builds the artifact and its spans: ids, content hash, text
// extraction, chunking and token counts. It runs on the caller's goroutine so
// concurrent ingests use every core.
func (db *DB) prepare(tenant string, in *IngestInput, now time.Time) (*headArtifact, error) {
	ts := now
	if !in.Timestamp.IsZero() {
		ts = in.Timestamp
	}
	id := in.ArtifactID
	if id == uuid.Nil {
		id = uuid.New()
	}
	a := &artifact.Artifact{
		ID: id, Tenant: tenant, Workspace: in.Workspace, Type: in.Type, ActorID: in.ActorID,
		SessionID: in.SessionID, ThreadID: in.ThreadID, IdempotencyKey: in.IdempotencyKey,
		Timestamp: ts.UnixMicro(), IngestedAt: now.UnixMicro(),
		Permissions: clonePermissions(in.Permissions), Payload: bytes.Clone(in.Payload), Indexed: true,
		Metadata: CloneMetadata(in.Metadata),
	}
	a.ContentHash = artifact.ContentHash(a.Payload)
	spans, err := cutSpans(db.opts.TokenCounter, in, a)
	if err != nil {
		return nil, err
	}
	return &headArtifact{a: a, spans: spans, terms: spanTerms(spans), keys: spanTieKeys(spans)}, nil
}

// cutSpans extracts the text of artifact a's payload (in.Text when
// in.Extracted) and chunks it into spans with counter: ingest's and
// import's rule, and SpanTexts'.
func cutSpans(counter text.TokenCounter, in *IngestInput, a *artifact.Artifact) ([]artifact.Span, error) {
	if len(a.Payload) == 0 {
		return nil, nil
	}
	extracted := in.Text
	if !in.Extracted {
		var err error
		if extracted, err = text.Extract(in.Type, in.ActorID, in.Payload); err != nil {
			if !json.Valid(in.Payload) {
				return nil, &InvalidError{"Payload", "is not valid JSON"}
			}
			return nil, &InvalidError{"Payload", err.Error()}
		}
	}
	var spans []artifact.Span
	for i, c := range text.Chunks(extracted, counter, SpanTargetTokens, SpanMaxTokens) {
		spans = append(spans, artifact.Span{
			ID: SpanID(a.ID, uint32(i)), ArtifactID: a.ID, Ordinal: uint32(i), Start: uint32(c.Start), End: uint32(c.End),
			Tokens: uint32(c.Tokens), Timestamp: a.Timestamp, Text: c.Text,
		})
	}
	return spans, nil
}

// spanIDNamespace is the namespace of span ids (SpanID): a fixed random
// UUID of Loci's. Changing it changes every span id derived from now on.
var spanIDNamespace = uuid.MustParse("2cb66509-aff8-4994-b319-a4f95d8423e1")

// SpanID is the id of the span at ordinal (0, 1, ...) of artifact
// artifactID: a name-based UUID (version 5, SHA-1) in spanIDNamespace of the
// artifact id's 16 bytes followed by the ordinal as 4 bytes big-endian. Span
// ids are thus fixed by the artifact id: a job resumed with the same
// artifact id, or a replica applying the same write, gets the same ids. They
// are unique because artifact ids are (random version 4 UUIDs, or ids a
// caller fixes once per artifact); spans stored before this rule keep the
// random ids they were given.
func SpanID(artifactID uuid.UUID, ordinal uint32) uuid.UUID {
	var name [20]byte
	copy(name[:16], artifactID[:])
	binary.BigEndian.PutUint32(name[16:], ordinal)
	return uuid.NewSHA1(spanIDNamespace, name[:])
}

// The range a write time given by the caller (IngestInput.IngestedAt,
// FeedbackInput.CreatedAt) must lie in (CheckWriteTime).
var (
	minWriteTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	maxWriteTime = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
)

// CheckWriteTime checks a given write time (zero: none given). The rule
// is a pure function of the value, never of the local clock: replicas
// applying the same write must all accept or all refuse it, and a replica
// applying an old log, or whose clock lags the publisher's, must not refuse
// a time another accepted. So the bounds only catch a time that cannot be
// one (an unset clock, a unit error: before 2000, or past year 9999, which
// RFC 3339 cannot write; the µs fields are far from overflowing). An ingest
// time is not compared with the artifact's Timestamp either, which callers
// may set to any time, earlier or later than the ingest.
func CheckWriteTime(field string, t time.Time) *InvalidError {
	switch {
	case t.IsZero():
		return nil
	case t.Before(minWriteTime):
		return &InvalidError{field, fmt.Sprintf("%s is before %s", t.UTC().Format(time.RFC3339Nano), minWriteTime.Format(time.RFC3339))}
	case !t.Before(maxWriteTime):
		return &InvalidError{field, fmt.Sprintf("%s is after year 9999", t.UTC().Format(time.RFC3339Nano))}
	}
	return nil
}

// spanTerms returns the counted index terms of each span's text, as
// invindex.CountTerms(invindex.Analyze(text, nil)) counts them.
func spanTerms(spans []artifact.Span) []invindex.DocTerms {
	return invindex.CountTexts(len(spans), func(i int) string { return spans[i].Text })
}

func clonePermissions(p artifact.Permissions) artifact.Permissions {
	clone := func(s []string) []string {
		if len(s) == 0 {
			return nil
		}
		return append([]string(nil), s...)
	}
	return artifact.Permissions{Visibility: p.Visibility, AllowedActors: clone(p.AllowedActors),
		DeniedActors: clone(p.DeniedActors), RBACTags: clone(p.RBACTags)}
}

// checkInput checks an artifact against the engine's invariants: the
// bounds of its ids, a known type and visibility, a payload that is a JSON
// object, string or array (its JSON validity is checked by text extraction's
// parse), metadata within its bounds and a possible write time. Every
// caller's input meets them (benchmarks, indexing jobs, import); the API's
// validation, which the service does first, names the API's fields and
// reports these in its own order. Errors name IngestInput's fields.
func checkInput(in *IngestInput) *InvalidError {
	for _, f := range []struct {
		name, v  string
		required bool
	}{{"Workspace", in.Workspace, true}, {"ActorID", in.ActorID, true}, {"IdempotencyKey", in.IdempotencyKey, false},
		{"SessionID", in.SessionID, false}, {"ThreadID", in.ThreadID, false}} {
		if err := CheckID(f.name, f.v, f.required); err != nil {
			return err
		}
	}
	if !artifact.ValidType(in.Type) {
		return &InvalidError{"Type", fmt.Sprintf("unknown value %q; allowed: %v", in.Type, artifact.Types)}
	}
	if len(in.Payload) > 0 && !JSONContainer(in.Payload) {
		return &InvalidError{"Payload", "must be a JSON object, string or array"}
	}
	if !ValidVisibility(in.Permissions.Visibility) {
		return &InvalidError{"Permissions.Visibility", fmt.Sprintf("unknown value %q; allowed: public, private, restricted", in.Permissions.Visibility)}
	}
	for _, l := range []struct {
		name string
		v    []string
	}{{"Permissions.AllowedActors", in.Permissions.AllowedActors}, {"Permissions.DeniedActors", in.Permissions.DeniedActors}, {"Permissions.RBACTags", in.Permissions.RBACTags}} {
		for i, s := range l.v {
			if err := CheckID(fmt.Sprintf("%s[%d]", l.name, i), s, true); err != nil {
				return err
			}
		}
	}
	if err := CheckMetadata("Metadata", in.Metadata); err != nil {
		return err
	}
	return CheckWriteTime("IngestedAt", in.IngestedAt)
}

// JSONContainer reports whether a JSON value (assumed valid) is an
// object, string or array: the payloads text extraction takes.
func JSONContainer(v []byte) bool {
	switch firstNonSpace(v) {
	case '{', '[', '"':
		return true
	}
	return false
}

// ValidVisibility reports whether v is a visibility the engine stores
// ("" is public).
func ValidVisibility(v string) bool {
	switch v {
	case "", "public", "private", "restricted":
		return true
	}
	return false
}

// MaxWorkspaceIDLength bounds a workspace id, in bytes.
const MaxWorkspaceIDLength = 128

// CheckWorkspaceID is the one rule for workspace ids, which the API checks
// when data is written to a workspace (ingest), and import too: 1 to
// MaxWorkspaceIDLength bytes of A-Z a-z 0-9 and . _ : @ -, and not "." or
// "..". A workspace id travels as a URL path segment (DELETE
// /v1/workspaces/{workspace_id}), so it must never hold '/', a percent
// sign, a dot segment or a control character, which proxies and routers
// rewrite. The error names workspace_id, the field of the API and of the
// export format. The engine itself stores any id CheckID accepts, so
// workspaces written before the rule stay readable and erasable.
func CheckWorkspaceID(v string) *InvalidError {
	const field = "workspace_id"
	switch {
	case v == "":
		return &InvalidError{field, "is required"}
	case len(v) > MaxWorkspaceIDLength:
		return &InvalidError{field, fmt.Sprintf("is %d bytes, longer than the limit of %d", len(v), MaxWorkspaceIDLength)}
	case v == "." || v == "..":
		return &InvalidError{field, fmt.Sprintf("%q is not allowed (a path dot segment)", v)}
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '@' || c == '-') {
			return &InvalidError{field, fmt.Sprintf("byte %d (%q) is not allowed; a workspace id is 1 to %d bytes of A-Z a-z 0-9 . _ : @ -", i, c, MaxWorkspaceIDLength)}
		}
	}
	return nil
}

// CheckID checks an id-like field (workspace, actor, session): at most
// MaxIDLength bytes of UTF-8 without control characters, and not empty when
// required. The error names field.
func CheckID(field, v string, required bool) *InvalidError {
	switch {
	case v == "" && required:
		return &InvalidError{field, "is required"}
	case len(v) > MaxIDLength:
		return &InvalidError{field, fmt.Sprintf("is %d bytes, longer than the limit of %d", len(v), MaxIDLength)}
	case !utf8.ValidString(v):
		return &InvalidError{field, "is not valid UTF-8"}
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return &InvalidError{field, "contains a control character"}
		}
	}
	return nil
}

func firstNonSpace(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c
	}
	return 0
}

// ingested names the artifacts an ingest stores (the prepared ones), for a
// replicator's de-duplication.
func ingested(ins []IngestInput, prepared []*headArtifact) []Ingested {
	var out []Ingested
	for i, ha := range prepared {
		if ha != nil {
			out = append(out, Ingested{Workspace: ha.a.Workspace, IdempotencyKey: ins[i].IdempotencyKey, ID: ha.a.ID})
		}
	}
	return out
}
