// Package wal implements Loci's write-ahead log.
//
// A log is a directory of files named by [FileName], numbered from 1 with no
// gaps. Each file starts with an 8-byte header and holds framed records back
// to back; a record never spans two files. Every record carries a sequence
// number assigned by the log, strictly increasing across files and restarts.
// The byte layout is specified in docs/format/wal.md.
//
// Appends from many goroutines are group-committed: a single writer goroutine
// takes everything queued, writes it with one write call and makes it durable
// with one fsync, then hands the batch to a single applier goroutine, which
// runs the entries' Apply callbacks in log order and then wakes the
// appenders. While it writes and syncs, new appends queue into a second
// buffer, so the cost of an fsync is shared by every append that arrived
// during the previous one; and while the applier applies one batch, the
// writer already writes and syncs the next.
//
// On [Open] the log is replayed. A damaged record at the end of the last file,
// with no valid record after it, is what a crash in the middle of a write
// leaves behind (a frame cut short, a length without its payload, a zeroed
// extension of the file), so replay stops there and the file is truncated.
// Damage followed by a valid record, or damage in any earlier file, cannot be
// explained by a crash: it is reported as a [*CorruptionError] naming file
// and offset, and the log refuses to open rather than drop acknowledged
// records. This is the rule of Prometheus's and Pebble's WAL readers.
package wal
