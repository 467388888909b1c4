package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/embed/glove"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/httpd"
	"github.com/loci-memory/loci/service"
	"github.com/loci-memory/loci/wal"
	"github.com/valyala/fasthttp"
)

// SoakConfig sets up `loci bench soak`: a long run of distinct context packs
// and asynchronous ingest jobs against the real server, watching memory and
// disk.
type SoakConfig struct {
	Packs       int    // distinct POST /v1/context-pack requests
	Jobs        int    // artifacts ingested as asynchronous jobs through POST /v2/ingest
	Batch       int    // artifacts per ingest request (default 100)
	PackClients int    // concurrent pack clients (default 4)
	JobClients  int    // concurrent ingest clients (default 2)
	Spans       int    // spans in the workspace before the run (default 20,000)
	Seed        uint64 // data order and query sample
	Data        string // shared data directory for real texts and questions ("" = synthetic)
	Dir         string // data directory ("" = a temporary one, removed afterwards)
	Sync        wal.SyncPolicy
	Every       time.Duration // sampling interval (default 5 s)
	// Retention; zero values take the server's defaults.
	ReceiptsPerWorkspace int
	MaxFinishedJobs      int
	MaxUnfinishedJobs    int
	FlushThreshold       int64
	// Progress, when set, receives each sample as it is taken.
	Progress func(SoakSample)
}

// SoakSample is one observation of the running server.
type SoakSample struct {
	Seconds      float64 `json:"seconds"`
	Packs        int64   `json:"packs"`
	JobsAccepted int64   `json:"jobs_accepted"`
	JobsFinished int     `json:"jobs_finished_kept"` // finished jobs still held (the rest expired)
	JobsPending  int     `json:"jobs_unfinished"`
	RSSMiB       float64 `json:"rss_mib"`      // VmRSS: anonymous memory and touched pages of mapped files
	AnonMiB      float64 `json:"rss_anon_mib"` // RssAnon: the process's own memory, without mapped segment files
	HeapMiB      float64 `json:"heap_inuse_mib"`
	DataMiB      float64 `json:"data_dir_mib"`
	ControlKiB   float64 `json:"control_kib"` // CONTROL + CONTROL_PAYLOADS
	HeadMiB      float64 `json:"head_mib"`
	Segments     int     `json:"segments"`
}

// SoakLimits are the documented bounds a soak must end within (see
// SoakLimitsFor). They are checked against the end of the run, after the
// last jobs are indexed and the head flushed; the peak is reported beside
// them (a compaction holds its output in memory while it writes it).
type SoakLimits struct {
	RSSMiB          float64 `json:"rss_mib"`
	DataMiB         float64 `json:"data_dir_mib"`
	ControlKiB      float64 `json:"control_kib"`
	ReceiptsKept    int     `json:"receipts_kept"`
	FinishedJobsMax int     `json:"finished_jobs_kept"`
}

// SoakResult is what `loci bench soak --json` prints.
type SoakResult struct {
	Packs        int          `json:"packs"`
	Jobs         int          `json:"jobs"`
	Seconds      float64      `json:"seconds"`
	PacksPerS    float64      `json:"packs_per_s"`
	JobsPerS     float64      `json:"jobs_per_s"`
	Start        SoakSample   `json:"start"`
	Peak         SoakSample   `json:"peak"` // per field, the highest value seen
	End          SoakSample   `json:"end"`
	Samples      []SoakSample `json:"samples"`
	ReceiptsKept int          `json:"receipts_kept"`
	// BacklogRefusals counts ingest requests answered 429 (the tenant's
	// job backlog was full) and sent again after a pause.
	BacklogRefusals int64      `json:"backlog_refusals"`
	ReceiptsBytes   int64      `json:"receipt_record_bytes"` // mean stored size of a kept receipt (compressed record)
	Limits          SoakLimits `json:"limits"`
	WithinLimits    bool       `json:"within_limits"`
	Exceeded        []string   `json:"exceeded,omitempty"`
	Dataset         string     `json:"dataset"`
	Machine         string     `json:"machine"`
}

