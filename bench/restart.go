package bench

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/embed"
	"github.com/loci-memory/loci/embed/glove"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/wal"
)

// RestartConfig sets up a restart benchmark.
type RestartConfig struct {
	Dir       string // reuse this data directory if it already holds data; build it otherwise
	Artifacts int
	Seed      uint64
	Restarts  int // how many times to reopen; the median and max are reported
	// Embedder opens the directory (nil: GloVe); a directory another
	// embedder wrote needs that one. Directories a server wrote (with
	// service state) open too.
	Embedder embed.Embedder
	// Progress, if set, receives a line at most every few seconds while a
	// long phase runs (loci bench and loci eval print it to stderr).
	Progress func(string)
}

// RestartResult is what `loci bench restart --json` prints.
type RestartResult struct {
	Artifacts       int       `json:"artifacts"`
	BuildSeconds    float64   `json:"build_seconds"`
	OpenSeconds     []float64 `json:"open_seconds"`
	OpenMedianS     float64   `json:"open_median_s"`
	OpenMaxS        float64   `json:"open_max_s"`
	FirstReadMs     float64   `json:"first_read_ms"`
	DiskBytes       int64     `json:"disk_bytes"`
	DiskBytesPerArt float64   `json:"disk_bytes_per_artifact"`
	Segments        int       `json:"segments"`
	HeadArtifacts   int       `json:"head_artifacts_replayed"`
	HeapMB          float64   `json:"heap_after_open_mb"`
}

// Restart builds a data directory of cfg.Artifacts artifacts (fsync off while
// building: the figure is the restart, not the build), closes it, and times
// engine.Open on it, including WAL replay of the unflushed tail.
func Restart(cfg RestartConfig) (*RestartResult, error) {
	dir := cfg.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "loci-bench-restart-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	if cfg.Restarts <= 0 {
		cfg.Restarts = 5
	}
	res := &RestartResult{Artifacts: cfg.Artifacts}
	if _, err := os.Stat(dir + "/MANIFEST"); err != nil {
		t := time.Now()
		if err := build(dir, cfg); err != nil {
			return nil, err
		}
		res.BuildSeconds = time.Since(t).Seconds()
	}
	p := newProgress(cfg.Progress)
	for i := 0; i < cfg.Restarts; i++ {
		p.tick("reopening: %d of %d done", i, cfg.Restarts)
		runtime.GC()
		t := time.Now()
		emb := cfg.Embedder
		if emb == nil {
			emb = glove.New()
		}
		db, err := engine.Open(dir, engine.Options{DisableBackground: true, Embedder: emb, Control: control.New(time.Now), Logger: quietLogger()})
		if err != nil {
			return nil, err
		}
		res.OpenSeconds = append(res.OpenSeconds, time.Since(t).Seconds())
		if i == 0 {
			st := db.Stats()
			res.Segments, res.HeadArtifacts = st.Segments, st.HeadArtifacts
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			res.HeapMB = float64(ms.HeapAlloc) / (1 << 20)
			t = time.Now()
			if _, _, err := db.WorkspaceContent("default", "ws-0-missing"); err != nil {
				db.Close()
				return nil, err
			}
			res.FirstReadMs = float64(time.Since(t).Microseconds()) / 1e3
		}
		if err := db.Close(); err != nil {
			return nil, err
		}
	}
	sorted := slices.Sorted(slices.Values(res.OpenSeconds))
	res.OpenMedianS, res.OpenMaxS = sorted[len(sorted)/2], sorted[len(sorted)-1]
	disk, err := dirSize(dir)
	if err != nil {
		return nil, err
	}
	res.DiskBytes, res.DiskBytesPerArt = disk, float64(disk)/float64(cfg.Artifacts)
	return res, nil
}

func build(dir string, cfg RestartConfig) error {
	db, err := engine.Open(dir, engine.Options{Sync: wal.SyncOff, Embedder: glove.New()})
	if err != nil {
		return err
	}
	corpus := NewCorpus(cfg.Seed)
	const batch = 256
	var wg sync.WaitGroup
	work := make(chan []engine.IngestInput, 4)
	errs := make(chan error, runtime.NumCPU())
	for w := 0; w < runtime.NumCPU(); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				if _, err := db.IngestBatch("default", b); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	p := newProgress(cfg.Progress)
	for i := 0; i < cfg.Artifacts; i += batch {
		p.tick("building the data directory: %d of %d artifacts", i, cfg.Artifacts)
		n := min(batch, cfg.Artifacts-i)
		b := make([]engine.IngestInput, n)
		for j := range b {
			b[j] = corpus.Next(fmt.Sprintf("ws-%d", (i+j)%16))
		}
		select {
		case work <- b:
		case err := <-errs:
			close(work)
			db.Close()
			return err
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		db.Close()
		return err
	default:
	}
	return db.Close()
}
