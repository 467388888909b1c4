package engine

// Per-workspace retention. A recRetention record sets a workspace's
// retention in days (0 clears it). While it is set, the workspace has a
// cutoff: the start (UTC midnight) of the day that lies the retention's
// days before its newest artifact time. Artifact time, not the wall clock,
// so that the same data gives the same packs whenever they are asked for.
// The cutoff is rounded down to a whole day so that it advances at most
// once per day of artifact time, not at every ingest: each advance scans
// the workspace once.
//
// The cutoff only ever moves forward while retention is set. When it
// advances (in log order, on the WAL writer or at replay: an artifact
// record that makes the newest time newer, or the retention record
// itself), every visible artifact of the workspace older than the cutoff
// is erased exactly as EraseArtifact erases one (erase_artifact.go): reads,
// listings, packs and search views hide it at once, the data version
// moves, and compaction removes its bytes. An artifact ingested later with
// a time before the cutoff is erased as it is applied. Erased artifacts
// stay erased when retention is cleared or lengthened.
//
// Days and cutoff are kept per workspace and written to the manifest at
// every flush, so replay from a checkpoint starts from them. They, and the
// workspace versions whose newest time the cutoff is taken from, are those
// at the flush's WAL rotation (checkpointStateLocked), the log position of
// the checkpoint: taken later, replay would apply a retention record logged
// after the checkpoint to a newest time from a record logged after it (an
// older, shorter retention against a newer artifact) and erase what the
// live engine kept.
// Erasing the workspace drops its retention.

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/wal"
)

// MaxRetentionDays bounds a workspace's retention (100 years).
const MaxRetentionDays = 36500

// dayMicros is one day in Unix µs, the unit of artifact times.
const dayMicros = 86_400_000_000

// retention is a workspace's retention setting and cutoff.
type retention struct {
	Tenant, Workspace string
	Days              uint64
	Cutoff            int64 // Unix µs; artifacts older are erased. math.MinInt64: none yet
}

// retentionRecord is a decoded recRetention record.
type retentionRecord struct {
	Tenant, Workspace string
	Days              uint64 // 0: clear
}

// encodeRetentionRecord: version | string tenant | string workspace |
// uvarint days (0 clears).
func encodeRetentionRecord(r *retentionRecord) []byte {
	b := []byte{recordVersion}
	b = appendString(b, r.Tenant)
	b = appendString(b, r.Workspace)
	return binary.AppendUvarint(b, r.Days)
}

func decodeRetentionRecord(b []byte) (*retentionRecord, error) {
	if len(b) == 0 || b[0] != recordVersion {
		return nil, fmt.Errorf("retention record: unsupported version")
	}
	d := decoder{b: b[1:]}
	r := &retentionRecord{Tenant: d.string(), Workspace: d.string(), Days: d.uvarint()}
	if d.err == nil && r.Days > MaxRetentionDays {
		d.fail(fmt.Sprintf("retention of %d days exceeds %d", r.Days, MaxRetentionDays))
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return nil, fmt.Errorf("retention record: %w", d.err)
	}
	return r, nil
}

// Retention returns the retention in days of tenant's workspace ws, 0 when
// none is set.
func (db *DB) Retention(tenant, ws string) (int, error) {
	if err := db.enter(); err != nil {
		return 0, err
	}
	defer db.leave()
	db.mu.RLock()
	defer db.mu.RUnlock()
	return int(db.retention[wsKey{tenant, ws}].Days), nil
}

// SetRetention sets the retention of tenant's workspace ws to days (1 to
// MaxRetentionDays), or clears it (0), durably. Artifacts the new cutoff
// leaves behind are erased before it returns.
func (db *DB) SetRetention(tenant, ws string, days int) error {
	if err := db.enter(); err != nil {
		return err
	}
	defer db.leave()
	if err := CheckID("workspace_id", ws, true); err != nil {
		return err
	}
	if days < 0 || days > MaxRetentionDays {
		return &InvalidError{"retention_days", fmt.Sprintf("must be between 1 and %d, or null to clear", MaxRetentionDays)}
	}
	r := &retentionRecord{Tenant: tenant, Workspace: ws, Days: uint64(days)}
	err := db.append("", wal.Entry{Type: uint8(recRetention), Payload: encodeRetentionRecord(r), Apply: func(seq uint64) {
		db.applyRetention(r, seq)
	}})
	if err != nil {
		return fmt.Errorf("engine: set retention: %w", err)
	}
	db.kickMaintenance() // flush, then compaction removes what was erased
	return nil
}

