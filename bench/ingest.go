package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/wal"
)

// IngestConfig sets up an ingest benchmark.
type IngestConfig struct {
	Dir       string // data directory; a fresh temporary one when empty
	Writers   int    // concurrent ingesting goroutines
	Artifacts int    // total artifacts (closed loop); the pool of inputs with Rate
	Sync      wal.SyncPolicy
	Seed      uint64
	// Embedding is the semantic channel. Nil Embedder (the default): none,
	// so the figure is lexically indexed, durable ingest. Otherwise the
	// embedder runs in the background (engine.Options.EmbedInBackground),
	// as loci serve runs it: acknowledgements do not wait for it.
	Embedding Embedding
	// Drain waits, after the last acknowledgement, until the background
	// embedder's backlog is 0 (at most DrainTimeout) and reports how long
	// that took. Only with an embedder.
	Drain        bool
	DrainTimeout time.Duration
	// Rate > 0 switches to an open-loop run: arrivals are scheduled every
	// 1/Rate s for Duration, whatever the writers' progress, and Writers
	// goroutines serve them. With an embedder the result reports each
	// artifact's lag from acknowledgement to embedded.
	Rate     float64
	Duration time.Duration
	// Progress, when set, receives a line now and then.
	Progress func(string)
}

// IngestResult is what `loci bench ingest --json` prints.
type IngestResult struct {
	Artifacts     int     `json:"artifacts"`
	Writers       int     `json:"writers"`
	Fsync         string  `json:"fsync"`
	Embedder      string  `json:"embedder"`
	Seconds       float64 `json:"seconds"`
	ArtifactsPerS float64 `json:"artifacts_per_s"`
	// CPU time of the whole process (user + system, every goroutine,
	// background flushes and compactions included) over the timed part,
	// per artifact: less sensitive than artifacts/s to other load on a
	// shared machine.
	CPUSeconds      float64 `json:"cpu_seconds"`
	CPUusPerArt     float64 `json:"cpu_us_per_artifact"`
	P50us           float64 `json:"p50_us"`
	P90us           float64 `json:"p90_us"`
	P99us           float64 `json:"p99_us"`
	MaxUs           float64 `json:"max_us"`
	PayloadBytes    int64   `json:"payload_bytes"`
	DiskBytes       int64   `json:"disk_bytes"`
	DiskBytesPerArt float64 `json:"disk_bytes_per_artifact"`
	Segments        int     `json:"segments"`
	// Compactions counts the background compaction runs (engine
	// MaintenanceCounts). WrittenBytes is what the process wrote to files
	// from open to close (/proc/self/io wchar: the WAL, flushed segments,
	// compactions' rewrites, manifests; -1 where unavailable), and
	// WriteAmplification is WrittenBytes over PayloadBytes.
	Compactions        uint64  `json:"compactions"`
	WrittenBytes       int64   `json:"written_bytes"`
	WriteAmplification float64 `json:"write_amplification"`
	Dataset            string  `json:"dataset"`
	Description        string  `json:"description"`

	// With an embedder: the background embedder's backlog (artifacts) at
	// the last acknowledgement, and the time from then until it was 0.
	EmbeddingBacklog *int    `json:"embedding_backlog_at_end,omitempty"`
	DrainSeconds     float64 `json:"drain_seconds,omitempty"`
	Drained          *bool   `json:"drained,omitempty"`

	// Open-loop runs (--rate): the offered load and, with an embedder, the
	// lag from acknowledgement to embedded.
	Open *OpenLoopResult `json:"open_loop,omitempty"`
}

// OpenLoopResult is the part of an open-loop run's result about its load and
// the embedding lag.
type OpenLoopResult struct {
	OfferedPerS float64 `json:"offered_per_s"`
	Seconds     float64 `json:"offered_seconds"`
	Offered     int     `json:"offered"`
	// Acknowledged within the run (all of them; the run waits for every
	// arrival), and the latency from scheduled arrival to acknowledgement,
	// queueing for a writer included.
	ArrivalP50ms float64 `json:"arrival_to_ack_p50_ms"`
	ArrivalP99ms float64 `json:"arrival_to_ack_p99_ms"`
	ArrivalMaxms float64 `json:"arrival_to_ack_max_ms"`
	AckedPerS    float64 `json:"acknowledged_per_s"`
	// Lag from each artifact's acknowledgement to its vectors record being
	// applied (engine.DB.OnEmbedded), over every offered artifact. An
	// artifact not embedded when the run ended (the drain gave up, or
	// --drain=false) counts with its lag so far, a lower bound: when
	// NotEmbedded > 0 the percentiles that fall on such artifacts are lower
	// bounds too (LagCensored).
	Embedded    int     `json:"embedded"`
	NotEmbedded int     `json:"not_embedded"`
	LagCensored bool    `json:"lag_censored"`
	LagP50ms    float64 `json:"lag_p50_ms"`
	LagP90ms    float64 `json:"lag_p90_ms"`
	LagP99ms    float64 `json:"lag_p99_ms"`
	LagMaxms    float64 `json:"lag_max_ms"`
	// EmbeddedPerS is the embedder's achieved throughput: artifacts embedded
	// from the first acknowledgement to the last embedding.
	EmbeddedPerS float64 `json:"embedded_per_s"`
	// Backlog samples: seconds since the first arrival, artifacts waiting.
	Backlog []BacklogSample `json:"backlog"`
}

