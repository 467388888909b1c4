package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/loci-memory/loci/bench"
	"github.com/loci-memory/loci/pack"
	"github.com/loci-memory/loci/wal"
)

const benchUsage = `usage: loci bench <name> [flags]

  ingest    durable ingest through the engine with concurrent writers
  restart   time to reopen a data directory of N artifacts
  compact   one full compaction of --dir as found (in place: give a copy): time, segments and bytes before and
            after, bytes written
  search    lexical and semantic search latency through the engine at N spans (--dir: of a directory as found, with
            its open time, memory and disk; IVF's recall against the exact scan where the workspace uses it, and
            with real data, for every question of each data set)
  pack      context pack latency and throughput over HTTP on loopback at N spans
  workspaces  N small workspaces (LoCoMo turns) on one node over HTTP: ingest rate, memory per workspace, restart, packs
            on random workspaces
  soak      N distinct packs and N async ingest jobs over HTTP: memory and disk over time, checked against their bounds
  embed     the built-in sentence encoder vs the reference (sentence-transformers, --python) on the same sentences:
            query latency on one core, batch throughput on --threads cores, and the ratio
  ivf       train IVF centroids for the built-in encoder on the shared texts (--out writes the file) and measure
            IVF recall@k against the exact scan on their real questions for each --nprobe

Each prints a table of its results, or one JSON object with --json; progress goes to stderr, and so do the
engine's and server's messages, in loci serve's log format (LOG_FORMAT text or json, LOG_LEVEL, default warn).
loci bench <name> --help lists the flags of one.
`