// SoakLimitsFor returns the bounds a soak with cfg must end within. They
// follow from the retention: a workspace keeps ReceiptsPerWorkspace
// receipts (about 14 KiB each compressed, at most twice that on disk before
// compaction drops expired ones); a tenant keeps MaxFinishedJobs finished
// jobs (a few hundred bytes each, in memory and in CONTROL) plus one sweep's
// worth, and at most MaxUnfinishedJobs waiting jobs (whose inputs, under
// 2 KiB each here, are in memory and in CONTROL_PAYLOADS); the head is
// flushed at FlushThreshold. The rest of the data directory is the
// artifacts themselves: at most 4 KiB per artifact stored (payload, spans,
// postings, vectors), whatever the number of packs.
func SoakLimitsFor(cfg SoakConfig, artifacts int) SoakLimits {
	receipts := cfg.ReceiptsPerWorkspace
	if receipts <= 0 {
		receipts = engine.DefaultReceiptsPerWorkspace
	}
	jobs := cfg.MaxFinishedJobs
	if jobs <= 0 {
		jobs = control.DefaultMaxFinishedJobs
	}
	waiting := cfg.MaxUnfinishedJobs
	if waiting <= 0 {
		waiting = control.DefaultMaxUnfinishedJobs
	}
	waiting += max(cfg.JobClients, 1) * max(cfg.Batch, 1) // concurrent batches may overshoot
	flush := cfg.FlushThreshold
	if flush <= 0 {
		flush = 64 << 20
	}
	const receiptDisk, perArtifact, perJob, perInput = 2 * 16 << 10, 4 << 10, 256, 2 << 10
	finished := jobs + 2*256 // one sweep every 256 finished jobs
	backlog := float64(waiting * perInput)
	data := 64 + 2*float64(flush)/(1<<20) + (float64(receipts*receiptDisk+artifacts*perArtifact)+backlog)/(1<<20)
	return SoakLimits{
		// Go runtime and binary, head (active and frozen), receipts, jobs
		// and per-artifact state in memory, plus the pages of mapped
		// segments that packs touch (at most the data directory).
		RSSMiB:          256 + 3*float64(flush)/(1<<20) + (float64(receipts*512+finished*perJob+artifacts*2048)+2*backlog)/(1<<20) + data,
		DataMiB:         data,
		ControlKiB:      64 + (float64(finished*perJob)+backlog)/1024,
		ReceiptsKept:    receipts,
		FinishedJobsMax: finished,
	}
}

