package engine

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/engine/manifest"
	"github.com/loci-memory/loci/engine/record"
	"github.com/loci-memory/loci/text"
	"github.com/loci-memory/loci/vecindex"
	"github.com/loci-memory/loci/vfs"
	"github.com/loci-memory/loci/wal"
)

// ExportedFeedback is a feedback event as export writes it and import reads
// it: the event exactly as stored, without its tenant and workspace.
type ExportedFeedback struct {
	ID         uuid.UUID
	ActorID    string
	Action     string
	ArtifactID uuid.UUID
	Spans      []uuid.UUID // the spans the action applies to, sorted
	Reason     string
	ConflictID string
	Preferred  uuid.UUID
	CreatedAt  int64 // Unix µs
}

// ExportItem is one record of a workspace export: an artifact with the ids
// of its spans in order, or a feedback event.
type ExportItem struct {
	Artifact *artifact.Artifact // must not be modified
	SpanIDs  []uuid.UUID
	Feedback *ExportedFeedback
}

// WorkspaceExport summarizes an exported workspace.
type WorkspaceExport struct {
	DataVersion uint64
	Newest      int64 // newest artifact time, Unix µs (math.MinInt64: none)
	Embedder    string
	EmbedderDim int
	Artifacts   int
	Feedback    int
}