func runBench(args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, benchUsage)
		return exitCode(2)
	}
	if isHelp(args[0]) {
		fmt.Fprint(os.Stdout, benchUsage)
		return nil
	}
	if err := useServerLog(); err != nil {
		return err
	}
	name, args := args[0], args[1:]
	fs := flag.NewFlagSet("bench "+name, flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	seed := fs.Uint64("seed", 1, "data generator seed")
	dir := fs.String("dir", "", "data directory, kept (default: a temporary one, removed afterwards); bench pack reuses the workspace an earlier run built there")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	var run func() (any, error)
	progress := func(s string) { fmt.Fprintf(os.Stderr, "loci bench %s: %s\n", name, s) }
	switch name {
	case "ingest":
		writers := fs.Int("writers", 64, "concurrent writers (HTTP clients with --http)")
		n := fs.Int("artifacts", 200000, "artifacts to ingest")
		fsync := fs.String("fsync", "always", "WAL fsync policy: always | batch | off")
		overHTTP := fs.Bool("http", false, "ingest through POST /v2/ingest of the real server on loopback")
		batch := fs.Int("batch", 100, "artifacts per v2 ingest request (with --http)")
		embedder := fs.String("embedder", "none", "semantic channel, embedding in the background as loci serve does: none (lexically indexed ingest) | glove | minilm")
		drain := fs.Bool("drain", true, "with an embedder: after the last acknowledgement, wait for the embedding backlog to reach 0 and report the time")
		drainTimeout := fs.Duration("drain-timeout", 10*time.Minute, "give up draining the embedding backlog after this long")
		rate := fs.Float64("rate", 0, "open loop: offer this many artifacts/s for --duration (arrivals at fixed intervals, whatever the writers' progress); with an embedder, report the lag from acknowledgement to embedded")
		duration := fs.Duration("duration", 10*time.Second, "length of the offered load (with --rate)")
		late := fs.String("late-interaction", lateDefault, "with --http, the server's late-interaction model, whose token rows the engine computes in the background as loci serve does (within its default --late-max-spans): "+lateNames)
		run = func() (any, error) {
			p, err := wal.ParseSyncPolicy(*fsync)
			if err != nil {
				return nil, err
			}
			switch *late {
			case lateColbert:
				if err := benchLate(-1); err != nil {
					return nil, err
				}
			case lateNone:
			default:
				return nil, fmt.Errorf("--late-interaction %q: want %s", *late, lateNames)
			}
			switch *embedder {
			case embedderNone, embedderGloVe, embedderMiniLM:
			default:
				return nil, fmt.Errorf("--embedder: unknown embedder %q (one of none | glove | minilm)", *embedder)
			}
			emb, err := benchEmbedding(*embedder)
			if err != nil {
				return nil, err
			}
			if *overHTTP {
				if *rate > 0 {
					return nil, fmt.Errorf("--rate is not supported with --http")
				}
				return bench.IngestHTTP(bench.IngestHTTPConfig{Artifacts: *n, Batch: *batch, Writers: *writers, Seed: *seed, Sync: p, Embedding: emb,
					Progress: progress})
			}
			return bench.Ingest(bench.IngestConfig{Dir: *dir, Writers: *writers, Artifacts: *n, Sync: p, Seed: *seed,
				Embedding: emb, Drain: *drain, DrainTimeout: *drainTimeout, Rate: *rate, Duration: *duration,
				Progress: progress})
		}
	case "pack":
		n := fs.Int("spans", 100000, "spans in the workspace")
		reqs := fs.Int("requests", 2000, "timed requests per concurrency level")
		levels := fs.String("concurrency", "1,8,64", "concurrency levels, comma-separated; the first is the headline figure")
		budget := fs.Int("max-tokens", 2048, "max_tokens of each pack")
		data := fs.String("data", "../shared/data", "shared data sets for real texts and questions (empty: synthetic corpus)")
		fsync := fs.String("fsync", "always", "WAL fsync policy (receipts are written durably): always | batch | off")
		repeats := fs.Bool("repeats", false, "let requests repeat earlier ones byte for byte (their receipts are then not written again); default: every request distinct")
		embedderFlag := fs.String("embedder", embedderMiniLM, "the server's embedder: "+embedderNames+" (the workspace is embedded before timing)")
		rerank := fs.Int("rerank", -1, "rerank_depth of each pack: how many candidates the relevance model rereads (-1: not sent, so none)")
		late := fs.Int("late-depth", -1, lateDepthUsage+"; the segments' token rows are built before timing")
		profile := fs.String("profile", "", "send v2 packs of this serving profile (low_latency | balanced | high_recall); empty: v1 packs")
		accessLog := fs.String("access-log", "", "write the server's log at level info in JSON to this file, one access line per request, as loci serve with LOG_FORMAT=json (metrics are always on)")
		wsFlag := fs.String("workspaces", "", workspacesUsage)
		backlog := fs.Int("backlog", 0, "ingest this many artifacts into the workspace \"backlog\" right before the timed requests, so that the background embedder works while they are served")
		run = func() (any, error) {
			wss, err := workspaceList(*wsFlag, *dir)
			if err != nil {
				return nil, err
			}
			if *backlog < 0 {
				return nil, fmt.Errorf("--backlog %d: must be 0 or more", *backlog)
			}
			switch *profile {
			case "", pack.ProfileLowLatency, pack.ProfileBalanced, pack.ProfileHighRecall:
			default:
				return nil, fmt.Errorf("--profile %q: want low_latency, balanced or high_recall (or none for v1)", *profile)
			}
			if *rerank < -1 {
				return nil, fmt.Errorf("--rerank %d: must be -1 (not sent) or more", *rerank)
			}
			if err := benchLate(*late); err != nil {
				return nil, err
			}
			p, err := wal.ParseSyncPolicy(*fsync)
			if err != nil {
				return nil, err
			}
			conc, err := intList("concurrency", *levels, 1, 4096)
			if err != nil {
				return nil, err
			}
			emb, err := benchEmbedding(*embedderFlag)
			if err != nil {
				return nil, err
			}
			if err := checkBenchData(*data); err != nil {
				return nil, err
			}
			return bench.PackHTTP(bench.PackHTTPConfig{Spans: *n, Requests: *reqs, Concurrency: conc, MaxTokens: *budget,
				Seed: *seed, Data: *data, Sync: p, Repeats: *repeats, Embedding: emb, Dir: *dir, AccessLog: *accessLog, Progress: progress,
				RerankDepth: max(*rerank, 0), NoRerank: *rerank == 0, Profile: *profile, Workspaces: wss, Backlog: *backlog})
		}
	case "search":
		n := fs.Int("spans", 100000, "spans in the workspace")
		q := fs.Int("queries", 2000, "timed queries per figure")
		data := fs.String("data", "../shared/data", "shared data sets for real texts and questions (empty: synthetic corpus)")
		embedderFlag := fs.String("embedder", embedderGloVe, "embedder of the queries and of a built workspace: "+embedderNames+"; with --dir, the directory's")
		nprobe := fs.String("nprobe", "", "where the workspace is searched by IVF, further probe counts to time and measure recall at, comma separated")
		wsFlag := fs.String("workspaces", "", workspacesUsage)
		run = func() (any, error) {
			wss, err := workspaceList(*wsFlag, *dir)
			if err != nil {
				return nil, err
			}
			if err := checkBenchData(*data); err != nil {
				return nil, err
			}
			emb, err := benchEmbedding(*embedderFlag)
			if err != nil {
				return nil, err
			}
			if emb.Embedder == nil {
				return nil, fmt.Errorf("--embedder %s: bench search needs an embedder", *embedderFlag)
			}
			var probes []int
			if *nprobe != "" {
				if probes, err = intList("nprobe", *nprobe, 1, 1<<20); err != nil {
					return nil, err
				}
			}
			return bench.Search(bench.SearchConfig{Spans: *n, Queries: *q, Seed: *seed, Data: *data, Dir: *dir, Embedder: emb.Embedder,
				NProbe: probes, Progress: progress, Workspaces: wss})
		}
	case "compact":
		embedderFlag := fs.String("embedder", embedderGloVe, "embedder to open the directory with: "+embedderNames+" (the directory's)")
		run = func() (any, error) {
			emb, err := benchEmbedding(*embedderFlag)
			if err != nil {
				return nil, err
			}
			if *dir == "" {
				return nil, fmt.Errorf("bench compact needs --dir (a copy: it is compacted in place)")
			}
			return bench.Compact(bench.CompactConfig{Dir: *dir, Embedding: emb})
		}
	case "restart":
		n := fs.Int("artifacts", 1000000, "artifacts in the data directory")
		restarts := fs.Int("restarts", 5, "reopen this many times")
		embedderFlag := fs.String("embedder", embedderGloVe, "embedder to open the directory with: "+embedderNames+" (a --dir another embedder wrote needs that one)")
		run = func() (any, error) {
			emb, err := benchEmbedding(*embedderFlag)
			if err != nil {
				return nil, err
			}
			if emb.Embedder == nil {
				return nil, fmt.Errorf("--embedder %s: bench restart needs an embedder", *embedderFlag)
			}
			return bench.Restart(bench.RestartConfig{Dir: *dir, Artifacts: *n, Seed: *seed, Restarts: *restarts, Embedder: emb.Embedder, Progress: progress})
		}
	case "workspaces":
		n := fs.Int("workspaces", 100000, "workspaces, each of --min-artifacts to --max-artifacts LoCoMo turns")
		lo := fs.Int("min-artifacts", 50, "fewest artifacts of a workspace")
		hi := fs.Int("max-artifacts", 200, "most artifacts of a workspace")
		writers := fs.Int("writers", 4, "concurrent HTTP clients ingesting (one v2 request per workspace)")
		packs := fs.Int("packs", 1000, "timed packs at concurrency 1, each on a random workspace")
		budget := fs.Int("max-tokens", 2048, "max_tokens of each pack")
		data := fs.String("data", "../shared/data", "shared data sets (reads locomo/locomo-dev.json)")
		fsync := fs.String("fsync", "always", "WAL fsync policy: always | batch | off")
		embedderFlag := fs.String("embedder", embedderMiniLM, "the server's embedder: "+embedderNames+" (each distinct text embedded once while building)")
		memprofile := fs.String("memprofile", "", "write a heap profile here after the restart, before any pack (what the cold workspaces hold), and one after the packs to this name + .after-packs")
		run = func() (any, error) {
			p, err := wal.ParseSyncPolicy(*fsync)
			if err != nil {
				return nil, err
			}
			if *lo < 1 || *hi < *lo {
				return nil, fmt.Errorf("--min-artifacts must be at least 1 and at most --max-artifacts")
			}
			emb, err := benchEmbedding(*embedderFlag)
			if err != nil {
				return nil, err
			}
			if err := checkData(dataLoCoMo, filepath.Join(*data, "locomo", "locomo-dev.json")); err != nil {
				return nil, err
			}
			return bench.Workspaces(bench.WorkspacesConfig{Workspaces: *n, MinArtifacts: *lo, MaxArtifacts: *hi, Writers: *writers,
				Packs: *packs, MaxTokens: *budget, Seed: *seed, Data: *data, Sync: p, Embedding: emb, Dir: *dir,
				MemProfile: *memprofile, Progress: progress})
		}
	case "soak":
		packs := fs.Int("packs", 100000, "distinct context pack requests")
		jobs := fs.Int("jobs", 100000, "artifacts ingested as asynchronous jobs")
		batch := fs.Int("batch", 100, "artifacts per POST /v2/ingest")
		packClients := fs.Int("pack-clients", 4, "concurrent pack clients")
		jobClients := fs.Int("job-clients", 2, "concurrent ingest clients")
		spans := fs.Int("spans", 20000, "spans in the workspace before the run")
		data := fs.String("data", "../shared/data", "shared data sets for real texts and questions (empty: synthetic corpus)")
		every := fs.Duration("every", 5*time.Second, "sampling interval")
		receipts := fs.Int("receipts-per-workspace", 0, "receipt retention per workspace (0: the engine's default)")
		finished := fs.Int("max-finished-jobs", 0, "finished jobs kept per tenant (0: the default)")
		fsync := fs.String("fsync", "always", "WAL fsync policy: always | batch | off")
		run = func() (any, error) {
			p, err := wal.ParseSyncPolicy(*fsync)
			if err != nil {
				return nil, err
			}
			if err := checkBenchData(*data); err != nil {
				return nil, err
			}
			res, err := bench.Soak(bench.SoakConfig{Packs: *packs, Jobs: *jobs, Batch: *batch, PackClients: *packClients,
				JobClients: *jobClients, Spans: *spans, Seed: *seed, Data: *data, Dir: *dir, Sync: p, Every: *every,
				ReceiptsPerWorkspace: *receipts, MaxFinishedJobs: *finished, Progress: func(s bench.SoakSample) {
					fmt.Fprintf(os.Stderr, "soak %6.0fs: packs %d, jobs %d (kept %d finished, %d unfinished), rss %.0f MiB (anon %.0f), data %.1f MiB, control %.0f KiB\n",
						s.Seconds, s.Packs, s.JobsAccepted, s.JobsFinished, s.JobsPending, s.RSSMiB, s.AnonMiB, s.DataMiB, s.ControlKiB)
				}})
			if err == nil && !res.WithinLimits {
				writeResult("loci bench soak", res, *asJSON)
				return nil, fmt.Errorf("soak ended outside its bounds: %v", res.Exceeded)
			}
			return res, err
		}
	case "embed":
		cfg := bench.EmbedFlags(fs)
		run = func() (any, error) {
			cfg.Seed = *seed
			cfg.Progress = progress
			return bench.Embed(*cfg)
		}
	case "ivf":
		cfg := bench.IVFConfig{Seed: 1}
		fs.StringVar(&cfg.Data, "data", "../shared/data", "shared data sets (the reference corpus and its questions)")
		fs.StringVar(&cfg.Cache, "cache", "", "file of the corpus' embeddings: read if present, else written (embedding takes minutes)")
		fs.IntVar(&cfg.LongMemEval, "longmemeval", 6000, "LongMemEval turns added to the corpus")
		fs.IntVar(&cfg.MaxTexts, "texts", 8000, "embed at most this many texts, evenly spaced over the corpus (0: all)")
		fs.IntVar(&cfg.MaxBytes, "max-bytes", 300, "cut texts to this many bytes before embedding (0: whole; the encoder reads at most 256 tokens)")
		fs.IntVar(&cfg.Lists, "lists", 1024, "centroids (lists)")
		fs.IntVar(&cfg.Iters, "iters", 20, "k-means iterations")
		fs.StringVar(&cfg.Centroids, "centroids", "", "measure this centroid file instead of training")
		fs.StringVar(&cfg.Out, "out", "", "write the trained centroid file here")
		fs.IntVar(&cfg.K, "k", 100, "top k")
		nprobe := fs.String("nprobe", "32,64,128,192,256,384,512", "probed lists to measure, comma separated")
		run = func() (any, error) {
			cfg.Progress = progress
			for _, f := range strings.Split(*nprobe, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil || n < 1 {
					return nil, fmt.Errorf("--nprobe: %q is not a positive integer", f)
				}
				cfg.NProbe = append(cfg.NProbe, n)
			}
			if _, err := os.Stat(cfg.Cache); err != nil {
				// Without a cache the corpus is read and embedded.
				if err := checkData(dataBench, cfg.Data); err != nil {
					return nil, err
				}
			}
			return bench.IVF(cfg)
		}
	default:
		fmt.Fprintf(os.Stderr, "loci bench: unknown benchmark %q\n\n%s", name, benchUsage)
		return exitCode(2)
	}
	if done, err := parseFlags(fs, args); done {
		return err
	}
	stop, err := startCPUProfile(*cpuprofile)
	if err != nil {
		return err
	}
	defer stop()
	res, err := run()
	if err != nil {
		return err
	}
	return writeResult("loci bench "+name, res, *asJSON)
}

