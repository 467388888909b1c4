package wal

import (
	"sync/atomic"
	"time"

	"github.com/loci-memory/loci/vfs"
)

// SyncObserver is told about every successful fsync of a log file: how long
// it took and how many records it made durable (0 for the fsyncs of a new
// file's header or of a file cut back after a failure). It runs on the
// log's writer goroutine, so it must be quick: an atomic add, not a lock
// or I/O. Metrics use it for fsync latency and group-commit batch sizes;
// the wal package itself knows nothing of metrics.
type SyncObserver func(took time.Duration, records int)

// syncObserving is the writer's side of SetSyncObserver.
type syncObserving struct {
	fn atomic.Pointer[SyncObserver]
	// unsynced counts records written to the current file since its last
	// fsync. Owned by the writer goroutine.
	unsynced int
}

// SetSyncObserver makes fn see every later fsync (nil: none). It may be
// called at any time, also while appends run.
func (l *Log) SetSyncObserver(fn SyncObserver) {
	if fn == nil {
		l.obs.fn.Store(nil)
		return
	}
	l.obs.fn.Store(&fn)
}

// written notes records written to the current file (writer goroutine).
func (o *syncObserving) written(records int, err error) {
	if err == nil {
		o.unsynced += records
	}
}

// synced reports an fsync of f that began at start (writer goroutine). A
// failed fsync of the current file drops its unsynced records: their batch
// fails and repair cuts them off.
func (l *Log) synced(f vfs.File, start time.Time, err error) {
	records := 0
	if f == l.f {
		records, l.obs.unsynced = l.obs.unsynced, 0
	}
	if err != nil {
		return
	}
	if fn := l.obs.fn.Load(); fn != nil {
		(*fn)(time.Since(start), records)
	}
}
