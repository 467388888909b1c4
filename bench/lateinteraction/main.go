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
	"slices"
	"strconv"
	"strings"
	"sync"

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
		bench.EvalLateInteraction.Model = colbert.NewScorer(enc, memo<<20)
		if stored {
			bench.EvalLateInteraction.Model = colbert.NewStoredScorer(enc, memo<<20)
		}
		if split {
			bench.EvalLateInteraction.Model = &splitSpeaker{e: enc, memo: map[string]colbert.Stored{}}
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

// splitSpeaker scores a passage "Name: text" by stored rows of "Name:" and
// of the text, each encoded alone and remembered: the rows a store could
// keep for a turn whatever name a pack finds for its speaker.
type splitSpeaker struct {
	e    *colbert.Encoder
	mu   sync.Mutex
	memo map[string]colbert.Stored
}

func (s *splitSpeaker) Model() string { return s.e.Model() + " (speaker apart)" }

func (s *splitSpeaker) rows(text string) (colbert.Stored, error) {
	s.mu.Lock()
	r, ok := s.memo[text]
	s.mu.Unlock()
	if ok {
		return r, nil
	}
	m, err := s.e.Passage(text, 2)
	if err != nil {
		return colbert.Stored{}, err
	}
	r = colbert.Store(m)
	s.mu.Lock()
	s.memo[text] = r
	s.mu.Unlock()
	return r, nil
}

func (s *splitSpeaker) ScoreAll(ctx context.Context, query string, passages []string, dst []float64) error {
	qm, err := s.e.Query(query)
	if err != nil {
		return err
	}
	q := colbert.Store(qm)
	for i, p := range passages {
		if err := ctx.Err(); err != nil {
			return err
		}
		name, text, ok := strings.Cut(p, ": ")
		if !ok || len(name) > 40 || strings.ContainsAny(name, "\n.!?") {
			name, text = "", p
		}
		r, err := s.rows(text)
		if err != nil {
			return err
		}
		if name != "" {
			n, err := s.rows(name + ":")
			if err != nil {
				return err
			}
			r = colbert.Stored{Scales: append(slices.Clone(n.Scales), r.Scales...), Vals: append(slices.Clone(n.Vals), r.Vals...)}
		}
		dst[i] = colbert.MaxSimStored(q, r)
	}
	return nil
}