// ExportWorkspace calls begin with the workspace's data version and
// embedder, then emit with every visible artifact and feedback event of the
// workspace, in sequence order (the order they were written), so that
// importing them in that order rebuilds the same workspace. It holds the
// read lock throughout: writes wait, so the export is of one data version.
func (db *DB) ExportWorkspace(tenant, ws string, begin func(WorkspaceExport) error, emit func(ExportItem) error) (WorkspaceExport, error) {
	if err := db.enter(); err != nil {
		return WorkspaceExport{}, err
	}
	defer db.leave()
	db.mu.RLock()
	defer db.mu.RUnlock()
	k := wsKey{tenant, ws}
	v := db.versions[k]
	sum := WorkspaceExport{DataVersion: v.Seq, Newest: v.Newest, Embedder: db.manifest.Embedder, EmbedderDim: db.manifest.EmbedderDim}
	if err := begin(sum); err != nil {
		return sum, err
	}
	// emitPart merges a part's artifacts and events by seq.
	var events []*record.Feedback
	flushEvents := func(before uint64) error {
		for len(events) > 0 && events[0].Seq < before {
			e := events[0]
			events = events[1:]
			sum.Feedback++
			if err := emit(ExportItem{Feedback: &ExportedFeedback{ID: e.ID, ActorID: e.ActorID, Action: e.Action,
				ArtifactID: e.ArtifactID, Spans: slices.Clone(e.Spans), Reason: e.Reason, ConflictID: e.ConflictID,
				Preferred: e.Preferred, CreatedAt: e.CreatedAt}}); err != nil {
				return err
			}
		}
		return nil
	}
	emitArtifact := func(a *artifact.Artifact, spans []uuid.UUID) error {
		if err := flushEvents(a.Seq); err != nil {
			return err
		}
		sum.Artifacts++
		return emit(ExportItem{Artifact: a, SpanIDs: spans})
	}
	visible := func(evs []*record.Feedback) []*record.Feedback {
		var out []*record.Feedback
		for _, e := range evs {
			if e.Tenant != tenant || e.Workspace != ws || db.hidden(k, e.Seq) {
				continue
			}
			// Events on an artifact erased on its own go with it.
			if _, _, _, ok := db.locate(tenant, e.ArtifactID); ok {
				out = append(out, e)
			}
		}
		return out
	}
	for _, s := range db.segments {
		w, ok := s.FindWorkspace(tenant, ws)
		if !ok {
			continue
		}
		evs, err := readFeedbackSection(s, w)
		if err != nil {
			return sum, fmt.Errorf("engine: export: %w", err)
		}
		events = visible(evs)
		spans := map[uuid.UUID][]uuid.UUID{}
		if err := s.Spans(w, func(sp artifact.Span) error {
			spans[sp.ArtifactID] = append(spans[sp.ArtifactID], sp.ID)
			return nil
		}); err != nil {
			return sum, fmt.Errorf("engine: export: segment %s: %w", s.Path(), err)
		}
		if err := s.Artifacts(w, func(a *artifact.Artifact) error {
			if db.hidden(k, a.Seq) {
				return nil
			}
			return emitArtifact(a, spans[a.ID])
		}); err != nil {
			return sum, fmt.Errorf("engine: export: segment %s: %w", s.Path(), err)
		}
		if err := flushEvents(^uint64(0)); err != nil {
			return sum, err
		}
	}
	hs := db.headsNewestFirst()
	for i := len(hs) - 1; i >= 0; i-- {
		events = visible(hs[i].feedback)
		if hw := hs[i].workspaces[k]; hw != nil {
			for _, ha := range hw.artifacts {
				if db.hidden(k, ha.a.Seq) {
					continue
				}
				ids := make([]uuid.UUID, len(ha.spans))
				for j, sp := range ha.spans {
					ids[j] = sp.ID
				}
				if err := emitArtifact(ha.a, ids); err != nil {
					return sum, err
				}
			}
		}
		if err := flushEvents(^uint64(0)); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// ImportItem is one record to import: an artifact (its Tenant, Workspace
// and Seq are ignored) with the ids its spans get, or a feedback event.
type ImportItem struct {
	Artifact *artifact.Artifact
	SpanIDs  []uuid.UUID // nil: SpanID of the artifact id and each ordinal
	// Vectors, when not nil, are the artifact's span vectors as the
	// directory's embedder computed them elsewhere (`loci embed`): one per
	// span the payload is cut into, in span order, each of the embedder's
	// dimension, finite and not all zero (CheckVector). They are quantized
	// as the embedder's own output is at ingest, and the spans are not
	// embedded.
	Vectors  [][]float32
	Feedback *ExportedFeedback
	// Line is where the record came from in the import file, named in
	// errors about it (0: its index in the call is named instead).
	Line int
}

// where names item i of an import in errors.
func (it *ImportItem) where(i int) string {
	if it.Line > 0 {
		return fmt.Sprintf("line %d", it.Line)
	}
	return fmt.Sprintf("record %d", i)
}

// Import stores exported records in workspace ws of tenant, in order, as one
// WAL group, keeping every id and timestamp: artifacts are prepared again
// from their payloads (text extraction, chunking, token counts and, with
// inline embedding, vectors), which must give as many spans as the export
// names and the exported content hash; feedback events must name artifacts
// of the workspace and their spans. Nothing is stored if any record is
// refused. It is meant for `loci import` on a stopped data directory.
func (db *DB) Import(tenant, ws string, items []ImportItem) error {
	if err := db.enter(); err != nil {
		return err
	}
	defer db.leave()
	if err := CheckID("tenant", tenant, true); err != nil {
		return err
	}
	if err := CheckWorkspaceID(ws); err != nil {
		return err
	}
	now := time.Now() // acceptance only: what is stored is the export's
	prepared := make([]*headArtifact, len(items))
	errs := make([]error, len(items))
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < len(items); i += workers {
				if items[i].Artifact != nil {
					prepared[i], errs[i] = db.prepareImport(tenant, ws, &items[i], now)
				}
			}
		}(w)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("engine: import: %s: %w", items[i].where(i), err)
		}
	}
	batch := map[uuid.UUID]*headArtifact{}
	db.mu.RLock()
	for i, ha := range prepared {
		if ha == nil {
			continue
		}
		if batch[ha.a.ID] != nil {
			db.mu.RUnlock()
			return fmt.Errorf("engine: import: %s: artifact %s appears twice in the import", items[i].where(i), ha.a.ID)
		}
		if where, ok := db.artifactIDTakenLocked(ha.a.ID); ok {
			db.mu.RUnlock()
			return fmt.Errorf("engine: import: %s: artifact id %s is already taken in this data directory (%s); an export imports once per directory", items[i].where(i), ha.a.ID, where)
		}
		batch[ha.a.ID] = ha
	}
	db.mu.RUnlock()
	events := make([]*record.Feedback, len(items))
	var toEmbed []*headArtifact
	var toEmbedAt []string // where each came from
	for i, it := range items {
		if ha := prepared[i]; ha != nil {
			if ha.vecs == nil {
				toEmbed, toEmbedAt = append(toEmbed, ha), append(toEmbedAt, it.where(i))
			}
			continue
		}
		if it.Feedback == nil {
			return fmt.Errorf("engine: import: %s is neither an artifact nor a feedback event", it.where(i))
		}
		var err error
		if events[i], err = db.importEvent(tenant, ws, it.Feedback, batch); err != nil {
			return fmt.Errorf("engine: import: %s: %w", it.where(i), err)
		}
	}
	if !db.opts.EmbedInBackground {
		if err := db.embedImported(toEmbed, toEmbedAt); err != nil {
			return fmt.Errorf("engine: import: %w", err)
		}
	}
	var entries []wal.Entry
	for i := range items {
		if ha := prepared[i]; ha != nil {
			entries = append(entries, wal.Entry{
				Type:    uint8(record.TypeArtifact),
				Payload: record.AppendArtifact(nil, 0, ha.a, ha.spans, ha.vecs),
				Apply:   func(seq uint64) { db.apply(record.TypeArtifact, seq, nil, ha) },
			})
			continue
		}
		e := events[i]
		entries = append(entries, wal.Entry{Type: uint8(record.TypeFeedback), Payload: record.EncodeFeedback(e),
			Apply: func(seq uint64) { db.apply(record.TypeFeedback, seq, nil, e) }})
	}
	if len(entries) > 0 {
		if err := db.append(entries...); err != nil {
			return fmt.Errorf("engine: import: %w", err)
		}
	}
	return nil
}

