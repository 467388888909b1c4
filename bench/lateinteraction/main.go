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
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/loci-memory/loci/bench"
	"github.com/loci-memory/loci/embed/colbert"
	"github.com/loci-memory/loci/retrieval"
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
	stored := flag.Bool("stored", false, "score by stored rows (colbert.Store: int8 rows) instead of float vectors")
	split := flag.Bool("split-speaker", false, "with -stored: a passage \"Name: text\" is scored by the rows of \"Name:\" and of the text, each encoded alone")
	flag.Parse()
	if err := run(*set, *data, *shape, *embedder, *budgets, *dump, *depth, *memo, *stored, *split); err != nil {
		fmt.Fprintln(os.Stderr, "lateinteraction:", err)
		os.Exit(1)
	}
}

func run(set, data, shape, embedder, budgets, dump string, depth, memo int, stored, split bool) error {
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
		switch {
		case stored && split:
			bench.EvalLateInteraction.Model = colbert.NewScorer(enc, memo<<20) // the product's scorer
		case split:
			return fmt.Errorf("-split-speaker needs -stored")
		default:
			bench.EvalLateInteraction.Model = &wholeText{e: enc, stored: stored, maxBytes: memo << 20,
				memo: map[string]colbert.Matrix{}, rows: map[string]colbert.Stored{}}
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

// wholeText scores a passage by the vectors of its whole text as the
// model reads it, float (MaxSim) or stored rows (MaxSimStored): the
// variants measured before the product's scorer (colbert.Scorer: the
// speaker's rows apart, -stored -split-speaker).
type wholeText struct {
	e        *colbert.Encoder
	stored   bool
	maxBytes int
	mu       sync.Mutex
	bytes    int
	memo     map[string]colbert.Matrix
	rows     map[string]colbert.Stored
}

func (w *wholeText) Model() string { return w.e.Model() + " (whole text)" }

func (w *wholeText) Query(query string) (retrieval.LateQuery, error) { return w.e.Query(query) }

func (w *wholeText) ScoreAll(ctx context.Context, query retrieval.LateQuery, texts, _ []string, _ [][]byte, dst []float64) error {
	qm := query.(colbert.Matrix)
	q := colbert.Store(qm)
	var err error
	for i, p := range texts {
		if err := ctx.Err(); err != nil {
			return err
		}
		w.mu.Lock()
		m, okm := w.memo[p]
		r, okr := w.rows[p]
		w.mu.Unlock()
		if !okm && !okr {
			if m, err = w.e.Passage(p, 2); err != nil {
				return err
			}
			w.mu.Lock()
			if w.stored {
				r = colbert.Store(m)
				if w.bytes < w.maxBytes {
					w.rows[p] = r
					w.bytes += colbert.StoredRowBytes * r.Rows()
				}
			} else if w.bytes < w.maxBytes {
				w.memo[p] = m
				w.bytes += 4 * len(m)
			}
			w.mu.Unlock()
		}
		if w.stored {
			dst[i] = colbert.MaxSimStored(q, r)
		} else {
			dst[i] = colbert.MaxSim(qm, m)
		}
	}
	return nil
}
