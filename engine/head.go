package engine

import (
	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/segment"
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
	vecs  *spanVectors // nil: no embeddings (embedder unavailable at ingest)
	terms [][]string   // analyzed terms per span, from prepare until applied
}

// headWorkspace is one workspace's part of a head, artifacts in Seq order.
type headWorkspace struct {
	key       wsKey
	artifacts []*headArtifact
	idem      map[string]*headArtifact
	spans     int
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
	walIndex   int // for a frozen head: the first WAL file not covered by it
}

func newHead() *head {
	return &head{workspaces: map[wsKey]*headWorkspace{}, byID: map[uuid.UUID]*headArtifact{}}
}

// add applies an artifact record. Records arrive in Seq order.
func (h *head) add(a *artifact.Artifact, spans []artifact.Span) {
	k := wsKey{a.Tenant, a.Workspace}
	w := h.workspaces[k]
	if w == nil {
		w = &headWorkspace{key: k, idem: map[string]*headArtifact{}}
		h.workspaces[k] = w
	}
	ha := &headArtifact{a: a, spans: spans}
	w.artifacts = append(w.artifacts, ha)
	w.spans += len(spans)
	if a.IdempotencyKey != "" {
		w.idem[a.IdempotencyKey] = ha
	}
	h.byID[a.ID] = ha
	h.bytes += artifactFootprint(a, spans)
	h.note(a.Seq)
}

func (h *head) note(seq uint64) {
	h.records++
	if h.minSeq == 0 {
		h.minSeq = seq
	}
	h.maxSeq = seq
}

// erase drops a workspace's data from an active head.
func (h *head) erase(k wsKey, seq uint64) {
	if w := h.workspaces[k]; w != nil {
		for _, ha := range w.artifacts {
			delete(h.byID, ha.a.ID)
			h.bytes -= artifactFootprint(ha.a, ha.spans)
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
// out what tombstones hide.
func (h *head) segmentData(hidden func(k wsKey, seq uint64) bool) []segment.WorkspaceData {
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
		if len(wd.Artifacts) > 0 {
			out = append(out, wd)
		}
	}
	return out // segment.Write sorts workspaces, so map order does not matter
}
