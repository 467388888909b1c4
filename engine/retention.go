package engine

// Per-workspace retention. A record.TypeRetention record sets a workspace's
// retention in days (0 clears it). While it is set, the workspace has a
// cutoff: the start (UTC midnight) of the day that lies the retention's
// days before its reference time. Artifact time, not the wall clock, so
// that the same data gives the same packs whenever they are asked for. The
// cutoff is rounded down to a whole day so that it advances at most once
// per day of artifact time, not at every ingest: each advance scans the
// workspace once.
//
// The reference time is the newest, over the workspace's artifacts, of
// each one's retention time: its timestamp, or its ingest time if that is
// earlier (retentionTime). An artifact stamped in the future cannot move
// the cutoff past the server's clock at its ingest: taken from the
// timestamp alone, one artifact stamped 2999-01-01 made every other one
// "old" and erased the workspace. Both times are in the artifact's record,
// so the reference is the same in every replica, at replay and in every
// layout. Ingest refuses timestamps more than MaxFutureSkew ahead of the
// server's clock (CheckFutureTime), so the timestamp is the reference for
// every artifact written since (ingest time plus at most a day), and
// backdated artifacts (imported histories) still age by their timestamps.
//
// The cutoff only ever moves forward while retention is set. When it
// advances (in log order, on the WAL writer or at replay: an artifact
// record whose retention time moves it, or the retention record itself,
// which takes the reference from the workspace's visible artifacts), every
// visible artifact of the workspace timestamped before the cutoff is
// erased exactly as EraseArtifact erases one (erase_artifact.go): reads,
// listings, packs and search views hide it at once, the data version
// moves, and compaction removes its bytes. An artifact ingested later with
// a time before the cutoff is erased as it is applied. Erased artifacts
// stay erased when retention is cleared or lengthened.
//
// Days and cutoff are kept per workspace and written to the manifest at
// every flush, so replay from a checkpoint starts from them, as they stood
// at the flush's WAL rotation (checkpointStateLocked), the log position of
// the checkpoint: taken later, replay would apply a record logged after
// the checkpoint to a state that already holds its effect. A cutoff an
// earlier version took from a far-future timestamp is lowered once at open
// (repairRetentionLocked).
// Erasing the workspace drops its retention.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/engine/manifest"
	"github.com/loci-memory/loci/engine/record"
	"github.com/loci-memory/loci/wal"
)

// MaxRetentionDays bounds a workspace's retention (100 years).
const MaxRetentionDays = record.MaxRetentionDays

// dayMicros is one day in Unix µs, the unit of artifact times.
const dayMicros = 86_400_000_000

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

// RetentionCutoff returns the cutoff of tenant's workspace ws (Unix µs):
// an artifact timestamped before it is erased as soon as it is applied.
// ok is false when the workspace has no retention or no cutoff yet.
func (db *DB) RetentionCutoff(tenant, ws string) (cutoff int64, ok bool, err error) {
	if err := db.enter(); err != nil {
		return 0, false, err
	}
	defer db.leave()
	db.mu.RLock()
	defer db.mu.RUnlock()
	r, set := db.retention[wsKey{tenant, ws}]
	if !set || r.Days == 0 || r.Cutoff == math.MinInt64 {
		return 0, false, nil
	}
	return r.Cutoff, true, nil
}

// SetRetention sets the retention of tenant's workspace ws to days (1 to
// MaxRetentionDays), or clears it (0), durably. Artifacts the new cutoff
// leaves behind are erased before it returns.
func (db *DB) SetRetention(tenant, ws string, days int) error {
	if err := db.enter(); err != nil {
		return err
	}
	defer db.leave()
	if err := CheckID("ws", ws, true); err != nil {
		return err
	}
	if days < 0 || days > MaxRetentionDays {
		return &InvalidError{"days", fmt.Sprintf("must be between 0 (clear) and %d", MaxRetentionDays)}
	}
	r := &record.Retention{Tenant: tenant, Workspace: ws, Days: uint64(days)}
	err := db.append(wal.Entry{Type: uint8(record.TypeRetention), Payload: record.EncodeRetention(r), Apply: func(seq uint64) {
		db.applyRetention(r, seq)
	}})
	if err != nil {
		return fmt.Errorf("engine: set retention: %w", err)
	}
	db.kickMaintenance() // flush, then compaction removes what was erased
	return nil
}