// importEmbedTexts bounds the span texts of one embedder call of Import,
// each under embedTimeout: a batch of 1,024 records of long texts takes
// the built-in encoder over a minute on two loaded cores.
const importEmbedTexts = 64

// embedImported embeds the spans of prepared artifacts inline, a few at a
// time, and refuses the import if any is left without vectors: an
// imported artifact is never embedded later, so it would be missing from
// semantic search for good. where names each artifact's record.
func (db *DB) embedImported(prepared []*headArtifact, where []string) error {
	if db.opts.Embedder == nil {
		return nil
	}
	for len(prepared) > 0 {
		n, texts := 0, 0
		for n < len(prepared) && (n == 0 || texts+len(prepared[n].spans) <= importEmbedTexts) {
			texts += len(prepared[n].spans)
			n++
		}
		db.embed(prepared[:n])
		for i, ha := range prepared[:n] {
			if ha.vecs == nil && len(ha.spans) > 0 {
				return fmt.Errorf("%s: artifact %s: the embedder %s gave no vectors (the warning logged says why)", where[i], ha.a.ID, db.opts.Embedder.Model())
			}
		}
		prepared, where = prepared[n:], where[n:]
	}
	return nil
}

// artifactIDTakenLocked reports whether any artifact of the directory has
// id, in any tenant, erased or not while its bytes remain (an id names one
// artifact: a second copy would shadow the first, and verify reports it),
// and where. Callers hold mu.
func (db *DB) artifactIDTakenLocked(id uuid.UUID) (string, bool) {
	for _, h := range db.headsNewestFirst() {
		if ha := h.byID[id]; ha != nil {
			return fmt.Sprintf("tenant %q, workspace %q", ha.a.Tenant, ha.a.Workspace), true
		}
	}
	for _, s := range db.segments {
		if r, ok := s.FindArtifact(id); ok {
			w := s.Workspace(r.WS)
			return fmt.Sprintf("tenant %q, workspace %q", w.Tenant, w.Workspace), true
		}
	}
	return "", false
}