// BacklogSample is the embedding backlog at a moment of the run.
type BacklogSample struct {
	Seconds float64 `json:"s"`
	Backlog int     `json:"backlog"`
}

// Ingest ingests generated artifacts through the engine with cfg.Writers
// concurrent writers, each Ingest call durable per the fsync policy, and
// reports throughput and per-call latency: cfg.Artifacts as fast as the
// writers go (closed loop), or, with cfg.Rate, arrivals at a fixed rate for
// cfg.Duration (open loop).
func Ingest(cfg IngestConfig) (*IngestResult, error) {
	if cfg.Writers <= 0 {
		return nil, fmt.Errorf("writers must be positive")
	}
	if cfg.Rate > 0 {
		if cfg.Duration <= 0 {
			return nil, fmt.Errorf("an open-loop run (rate) needs a positive duration")
		}
		cfg.Artifacts = int(cfg.Rate * cfg.Duration.Seconds())
	}
	if cfg.Artifacts <= 0 {
		return nil, fmt.Errorf("artifacts must be positive")
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = 10 * time.Minute
	}
	progress := cfg.Progress
	if progress == nil {
		progress = func(string) {}
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
	opts := engine.Options{Sync: cfg.Sync}
	cfg.Embedding.options(&opts)
	written0 := writtenBytes()
	db, err := engine.Open(dir, opts)
	if err != nil {
		return nil, err
	}
	res := &IngestResult{
		Artifacts: cfg.Artifacts, Writers: cfg.Writers, Fsync: cfg.Sync.String(), Embedder: cfg.Embedding.Name(),
		PayloadBytes: payload,
		Dataset:      fmt.Sprintf("synthetic (bench.Corpus seed %d): 70%% chat turns, 20%% JSON tool results, 10%% documents; mean payload %d bytes", cfg.Seed, payload/int64(cfg.Artifacts)),
	}
	if cfg.Embedding.Embedder == nil {
		res.Description = "lexically indexed, durable ingest: each call returns once its artifact is in the WAL (fsync " + cfg.Sync.String() +
			") and BM25-indexed in the head; no embedder (--embedder none)"
	} else {
		res.Description = "durable, lexically indexed ingest with " + cfg.Embedding.Name() + " embedding in the background " +
			"(engine.Options.EmbedInBackground, as loci serve runs): calls return before their vectors exist; ingest stalls only once the unflushed heads reach 4 x the flush threshold"
	}

	if cfg.Rate > 0 {
		res.Description += fmt.Sprintf("; open loop: %g arrivals/s for %s served by %d writers, latencies from each arrival's due time to its acknowledgement",
			cfg.Rate, cfg.Duration, cfg.Writers)
	}
	var lats []time.Duration
	var open *openLoop
	var elapsed time.Duration
	cpu0 := cpuTime()
	if cfg.Rate > 0 {
		open = newOpenLoop(db, cfg)
		elapsed, err = open.run(inputs)
		lats = open.latencies()
	} else {
		elapsed, lats, err = closedLoop(db, cfg.Writers, inputs, newProgress(cfg.Progress).counter("ingested artifacts", len(inputs)))
	}
	if err != nil {
		if open != nil {
			open.stop()
		}
		db.Close()
		return nil, err
	}
	res.Seconds = elapsed.Seconds()
	res.CPUSeconds = (cpuTime() - cpu0).Seconds()
	res.CPUusPerArt = res.CPUSeconds * 1e6 / float64(cfg.Artifacts)
	res.ArtifactsPerS = float64(cfg.Artifacts) / elapsed.Seconds()
	progress(fmt.Sprintf("ingested %d artifacts in %.1f s (%.0f/s)", cfg.Artifacts, res.Seconds, res.ArtifactsPerS))

	if cfg.Embedding.Embedder != nil {
		backlog := db.EmbeddingBacklog()
		res.EmbeddingBacklog = &backlog
		if cfg.Drain {
			progress(fmt.Sprintf("draining the embedding backlog of %d artifacts (at most %s)", backlog, cfg.DrainTimeout))
			t := time.Now()
			drained := waitBacklog(db, cfg.DrainTimeout, func(n int) {
				progress(fmt.Sprintf("embedding backlog %d after %.0f s", n, time.Since(t).Seconds()))
			})
			res.DrainSeconds = time.Since(t).Seconds()
			res.Drained = &drained
		}
	}
	if open != nil {
		res.Open = open.result()
	}
	res.Segments = db.Stats().Segments
	res.Compactions = db.MaintenanceCounts().Compactions
	if err := db.Close(); err != nil {
		return nil, err
	}
	res.WrittenBytes = -1
	if w := writtenBytes(); written0 >= 0 && w >= 0 {
		res.WrittenBytes = w - written0
		res.WriteAmplification = float64(res.WrittenBytes) / float64(payload)
	}
	if res.DiskBytes, err = dirSize(dir); err != nil {
		return nil, err
	}
	res.DiskBytesPerArt = float64(res.DiskBytes) / float64(cfg.Artifacts)
	slices.Sort(lats)
	us := func(q float64) float64 { return float64(lats[int(q*float64(len(lats)-1))].Nanoseconds()) / 1e3 }
	res.P50us, res.P90us, res.P99us, res.MaxUs = us(0.50), us(0.90), us(0.99), us(1)
	return res, nil
}

// closedLoop ingests every input with writers goroutines, each taking the
// next input as soon as its previous call returned.
func closedLoop(db *engine.DB, writers int, inputs []engine.IngestInput, report func(done int)) (time.Duration, []time.Duration, error) {
	lat := make([]time.Duration, len(inputs))
	var next, done atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < writers; w++ {
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
				report(int(done.Add(1)))
			}
		}()
	}
	wg.Wait()
	return time.Since(start), lat, firstErr
}