// Soak runs the soak: the server in this process on a loopback port over a
// fresh data directory holding one workspace of cfg.Spans spans; then
// cfg.PackClients clients send cfg.Packs distinct pack requests while
// cfg.JobClients clients send cfg.Jobs artifacts as asynchronous jobs into
// the same workspace, and a sampler records memory and disk every
// cfg.Every. The run ends when every job is finished and the last flush is
// done; the result says whether it ended within SoakLimitsFor.
func Soak(cfg SoakConfig) (*SoakResult, error) {
	if cfg.Packs < 0 || cfg.Jobs < 0 {
		return nil, errors.New("packs and jobs must not be negative")
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 100
	}
	if cfg.PackClients <= 0 {
		cfg.PackClients = 4
	}
	if cfg.JobClients <= 0 {
		cfg.JobClients = 2
	}
	if cfg.Spans < 0 {
		cfg.Spans = 0
	}
	if cfg.Every <= 0 {
		cfg.Every = 5 * time.Second
	}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "loci-bench-soak-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	ctl := control.New(time.Now)
	ctl.SetJobRetention(control.JobRetention{MaxFinished: cfg.MaxFinishedJobs, MaxUnfinished: cfg.MaxUnfinishedJobs})
	db, err := engine.Open(dir, engine.Options{Sync: cfg.Sync, Control: ctl, Logger: quietLogger(), Embedder: glove.New(),
		ReceiptsPerWorkspace: cfg.ReceiptsPerWorkspace, FlushThreshold: cfg.FlushThreshold})
	if err != nil {
		return nil, err
	}
	ctl.Attach(db.AppendControl)
	closed := false
	defer func() {
		if !closed {
			db.Close()
		}
	}()
	next, real, err := benchCorpus(cfg.Data, cfg.Seed)
	if err != nil {
		return nil, err
	}
	const ws = "soak"
	initialSpans, initialArtifacts := 0, 0
	if cfg.Spans > 0 {
		if initialSpans, initialArtifacts, err = fillWorkspaceNamed(db, ws, next, cfg.Spans); err != nil {
			return nil, err
		}
		if err := db.Flush(); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	log := quietLogger()
	srv := httpd.New(service.New(db, ctl, service.Config{Logger: log}), httpd.Config{Version: "bench", MaxRequestBytes: 64 << 20, Logger: log})
	go srv.Serve(ln)
	stopServer := sync.OnceFunc(func() { srv.Shutdown() })
	defer stopServer()
	addr := ln.Addr().String()

	res := &SoakResult{Packs: cfg.Packs, Jobs: cfg.Jobs}
	if real != nil {
		res.Dataset = fmt.Sprintf("real texts of %s: %d spans (%d artifacts) in one workspace before the run, then %d artifacts as async jobs into it; queries: real questions, each made distinct by a number", cfg.Data, initialSpans, initialArtifacts, cfg.Jobs)
	} else {
		res.Dataset = fmt.Sprintf("synthetic (bench.Corpus seed %d): %d spans (%d artifacts) in one workspace before the run, then %d artifacts as async jobs into it; queries of vocabulary words, each made distinct by a number", cfg.Seed, initialSpans, initialArtifacts, cfg.Jobs)
	}
	res.Machine = fmt.Sprintf("%s/%s, %d CPUs, GOMAXPROCS %d, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())

	var packs, accepted, refused atomic.Int64
	start := time.Now()
	sample := func() SoakSample {
		unfinished, finished := ctl.JobCounts()
		st := db.Stats()
		s := SoakSample{Seconds: time.Since(start).Seconds(), Packs: packs.Load(), JobsAccepted: accepted.Load(),
			JobsFinished: finished, JobsPending: unfinished, Segments: st.Segments,
			HeadMiB: float64(st.HeadBytes+st.FrozenBytes) / (1 << 20)}
		s.RSSMiB, s.AnonMiB = processMemory()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		s.HeapMiB = float64(ms.HeapInuse) / (1 << 20)
		s.DataMiB = float64(looseDirSize(dir)) / (1 << 20)
		for _, name := range []string{"CONTROL", "CONTROL_PAYLOADS"} {
			if fi, err := os.Stat(filepath.Join(dir, name)); err == nil {
				s.ControlKiB += float64(fi.Size()) / 1024
			}
		}
		return s
	}
	res.Start = sample()
	res.Samples = append(res.Samples, res.Start)
	stopSampler := make(chan struct{})
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		t := time.NewTicker(cfg.Every)
		defer t.Stop()
		for {
			select {
			case <-stopSampler:
				return
			case <-t.C:
				s := sample()
				res.Samples = append(res.Samples, s)
				if cfg.Progress != nil {
					cfg.Progress(s)
				}
			}
		}
	}()

	errs := make(chan error, cfg.PackClients+cfg.JobClients)
	var wg sync.WaitGroup
	queries := sampleQueries(real, rand.New(rand.NewPCG(cfg.Seed, 7)), min(cfg.Packs, 5000))
	var nextPack atomic.Int64
	for range cfg.PackClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &fasthttp.HostClient{Addr: addr, ReadTimeout: time.Minute, WriteTimeout: time.Minute}
			for {
				i := nextPack.Add(1) - 1
				if i >= int64(cfg.Packs) {
					return
				}
				// A number makes every request distinct: a new receipt each.
				body, _ := json.Marshal(map[string]any{"workspace_id": ws, "query": fmt.Sprintf("%s %d", queries[int(i)%len(queries)], i), "max_tokens": 2048})
				if err := post(c, addr, "/v1/context-pack", body, 200, nil, nil); err != nil {
					errs <- err
					return
				}
				packs.Add(1)
			}
		}()
	}
	bodies := make(chan []byte, cfg.JobClients)
	go func() {
		defer close(bodies)
		for done := 0; done < cfg.Jobs; done += cfg.Batch {
			n := min(cfg.Batch, cfg.Jobs-done)
			items := make([]map[string]any, n)
			for i := range items {
				in := next(ws)
				items[i] = map[string]any{"artifact_type": in.Type, "raw_payload": json.RawMessage(in.Payload),
					"timestamp": in.Timestamp.UTC().Format(time.RFC3339Nano), "session_id": in.SessionID}
			}
			b, _ := json.Marshal(map[string]any{"workspace_id": ws, "actor_id": "soak", "async_index": true, "artifacts": items})
			bodies <- b
		}
	}()
	for range cfg.JobClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &fasthttp.HostClient{Addr: addr, ReadTimeout: time.Minute, WriteTimeout: time.Minute}
			for b := range bodies {
				var out struct {
					Queued []struct {
						JobID string `json:"job_id"`
					} `json:"queued_jobs"`
				}
				if err := post(c, addr, "/v2/ingest", b, 202, &out, &refused); err != nil {
					errs <- err
					for range bodies { // let the producer finish
					}
					return
				}
				accepted.Add(int64(len(out.Queued)))
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		close(stopSampler)
		<-samplerDone
		return nil, err
	}
	// Every job finished, then the head flushed once more, so the end
	// reflects steady state rather than a head about to be flushed.
	for {
		if unfinished, _ := ctl.JobCounts(); unfinished == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	res.Seconds = time.Since(start).Seconds()
	res.BacklogRefusals = refused.Load()
	res.PacksPerS = float64(cfg.Packs) / res.Seconds
	res.JobsPerS = float64(cfg.Jobs) / res.Seconds
	if _, err := ctl.ExpireJobs(); err != nil {
		return nil, err
	}
	if err := db.Flush(); err != nil {
		return nil, err
	}
	if err := db.Compact(); err != nil {
		return nil, err
	}
	close(stopSampler)
	<-samplerDone
	res.End = sample()
	res.Samples = append(res.Samples, res.End)
	res.Peak = peakOf(res.Samples)
	page, err := db.ListReceipts(httpd.DefaultTenant, ws, "", 0, 1)
	if err != nil {
		return nil, err
	}
	res.ReceiptsKept = page.Total
	if n, b := db.ReceiptStats(); n > 0 {
		res.ReceiptsBytes = b / int64(n)
	}

	res.Limits = SoakLimitsFor(cfg, initialArtifacts+cfg.Jobs)
	check := func(name string, got, limit float64) {
		if got > limit {
			res.Exceeded = append(res.Exceeded, fmt.Sprintf("%s %.1f > %.1f", name, got, limit))
		}
	}
	check("rss_mib", res.End.RSSMiB, res.Limits.RSSMiB)
	check("data_dir_mib", res.End.DataMiB, res.Limits.DataMiB)
	check("control_kib", res.End.ControlKiB, res.Limits.ControlKiB)
	check("receipts_kept", float64(res.ReceiptsKept), float64(res.Limits.ReceiptsKept))
	check("finished_jobs_kept", float64(res.End.JobsFinished), float64(res.Limits.FinishedJobsMax))
	res.WithinLimits = len(res.Exceeded) == 0
	stopServer()
	closed = true
	if err := db.Close(); err != nil {
		return nil, err
	}
	return res, nil
}

