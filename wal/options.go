package wal

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/loci-memory/loci/vfs"
)

// SyncPolicy says when the log fsyncs its current file.
type SyncPolicy int

const (
	// SyncAlways fsyncs every batch before acknowledging it (the default).
	SyncAlways SyncPolicy = iota
	// SyncBatch acknowledges a batch once written and fsyncs in the
	// background every SyncInterval. Acknowledged writes can be lost on
	// power failure: for benchmarks only.
	SyncBatch
	// SyncOff never fsyncs except on Rotate, Sync and Close. Acknowledged
	// writes can be lost on power failure: for benchmarks only.
	SyncOff
)

var syncPolicyNames = [...]string{SyncAlways: "always", SyncBatch: "batch", SyncOff: "off"}

// ParseSyncPolicy parses "always", "batch" or "off".
func ParseSyncPolicy(s string) (SyncPolicy, error) {
	for p, name := range syncPolicyNames {
		if s == name {
			return SyncPolicy(p), nil
		}
	}
	return 0, fmt.Errorf("wal: unknown sync policy %q (want always, batch or off)", s)
}

func (p SyncPolicy) String() string {
	if p >= 0 && int(p) < len(syncPolicyNames) {
		return syncPolicyNames[p]
	}
	return fmt.Sprintf("SyncPolicy(%d)", int(p))
}

// Options configure a Log. The zero value is valid and safe.
type Options struct {
	// FileSize is the size at which the current file is ended and a new one
	// started; default 64 MiB. A batch is never split, so a file can exceed
	// it by up to one batch.
	FileSize int64
	// Sync is the fsync policy; default SyncAlways.
	Sync SyncPolicy
	// SyncInterval is the background fsync period under SyncBatch; default
	// 10ms.
	SyncInterval time.Duration
	// Logger receives warnings about truncated tails and unsafe policies;
	// default slog.Default().
	Logger *slog.Logger
	// FS is the file system the log's files live on; default vfs.Default.
	FS vfs.FS
	// RetryInterval is how often a log whose last write or fsync failed
	// checks, while idle, whether it can write again (see Log.Err); default
	// 1s.
	RetryInterval time.Duration
}

func (o Options) withDefaults() (Options, error) {
	if o.FileSize <= 0 {
		o.FileSize = 64 << 20
	}
	if o.SyncInterval <= 0 {
		o.SyncInterval = 10 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = time.Second
	}
	if o.Sync < SyncAlways || o.Sync > SyncOff {
		return o, fmt.Errorf("wal: invalid sync policy %d", int(o.Sync))
	}
	return o, nil
}
