package engine

import (
	"cmp"
	"math"
	"slices"

	"github.com/loci-memory/loci/artifact"
)

// WorkspaceSummary describes one of a tenant's workspaces.
type WorkspaceSummary struct {
	Workspace string
	Artifacts int
	Spans     int
	// Newest is the newest artifact time (Unix µs).
	Newest int64
	// Version is the workspace's data version: it grows with every ingest,
	// vectors record, feedback event and erasure of the workspace.
	Version uint64
}

// Workspaces lists the tenant's workspaces that hold at least one visible
// artifact, by workspace id (byte order). Another tenant's are never listed.
func (db *DB) Workspaces(tenant string) ([]WorkspaceSummary, error) {
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.leave()
	db.mu.RLock()
	defer db.mu.RUnlock()
	var out []WorkspaceSummary
	for k, v := range db.versions {
		if k.Tenant != tenant {
			continue
		}
		c := db.countVisible(k)
		if c.Artifacts == 0 {
			continue
		}
		out = append(out, WorkspaceSummary{Workspace: k.Workspace, Artifacts: c.Artifacts, Spans: c.Spans, Newest: v.Newest, Version: v.Seq})
	}
	slices.SortFunc(out, func(a, b WorkspaceSummary) int { return cmp.Compare(a.Workspace, b.Workspace) })
	return out, nil
}

// ListQuery selects and pages a workspace's artifacts. Zero values select
// everything.
type ListQuery struct {
	SessionID, ActorID, Type string
	// Since and Until bound the artifact time (Unix µs), both inclusive;
	// HasSince and HasUntil say whether they apply.
	Since, Until       int64
	HasSince, HasUntil bool
	// After continues a listing: only artifacts after this position in the
	// listing order are returned (HasAfter says whether it applies).
	After    ListPosition
	HasAfter bool
	Limit    int
}

// ListPosition is an artifact's place in a listing: newest time first, and
// among equal times the later ingest first. Seq orders ingests and never
// changes for a stored artifact, so a position stays valid while artifacts
// arrive, are erased or are compacted.
type ListPosition struct {
	Timestamp int64
	Seq       uint64
}

// before reports whether p comes before q in the listing order.
func (p ListPosition) before(q ListPosition) bool {
	if p.Timestamp != q.Timestamp {
		return p.Timestamp > q.Timestamp
	}
	return p.Seq > q.Seq
}

// ListPage is one page of a listing. More says whether artifacts follow the
// last one (continue with its position).
type ListPage struct {
	Artifacts []*artifact.Artifact // metadata only: Payload nil
	More      bool
}

// Position returns an artifact's listing position.
func Position(a *artifact.Artifact) ListPosition { return ListPosition{a.Timestamp, a.Seq} }

// ListArtifacts returns a page of the tenant's visible artifacts of ws that
// match q, newest first (ties: later ingest first). The order is a function
// of the stored artifacts alone, never of where they live. A workspace of
// another tenant, or none, is empty.
func (db *DB) ListArtifacts(tenant, ws string, q ListQuery) (ListPage, error) {
	if err := db.enter(); err != nil {
		return ListPage{}, err
	}
	defer db.leave()
	limit := q.Limit
	if limit <= 0 {
		limit = 1
	}
	// Keep the best limit+1 matches: sort and cut whenever the buffer
	// reaches a few times that, so memory stays bounded by the page.
	var buf []*artifact.Artifact
	order := func(a, b *artifact.Artifact) int {
		switch pa, pb := Position(a), Position(b); {
		case pa.before(pb):
			return -1
		case pb.before(pa):
			return 1
		}
		return 0
	}
	cut := func() {
		slices.SortFunc(buf, order)
		if len(buf) > limit+1 {
			clear(buf[limit+1:])
			buf = buf[:limit+1]
		}
	}
	since, until := int64(math.MinInt64), int64(math.MaxInt64)
	if q.HasSince {
		since = q.Since
	}
	if q.HasUntil {
		until = q.Until
	}
	db.mu.RLock()
	err := db.eachArtifactMeta(wsKey{tenant, ws}, func(a *artifact.Artifact) error {
		switch {
		case a.Timestamp < since || a.Timestamp > until,
			q.SessionID != "" && a.SessionID != q.SessionID,
			q.ActorID != "" && a.ActorID != q.ActorID,
			q.Type != "" && a.Type != q.Type,
			q.HasAfter && !q.After.before(Position(a)):
			return nil
		}
		if a.Payload != nil { // a head artifact: copy its metadata, not its payload
			m := *a
			m.Payload = nil
			a = &m
		}
		buf = append(buf, a)
		if len(buf) >= 4*(limit+1) {
			cut()
		}
		return nil
	})
	db.mu.RUnlock()
	if err != nil {
		return ListPage{}, err
	}
	cut()
	page := ListPage{Artifacts: buf, More: len(buf) > limit}
	if page.More {
		page.Artifacts = buf[:limit]
	}
	return page, nil
}