// post sends one JSON request and decodes the reply into out (when not
// nil). A 429 (the tenant's job backlog is full) is retried after a pause,
// as a well-behaved client does, and counted in refused.
func post(c *fasthttp.HostClient, addr, path string, body []byte, want int, out any, refused *atomic.Int64) error {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + addr + path)
	req.Header.SetMethod("POST")
	req.Header.SetContentType("application/json")
	req.SetBody(body)
	for {
		if err := c.Do(req, resp); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if resp.StatusCode() != fasthttp.StatusTooManyRequests || refused == nil {
			break
		}
		refused.Add(1)
		time.Sleep(100 * time.Millisecond)
	}
	if resp.StatusCode() != want {
		return fmt.Errorf("%s: status %d: %s", path, resp.StatusCode(), resp.Body())
	}
	if out != nil {
		return json.Unmarshal(resp.Body(), out)
	}
	return nil
}

// fillWorkspaceNamed ingests through the engine into workspace ws until it
// holds at least spans spans.
func fillWorkspaceNamed(db *engine.DB, ws string, next func(ws string) engine.IngestInput, spans int) (nSpans, nArtifacts int, err error) {
	ingest := func(b []engine.IngestInput) ([]engine.IngestResult, error) {
		return db.IngestBatch(httpd.DefaultTenant, b)
	}
	return fillWithRetry(ingest, ws, next, spans, newProgress(nil), time.Second)
}

// processMemory reads VmRSS and RssAnon of this process from
// /proc/self/status, in MiB (0 where unavailable).
func processMemory() (rss, anon float64) {
	st := procStatus()
	return st["VmRSS"] / 1024, st["RssAnon"] / 1024
}

// procStatus reads the fields of /proc/self/status counted in kB (VmRSS,
// VmHWM, RssAnon, RssFile...), in kB; none where unavailable.
func procStatus() map[string]float64 {
	out := map[string]float64{}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return out
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		if kb, ok := strings.CutSuffix(strings.TrimSpace(value), " kB"); ok {
			if v, err := strconv.ParseFloat(kb, 64); err == nil {
				out[name] = v
			}
		}
	}
	return out
}

// looseDirSize sums the sizes of the files under dir, skipping files removed
// while it walks (WAL files and segments come and go during a run).
func looseDirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// peakOf returns, per field, the highest value of the samples.
func peakOf(samples []SoakSample) SoakSample {
	var p SoakSample
	for _, s := range samples {
		p.Seconds = max(p.Seconds, s.Seconds)
		p.Packs = max(p.Packs, s.Packs)
		p.JobsAccepted = max(p.JobsAccepted, s.JobsAccepted)
		p.JobsFinished = max(p.JobsFinished, s.JobsFinished)
		p.JobsPending = max(p.JobsPending, s.JobsPending)
		p.RSSMiB = max(p.RSSMiB, s.RSSMiB)
		p.AnonMiB = max(p.AnonMiB, s.AnonMiB)
		p.HeapMiB = max(p.HeapMiB, s.HeapMiB)
		p.DataMiB = max(p.DataMiB, s.DataMiB)
		p.ControlKiB = max(p.ControlKiB, s.ControlKiB)
		p.HeadMiB = max(p.HeadMiB, s.HeadMiB)
		p.Segments = max(p.Segments, s.Segments)
	}
	return p
}
