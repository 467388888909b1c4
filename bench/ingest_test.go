package bench

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/loci-memory/loci/embed/glove"
	"github.com/loci-memory/loci/wal"
)

// BenchmarkIngestPipeline runs the ingest benchmark's closed loop with fsync
// off (b.N artifacts, 64 writers, no embedder): the CPU cost of lexically
// indexed ingest, for profiling (-cpuprofile, -memprofile). Input
// generation is inside the timer; profiles show it apart (bench.Corpus).
func BenchmarkIngestPipeline(b *testing.B) {
	r, err := Ingest(IngestConfig{Dir: b.TempDir(), Writers: 64, Artifacts: max(b.N, 1), Sync: wal.SyncOff, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(r.ArtifactsPerS, "artifacts/s")
	b.ReportMetric(r.CPUusPerArt, "cpu-µs/artifact")
}

// TestIngestBackgroundEmbedding runs the closed loop with a background
// embedder and the drain.
func TestIngestBackgroundEmbedding(t *testing.T) {
	r, err := Ingest(IngestConfig{Dir: t.TempDir(), Writers: 4, Artifacts: 300, Sync: wal.SyncAlways, Seed: 1,
		Embedding: Embedding{Embedder: glove.New()}, Drain: true, DrainTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if r.Embedder != glove.New().Model() || r.EmbeddingBacklog == nil || r.Drained == nil || !*r.Drained ||
		r.DrainSeconds < 0 || r.Open != nil || r.CPUusPerArt <= 0 {
		t.Fatalf("implausible result %+v", r)
	}
}

// TestIngestOpenLoop runs the open loop at a small rate, with and without
// an embedder: every arrival is acknowledged, and with the embedder every
// artifact's lag is measured.
func TestIngestOpenLoop(t *testing.T) {
	r, err := Ingest(IngestConfig{Dir: t.TempDir(), Writers: 8, Sync: wal.SyncAlways, Seed: 1,
		Rate: 500, Duration: 400 * time.Millisecond, Embedding: Embedding{Embedder: glove.New()},
		Drain: true, DrainTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	o := r.Open
	if r.Artifacts != 200 || o == nil || o.Offered != 200 || o.Embedded != 200 || o.NotEmbedded != 0 || o.LagCensored ||
		o.LagMaxms < o.LagP50ms || o.EmbeddedPerS <= 0 || len(o.Backlog) == 0 || o.Backlog[len(o.Backlog)-1].Backlog != 0 ||
		o.ArrivalMaxms < o.ArrivalP50ms || o.AckedPerS <= 0 {
		t.Fatalf("implausible open-loop result %+v", o)
	}
	r, err = Ingest(IngestConfig{Dir: t.TempDir(), Writers: 8, Sync: wal.SyncOff, Seed: 1, Rate: 1000, Duration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.Open == nil || r.Open.Offered != 200 || r.Open.Embedded != 0 || r.EmbeddingBacklog != nil || r.Embedder != "none" {
		t.Fatalf("implausible lexical open-loop result %+v %+v", r, r.Open)
	}
}

// TestIngestCountsProgress: the closed loop reports how many artifacts are
// done, "ingested artifacts: N of TOTAL", N rising to at most TOTAL (every
// call ticks with progressEvery shortened).
func TestIngestCountsProgress(t *testing.T) {
	defer func(d time.Duration) { progressEvery = d }(progressEvery)
	progressEvery = time.Nanosecond
	var mu sync.Mutex
	var counts []int
	_, err := Ingest(IngestConfig{Dir: t.TempDir(), Writers: 4, Artifacts: 300, Sync: wal.SyncOff, Seed: 1,
		Progress: func(s string) {
			var n, total int
			if _, err := fmt.Sscanf(s, "ingested artifacts: %d of %d", &n, &total); err != nil {
				return // the summary line
			}
			if total != 300 || n < 1 || n > 300 {
				t.Errorf("progress line %q", s)
			}
			mu.Lock()
			counts = append(counts, n)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) < 2 {
		t.Fatalf("progress counts %v: want a line per tick", counts)
	}
}