// applyRetention applies a retention record.
func (db *DB) applyRetention(r *retentionRecord, seq uint64) {
	k := wsKey{r.Tenant, r.Workspace}
	db.mu.Lock()
	defer db.mu.Unlock()
	db.head.note(seq)
	if r.Days == 0 {
		delete(db.retention, k)
		return
	}
	cur, ok := db.retention[k]
	if !ok {
		cur = retention{Tenant: k.Tenant, Workspace: k.Workspace, Cutoff: math.MinInt64}
	}
	cur.Days = r.Days
	db.retention[k] = cur
	db.retainLocked(k, seq, nil)
}

// retentionCutoff returns the cutoff of days before newest: the start of
// the UTC day days before newest's.
func retentionCutoff(newest int64, days uint64) int64 {
	if newest == math.MinInt64 {
		return math.MinInt64
	}
	day := newest / dayMicros
	if newest%dayMicros < 0 {
		day-- // floor, for times before 1970
	}
	return (day - int64(days)) * dayMicros
}

// retainLocked advances k's cutoff to its newest artifact time and erases
// what it leaves behind, or, when it does not move, erases ha (an artifact
// just applied; nil: none) if ha is older than it. seq is the record being
// applied. Callers hold mu.Lock.
func (db *DB) retainLocked(k wsKey, seq uint64, ha *headArtifact) {
	r, ok := db.retention[k]
	if !ok {
		return
	}
	if c := retentionCutoff(db.versions[k].Newest, r.Days); c > r.Cutoff {
		r.Cutoff = c
		db.retention[k] = r
		var old []erasedArtifact
		err := db.eachArtifactMeta(k, func(a *artifact.Artifact) error {
			if a.Timestamp < c {
				old = append(old, erasedArtifact{Seq: a.Seq, ID: a.ID})
			}
			return nil
		})
		if err != nil {
			db.log.Error("engine: retention: reading the workspace's artifacts", "workspace", k.Workspace, "err", err)
		}
		db.eraseLocked(k, old)
		db.touch(k, seq, math.MinInt64) // the cutoff moved: packs change version
		return
	}
	if ha != nil && ha.a.Timestamp < r.Cutoff && db.head.byID[ha.a.ID] == ha {
		db.eraseLocked(k, []erasedArtifact{{Seq: ha.a.Seq, ID: ha.a.ID}})
	}
}

// eraseLocked erases the visible artifacts es of k as an erase record
// does, without moving the version or the newest time (the caller does).
// Callers hold mu.Lock.
func (db *DB) eraseLocked(k wsKey, es []erasedArtifact) {
	if len(es) == 0 {
		return
	}
	for _, e := range es {
		db.erased.add(k, e)
	}
	for _, h := range db.headsNewestFirst() {
		var drop []*headArtifact
		for _, e := range es {
			if x := h.byID[e.ID]; x != nil {
				drop = append(drop, x)
			}
		}
		h.dropArtifacts(k, drop) // one rebuild of the workspace per head
	}
	db.head.erasures++ // flush soon: the WAL holds the artifacts' bytes
	v, exists := db.versions[k]
	if !exists {
		v = wsVersion{Tenant: k.Tenant, Workspace: k.Workspace, Newest: math.MinInt64}
	}
	list := append(slices.Clone(v.Erased), es...) // a new array: wsVersion values are copied
	slices.SortFunc(list, func(a, b erasedArtifact) int { return cmp.Compare(a.Seq, b.Seq) })
	v.Erased = list
	db.versions[k] = v
	db.pruneErased()
	db.embedding.signal() // a queued artifact is dropped
}

// checkpointStateLocked copies the versions and retention of every
// workspace, for a manifest whose checkpoint is the current log position
// (a WAL rotation). Callers hold mu.
func (db *DB) checkpointStateLocked() ([]wsVersion, []retention) {
	vs := make([]wsVersion, 0, len(db.versions))
	for _, v := range db.versions {
		vs = append(vs, v) // Erased is never modified in place: sharing it is safe
	}
	rs := make([]retention, 0, len(db.retention))
	for _, r := range db.retention {
		rs = append(rs, r)
	}
	return vs, rs
}