// applyRetention applies a retention record.
func (db *DB) applyRetention(r *record.Retention, seq uint64) {
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
		cur = manifest.Retention{Tenant: k.Tenant, Workspace: k.Workspace, Cutoff: math.MinInt64}
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

// retentionTime is what an artifact contributes to its workspace's
// retention reference: its timestamp, or its ingest time if earlier, so
// that a timestamp in the future counts as the time it was written.
func retentionTime(a *artifact.Artifact) int64 { return min(a.Timestamp, a.IngestedAt) }

// retainLocked advances k's cutoff and erases what it leaves behind. With
// ha (an artifact just applied) the cutoff is taken from ha's retention
// time, and ha itself is erased if it is older than a cutoff that did not
// move; without (a retention record), from the newest retention time of
// the workspace's visible artifacts. seq is the record being applied.
// Callers hold mu.Lock.
func (db *DB) retainLocked(k wsKey, seq uint64, ha *headArtifact) {
	r, ok := db.retention[k]
	if !ok {
		return
	}
	ref := int64(math.MinInt64)
	if ha != nil {
		ref = retentionTime(ha.a)
	} else {
		ref = db.retentionRefLocked(k)
	}
	if c := retentionCutoff(ref, r.Days); c > r.Cutoff {
		r.Cutoff = c
		db.retention[k] = r
		var old []manifest.ErasedArtifact
		err := db.eachArtifactMeta(k, func(a *artifact.Artifact) error {
			if a.Timestamp < c {
				old = append(old, manifest.ErasedArtifact{Seq: a.Seq, ID: a.ID})
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
		db.eraseLocked(k, []manifest.ErasedArtifact{{Seq: ha.a.Seq, ID: ha.a.ID}})
	}
}

// retentionRefLocked returns the newest retention time of k's visible
// artifacts (math.MinInt64: none). Callers hold mu.
func (db *DB) retentionRefLocked(k wsKey) int64 {
	ref := int64(math.MinInt64)
	err := db.eachArtifactMeta(k, func(a *artifact.Artifact) error {
		ref = max(ref, retentionTime(a))
		return nil
	})
	if err != nil {
		db.log.Error("engine: retention: reading the workspace's artifacts", "workspace", k.Workspace, "err", err)
	}
	return ref
}

// repairRetentionLocked lowers, at open and before the WAL is replayed,
// every cutoff later than a one-day retention's cutoff of the clock plus
// MaxFutureSkew: no accepted write can give one, so it is a cutoff an earlier version took
// from a far-future timestamp, which would erase every artifact written
// from now on. It is lowered to the cutoff of the workspace's visible
// artifacts' reference (what the current rule gives); what it erased stays
// erased. The clock only decides whether a cutoff is impossible, never
// where a possible one lies; the next flush writes the repaired cutoff.
// Callers hold mu.Lock.
func (db *DB) repairRetentionLocked() {
	limit := db.opts.Now().Add(MaxFutureSkew).UnixMicro()
	keys := make([]wsKey, 0, len(db.retention))
	for k := range db.retention {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b wsKey) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Workspace, b.Workspace))
	})
	for _, k := range keys {
		r := db.retention[k]
		// The latest possible cutoff is a day before the clock's: the
		// shortest retention's. Not r.Days': retention lengthened after a
		// shorter one keeps the shorter one's cutoff (cutoffs only move
		// forward), which is possible and must stay.
		if r.Cutoff <= retentionCutoff(limit, 1) {
			continue
		}
		c := min(r.Cutoff, retentionCutoff(db.retentionRefLocked(k), r.Days))
		db.log.Warn("engine: retention: lowering a cutoff taken from a far-future timestamp",
			"tenant", k.Tenant, "workspace", k.Workspace,
			"cutoff", time.UnixMicro(r.Cutoff).UTC().Format(time.RFC3339), "to", cutoffString(c))
		r.Cutoff = c
		db.retention[k] = r
	}
}

func cutoffString(c int64) string {
	if c == math.MinInt64 {
		return "none"
	}
	return time.UnixMicro(c).UTC().Format(time.RFC3339)
}

// MaxFutureSkew is how far after the server's clock an artifact's
// timestamp may lie when it is written (CheckFutureTime): clocks of
// clients and servers differ, and a client may schedule a note for later
// today, but a time further ahead is a unit or clock error, and would
// make the artifact the workspace's newest for years.
const MaxFutureSkew = 24 * time.Hour

// CheckFutureTime refuses a timestamp t given for a write accepted at now
// (the server's clock) if it lies more than MaxFutureSkew after now. It
// decides acceptance only, where the write is first accepted (the API,
// loci import), never where a write is applied (replicas, replay), so what
// is stored never depends on a clock.
func CheckFutureTime(field string, t, now time.Time) *InvalidError {
	if t.After(now.Add(MaxFutureSkew)) {
		return &InvalidError{field, fmt.Sprintf("%s is more than 24 hours after the server's clock (%s); a timestamp may lie at most 24 hours in the future",
			t.UTC().Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339))}
	}
	return nil
}

// eraseLocked erases the visible artifacts es of k as an erase record
// does, without moving the version or the newest time (the caller does).
// Callers hold mu.Lock.
func (db *DB) eraseLocked(k wsKey, es []manifest.ErasedArtifact) {
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
		v = manifest.DataVersion{Tenant: k.Tenant, Workspace: k.Workspace, Newest: math.MinInt64}
	}
	list := append(slices.Clone(v.Erased), es...) // a new array: manifest.DataVersion values are copied
	slices.SortFunc(list, func(a, b manifest.ErasedArtifact) int { return cmp.Compare(a.Seq, b.Seq) })
	v.Erased = list
	db.versions[k] = v
	db.pruneErased()
	db.embedding.signal() // a queued artifact is dropped
}

// checkpointStateLocked copies the versions and retention of every
// workspace, for a manifest whose checkpoint is the current log position
// (a WAL rotation). Callers hold mu.
func (db *DB) checkpointStateLocked() ([]manifest.DataVersion, []manifest.Retention) {
	vs := make([]manifest.DataVersion, 0, len(db.versions))
	for _, v := range db.versions {
		vs = append(vs, v) // Erased is never modified in place: sharing it is safe
	}
	rs := make([]manifest.Retention, 0, len(db.retention))
	for _, r := range db.retention {
		rs = append(rs, r)
	}
	return vs, rs
}