// waitBacklog polls the embedding backlog every 10 ms until it is 0 (true)
// or timeout passes (false); report hears it every 10 s.
func waitBacklog(db *engine.DB, timeout time.Duration, report func(int)) bool {
	deadline := time.Now().Add(timeout)
	lastReport := time.Now()
	for {
		n := db.EmbeddingBacklog()
		if n == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		if time.Since(lastReport) >= 10*time.Second {
			report(n)
			lastReport = time.Now()
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// openLoop is an open-loop run: arrival i is due at start + i/rate, and is
// served by the next free writer; latency counts from the due time, so a
// slow engine shows as queueing rather than as a lower offered load.
type openLoop struct {
	db  *engine.DB
	cfg IngestConfig

	start    time.Time
	due      []time.Duration // arrival i's due time since start
	acked    []time.Duration // since start
	ids      []uuid.UUID
	embedded sync.Map // artifact id -> time.Duration since start (from OnEmbedded)
	lastEmb  atomic.Int64
	heard    atomic.Int64 // OnEmbedded calls

	samplesMu sync.Mutex
	samples   []BacklogSample
	stopSamp  chan struct{}
	sampDone  chan struct{}
}

func newOpenLoop(db *engine.DB, cfg IngestConfig) *openLoop {
	return &openLoop{db: db, cfg: cfg}
}

func (o *openLoop) run(inputs []engine.IngestInput) (time.Duration, error) {
	n := len(inputs)
	o.due = make([]time.Duration, n)
	o.acked = make([]time.Duration, n)
	o.ids = make([]uuid.UUID, n)
	interval := time.Duration(float64(time.Second) / o.cfg.Rate)
	for i := range o.due {
		o.due[i] = time.Duration(i) * interval
	}
	o.start = time.Now()
	if o.cfg.Embedding.Embedder != nil {
		o.db.OnEmbedded(func(_ string, id uuid.UUID) {
			d := time.Since(o.start)
			o.embedded.Store(id, d)
			o.lastEmb.Store(int64(d))
			o.heard.Add(1)
		})
		o.stopSamp, o.sampDone = make(chan struct{}), make(chan struct{})
		go o.sample()
	}
	arrivals := make(chan int, n)
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	for w := 0; w < o.cfg.Writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range arrivals {
				r, err := o.db.Ingest("default", inputs[i])
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					continue
				}
				o.acked[i] = time.Since(o.start)
				o.ids[i] = r.ArtifactID
			}
		}()
	}
	// The pacer: one arrival per interval, never waiting for the writers
	// (the channel holds every arrival).
	for i := 0; i < n; i++ {
		if d := time.Until(o.start.Add(o.due[i])); d > 0 {
			time.Sleep(d)
		}
		arrivals <- i
	}
	close(arrivals)
	wg.Wait()
	return time.Since(o.start), firstErr
}

