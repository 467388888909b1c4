package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/loci-memory/loci/bench"
	"github.com/loci-memory/loci/retrieval"
)

const evalUsage = `usage: loci eval <name> [flags]

  beir          nDCG@10, Recall@100 and queries/s on a BEIR data set (lexical, semantic, hybrid)
  locomo        evidence recall of context packs on LoCoMo, per budget and category
  longmemeval   evidence recall and abstention of context packs on LongMemEval, per budget and question type

Each prints a table of its results, or one JSON object with --json; progress goes to stderr, and so do the
engine's and server's messages, in loci serve's log format (LOG_FORMAT text or json, LOG_LEVEL, default warn).
loci eval <name> --help lists the flags of one.
`

func runEval(args []string) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprint(os.Stdout, evalUsage)
		return nil
	}
	if err := useServerLog(); err != nil {
		return err
	}
	if len(args) > 0 && args[0] == "locomo" {
		return runEvalLoCoMo(args[1:])
	}
	if len(args) > 0 && args[0] == "longmemeval" {
		return runEvalLongMemEval(args[1:])
	}
	if len(args) == 0 || args[0] != "beir" {
		fmt.Fprint(os.Stderr, evalUsage)
		return exitCode(2)
	}
	fs := flag.NewFlagSet("eval beir", flag.ContinueOnError)
	data := fs.String("data", "../shared/data/scifact", "BEIR data set directory")
	split := fs.String("split", "test", "qrels split")
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	minTime := fs.Duration("min-time", 2*time.Second, "repeat queries this long per throughput figure")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	embedder := fs.String("embedder", bench.EmbedderMiniLM, "the engine's embedder for the semantic and hybrid modes: minilm, glove or none")
	if done, err := parseFlags(fs, args[1:]); done {
		return err
	}
	if err := checkEmbedder(*embedder); err != nil {
		return err
	}
	if err := checkData(dataBEIR, *data); err != nil {
		return err
	}
	stop, err := startCPUProfile(*cpuprofile)
	if err != nil {
		return err
	}
	defer stop()
	res, err := bench.EvalBEIR(bench.BEIRConfig{Data: *data, Split: *split, MinTime: *minTime, Embedder: *embedder,
		Progress: func(s string) { fmt.Fprintln(os.Stderr, "loci eval beir:", s) }})
	if err != nil {
		return err
	}
	return writeResult("loci eval beir", res, *asJSON)
}

func runEvalLoCoMo(args []string) error {
	fs := flag.NewFlagSet("eval locomo", flag.ContinueOnError)
	data := fs.String("data", "../shared/data/locomo/locomo-dev.json", "a json file in LoCoMo's layout")
	ingest := fs.String("ingest", bench.IngestViaHTTP, "how turns are ingested: engine (in process) or http (POST /v2/ingest to a real server on loopback, packs over HTTP)")
	stamps := fs.String("timestamps", bench.TimestampsSession, "turn timestamps: session (the session's date-time), spread (plus one second per turn) or none")
	budgets := fs.String("budgets", "512,1024,2048,4096", "comma-separated max_tokens values")
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	embedder := fs.String("embedder", bench.EmbedderMiniLM, "the store's embedder: minilm, glove or none (the engine's with --ingest engine, the server's with --ingest http)")
	shape := fs.String("shape", bench.ShapeRole, "how a chat turn is sent: role (role = the speaker's name, content = the text), "+
		"prefix (role user for speaker_a and assistant for speaker_b, content = \"<Name>: <text>\"), "+
		"actor (role user/assistant, content = the text, actor_id = the speaker: one v2 batch per run of turns by one speaker; packs without actor_id) "+
		"or none (role user/assistant, content = the text, no names)")
	rerank := fs.Int("rerank", 0, "rerank_depth of every pack: how many candidates the relevance model rereads (0: none)")
	late := fs.Int("late-depth", -1, lateDepthUsage)
	minRel := fs.Float64("min-relevance", -1, "min_relevance of every pack: the relevance floor as a share of the best relevance (-1: the server's default)")
	dump := fs.String("dump", "", "write one JSON line per question and budget to this file (confidence, abstain, gold turns cited, answer coverage)")
	bs, done, err := parseEvalFlags(fs, args, embedder, budgets)
	if done {
		return err
	}
	if err := benchLate(*late); err != nil {
		return err
	}
	if err := checkData(dataLoCoMo, *data); err != nil {
		return err
	}
	switch *ingest {
	case bench.IngestViaEngine, bench.IngestViaHTTP:
	default:
		return fmt.Errorf("-ingest %q: want engine or http", *ingest)
	}
	switch *stamps {
	case bench.TimestampsSession, bench.TimestampsSpread, bench.TimestampsNone:
	default:
		return fmt.Errorf("-timestamps %q: want session, spread or none", *stamps)
	}
	switch *shape {
	case bench.ShapeRole, bench.ShapePrefix, bench.ShapeActor, bench.ShapeNone:
	default:
		return fmt.Errorf("-shape %q: want role, prefix, actor or none", *shape)
	}
	cfg := bench.LoCoMoConfig{Data: *data, Budgets: bs, Ingest: *ingest, Timestamps: *stamps, Embedder: *embedder, Shape: *shape,
		RerankDepth: *rerank, MinRelevance: optionalShare(*minRel), Progress: func(s string) { fmt.Fprintln(os.Stderr, "loci eval locomo:", s) }}
	return withDump(*dump, func(w io.Writer) (any, error) {
		cfg.Dump = w
		return bench.EvalLoCoMo(cfg)
	}, "loci eval locomo", *asJSON)
}

