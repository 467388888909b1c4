package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/wal"
)

// IngestConfig sets up an ingest benchmark.
type IngestConfig struct {
	Dir       string // data directory; a fresh temporary one when empty
	Writers   int    // concurrent ingesting goroutines
	Artifacts int    // total artifacts
	Sync      wal.SyncPolicy
	Seed      uint64
}

// IngestResult is what `loci bench ingest --json` prints.
type IngestResult struct {
	Artifacts       int     `json:"artifacts"`
	Writers         int     `json:"writers"`
	Fsync           string  `json:"fsync"`
	Seconds         float64 `json:"seconds"`
	ArtifactsPerS   float64 `json:"artifacts_per_s"`
	P50us           float64 `json:"p50_us"`
	P90us           float64 `json:"p90_us"`
	P99us           float64 `json:"p99_us"`
	MaxUs           float64 `json:"max_us"`
	PayloadBytes    int64   `json:"payload_bytes"`
	DiskBytes       int64   `json:"disk_bytes"`
	DiskBytesPerArt float64 `json:"disk_bytes_per_artifact"`
	Segments        int     `json:"segments"`
	Dataset         string  `json:"dataset"`
}

// Ingest ingests cfg.Artifacts generated artifacts through the engine with
// cfg.Writers concurrent writers, each Ingest call durable per the fsync
// policy, and reports throughput and per-call latency.
func Ingest(cfg IngestConfig) (*IngestResult, error) {
	if cfg.Writers <= 0 || cfg.Artifacts <= 0 {
		return nil, fmt.Errorf("writers and artifacts must be positive")
	}
	dir := cfg.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "loci-bench-ingest-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	// Inputs are generated up front so the clock measures the engine only.
	corpus := NewCorpus(cfg.Seed)
	inputs := make([]engine.IngestInput, cfg.Artifacts)
	var payload int64
	for i := range inputs {
		inputs[i] = corpus.Next(fmt.Sprintf("ws-%d", i%8))
		payload += int64(len(inputs[i].Payload))
	}
	db, err := engine.Open(dir, engine.Options{Sync: cfg.Sync})
	if err != nil {
		return nil, err
	}
	lat := make([]time.Duration, cfg.Artifacts)
	var next atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < cfg.Writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(inputs) {
					return
				}
				t := time.Now()
				if _, err := db.Ingest("default", inputs[i]); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				lat[i] = time.Since(t)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		db.Close()
		return nil, firstErr
	}
	segments := db.Stats().Segments
	if err := db.Close(); err != nil {
		return nil, err
	}
	disk, err := dirSize(dir)
	if err != nil {
		return nil, err
	}
	slices.Sort(lat)
	us := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Nanoseconds()) / 1e3 }
	return &IngestResult{
		Artifacts: cfg.Artifacts, Writers: cfg.Writers, Fsync: cfg.Sync.String(),
		Seconds: elapsed.Seconds(), ArtifactsPerS: float64(cfg.Artifacts) / elapsed.Seconds(),
		P50us: us(0.50), P90us: us(0.90), P99us: us(0.99), MaxUs: us(1),
		PayloadBytes: payload, DiskBytes: disk, DiskBytesPerArt: float64(disk) / float64(cfg.Artifacts),
		Segments: segments,
		Dataset:  fmt.Sprintf("synthetic (bench.Corpus seed %d): 70%% chat turns, 20%% JSON tool results, 10%% documents; mean payload %d bytes", cfg.Seed, payload/int64(cfg.Artifacts)),
	}, nil
}

func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			n += info.Size()
		}
		return err
	})
	return n, err
}