// sample records the embedding backlog every 100 ms until stopped.
func (o *openLoop) sample() {
	defer close(o.sampDone)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		b := o.db.EmbeddingBacklog()
		o.samplesMu.Lock()
		o.samples = append(o.samples, BacklogSample{Seconds: time.Since(o.start).Round(time.Millisecond).Seconds(), Backlog: b})
		o.samplesMu.Unlock()
		select {
		case <-o.stopSamp:
			return
		case <-t.C:
		}
	}
}

// stop removes the hook and stops the sampler (with an embedder).
func (o *openLoop) stop() {
	if o.stopSamp == nil {
		return
	}
	o.db.OnEmbedded(nil)
	close(o.stopSamp)
	<-o.sampDone
	o.stopSamp = nil
}

// latencies are the times from due arrival to acknowledgement.
func (o *openLoop) latencies() []time.Duration {
	out := make([]time.Duration, len(o.due))
	for i := range out {
		out[i] = o.acked[i] - o.due[i]
	}
	return out
}

func (o *openLoop) result() *OpenLoopResult {
	n := len(o.due)
	r := &OpenLoopResult{OfferedPerS: o.cfg.Rate, Seconds: o.cfg.Duration.Seconds(), Offered: n}
	arr := o.latencies()
	slices.Sort(arr)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
	q := func(s []time.Duration, f float64) time.Duration { return s[int(f*float64(len(s)-1))] }
	r.ArrivalP50ms, r.ArrivalP99ms, r.ArrivalMaxms = ms(q(arr, 0.5)), ms(q(arr, 0.99)), ms(arr[len(arr)-1])
	r.AckedPerS = float64(n) / slices.Max(o.acked).Seconds()
	if o.cfg.Embedding.Embedder == nil {
		return r
	}
	// The hook runs just after an artifact's state changes, so the last
	// calls may trail the backlog reaching 0 by a moment.
	if o.db.EmbeddingBacklog() == 0 {
		for deadline := time.Now().Add(time.Second); o.heard.Load() < int64(n) && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	o.stop()
	end := time.Since(o.start)
	o.samples = append(o.samples, BacklogSample{Seconds: end.Round(time.Millisecond).Seconds(), Backlog: o.db.EmbeddingBacklog()})
	lags := make([]time.Duration, 0, n)
	for i, id := range o.ids {
		v, ok := o.embedded.Load(id)
		if !ok {
			r.NotEmbedded++
			lags = append(lags, end-o.acked[i]) // at least this much
			continue
		}
		r.Embedded++
		// The vectors record can be applied before the writer that was
		// acknowledged has run again to take the time: no lag.
		lags = append(lags, max(0, v.(time.Duration)-o.acked[i]))
	}
	r.LagCensored = r.NotEmbedded > 0
	slices.Sort(lags)
	r.LagP50ms, r.LagP90ms, r.LagP99ms, r.LagMaxms = ms(q(lags, 0.5)), ms(q(lags, 0.9)), ms(q(lags, 0.99)), ms(lags[len(lags)-1])
	if last := time.Duration(o.lastEmb.Load()); r.Embedded > 0 && last > 0 {
		r.EmbeddedPerS = float64(r.Embedded) / last.Seconds()
	}
	r.Backlog = thinSamples(o.samples, 24)
	return r
}

// thinSamples keeps at most k samples, evenly spread over the list, always
// with the first, the last and the peak.
func thinSamples(s []BacklogSample, k int) []BacklogSample {
	if len(s) <= k {
		return s
	}
	peak := 0
	for i := range s {
		if s[i].Backlog > s[peak].Backlog {
			peak = i
		}
	}
	var out []BacklogSample
	added := false
	for j := 0; j < k; j++ {
		i := j * (len(s) - 1) / (k - 1)
		if !added && peak <= i {
			if peak < i {
				out = append(out, s[peak])
			}
			added = true
		}
		out = append(out, s[i])
	}
	return out
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