func runEvalLongMemEval(args []string) error {
	fs := flag.NewFlagSet("eval longmemeval", flag.ContinueOnError)
	data := fs.String("data", "../shared/data/longmemeval/longmemeval-s-dev.json", "a json file in LongMemEval's layout")
	budgets := fs.String("budgets", "512,1024,2048,4096", "comma-separated max_tokens values")
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	embedder := fs.String("embedder", bench.EmbedderMiniLM, "the server's embedder: minilm, glove or none")
	limit := fs.Int("limit", 0, "evaluate only the first this many questions (0: all)")
	rerank := fs.Int("rerank", 0, "rerank_depth of every pack: how many candidates the relevance model rereads (0: none)")
	late := fs.Int("late-depth", -1, lateDepthUsage)
	minRel := fs.Float64("min-relevance", -1, "min_relevance of every pack: the relevance floor as a share of the best relevance (-1: the server's default)")
	dump := fs.String("dump", "", "write one JSON line per question and budget to this file (confidence, abstain, evidence cited)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: loci eval longmemeval [flags]

Starts the real HTTP server on loopback and, for each question, ingests its haystack into a workspace of its own
(POST /v2/ingest, one batch per session in date order: chat_turn {role, content} as given, session_id the session's
id, timestamp its date), then asks the question with POST /v1/context-pack at each budget, as_of its question_date.
Prints per budget: the share of evidence turns (has_answer) cited, the share of questions whose evidence sessions
are all cited, both per question type, abstention on _abs questions and on the rest, the ROC AUC of confidence
(_abs vs the rest), mean tokens and pack latency.

`)
		fs.PrintDefaults()
	}
	bs, done, err := parseEvalFlags(fs, args, embedder, budgets)
	if done {
		return err
	}
	if err := checkData(dataLongMemEval, *data); err != nil {
		return err
	}
	if err := benchLate(*late); err != nil {
		return err
	}
	cfg := bench.LongMemEvalConfig{Data: *data, Budgets: bs, Embedder: *embedder, Limit: *limit, RerankDepth: *rerank, MinRelevance: optionalShare(*minRel),
		Progress: func(s string) { fmt.Fprintln(os.Stderr, "loci eval longmemeval:", s) }}
	return withDump(*dump, func(w io.Writer) (any, error) {
		cfg.Dump = w
		return bench.EvalLongMemEval(cfg)
	}, "loci eval longmemeval", *asJSON)
}

// parseEvalFlags parses the flags of an evaluation with --embedder and
// --budgets, checks those two, and returns the budgets; done as parseFlags
// (also true, with the error, for a bad value).
func parseEvalFlags(fs *flag.FlagSet, args []string, embedder, budgets *string) (bs []int, done bool, err error) {
	if done, err := parseFlags(fs, args); done {
		return nil, true, err
	}
	if err := checkEmbedder(*embedder); err != nil {
		return nil, true, err
	}
	bs, err = intList("budgets", *budgets, 1, 128000)
	return bs, err != nil, err
}

// evalData is a public data set an evaluation reads: none ships with
// Loci (their licences are the authors', mostly non-commercial), so a
// missing one is named with where to get it (docs/data.md).
type evalData struct {
	name   string // the data set
	want   string // the file, or the files of the directory, --data names
	probe  string // the file that must exist under --data ("": --data itself)
	source string // its public source
}

var (
	dataBEIR = evalData{name: "BEIR SciFact", want: "a directory holding corpus.jsonl, queries.jsonl and qrels/test.tsv",
		probe: "corpus.jsonl", source: "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/scifact.zip (unzip it)"}
	dataLoCoMo = evalData{name: "LoCoMo", want: "a JSON file in LoCoMo's layout (locomo10.json)",
		source: "https://github.com/snap-research/locomo, data/locomo10.json"}
	dataLongMemEval = evalData{name: "LongMemEval", want: "a JSON file in LongMemEval's layout (longmemeval_s.json)",
		source: "https://huggingface.co/datasets/xiaowu0162/longmemeval, longmemeval_s.json"}
	// dataBench is the real texts and questions of loci bench pack, search
	// and soak (bench.LoadRealCorpus).
	dataBench = evalData{name: "benchmark corpus (SciFact, LoCoMo, HotpotQA, tau-bench)",
		want:  "a directory holding scifact/, locomo/locomo-dev.json, hotpotqa/ and tau-bench/gpt-4o-airline.json",
		probe: "scifact/corpus.jsonl", source: "the sources docs/data.md lists, or pass --data '' for a synthetic corpus"}
)

// checkData fails, naming the data set, where to get it and the flag to
// point at it, when path (the --data flag) does not hold it.
func checkData(d evalData, path string) error {
	p := path
	if d.probe != "" {
		p = filepath.Join(path, d.probe)
	}
	if _, err := os.Stat(p); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return fmt.Errorf("the %s data set is not at %s (--data names %s): Loci does not ship it; get it from %s "+
		"and pass its path with --data (docs/data.md)", d.name, path, d.want, d.source)
}

// checkEmbedder checks an --embedder flag's value.
func checkEmbedder(name string) error {
	switch name {
	case bench.EmbedderMiniLM, bench.EmbedderGloVe, bench.EmbedderNone:
		return nil
	}
	return fmt.Errorf("-embedder %q: want minilm, glove or none", name)
}

// withDump runs an evaluation with its --dump file (none for "") and
// writes its result.
func withDump(path string, run func(io.Writer) (any, error), name string, asJSON bool) error {
	var w io.Writer
	if path != "" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	res, err := run(w)
	if err != nil {
		return err
	}
	return writeResult(name, res, asJSON)
}

// optionalShare is a --min-relevance flag's value: nil for a negative one
// (not sent: the server's default).
func optionalShare(v float64) *float64 {
	if v < 0 {
		return nil
	}
	return &v
}

const lateDepthUsage = "late_depth of every pack: how many of its best candidates the built-in late-interaction model (colbert) scores; 0: none; -1: the server's default (packs leave late_depth out, and the server runs the model at its default depth in workspaces of at most its default --late-max-spans)"

// benchLate gives evaluations and benchmarks the built-in late-interaction
// model, every pack scoring its depth best candidates (0: none; -1: as
// loci serve does by default, EvalLateInteraction.MaxSpans). The servers'
// engines store token rows as loci serve's do, so that an evaluation's
// pack latencies are a client's: its ingests wait for embedding, which
// waits for the rows too, and its packs read them.
func benchLate(depth int) error {
	if depth < -1 || depth > retrieval.MaxRerankDepth {
		return fmt.Errorf("--late-depth %d: must be -1 or between 0 and %d", depth, retrieval.MaxRerankDepth)
	}
	if depth == 0 {
		return nil
	}
	li, tr, err := lateInteraction(lateColbert)
	if err != nil {
		return err
	}
	bench.EvalLateInteraction.Model, bench.EvalLateInteraction.Depth = li, depth
	if depth < 0 {
		bench.EvalLateInteraction.Depth, bench.EvalLateInteraction.MaxSpans = defaultLateDepth, defaultLateMaxSpans
	}
	bench.EvalLateInteraction.Rows = tr
	return nil
}
