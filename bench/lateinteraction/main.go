// Command lateinteraction runs loci's LoCoMo or LongMemEval evaluation with
// late interaction in every pack: the built-in model of embed/colbert
// scores the -depth best candidates of each pack by MaxSim of token
// vectors, and pack.LateWeight blends the scores into their relevance. It
// measures what late interaction would give before segments store token
// vectors: a passage's vectors are computed when a pack first asks for them
// (and remembered), so its pack latencies are not the product's.
//
// It lives outside the loci binary so that the binary does not carry the
// model until the packs use it.
//
//	go run ./bench/lateinteraction -set locomo -data DATA/locomo/locomo-dev.json -shape prefix -depth 100 -json
//	go run ./bench/lateinteraction -set longmemeval -data DATA/longmemeval/longmemeval-s-dev.json -embedder none -depth 100 -json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/loci-memory/loci/bench"
	"github.com/loci-memory/loci/embed/colbert"
)

func main() {
	set := flag.String("set", "locomo", "the evaluation: locomo or longmemeval")
	data := flag.String("data", "", "the data set's JSON file")
	shape := flag.String("shape", bench.ShapePrefix, "LoCoMo: how a chat turn is sent (role, prefix, actor, none)")
	embedder := flag.String("embedder", bench.EmbedderMiniLM, "the server's embedder: minilm, glove or none")
	depth := flag.Int("depth", 100, "how many of each pack's best candidates late interaction scores (0: none, the plain evaluation)")
	budgets := flag.String("budgets", "512,1024,2048,4096", "comma-separated max_tokens values")
	memo := flag.Int("memo-mb", 1024, "MB of passage vectors to remember")
	dump := flag.String("dump", "", "write one JSON line per question and budget to this file")
	stored := flag.Bool("stored", false, "score by stored rows (colbert.Store: 64 int8 dimensions a token) instead of 128 float ones")
	flag.Parse()
	if err := run(*set, *data, *shape, *embedder, *budgets, *dump, *depth, *memo, *stored); err != nil {
		fmt.Fprintln(os.Stderr, "lateinteraction:", err)
		os.Exit(1)
	}
}

func run(set, data, shape, embedder, budgets, dump string, depth, memo int, stored bool) error {
	var bs []int
	for _, f := range strings.Split(budgets, ",") {
		b, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || b < 1 {
			return fmt.Errorf("-budgets: %q is not a positive integer", f)
		}
		bs = append(bs, b)
	}
	if depth > 0 {
		enc, err := colbert.Default()
		if err != nil {
			return err
		}
		bench.EvalLateInteraction.Model = colbert.NewScorer(enc, memo<<20)
		if stored {
			bench.EvalLateInteraction.Model = colbert.NewStoredScorer(enc, memo<<20)
		}
		bench.EvalLateInteraction.Depth = depth
	}
	progress := func(s string) { fmt.Fprintln(os.Stderr, "lateinteraction:", s) }
	var out any
	var err error
	var w *os.File
	if dump != "" {
		if w, err = os.Create(dump); err != nil {
			return err
		}
		defer w.Close()
	}
	switch set {
	case "locomo":
		cfg := bench.LoCoMoConfig{Data: data, Budgets: bs, Ingest: bench.IngestViaHTTP, Timestamps: bench.TimestampsSession,
			Embedder: embedder, Shape: shape, Progress: progress}
		if w != nil {
			cfg.Dump = w
		}
		out, err = bench.EvalLoCoMo(cfg)
	case "longmemeval":
		cfg := bench.LongMemEvalConfig{Data: data, Budgets: bs, Embedder: embedder, Progress: progress}
		if w != nil {
			cfg.Dump = w
		}
		out, err = bench.EvalLongMemEval(cfg)
	default:
		return fmt.Errorf("-set %q: want locomo or longmemeval", set)
	}
	if err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	return enc.Encode(out)
}
