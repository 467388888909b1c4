package engine

import (
	"fmt"
	"hash/crc32"
	"unsafe"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/engine/artmeta"
	"github.com/loci-memory/loci/engine/manifest"
	"github.com/loci-memory/loci/engine/record"
	"github.com/loci-memory/loci/invindex"
	"github.com/loci-memory/loci/segment"
	"github.com/loci-memory/loci/vecindex"
)

// wsKey identifies a workspace. Workspaces belong to a tenant, so two tenants
// may use the same workspace name and never see each other.
type wsKey struct {
	Tenant, Workspace string
}

// headArtifact is an artifact in memory with its spans.
type headArtifact struct {
	a     *artifact.Artifact
	spans []artifact.Span
	vecs  *record.SpanVectors // nil: no embeddings (embedder unavailable at ingest)
	terms []invindex.DocTerms // counted terms per span, from prepare until applied
	keys  [][16]byte          // tie keys per span (spanTieKey), from prepare until applied
	// fence is the erasure fence of an artifact stored by an asynchronous
	// job (0: none): the artifact is refused if its workspace was erased
	// after this seq. fenced is set when applying refused it, for the
	// appender to report once its append returns.
	fence  uint64
	fenced bool
	// keyTaken is set when applying a replicated copy found another
	// artifact already stored under its idempotency key (DB.apply): it is
	// not stored, and the appender answers with the other.
	keyTaken bool
	// firstDoc is the document number of span 0 in its head workspace's
	// indexes; span i is firstDoc+i.
	firstDoc uint32
	embed    embedState
	// rows are the spans' token rows once the token-row worker computed
	// them (Options.TokenRows; nil until then), rowBytes their size, which
	// counts in the head's bytes.
	rows     [][]byte
	rowBytes int64
}

// embedState is where an artifact of a head stands with the background
// embedder. Vectors that came in the artifact record (inline embedding)
// leave it embedNone with vecs set.
type embedState uint8

const (
	embedNone    embedState = iota // not queued: inline embedding, no embedder, or no spans
	embedPending                   // queued for the background embedder
	embedDone                      // vectors applied from a vectors record
	embedFailed                    // the embedder gave up on it: no vectors
	embedDropped                   // erased before it was embedded
)

// headWorkspace is one workspace's part of a head, artifacts in Seq order,
// with its search structures: document i of lex and row i of vec are span
// refs[i].
type headWorkspace struct {
	key       wsKey
	artifacts []*headArtifact
	idem      map[string]*headArtifact
	spans     int
	lex       *invindex.MemIndex
	vec       *vecindex.MemVectors // nil when the engine has no embedder
	refs      []spanRef
	meta      metaDocs // by metadata pair; nil until an artifact has metadata
}

// indexMeta adds ha's docs to the workspace's metadata index.
func (w *headWorkspace) indexMeta(ha *headArtifact) {
	if len(ha.a.Metadata) == 0 {
		return
	}
	if w.meta == nil {
		w.meta = metaDocs{}
	}
	w.meta.addArtifact(ha.a.Metadata, ha.firstDoc, len(ha.spans))
}

// spanRef locates span i of a head artifact.
type spanRef struct {
	ha *headArtifact
	i  int
}

// head holds what the WAL has made durable since the last rotation. The
// active head takes new records; at a flush it is frozen (read-only) until its
// segment is live.
type head struct {
	workspaces map[wsKey]*headWorkspace
	byID       map[uuid.UUID]*headArtifact
	bytes      int64 // approximate memory footprint; triggers flushes
	records    int   // records applied, erasures included: a head with records needs a flush
	erasures   int   // erase records applied: their WAL bytes should be checkpointed away soon
	minSeq     uint64
	maxSeq     uint64
	walIndex   int                // for a frozen head: the first WAL file not covered by it
	feedback   []*record.Feedback // feedback events applied since the last rotation, in order
	receipts   []*Receipt         // receipts applied since the last rotation, in order
	// unembedded counts the head's artifacts waiting for the background
	// embedder; a frozen head is written as a segment only at 0.
	unembedded int
	// For a frozen head: the versions and retention at its rotation, which
	// the manifest checkpointing its WAL files records (flushHead). Replay
	// starts from them, so they must be those of the checkpoint's log
	// position, not later ones (retention.go).
	ckptVersions  []manifest.DataVersion
	ckptRetention []manifest.Retention
}

func newHead() *head {
	return &head{workspaces: map[wsKey]*headWorkspace{}, byID: map[uuid.UUID]*headArtifact{}}
}

