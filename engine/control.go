package engine

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/loci-memory/loci/engine/manifest"
	"github.com/loci-memory/loci/engine/record"
	"github.com/loci-memory/loci/internal/codec"
	"github.com/loci-memory/loci/wal"
)

// ControlState is durable service state that lives outside workspaces
// (tenants, API keys, usage counters, indexing jobs). The engine makes it
// durable without understanding it: changes travel through the WAL as
// control records, and at every flush the engine stores a full snapshot so
// that older WAL files can be removed.
type ControlState interface {
	// ApplyControl applies one control record, in WAL order. kind is
	// 0..MaxControlKind (WAL record type 32+kind). Replay after a restart may
	// present records the restored snapshot already covers: a record with
	// seq <= the snapshot's applied seq must be ignored.
	ApplyControl(kind uint8, seq uint64, payload []byte) error
	// SnapshotControl encodes the whole applied state, including the highest
	// seq applied. The engine calls it on the WAL writer between batches, so
	// no ApplyControl runs concurrently.
	SnapshotControl() []byte
	// RestoreControl replaces the state with a snapshot made by
	// SnapshotControl. It is called once at Open, before replay.
	RestoreControl(b []byte) error
}

// ControlPayloads is implemented by a ControlState that keeps bulky
// payloads (the inputs of pending jobs) out of its snapshot, so that the
// snapshot rewritten at every flush stays small. The engine stores them in
// their own file, rewritten only when they changed.
type ControlPayloads interface {
	// SnapshotPayloads encodes the payloads and their generation; changed
	// is false when that generation was last reported to PayloadsWritten.
	// It may be newer than the snapshot written with it: replay of the
	// records after the snapshot must reconcile them.
	SnapshotPayloads() (b []byte, gen uint64, changed bool)
	// PayloadsWritten reports that generation gen is durable.
	PayloadsWritten(gen uint64)
	// RestorePayloads is called once at Open, after RestoreControl and
	// before replay.
	RestorePayloads(b []byte) error
}

// controlPayloadsName is the file holding the latest ControlPayloads.
const controlPayloadsName = manifest.ControlPayloadsName

// controlPayloadsMagic opens the payloads file; framed like CONTROL.
var controlPayloadsMagic = manifest.ControlPayloadsMagic

// MaxControlKind is the highest control record kind: WAL record types 32-47.
const MaxControlKind = record.MaxControlKind

// recControlBase is the WAL record type of control kind 0.
const recControlBase = record.TypeTenant

// controlName is the file holding the latest control snapshot.
const controlName = manifest.ControlName

// controlMagic opens the control snapshot file; the version byte follows.
var controlMagic = manifest.ControlMagic

const controlVersion = manifest.ControlVersion

// ErrNoControl is returned when control records are written or found but
// the DB was opened without Options.Control: dropping them would lose them.
var ErrNoControl = errors.New("engine: no control state configured (Options.Control)")

func isControlRecord(t record.Type) bool { return t.IsControl() }

// AppendControl writes one control record. It returns once the record is
// durable (per the fsync policy) and ApplyControl has applied it.
func (db *DB) AppendControl(kind uint8, payload []byte) error {
	if db.opts.Control == nil {
		return ErrNoControl
	}
	if kind > MaxControlKind {
		return fmt.Errorf("engine: control kind %d out of range 0..%d", kind, MaxControlKind)
	}
	if err := db.enter(); err != nil {
		return err
	}
	defer db.leave()
	t := recControlBase + record.Type(kind)
	var applyErr error
	err := db.append(wal.Entry{Type: uint8(t), Payload: payload,
		Apply: func(seq uint64) { applyErr = db.apply(t, seq, payload, nil) }})
	if err != nil {
		return fmt.Errorf("engine: append control record: %w", err)
	}
	return applyErr
}

// applyControl hands a control record to the control state and accounts
// for it in the head, so that the next flush snapshots it.
func (db *DB) applyControl(t record.Type, seq uint64, payload []byte) error {
	if db.opts.Control == nil {
		return fmt.Errorf("seq %d: %s record: %w", seq, t, ErrNoControl)
	}
	if err := db.opts.Control.ApplyControl(uint8(t-recControlBase), seq, payload); err != nil {
		return fmt.Errorf("seq %d: %s record: %w", seq, t, err)
	}
	db.mu.Lock()
	db.head.note(seq)
	db.head.bytes += int64(len(payload))
	db.mu.Unlock()
	return nil
}

// encodeControlFile frames a snapshot: magic, version, CRC-32C of the
// snapshot, then the snapshot (docs/format/manifest.md § CONTROL).
func encodeControlFile(snap []byte) []byte {
	return codec.EncodeFramed(controlMagic, controlVersion, snap)
}

// decodeControlFile checks the framing of a CONTROL file and returns the snapshot.
func decodeControlFile(path string, b []byte) ([]byte, error) {
	return codec.DecodeFramed(path, controlMagic, controlVersion, b)
}

// readControlFile returns the stored snapshot, or nil when there is none.
func readControlFile(dir string) ([]byte, error) {
	return manifest.ReadFramed(dir, controlName, controlMagic)
}

// restoreControl loads the control snapshot before WAL replay. Without a
// control state, a snapshot on disk is an error: the service state it holds
// would be lost at the next flush.
func (db *DB) restoreControl() error {
	snap, err := readControlFile(db.dir)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	if snap == nil {
		return nil
	}
	if db.opts.Control == nil {
		return fmt.Errorf("engine: %s holds service state: %w", filepath.Join(db.dir, controlName), ErrNoControl)
	}
	if err := db.opts.Control.RestoreControl(snap); err != nil {
		return fmt.Errorf("engine: %s: %w", filepath.Join(db.dir, controlName), err)
	}
	if p, ok := db.opts.Control.(ControlPayloads); ok {
		b, err := manifest.ReadFramed(db.dir, controlPayloadsName, controlPayloadsMagic)
		if err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		if b != nil {
			if err := p.RestorePayloads(b); err != nil {
				return fmt.Errorf("engine: %s: %w", filepath.Join(db.dir, controlPayloadsName), err)
			}
		}
	}
	return nil
}

// writeControlSnapshot stores snap (taken at a WAL rotation) durably. It is
// written before the manifest that moves the checkpoint past the WAL files
// it covers, so a crash in between only leaves a snapshot newer than the
// checkpoint; replay skips what it already covers.
func (db *DB) writeControlSnapshot(snap []byte) error {
	if snap == nil {
		return nil
	}
	// The payloads first: they may be newer than the snapshot, never older.
	if p, ok := db.opts.Control.(ControlPayloads); ok {
		if b, gen, changed := p.SnapshotPayloads(); changed {
			if err := codec.WriteFile(db.opts.FS, db.dir, controlPayloadsName, codec.EncodeFramed(controlPayloadsMagic, controlVersion, b)); err != nil {
				return err
			}
			p.PayloadsWritten(gen)
		}
	}
	return codec.WriteFile(db.opts.FS, db.dir, controlName, encodeControlFile(snap))
}
