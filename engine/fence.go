package engine

import "errors"

// ErrWorkspaceErased is returned by an ingest with a fence (IngestInput.Fence)
// when the workspace was erased after the fence: an asynchronous job accepted
// before an erasure must not put its artifact back into the erased workspace.
var ErrWorkspaceErased = errors.New("engine: the workspace was erased after the artifact was accepted")

// fencedOut reports whether an erasure of workspace k newer than fence hides
// an artifact carrying that fence. Callers hold mu.
//
// Applying an artifact record asks it under mu on the WAL writer, atomically
// with the tombstones; replay applies the erase record first (it has the
// lower seq) and asks the same, so a refused artifact stays refused after a
// restart. Once a flush has passed the erase record, only the manifest's
// tombstone remembers the erasure, while a refused record may still be in
// the WAL and a held-up worker may still ingest: so a tombstone is kept
// after it hides no data any more.
func (db *DB) fencedOut(k wsKey, fence uint64) bool {
	return fence != 0 && db.tombstones[k] > fence
}

// refuseFenced accounts for an artifact record that applying refused: its
// WAL bytes hold data of an erased workspace, so they are flushed away soon,
// as an erasure's are. Callers hold mu.
func (db *DB) refuseFenced(ha *headArtifact, seq uint64) {
	ha.fenced = true
	db.head.erasures++
	db.head.note(seq)
}

// checkFences refuses a batch early, before anything is appended, when an
// item's workspace was erased after its fence. Applying the record checks
// again, atomically with the tombstones, for an erasure that lands between.
func (db *DB) checkFences(prepared []*headArtifact, ins []IngestInput) error {
	db.mu.RLock()
	defer db.mu.RUnlock()
	for i, ha := range prepared {
		if ha != nil && db.fencedOut(wsKey{ha.a.Tenant, ha.a.Workspace}, ins[i].Fence) {
			return ErrWorkspaceErased
		}
	}
	return nil
}

// anyFenced reports whether applying refused one of the batch's artifacts.
// The WAL writer set the flag before the append returned.
func anyFenced(prepared []*headArtifact) bool {
	for _, ha := range prepared {
		if ha != nil && ha.fenced {
			return true
		}
	}
	return false
}