// add applies an artifact record. Records arrive in Seq order. Spans are
// indexed with ha.terms when prepare computed them (the live path), else
// analyzed here (replay). Vectors of another model than the engine's, or
// none, index as zero vectors: no semantic signal. With background
// embedding, an artifact without vectors becomes pending: a later vectors
// record fills its rows (setVectors).
func (h *head) add(ha *headArtifact, model string, dim int, background bool) {
	a, spans := ha.a, ha.spans
	k := wsKey{a.Tenant, a.Workspace}
	w := h.workspaces[k]
	if w == nil {
		w = &headWorkspace{key: k, idem: map[string]*headArtifact{}, lex: invindex.NewMemIndex()}
		if model != "" {
			w.vec = vecindex.NewMemVectors(model, dim)
		}
		h.workspaces[k] = w
	}
	terms, keys := ha.terms, ha.keys
	if terms == nil {
		terms = spanTerms(spans)
	}
	if keys == nil {
		keys = spanTieKeys(spans)
	}
	ha.terms, ha.keys = nil, nil
	vecs := ha.vecs
	if vecs != nil && (vecs.Model != model || vecs.Dim != dim) {
		vecs = nil
	}
	ha.firstDoc = uint32(len(w.refs))
	if background && vecs == nil && w.vec != nil && len(spans) > 0 && ha.embed == embedNone {
		ha.embed = embedPending
		h.unembedded++
	}
	var indexBytes int64
	for i := range spans {
		w.lex.AddCounted(keys[i], terms[i])
		if w.vec != nil {
			if vecs != nil {
				w.vec.Add(keys[i], vecs.Data[i*dim:(i+1)*dim], vecs.Scales[i])
			} else {
				w.vec.Add(keys[i], make([]int8, dim), 0)
			}
		}
		w.refs = append(w.refs, spanRef{ha, i})
		indexBytes += int64(16*int(terms[i].Len) + dim + 48)
	}
	w.artifacts = append(w.artifacts, ha)
	w.indexMeta(ha)
	w.spans += len(spans)
	if a.IdempotencyKey != "" {
		w.idem[a.IdempotencyKey] = ha
	}
	h.byID[a.ID] = ha
	h.bytes += artifactFootprint(a, spans) + indexBytes
	h.note(a.Seq)
}

// castagnoli is the CRC-32C table of the tie keys.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// spanTieKeys returns spanTieKey of each span, computed without copying the
// span texts (artifact.TieKey converts its text to a byte slice).
func spanTieKeys(spans []artifact.Span) [][16]byte {
	keys := make([][16]byte, len(spans))
	for i := range spans {
		text := unsafe.Slice(unsafe.StringData(spans[i].Text), len(spans[i].Text)) // read only
		keys[i] = artifact.TieKeyCRC(crc32.Checksum(text, castagnoli), spans[i].Timestamp)
	}
	return keys
}

func (h *head) note(seq uint64) {
	h.records++
	if h.minSeq == 0 {
		h.minSeq = seq
	}
	h.maxSeq = seq
}

// setVectors fills the rows of a pending or unembedded artifact of this head
// with vectors of the head's model.
func (h *head) setVectors(ha *headArtifact, vecs *record.SpanVectors) {
	w := h.workspaces[wsKey{ha.a.Tenant, ha.a.Workspace}]
	if w == nil || w.vec == nil {
		return
	}
	for i := range ha.spans {
		w.vec.Set(ha.firstDoc+uint32(i), vecs.Data[i*vecs.Dim:(i+1)*vecs.Dim], vecs.Scales[i])
	}
	ha.vecs = vecs
}

// settle ends an artifact's wait for the background embedder.
func (h *head) settle(ha *headArtifact, state embedState) {
	if ha.embed == embedPending {
		h.unembedded--
	}
	ha.embed = state
}

// erase drops a workspace's data from an active head.
func (h *head) erase(k wsKey, seq uint64) {
	if w := h.workspaces[k]; w != nil {
		for _, ha := range w.artifacts {
			h.settle(ha, embedDropped)
			delete(h.byID, ha.a.ID)
			h.bytes -= artifactFootprint(ha.a, ha.spans) + ha.rowBytes
		}
		delete(h.workspaces, k)
	}
	h.erasures++
	h.note(seq)
}

func artifactFootprint(a *artifact.Artifact, spans []artifact.Span) int64 {
	n := int64(256 + len(a.Payload) + len(a.ActorID) + len(a.IdempotencyKey) + len(a.SessionID) + len(a.ThreadID))
	for i := range spans {
		n += int64(96 + len(spans[i].Text))
	}
	return n
}

// segmentData turns a frozen head into the input of segment.Write, leaving
// out what tombstones hide, with each workspace's index sections.
func (h *head) segmentData(hidden func(k wsKey, seq uint64) bool) ([]segment.WorkspaceData, error) {
	out := make([]segment.WorkspaceData, 0, len(h.workspaces))
	for k, w := range h.workspaces {
		wd := segment.WorkspaceData{Tenant: k.Tenant, Workspace: k.Workspace}
		for _, ha := range w.artifacts {
			if hidden(k, ha.a.Seq) {
				continue
			}
			wd.Artifacts = append(wd.Artifacts, ha.a)
			wd.Spans = append(wd.Spans, ha.spans...)
		}
		if len(wd.Artifacts) == 0 {
			continue
		}
		wd.Sections = nil
		var err error
		if len(wd.Artifacts) == len(w.artifacts) {
			wd.Sections, err = headSections(w)
		} else {
			// An erasure hides a workspace's older artifacts all at once, so a
			// partly hidden head workspace does not arise; rebuild if it does.
			var rows *vectorRows
			if w.vec != nil {
				rows = newVectorRows(w.vec.Model(), w.vec.Dim())
			}
			var terms [][]string
			for doc, ref := range w.refs {
				if !hidden(k, ref.ha.a.Seq) {
					terms = append(terms, invindex.Analyze(ref.ha.spans[ref.i].Text, nil))
					if rows != nil {
						rows.addFrom(w.vec, doc)
					}
				}
			}
			wd.Sections, err = indexSections(wd.Spans, terms, rows)
		}
		if err != nil {
			return nil, fmt.Errorf("workspace %q: %w", k.Workspace, err)
		}
		wd.Sections = append(wd.Sections, artmeta.Section(wd.Artifacts))
		out = append(out, wd)
	}
	out = withFeedbackSections(out, h.feedback, hidden)
	return attachReceipts(out, h.receipts, hidden), nil // segment.Write sorts workspaces, so order does not matter
}
