package bench

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/loci-memory/loci/wal"
)

// WorkspacesConfig sets up `loci bench workspaces`: very many small
// workspaces on one node (issue 25 §2), one per end user of an agent
// product.
type WorkspacesConfig struct {
	Workspaces   int // how many workspaces
	MinArtifacts int // each holds between MinArtifacts and MaxArtifacts artifacts (seeded)
	MaxArtifacts int
	Writers      int // concurrent HTTP clients while ingesting
	Packs        int // timed packs, at concurrency 1, each on a random workspace
	MaxTokens    int // budget of each pack
	Seed         uint64
	Data         string // shared data directory: LoCoMo's turns and questions are read from locomo/locomo-dev.json
	Sync         wal.SyncPolicy
	// Embedding is the server's semantic channel, embedding in the
	// background. While the workspaces are built, each distinct text is
	// embedded once (buildMemo); the timed packs embed their queries.
	Embedding Embedding
	// Dir, when set, is the data directory, kept after the run; it must
	// be empty or absent.
	Dir string
	// MemProfile, when set, is a file the heap profile is written to after
	// the restart, before any pack (what the cold workspaces hold), and
	// MemProfile+".after-packs" one after the packs.
	MemProfile string
	Progress   func(string)
}

// Memory is the process's resident memory at one point, in MiB: VmRSS and
// VmHWM (its peak since the process started, or since the restart for the
// figures after it) from /proc/self/status, VmRSS's anonymous and
// file-backed parts (the latter mostly the segments' mapped pages, which
// the kernel may drop and read again), the Go heap's live objects and what
// the Go runtime holds from the system in all.
type Memory struct {
	RSSMiB    float64 `json:"rss_mib"`
	HWMMiB    float64 `json:"hwm_mib"`
	AnonMiB   float64 `json:"anon_mib"`
	FileMiB   float64 `json:"file_mib"`
	HeapMiB   float64 `json:"heap_mib"`
	GoSysMiB  float64 `json:"go_sys_mib"`
	RSSPerWSK float64 `json:"rss_kib_per_workspace"`
	HeapPerWS float64 `json:"heap_bytes_per_workspace"`
}

// WorkspacesResult is what `loci bench workspaces --json` prints.
type WorkspacesResult struct {
	Workspaces int    `json:"workspaces"`
	Artifacts  int    `json:"artifacts"`
	Embedder   string `json:"embedder"`
	Fsync      string `json:"fsync"`
	Writers    int    `json:"writers"`

	// Ingest: every workspace in one POST /v2/ingest (synchronous
	// indexing, durable per Fsync), from Writers clients; the rate counts
	// acknowledgements. EmbedSeconds is the wait, after the last one, for
	// the background encoder to finish (part of the flush).
	IngestSeconds    float64 `json:"ingest_seconds"`
	IngestPerS       float64 `json:"ingest_artifacts_per_s"`
	IngestCPUPerKArt float64 `json:"ingest_cpu_s_per_1k_artifacts"`
	IngestP99ms      float64 `json:"ingest_request_p99_ms"`
	// IngestRefused counts the requests the server refused for
	// back-pressure (503: the embedder or the flusher behind), each sent
	// again after its Retry-After; the rate includes those waits.
	IngestRefused  int     `json:"ingest_refused_503"`
	FlushSeconds   float64 `json:"flush_and_embed_seconds"`
	CompactSeconds float64 `json:"compact_seconds"`
	TextsServed    int     `json:"texts_served"`
	TextsEmbedded  int     `json:"texts_embedded"`

	AfterIngest  Memory `json:"memory_after_ingest"`
	AfterCompact Memory `json:"memory_after_compaction"`

	// Restart: close the server and the engine, reopen the directory.
	OpenSeconds  float64 `json:"reopen_seconds"`
	AfterRestart Memory  `json:"memory_after_restart"`
	Segments     int     `json:"segments"`
	SegmentBytes int64   `json:"segment_bytes"`
	SketchMiB    float64 `json:"sketch_heap_mib"` // the semantic scan's sketches, on the heap

	// Packs over HTTP at concurrency 1, each on a random workspace (most
	// of them untouched since the restart), with a LoCoMo question of the
	// conversation the workspace's turns come from.
	Packs        int     `json:"packs"`
	PackP50ms    float64 `json:"pack_p50_ms"`
	PackP99ms    float64 `json:"pack_p99_ms"`
	PackMaxMs    float64 `json:"pack_max_ms"`
	PackCPUms    float64 `json:"pack_cpu_ms_per_request"`
	WorkspacesRd int     `json:"workspaces_read"`
	AfterPacks   Memory  `json:"memory_after_packs"`
	// SketchMiBPacks is the heap the semantic scan's sketches hold after
	// the packs: built on a workspace's first read, kept while its
	// segment is open.
	SketchMiBPacks float64 `json:"sketch_heap_mib_after_packs"`

	DiskBytes      int64   `json:"disk_bytes"`
	DiskPerWSBytes float64 `json:"disk_bytes_per_workspace"`
	LoadAvg        string  `json:"load_average"` // /proc/loadavg at the start and the end
	Dataset        string  `json:"dataset"`
}