// prepareImport rebuilds an exported artifact as ingest would have, with
// its id, timestamps and span ids. Its times are accepted as an ingest's
// are at now: neither more than MaxFutureSkew ahead.
func (db *DB) prepareImport(tenant, ws string, it *ImportItem, now time.Time) (*headArtifact, error) {
	a := it.Artifact
	if a.ID == uuid.Nil {
		return nil, &InvalidError{"artifact_id", "is required"}
	}
	if a.ContentHash == ([32]byte{}) {
		return nil, fmt.Errorf("artifact %s: %w", a.ID, &InvalidError{"content_hash", "is required"})
	}
	for _, f := range []struct {
		name string
		t    time.Time
	}{{"timestamp_us", time.UnixMicro(a.Timestamp)}, {"ingested_at_us", time.UnixMicro(a.IngestedAt)}} {
		err := CheckFutureTime(f.name, f.t, now)
		if err == nil && f.name == "ingested_at_us" {
			err = CheckWriteTime(f.name, f.t)
		}
		if err != nil {
			return nil, fmt.Errorf("artifact %s: %w", a.ID, err)
		}
	}
	in := IngestInput{Workspace: ws, ActorID: a.ActorID, Type: a.Type, Payload: a.Payload,
		Timestamp: time.UnixMicro(a.Timestamp).UTC(), Permissions: a.Permissions, IdempotencyKey: a.IdempotencyKey,
		SessionID: a.SessionID, ThreadID: a.ThreadID, ArtifactID: a.ID, Metadata: a.Metadata}
	if err := checkInput(&in); err != nil {
		return nil, fmt.Errorf("artifact %s: %w", a.ID, err)
	}
	ha, err := db.prepare(tenant, &in, time.UnixMicro(a.IngestedAt).UTC())
	if err != nil {
		return nil, fmt.Errorf("artifact %s: %w", a.ID, err)
	}
	if a.ContentHash != ([32]byte{}) && a.ContentHash != ha.a.ContentHash {
		return nil, fmt.Errorf("artifact %s: its raw payload does not match its content hash", a.ID)
	}
	if it.SpanIDs == nil {
		// A line a user wrote names none: the ids loci embed would give.
		it.SpanIDs = make([]uuid.UUID, len(ha.spans))
		for i := range it.SpanIDs {
			it.SpanIDs[i] = SpanID(a.ID, uint32(i))
		}
	}
	if len(it.SpanIDs) != len(ha.spans) {
		return nil, fmt.Errorf("artifact %s: chunking gives %d spans, the export names %d (exported with another tokenizer or chunker?)",
			a.ID, len(ha.spans), len(it.SpanIDs))
	}
	for i := range ha.spans {
		if it.SpanIDs[i] == uuid.Nil {
			return nil, fmt.Errorf("artifact %s: span %d has no id", a.ID, i)
		}
		ha.spans[i].ID = it.SpanIDs[i]
	}
	if it.Vectors != nil {
		model, dim := db.embedModel()
		if model == "" {
			return nil, fmt.Errorf("artifact %s: the data directory has no embedder, so it takes no vectors", a.ID)
		}
		if ha.vecs, err = importedVectors(it.Vectors, len(ha.spans), model, dim); err != nil {
			return nil, fmt.Errorf("artifact %s: %w", a.ID, err)
		}
	}
	return ha, nil
}

// importedVectors checks the vectors given for an artifact of n spans
// against the embedder model of dimension dim (CheckVector), and quantizes
// them as embed does the embedder's own output.
func importedVectors(vecs [][]float32, n int, model string, dim int) (*record.SpanVectors, error) {
	if len(vecs) != n {
		return nil, fmt.Errorf("%d vectors given, the payload is cut into %d spans (vectors of other span texts: another chunker or tokenizer?)", len(vecs), n)
	}
	if n == 0 {
		return nil, nil
	}
	sv := &record.SpanVectors{Model: model, Dim: dim, Data: make([]int8, n*dim), Scales: make([]float32, n)}
	for i, v := range vecs {
		if err := CheckVector(v, dim); err != nil {
			return nil, fmt.Errorf("vector %d (embedder %s): %w", i, model, err)
		}
		sv.Scales[i] = vecindex.Quantize(v, sv.Data[i*dim:(i+1)*dim])
	}
	return sv, nil
}

// CheckVector is Import's rule for one given span vector: dim values,
// every one finite, not all zero (no sentence encoder gives a zero vector;
// an unfilled buffer does).
func CheckVector(v []float32, dim int) error {
	if len(v) != dim {
		return fmt.Errorf("has %d dimensions, want %d", len(v), dim)
	}
	zero := true
	for j, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("holds a non-finite value (%v) at index %d", x, j)
		}
		zero = zero && x == 0
	}
	if zero {
		return errors.New("is all zeros")
	}
	return nil
}

// SpanTexts returns the texts of the spans ingest and Import cut artifact
// a's payload into with counter (nil: text.O200kBase, the engine's
// default), in order: what the embedder embeds, so that vectors computed
// elsewhere from them (`loci embed`) are those Import accepts
// (ImportItem.Vectors). It needs no data directory.
func SpanTexts(a *artifact.Artifact, counter text.TokenCounter) ([]string, error) {
	if counter == nil {
		counter = text.O200kBase()
	}
	spans, err := cutSpans(counter, &IngestInput{Type: a.Type, ActorID: a.ActorID, Payload: a.Payload}, a)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(spans))
	for i := range spans {
		out[i] = spans[i].Text
	}
	return out, nil
}

