package engine

import (
	"sync/atomic"

	"github.com/loci-memory/loci/wal"
)

// MaintenanceCounts counts compactions since Open: runs of segments merged
// or rewritten, and runs that failed (each failure is retried later).
type MaintenanceCounts struct {
	Compactions        uint64
	CompactionFailures uint64
}

// maintenanceCounters are a DB's MaintenanceCounts.
type maintenanceCounters struct {
	compactions, failures atomic.Uint64
}

// countCompaction counts one compaction run and whether it failed.
func (db *DB) countCompaction(err error) {
	c := &db.maint
	if err != nil {
		c.failures.Add(1)
		return
	}
	c.compactions.Add(1)
}

// MaintenanceCounts returns the compaction counters since Open.
func (db *DB) MaintenanceCounts() MaintenanceCounts {
	c := &db.maint
	return MaintenanceCounts{Compactions: c.compactions.Load(), CompactionFailures: c.failures.Load()}
}

// WALStats returns the write-ahead log's activity counters since Open.
func (db *DB) WALStats() wal.Stats { return db.wal.Stats() }

// ObserveWALSyncs makes fn see every later fsync of the write-ahead log
// (see wal.SyncObserver); nil stops it. fn runs on the WAL writer and must
// be quick.
func (db *DB) ObserveWALSyncs(fn wal.SyncObserver) { db.wal.SetSyncObserver(fn) }