// wsTurns is the pool the workspaces are cut from: LoCoMo's conversations.
type wsTurns struct {
	convs []locomoConv
}

// content returns workspace w's conversation and turns: a seeded run of
// consecutive turns of one conversation (wrapping around), as one user's
// chat history, between min and max turns long.
func (p *wsTurns) content(seed uint64, w, lo, hi int) (int, []*locomoTurn) {
	rng := rand.New(rand.NewPCG(seed, uint64(w)))
	ci := rng.IntN(len(p.convs))
	turns := p.convs[ci].turns
	n := lo + rng.IntN(hi-lo+1)
	start := rng.IntN(len(turns))
	out := make([]*locomoTurn, n)
	for i := range out {
		out[i] = &turns[(start+i)%len(turns)]
	}
	return ci, out
}

// wsName is workspace w's id.
func wsName(w int) string { return "u-" + strconv.Itoa(w) }

// ingestBody is the POST /v2/ingest body of workspace w.
func (p *wsTurns) ingestBody(seed uint64, w, lo, hi int) ([]byte, int) {
	_, turns := p.content(seed, w, lo, hi)
	items := make([]map[string]any, len(turns))
	for i, t := range turns {
		items[i] = map[string]any{"artifact_type": "chat_turn", "raw_payload": json.RawMessage(t.payload(ShapeNone)),
			"timestamp": t.stamp("").UTC().Format(time.RFC3339Nano), "session_id": t.sessionID()}
	}
	b, _ := json.Marshal(map[string]any{"workspace_id": wsName(w), "actor_id": locomoActor, "artifacts": items})
	return b, len(turns)
}