// importEvent checks an exported feedback event against the workspace (and
// the artifacts of the same import batch) and returns its durable form.
func (db *DB) importEvent(tenant, ws string, f *ExportedFeedback, batch map[uuid.UUID]*headArtifact) (*record.Feedback, error) {
	if f.ID == uuid.Nil {
		return nil, &InvalidError{"feedback_id", "is required"}
	}
	if !slices.Contains(FeedbackActions, f.Action) {
		return nil, &InvalidError{"action", fmt.Sprintf("unknown value %q; allowed: %v", f.Action, FeedbackActions)}
	}
	var spans []artifact.Span
	if ha := batch[f.ArtifactID]; ha != nil {
		spans = ha.spans
	} else {
		a, sp, err := db.artifactAndSpans(tenant, f.ArtifactID)
		if err != nil || a.Workspace != ws {
			return nil, fmt.Errorf("feedback %s: artifact %s is not in the workspace", f.ID, f.ArtifactID)
		}
		spans = sp
	}
	for _, id := range f.Spans {
		if !slices.ContainsFunc(spans, func(s artifact.Span) bool { return s.ID == id }) {
			return nil, fmt.Errorf("feedback %s: span %s is not a span of artifact %s", f.ID, id, f.ArtifactID)
		}
	}
	return &record.Feedback{ID: f.ID, Tenant: tenant, Workspace: ws, ActorID: f.ActorID, Action: f.Action,
		ArtifactID: f.ArtifactID, Spans: slices.Clone(f.Spans), Reason: f.Reason, ConflictID: f.ConflictID,
		Preferred: f.Preferred, CreatedAt: f.CreatedAt}, nil
}

// RecordedEmbedder returns the embedder model and dimension a closed data
// directory's manifest records ("" when none is recorded yet).
func RecordedEmbedder(dir string) (string, int, error) {
	m, err := manifest.Read(dir)
	if err != nil || m == nil {
		return "", 0, err
	}
	return m.Embedder, m.EmbedderDim, nil
}

// MaxImportedVersion bounds the data version an import may set: the
// largest integer a JSON number holds exactly (clients read data versions
// as numbers), far below where the WAL sequence, which must stay above
// it, could wrap.
const MaxImportedVersion = 1<<53 - 1

// CheckImportedVersion checks an export's data version for SetImportedVersion.
func CheckImportedVersion(v uint64) error {
	if v == 0 || v > MaxImportedVersion {
		return &InvalidError{"data_version", fmt.Sprintf("%d is not between 1 and %d", v, uint64(MaxImportedVersion))}
	}
	return nil
}

// SetImportedVersion sets the data version of a workspace that `loci
// import` has just written into the closed data directory dir, to the
// version it had where it was exported, so that receipt ids (derived from
// the data version) match the exported directory's for identical packs. The
// WAL from the checkpoint must be empty (the import flushed), so that no
// replayed record moves the version again; the manifest's last seq is
// raised to at least version, so every later write gets a higher seq and
// the version keeps moving forwards.
func SetImportedVersion(dir, tenant, ws string, version uint64) error {
	if err := CheckImportedVersion(version); err != nil {
		return err
	}
	lock, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer lock.Close()
	m, err := manifest.Read(dir)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	if m == nil {
		return fmt.Errorf("engine: %s has no %s", dir, manifest.FileName)
	}
	files, err := wal.Files(filepath.Join(dir, walDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, f := range files {
		if f < m.Checkpoint {
			continue
		}
		n := 0
		if err := wal.ScanFile(filepath.Join(dir, walDir, wal.FileName(f)), func(int64, wal.Record) error { n++; return nil }); err != nil {
			return fmt.Errorf("engine: set data version: %w", err)
		}
		if n > 0 {
			return fmt.Errorf("engine: set data version: %s holds %d records past the checkpoint; flush first", wal.FileName(f), n)
		}
	}
	i := slices.IndexFunc(m.Versions, func(v manifest.DataVersion) bool { return v.Tenant == tenant && v.Workspace == ws })
	if i < 0 {
		return fmt.Errorf("engine: set data version: workspace %q of tenant %q has no data in %s", ws, tenant, dir)
	}
	m.Versions[i].Seq = version
	m.LastSeq = max(m.LastSeq, version)
	return manifest.Write(vfs.Default, dir, m)
}
