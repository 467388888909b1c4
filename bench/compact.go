package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/wal"
)

// CompactConfig sets up `loci bench compact`.
type CompactConfig struct {
	// Dir is a data directory, compacted in place: run it on a copy.
	Dir string
	// Embedding is the directory's embedder (the engine refuses another).
	Embedding Embedding
}

// CompactResult is what `loci bench compact --json` prints: one full
// compaction (engine.DB.Compact: flush, then merge every run of small
// segments) of a directory as found.
type CompactResult struct {
	// Spans and Workspaces count the workspaces of the tenants loci serve
	// and the benchmarks write: "default" (the server's, loci import's and
	// loci bench ingest's) and "bench" (bench search's scratch engine).
	Spans              int     `json:"spans"`
	Workspaces         int     `json:"workspaces"`
	SegmentsBefore     int     `json:"segments_before"`
	SegmentsAfter      int     `json:"segments_after"`
	SegmentBytesBefore int64   `json:"segment_bytes_before"`
	SegmentBytesAfter  int64   `json:"segment_bytes_after"`
	Seconds            float64 `json:"seconds"`
	CPUSeconds         float64 `json:"cpu_seconds"`
	// WrittenBytes is what the process wrote to files during the
	// compaction (/proc/self/io wchar: segments, manifest, WAL); -1 where
	// unavailable. WriteAmplification is WrittenBytes over
	// SegmentBytesAfter: the bytes rewritten per byte of data kept.
	WrittenBytes       int64   `json:"written_bytes"`
	WriteAmplification float64 `json:"write_amplification"`
	Embedder           string  `json:"embedder"`
}

// Compact opens cfg.Dir, as loci serve would (its service state attached),
// and times one full compaction.
func Compact(cfg CompactConfig) (*CompactResult, error) {
	if cfg.Dir == "" {
		return nil, fmt.Errorf("bench.Compact: a directory is needed (it is compacted in place: give a copy)")
	}
	ctl := control.New(time.Now)
	opts := engine.Options{Sync: wal.SyncAlways, DisableBackground: true, Control: ctl, Logger: quietLogger()}
	cfg.Embedding.options(&opts)
	db, err := engine.Open(cfg.Dir, opts)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	ctl.Attach(db.AppendControl)
	res := &CompactResult{Embedder: cfg.Embedding.Name()}
	for _, tenant := range []string{"default", "bench"} {
		wss, err := db.Workspaces(tenant)
		if err != nil {
			return nil, err
		}
		for _, w := range wss {
			res.Spans += w.Spans
			res.Workspaces++
		}
	}
	st := db.Stats()
	res.SegmentsBefore, res.SegmentBytesBefore = st.Segments, st.SegmentBytes
	w0, cpu0, t := writtenBytes(), cpuTime(), time.Now()
	if err := db.Compact(); err != nil {
		return nil, err
	}
	res.Seconds, res.CPUSeconds = time.Since(t).Seconds(), (cpuTime() - cpu0).Seconds()
	st = db.Stats()
	res.SegmentsAfter, res.SegmentBytesAfter = st.Segments, st.SegmentBytes
	res.WrittenBytes = -1
	if w1 := writtenBytes(); w0 >= 0 && w1 >= 0 {
		res.WrittenBytes = w1 - w0
		if res.SegmentBytesAfter > 0 {
			res.WriteAmplification = float64(res.WrittenBytes) / float64(res.SegmentBytesAfter)
		}
	}
	return res, nil
}

// writtenBytes is the bytes this process has passed to write calls so far
// (/proc/self/io wchar), or -1 where that is not available.
func writtenBytes() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "wchar:"); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return n
			}
		}
	}
	return -1
}