// Workspaces ingests cfg.Workspaces small workspaces over HTTP into a real
// server, flushes and compacts, restarts, and times packs on random
// workspaces, reading the process's memory at each step: what many small
// workspaces cost, and what one that is not read costs.
func Workspaces(cfg WorkspacesConfig) (*WorkspacesResult, error) {
	if cfg.Workspaces <= 0 {
		cfg.Workspaces = 100_000
	}
	if cfg.MinArtifacts <= 0 {
		cfg.MinArtifacts = 50
	}
	if cfg.MaxArtifacts < cfg.MinArtifacts {
		cfg.MaxArtifacts = max(cfg.MinArtifacts, 200)
	}
	if cfg.Writers <= 0 {
		cfg.Writers = 4
	}
	if cfg.Packs <= 0 {
		cfg.Packs = 1000
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = 2048
	}
	convs, err := readLoCoMo(filepath.Join(cfg.Data, "locomo", "locomo-dev.json"))
	if err != nil {
		return nil, err
	}
	pool := &wsTurns{convs: convs}
	distinct := map[string]bool{}
	for _, c := range convs {
		for _, t := range c.turns {
			distinct[t.Text] = true
		}
	}
	dir, keep := cfg.Dir, cfg.Dir != ""
	if keep {
		if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err == nil {
			return nil, fmt.Errorf("%s already holds a data directory: bench workspaces builds its own, give an empty or new one", dir)
		}
	} else {
		if dir, err = os.MkdirTemp("", "loci-bench-workspaces-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	}
	if cfg.MemProfile != "" {
		// Sample finely enough to see structures of a few hundred bytes
		// per workspace (the default samples one allocation per 512 KiB),
		// from the start: a profile scales every sample by the rate in
		// force when it is written, so a rate changed midway misweighs
		// what was allocated before. The profiler's bookkeeping weighs on
		// this run's other figures.
		defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
		runtime.MemProfileRate = 4096
	}
	loadStart := loadAvg()
	p := newProgress(cfg.Progress)
	res := &WorkspacesResult{Workspaces: cfg.Workspaces, Embedder: cfg.Embedding.Name(), Fsync: cfg.Sync.String(), Writers: cfg.Writers,
		Dataset: fmt.Sprintf("%s: workspace w holds %d-%d consecutive turns (seeded by %d and w) of one of its %d conversations (%d distinct texts), "+
			"sent as chat_turn role user/assistant, one v2 ingest request per workspace; packs: a question of that conversation",
			filepath.Join(cfg.Data, "locomo", "locomo-dev.json"), cfg.MinArtifacts, cfg.MaxArtifacts, cfg.Seed, len(convs), len(distinct))}

	emb := cfg.Embedding
	var memo *buildMemo
	if emb.Embedder != nil {
		emb.Embedder, memo = withBuildMemo(emb.Embedder)
	}
	s, err := startServerIn(dir, "", cfg.Sync, &emb)
	if err != nil {
		return nil, err
	}
	closed := false
	defer func() {
		if !closed {
			s.close()
		}
	}()

	// Ingest: the writers build the workspaces' bodies as they go (100k
	// workspaces of bodies would not fit in memory at once).
	var arts atomic.Int64
	body := func(w int) []byte {
		b, n := pool.ingestBody(cfg.Seed, w, cfg.MinArtifacts, cfg.MaxArtifacts)
		arts.Add(int64(n))
		return b
	}
	cpu0, start := cpuTime(), time.Now()
	lv, err := loadFrom(s.addr, "/v2/ingest", cfg.Workspaces, body, cfg.Writers, 201, true, p.counter("ingesting workspaces", cfg.Workspaces))
	if err != nil {
		return nil, err
	}
	res.IngestSeconds = time.Since(start).Seconds()
	res.Artifacts = int(arts.Load())
	res.IngestPerS = float64(res.Artifacts) / res.IngestSeconds
	res.IngestCPUPerKArt = (cpuTime() - cpu0).Seconds() / float64(res.Artifacts) * 1000
	res.IngestP99ms, res.IngestRefused = lv.P99ms, lv.Refused
	res.AfterIngest = readMemory(cfg.Workspaces)

	t := time.Now()
	stop := p.during("embedding and flushing")
	err = s.db.Flush() // waits for the embedder
	stop()
	if err != nil {
		return nil, err
	}
	res.FlushSeconds = time.Since(t).Seconds()
	t = time.Now()
	stop = p.during("compacting")
	err = s.db.Compact()
	stop()
	if err != nil {
		return nil, err
	}
	res.CompactSeconds = time.Since(t).Seconds()
	if memo != nil {
		res.TextsServed, res.TextsEmbedded = memo.stop()
	}
	res.AfterCompact = readMemory(cfg.Workspaces)

	// Restart: the peak resident set is reset, so the HWM after it is the
	// reopened server's own.
	s.close()
	closed = true
	emb = cfg.Embedding
	resetPeakRSS()
	if s, err = startServerIn(dir, "", cfg.Sync, &emb); err != nil {
		return nil, err
	}
	closed = false
	res.OpenSeconds = s.openSeconds
	st := s.db.Stats()
	res.Segments, res.SegmentBytes, res.SketchMiB = st.Segments, st.SegmentBytes, float64(st.SketchBytes)/(1<<20)
	res.AfterRestart = readMemory(cfg.Workspaces)
	if cfg.MemProfile != "" {
		if err := writeHeapProfile(cfg.MemProfile); err != nil {
			return nil, err
		}
	}

	// Packs on random workspaces: a few untimed ones first load the query
	// encoder, on workspaces the timed ones may hit again.
	rng := rand.New(rand.NewPCG(cfg.Seed, 25))
	const warmup = 5
	bodies := make([][]byte, 0, warmup+cfg.Packs)
	read := map[int]bool{}
	for i := 0; i < warmup+cfg.Packs; i++ {
		w := rng.IntN(cfg.Workspaces)
		ci, _ := pool.content(cfg.Seed, w, cfg.MinArtifacts, cfg.MaxArtifacts)
		qa := pool.convs[ci].qa
		b, _ := json.Marshal(map[string]any{"workspace_id": wsName(w), "query": qa[rng.IntN(len(qa))].Question, "max_tokens": cfg.MaxTokens})
		bodies = append(bodies, b)
		read[w] = true
	}
	if _, err := load(s.addr, "/v1/context-pack", bodies[:warmup], 1, 200, nil); err != nil {
		return nil, err
	}
	cpu0 = cpuTime()
	lv, err = load(s.addr, "/v1/context-pack", bodies[warmup:], 1, 200, p.counter("timing packs", cfg.Packs))
	if err != nil {
		return nil, err
	}
	res.Packs, res.PackP50ms, res.PackP99ms, res.PackMaxMs = cfg.Packs, lv.P50ms, lv.P99ms, lv.MaxMs
	res.PackCPUms = float64((cpuTime() - cpu0).Microseconds()) / 1e3 / float64(cfg.Packs)
	res.WorkspacesRd = len(read)
	res.AfterPacks = readMemory(cfg.Workspaces)
	res.SketchMiBPacks = float64(s.db.Stats().SketchBytes) / (1 << 20)
	if cfg.MemProfile != "" {
		if err := writeHeapProfile(cfg.MemProfile + ".after-packs"); err != nil {
			return nil, err
		}
	}
	s.close()
	closed = true
	if res.DiskBytes, err = dirSize(dir); err != nil {
		return nil, err
	}
	res.DiskPerWSBytes = float64(res.DiskBytes) / float64(cfg.Workspaces)
	res.LoadAvg = loadStart + " / " + loadAvg()
	return res, nil
}

// readMemory reads the process's memory after a collection that returns
// freed memory to the system (so RSS is what is live, not what a past
// phase left to the allocator), with the per-workspace shares of n.
func readMemory(n int) Memory {
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := Memory{HeapMiB: float64(ms.HeapAlloc) / (1 << 20), GoSysMiB: float64(ms.Sys-ms.HeapReleased) / (1 << 20)}
	st := procStatus()
	m.RSSMiB, m.HWMMiB, m.AnonMiB, m.FileMiB = st["VmRSS"]/1024, st["VmHWM"]/1024, st["RssAnon"]/1024, st["RssFile"]/1024
	m.RSSPerWSK = m.RSSMiB * 1024 / float64(n)
	m.HeapPerWS = float64(ms.HeapAlloc) / float64(n)
	return m
}

// resetPeakRSS resets VmHWM to the current VmRSS (Linux: clear_refs 5); a
// system without it keeps the process's peak.
func resetPeakRSS() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// writeHeapProfile writes the live heap's profile to path.
func writeHeapProfile(path string) error {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
