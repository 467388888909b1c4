package engine

import (
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine/record"
	"github.com/loci-memory/loci/wal"
)

// Replicator carries a replicated engine's writes through a replicated,
// ordered log (cluster mode: a JetStream stream per shard, package cluster).
// The engine prepares every write completely (ids, times, vectors) and hands
// its records to Replicate instead of appending them to its own WAL; every
// replica, this one included, then receives them from the log in order and
// applies them with ApplyReplicated. The policy of the log (which copies are
// one write, how long to wait for what, how log positions become sequence
// numbers) is the replicator's.
type Replicator interface {
	// Replicate publishes w's entries (whose order it keeps) and returns
	// once the log has stored them on a quorum and this engine has applied
	// them through ApplyReplicated, running their Apply functions (the ones
	// given here, not decoded copies): then the write is acknowledged. If
	// the log already holds this write (the replicator tells copies of one
	// write apart by what w says it is), Replicate returns ErrDuplicate once
	// this engine has applied the earlier copy, and w's entries are never
	// applied. Any other error means the write is not acknowledged; it may
	// still be applied later. A receipt (w.Receipt set) is a read's
	// by-product: Replicate may return before it is applied, and nil.
	Replicate(w Write) error
}

// Write is one write of a replicated engine: its records, and what the
// write is, from which the replicator derives its identity in the log.
type Write struct {
	Entries []wal.Entry
	// Tenant and Ingested: for an ingest, its tenant and the artifacts it
	// stores, in the order of their records (nil for other writes).
	Tenant   string
	Ingested []Ingested
	// Receipt is the id of the receipt a write stores (uuid.Nil for other
	// writes).
	Receipt uuid.UUID
	// Deferred: the write may be acknowledged before it is fsynced
	// (wal.Log.AppendDeferred; a receipt unless Options.SyncReceipts). A
	// replicated engine ignores it: the replicator's acknowledgement rules.
	Deferred bool
}

// Ingested names an artifact an ingest stores.
type Ingested struct {
	Workspace      string
	IdempotencyKey string // "" when the client sent none
	ID             uuid.UUID
}

// ErrDuplicate is a Replicator's answer to a write the log already holds,
// after the engine applied the earlier copy.
var ErrDuplicate = errors.New("engine: the replicated log already holds this write")

// ErrUnavailable is a Replicator's refusal of a write the replicated log
// did not acknowledge (no quorum, no connection, a timeout): the client was
// not told it succeeded and should send it again. It may still be applied,
// once, if the log stored it after all (writes carry ids for that).
var ErrUnavailable = errors.New("the replicated log did not acknowledge the write in time (no quorum or no connection to it); it is not acknowledged: retry")

// ErrNotReplicating refuses a write to a replicated engine before
// SetReplicator gave it a log.
var ErrNotReplicating = fmt.Errorf("%w (the node is starting)", ErrUnavailable)

// SetReplicator sets the log a replicated engine (Options.Replicated)
// writes through. It is called once, after Open and before any write.
func (db *DB) SetReplicator(r Replicator) {
	db.repl.Store(&r)
}

// append writes entries: to the WAL, or through the replicator in
// replicated mode.
func (db *DB) append(entries ...wal.Entry) error {
	return db.appendWrite(Write{Entries: entries})
}

// appendWrite is append for a write whose Write says more than its
// entries (an ingest, a receipt).
func (db *DB) appendWrite(w Write) error {
	if !db.opts.Replicated {
		var err error
		if w.Deferred {
			_, err = db.wal.AppendDeferred(w.Entries...)
		} else {
			_, err = db.wal.Append(w.Entries...)
		}
		return err
	}
	r := db.repl.Load()
	if r == nil {
		return ErrNotReplicating
	}
	return (*r).Replicate(w)
}

// Closing reports whether Close has begun: a replicator stops publishing
// on the engine's behalf (a receipt it keeps retrying).
func (db *DB) Closing() bool { return db.closing.Load() }

// ApplyReplicated appends records of the replicated log to the local WAL at
// sequence numbers first, first+1, ... (strictly above every earlier one;
// see wal.Log.AppendAt) and applies them in order. An entry with an Apply
// function is this node's own write, applied by it as in single-node mode;
// one without is decoded from its payload. A payload that cannot be decoded
// is skipped (not written, not applied) and logged: every replica receives
// the same bytes and skips it alike, so none diverges. Records at numbers
// the WAL already holds are skipped too, so after an error (records before
// the failed append are applied) or a restart the caller applies the same
// message again.
func (db *DB) ApplyReplicated(first uint64, entries []wal.Entry) error {
	if !db.opts.Replicated {
		return errors.New("engine: ApplyReplicated on an engine that is not replicated")
	}
	if err := db.enter(); err != nil {
		return err
	}
	defer db.leave()
	// Records keep the sequence numbers of their positions in the message,
	// also after a skipped one: runs of consecutive positions are appended.
	var run []wal.Entry
	runStart := first
	flush := func() error {
		if len(run) == 0 {
			return nil
		}
		if _, err := db.wal.AppendAt(runStart, run...); err != nil {
			return fmt.Errorf("engine: apply replicated records at %d: %w", runStart, err)
		}
		run = nil
		return nil
	}
	next := db.wal.NextSeq()
	for i, e := range entries {
		seq := first + uint64(i)
		if seq < next {
			continue
		}
		if e.Apply == nil {
			t, payload := record.Type(e.Type), e.Payload
			decoded, err := decodeRecord(t, payload)
			if err != nil {
				db.log.Error("engine: replicated record skipped: it cannot be decoded", "seq", seq, "type", t, "err", err)
				if err := flush(); err != nil {
					return err
				}
				continue
			}
			e = wal.Entry{Type: e.Type, Payload: payload, Apply: func(seq uint64) {
				if err := db.apply(t, seq, payload, decoded); err != nil {
					db.log.Error("engine: replicated record not applied", "seq", seq, "type", t, "err", err)
				}
			}}
		}
		if len(run) == 0 {
			runStart = seq
		}
		run = append(run, e)
	}
	return flush()
}

// AppliedSeq is the sequence number of the last record in the WAL: in
// replicated mode, the log position a restarted node resumes after.
func (db *DB) AppliedSeq() uint64 { return db.wal.NextSeq() - 1 }

// decodeRecord decodes a record's payload into the form apply takes on its
// live path; control records stay encoded (apply hands them on as they are).
func decodeRecord(t record.Type, payload []byte) (any, error) {
	switch t {
	case record.TypeArtifact:
		a, spans, vecs, fence, err := record.DecodeArtifact(payload)
		if err != nil {
			return nil, err
		}
		return &headArtifact{a: a, spans: spans, vecs: vecs, fence: fence}, nil
	case record.TypeEraseWorkspace:
		tenant, ws, err := record.DecodeEraseWorkspace(payload)
		if err != nil {
			return nil, err
		}
		return wsKey{tenant, ws}, nil
	case record.TypeEraseArtifact:
		return record.DecodeEraseArtifact(payload)
	case record.TypeRetention:
		return record.DecodeRetention(payload)
	case record.TypeVectors:
		return record.DecodeVectors(payload)
	case record.TypeFeedback:
		return record.DecodeFeedback(payload)
	case record.TypeReceipt:
		return decodeReceiptRecord(payload, true)
	}
	if isControlRecord(t) {
		return nil, nil
	}
	return nil, fmt.Errorf("unknown record type %s", t)
}