// tableWriter is a result that prints itself as a table for people when
// --json is not given (`loci bench embed`).
type tableWriter interface{ WriteTable(w io.Writer) error }

// writeResult writes a benchmark or evaluation result to stdout: one JSON
// line with --json, for scripts; otherwise a table for people, the
// result's own (tableWriter) or bench.WriteTable's, headed by title.
func writeResult(title string, v any, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(os.Stdout).Encode(v)
	}
	if t, ok := v.(tableWriter); ok {
		return t.WriteTable(os.Stdout)
	}
	return bench.WriteTable(os.Stdout, title, v)
}

// isHelp reports whether arg asks for help instead of naming a subcommand.
func isHelp(arg string) bool {
	switch arg {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}

// startCPUProfile profiles the process into path until the returned stop is
// called; an empty path profiles nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// useServerLog makes the default logger, which the engines and servers a
// benchmark or an evaluation opens log through, loci serve's on stderr
// (LOG_FORMAT, default text; LOG_LEVEL, default warn), so that their lines
// read as the server's and not in the log package's format.
func useServerLog() error {
	l, err := newLogger(os.Stderr, envOr("LOG_FORMAT", "text"), envOr("LOG_LEVEL", "warn"))
	if err != nil {
		return err
	}
	slog.SetDefault(l)
	return nil
}

// checkBenchData checks a benchmark's --data: "" is the synthetic corpus;
// otherwise the shared data sets must be there (checkData).
func checkBenchData(path string) error {
	if path == "" {
		return nil
	}
	return checkData(dataBench, path)
}

const workspacesUsage = "with --dir: comma-separated workspaces of the default tenant found there (an earlier run's, or loci import's), each of at least --spans spans; each timed request goes to one of them, drawn with --seed (default: the one workspace \"bench\")"

// workspaceList parses --workspaces, which needs --dir.
func workspaceList(s, dir string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	if dir == "" {
		return nil, fmt.Errorf("--workspaces names workspaces found in --dir: give --dir")
	}
	var out []string
	for _, w := range strings.Split(s, ",") {
		if w = strings.TrimSpace(w); w == "" || slices.Contains(out, w) {
			return nil, fmt.Errorf("--workspaces: %q: want distinct, non-empty workspace ids", s)
		}
		out = append(out, w)
	}
	return out, nil
}
