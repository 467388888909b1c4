package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/loci-memory/loci/bench"
)

const evalUsage = `usage: loci eval <name> [flags]

  beir     nDCG@10, Recall@100 and queries/s on a BEIR data set (lexical, semantic, hybrid)
  locomo   evidence recall of context packs on LoCoMo, per budget and category
`

func runEval(args []string) error {
	if len(args) > 0 && args[0] == "locomo" {
		return runEvalLoCoMo(args[1:])
	}
	if len(args) == 0 || args[0] != "beir" {
		fmt.Fprint(os.Stderr, evalUsage)
		return exitCode(2)
	}
	fs := flag.NewFlagSet("eval beir", flag.ContinueOnError)
	data := fs.String("data", "../shared/data/scifact", "BEIR data set directory")
	split := fs.String("split", "test", "qrels split")
	asJSON := fs.Bool("json", false, "print one JSON object")
	minTime := fs.Duration("min-time", 2*time.Second, "repeat queries this long per throughput figure")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return exitCode(2)
	}
	stop, err := startCPUProfile(*cpuprofile)
	if err != nil {
		return err
	}
	defer stop()
	res, err := bench.EvalBEIR(bench.BEIRConfig{Data: *data, Split: *split, MinTime: *minTime})
	if err != nil {
		return err
	}
	return printResult(res, *asJSON)
}

func runEvalLoCoMo(args []string) error {
	fs := flag.NewFlagSet("eval locomo", flag.ContinueOnError)
	data := fs.String("data", "../shared/data/locomo/locomo-dev.json", "LoCoMo json file")
	budgets := fs.String("budgets", "512,1024,2048,4096", "comma-separated max_tokens values")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return exitCode(2)
	}
	var bs []int
	for _, f := range strings.Split(*budgets, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 128000 {
			return fmt.Errorf("--budgets: %q is not a budget between 1 and 128000", f)
		}
		bs = append(bs, n)
	}
	res, err := bench.EvalLoCoMo(bench.LoCoMoConfig{Data: *data, Budgets: bs})
	if err != nil {
		return err
	}
	return printResult(res, *asJSON)
}
