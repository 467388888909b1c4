package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/invindex"
	"github.com/loci-memory/loci/retrieval"
	"github.com/loci-memory/loci/vecindex"
)

// SearchConfig sets up `loci bench search`.
type SearchConfig struct {
	Spans   int    // at least this many spans in one workspace
	Queries int    // timed queries per figure
	Seed    uint64 // data order and synthetic queries
	Data    string // shared data directory: real texts and questions; "" = synthetic corpus
	// Progress, if set, receives a line at most every few seconds while a
	// long phase runs (loci bench prints it to stderr).
	Progress func(string)
}

// Latency is a latency distribution in milliseconds.
type Latency struct {
	P50ms float64 `json:"p50_ms"`
	P99ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
}

// SearchResult is what `loci bench search --json` prints.
type SearchResult struct {
	Spans          int     `json:"spans"`
	Artifacts      int     `json:"artifacts"`
	Segments       int     `json:"segments"`
	Queries        int     `json:"queries"`
	LexicalTop100  Latency `json:"lexical_top100"`
	LexicalTop10   Latency `json:"lexical_top10"`
	SemanticTop100 Latency `json:"semantic_top100"`
	SemanticTop10  Latency `json:"semantic_top10"`
	Pack2048       Latency `json:"context_pack_2048"`
	Kernel         string  `json:"int8_kernel"`
	Dataset        string  `json:"dataset"`
}

// Search builds one workspace of at least cfg.Spans spans through the engine
// (generated artifacts, flushed and compacted), then times lexical (BM25)
// and semantic (GloVe, exact int8) searches and v1 context packs of 2,048
// tokens through engine.DB, one at a time.
func Search(cfg SearchConfig) (*SearchResult, error) {
	if cfg.Spans <= 0 {
		cfg.Spans = 100_000
	}
	if cfg.Queries <= 0 {
		cfg.Queries = 2000
	}
	db, cleanup, err := scratchEngine("loci-bench-search-")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	next, real, err := benchCorpus(cfg.Data, cfg.Seed)
	if err != nil {
		return nil, err
	}
	res := &SearchResult{Kernel: vecindex.KernelName(), Queries: cfg.Queries}
	p := newProgress(cfg.Progress)
	if res.Spans, res.Artifacts, err = fillWorkspace(db, "bench", next, cfg.Spans, p); err != nil {
		return nil, err
	}
	stop := p.during("compacting the workspace")
	err = db.Compact()
	stop()
	if err != nil {
		return nil, err
	}
	res.Segments = db.Stats().Segments
	queries := sampleQueries(real, rand.New(rand.NewPCG(cfg.Seed, 99)), cfg.Queries)
	if real != nil {
		res.Dataset = fmt.Sprintf("real texts of %s (SciFact, LoCoMo, HotpotQA, tau-bench: %d distinct texts, repeated in seeded orders) in one workspace, flushed and compacted; queries: their %d real questions, sampled with seed %d",
			cfg.Data, real.Texts(), len(real.Queries), cfg.Seed)
	} else {
		res.Dataset = fmt.Sprintf("synthetic (bench.Corpus seed %d, a 500-word vocabulary: every term is frequent) in one workspace, flushed and compacted; queries: 3-8 words of the vocabulary", cfg.Seed)
	}

	measure := func(search func(q string) error) (Latency, error) {
		lat := make([]time.Duration, 0, len(queries))
		for _, q := range queries {
			t := time.Now()
			if err := search(q); err != nil {
				return Latency{}, err
			}
			lat = append(lat, time.Since(t))
		}
		slices.Sort(lat)
		ms := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Nanoseconds()) / 1e6 }
		return Latency{P50ms: ms(0.5), P99ms: ms(0.99), MaxMs: ms(1)}, nil
	}
	packer := retrieval.New(db)
	for _, f := range []struct {
		dst  *Latency
		fn   func(q string) error
		name string
	}{
		{&res.LexicalTop100, func(q string) error { _, err := db.SearchLexical("bench", "bench", q, 100); return err }, "lexical top 100"},
		{&res.LexicalTop10, func(q string) error { _, err := db.SearchLexical("bench", "bench", q, 10); return err }, "lexical top 10"},
		{&res.SemanticTop100, func(q string) error {
			_, err := retrieval.SearchSemantic(context.Background(), db, "bench", "bench", q, 100)
			return err
		}, "semantic top 100"},
		{&res.SemanticTop10, func(q string) error {
			_, err := retrieval.SearchSemantic(context.Background(), db, "bench", "bench", q, 10)
			return err
		}, "semantic top 10"},
		{&res.Pack2048, func(q string) error {
			_, err := packer.ContextPack(context.Background(), "bench", retrieval.PackRequest{Workspace: "bench", Query: q, MaxTokens: 2048})
			return err
		}, "context packs"},
	} {
		stop := p.during("timing " + f.name)
		*f.dst, err = measure(f.fn)
		stop()
		if err != nil {
			return nil, err
		}
	}
	res.Queries = len(queries)
	return res, nil
}

// fillWorkspace ingests artifacts from next into workspace "bench" of
// tenant, in batches of 256, until it holds at least spans spans.
func fillWorkspace(db *engine.DB, tenant string, next func(ws string) engine.IngestInput, spans int, p *progress) (nSpans, nArtifacts int, err error) {
	for nSpans < spans {
		p.tick("building the workspace: %d of %d spans", nSpans, spans)
		batch := make([]engine.IngestInput, 256)
		for i := range batch {
			batch[i] = next("bench")
		}
		rs, err := db.IngestBatch(tenant, batch)
		if err != nil {
			return 0, 0, err
		}
		for _, r := range rs {
			nSpans += len(r.SpanIDs)
			nArtifacts++
		}
	}
	return nSpans, nArtifacts, nil
}

// benchCorpus is where a benchmark's texts come from: the shared data sets
// under data (real texts, and real questions in RealCorpus.Queries), or the
// synthetic corpus when data is "".
func benchCorpus(data string, seed uint64) (func(ws string) engine.IngestInput, *RealCorpus, error) {
	if data == "" {
		return NewCorpus(seed).Next, nil, nil
	}
	real, err := LoadRealCorpus(data, seed)
	if err != nil {
		return nil, nil, err
	}
	return real.Next, real, nil
}

// sampleQueries draws n queries with rng: real questions when real is set,
// else 3-8 words of the synthetic vocabulary. Queries that analyse to
// nothing (all stop words) are left out: they cost nothing.
func sampleQueries(real *RealCorpus, rng *rand.Rand, n int) []string {
	queries := make([]string, n)
	for i := range queries {
		if real != nil {
			queries[i] = real.Queries[rng.IntN(len(real.Queries))]
			continue
		}
		w := make([]string, 3+rng.IntN(6))
		for j := range w {
			w[j] = words[rng.IntN(len(words))]
		}
		queries[i] = strings.Join(w, " ")
	}
	return slices.DeleteFunc(queries, func(q string) bool { return len(invindex.Analyze(q, nil)) == 0 })
}
