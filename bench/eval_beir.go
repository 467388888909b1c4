package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/invindex"
	"github.com/loci-memory/loci/pack"
	"github.com/loci-memory/loci/retrieval"
)

// BEIRConfig sets up `loci eval beir`.
type BEIRConfig struct {
	Data      string        // BEIR data set directory (corpus.jsonl, queries.jsonl, qrels/)
	Split     string        // qrels split, default "test"
	SpanDepth int           // spans retrieved per query before grouping by document (default 1000)
	MinTime   time.Duration // each throughput measurement repeats the queries for at least this long (default 2s)
	// Embedder names the engine's embedder for the semantic and hybrid modes:
	// EmbedderMiniLM (the default), EmbedderGloVe or EmbedderNone (those
	// modes are then left out).
	Embedder string
	// Progress, if set, receives a line at most every few seconds while a
	// long phase runs (loci bench and loci eval print it to stderr).
	Progress func(string)
}

// BEIRModeResult is the quality and speed of one retrieval mode. Quality
// ranks documents from a deep retrieval (SpanDepth); speed is the search
// call alone at depth 10 and 100, one query after another on one goroutine.
type BEIRModeResult struct {
	NDCG10         float64 `json:"ndcg_at_10"`
	Recall100      float64 `json:"recall_at_100"`
	QueriesPerS    float64 `json:"queries_per_s"` // at depth 100
	QueriesPerSTop float64 `json:"queries_per_s_top10"`
}

// BEIRResult is what `loci eval beir --json` prints.
type BEIRResult struct {
	Dataset       string                    `json:"dataset"`
	Documents     int                       `json:"documents"`
	Queries       int                       `json:"queries"`
	Spans         int                       `json:"spans"`
	Embedder      string                    `json:"embedder"`
	Modes         map[string]BEIRModeResult `json:"modes"`
	Parity        map[string]BEIRModeResult `json:"lexical_parity"`
	Note          string                    `json:"note"`
	GOMAXPROCS    int                       `json:"gomaxprocs"`
	IngestSeconds float64                   `json:"ingest_seconds"`
}

// EvalBEIR measures retrieval quality and speed on a BEIR data set.
//
// Modes lexical, semantic and hybrid run through the engine: every document is
// ingested as a `document` artifact (title + text, chunked into spans), and a
// document's score is its best span's score; hybrid fuses the lexical and
// semantic document scores as the context packer fuses its channels: each
// channel's best-span scores divided by the channel's top score, weighted
// as pack.DefaultWeights weighs the two (HybridSemanticWeight, 0.576
// semantic). With Embedder EmbedderNone the semantic and hybrid modes are
// left out.
//
// lexical_parity indexes whole documents (title + " " + text, as Anserini's
// "flat" BEIR indexes do) straight into the BM25 index, with Lucene's lossy
// one-byte lengths ("lucene_norms") and with exact lengths, to compare with
// Anserini's published figure.
//
// Throughput is measured on one goroutine: queries, one after another,
// analysis and result resolution included.
func EvalBEIR(cfg BEIRConfig) (*BEIRResult, error) {
	if cfg.Split == "" {
		cfg.Split = "test"
	}
	if cfg.SpanDepth <= 0 {
		cfg.SpanDepth = 1000
	}
	if cfg.MinTime <= 0 {
		cfg.MinTime = 2 * time.Second
	}
	if cfg.Embedder == "" {
		cfg.Embedder = EmbedderMiniLM
	}
	emb, err := evalEmbedder(cfg.Embedder)
	if err != nil {
		return nil, err
	}
	data, err := LoadBEIR(cfg.Data, cfg.Split)
	if err != nil {
		return nil, err
	}
	res := &BEIRResult{Dataset: cfg.Data, Documents: len(data.Corpus), Queries: len(data.Queries), Embedder: cfg.Embedder,
		Modes: map[string]BEIRModeResult{}, Parity: map[string]BEIRModeResult{}, GOMAXPROCS: runtime.GOMAXPROCS(0)}

	// Parity: whole documents, straight into the BM25 index.
	mem := invindex.NewMemIndex()
	for i, d := range data.Corpus {
		var key [16]byte
		key[12], key[13], key[14], key[15] = byte(i>>24), byte(i>>16), byte(i>>8), byte(i)
		mem.Add(key, invindex.Analyze(d.Title+" "+d.Text, nil))
	}
	for name, p := range map[string]invindex.BM25{"lucene_norms": {K1: 0.9, B: 0.4, LossyNorms: true}, "exact_lengths": invindex.DefaultBM25} {
		search := func(q string, k int) []invindex.Hit {
			return invindex.Search([]invindex.Part{mem}, invindex.QueryTerms(invindex.Analyze(q, nil)), k, p)
		}
		rank := func(q string) []string {
			hits := search(q, 1000)
			out := make([]string, len(hits))
			for i, h := range hits {
				out[i] = data.Corpus[h.Doc].ID
			}
			return out
		}
		res.Parity[name] = evaluate(data, rank, func(q string, k int) { search(q, k) }, cfg.MinTime)
	}

	// The engine: documents as artifacts, chunked into spans.
	db, cleanup, err := evalEngine("loci-eval-beir-", emb)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	docOf := map[uuid.UUID]string{}
	start := time.Now()
	// Batches small enough that a sentence encoder embeds one well within
	// the engine's time limit for an Embed call.
	const batch = 32
	p := newProgress(cfg.Progress)
	for i := 0; i < len(data.Corpus); i += batch {
		p.tick("ingesting and embedding: %d of %d documents", i, len(data.Corpus))
		var ins []engine.IngestInput
		for _, d := range data.Corpus[i:min(i+batch, len(data.Corpus))] {
			payload, _ := json.Marshal(map[string]string{"title": d.Title, "content": d.Text})
			ins = append(ins, engine.IngestInput{Workspace: "beir", ActorID: "eval", Type: "document", Payload: payload, IdempotencyKey: d.ID})
		}
		rs, err := db.IngestBatch("eval", ins)
		if err != nil {
			return nil, err
		}
		for j, r := range rs {
			if emb != nil && !r.Embedded {
				return nil, fmt.Errorf("document %s stored without vectors (embedder %s failed; see the log)", ins[j].IdempotencyKey, emb.Model())
			}
			docOf[r.ArtifactID] = ins[j].IdempotencyKey
			res.Spans += len(r.SpanIDs)
		}
	}
	stop := p.during("compacting")
	err = db.Compact()
	stop()
	if err != nil {
		return nil, err
	}
	res.IngestSeconds = time.Since(start).Seconds()

	// Hits come best span first, so a document's first hit is its best score.
	group := func(hits []engine.SearchHit) docScores {
		out := docScores{}
		for _, h := range hits {
			id := docOf[h.ArtifactID]
			if _, seen := out[id]; !seen {
				out[id] = h.Score
			}
		}
		return out
	}
	var searchErr error
	lexSearch := func(q string, k int) []engine.SearchHit {
		hits, err := db.SearchLexical("eval", "beir", q, k)
		if err != nil {
			searchErr = err
		}
		return hits
	}
	semSearch := func(q string, k int) []engine.SearchHit {
		hits, err := retrieval.SearchSemantic(context.Background(), db, "eval", "beir", q, k)
		if err != nil {
			searchErr = err
		}
		return hits
	}
	lexical := func(q string) docScores { return group(lexSearch(q, cfg.SpanDepth)) }
	semantic := func(q string) docScores { return group(semSearch(q, cfg.SpanDepth)) }
	stop = p.during("evaluating the lexical, semantic and hybrid modes")
	defer stop()
	res.Modes["lexical"] = evaluate(data, func(q string) []string { return lexical(q).ranked() },
		func(q string, k int) { lexSearch(q, k) }, cfg.MinTime)
	if emb != nil {
		res.Modes["semantic"] = evaluate(data, func(q string) []string { return semantic(q).ranked() },
			func(q string, k int) { semSearch(q, k) }, cfg.MinTime)
		res.Modes["hybrid"] = evaluate(data, func(q string) []string {
			return fuseMaxNormalized(lexical(q), semantic(q), HybridSemanticWeight()).ranked()
		}, func(q string, k int) { lexSearch(q, k); semSearch(q, k) }, cfg.MinTime)
	}
	if searchErr != nil {
		return nil, searchErr
	}
	res.Note = "engine modes: documents chunked into spans (about 200 tokens), document score = best span score"
	return res, nil
}

// evaluate runs every query once through rank for quality, then times
// search at depths 100 and 10, repeating the queries for at least minTime.
func evaluate(data *BEIR, rank func(string) []string, search func(q string, k int), minTime time.Duration) BEIRModeResult {
	var r BEIRModeResult
	for _, q := range data.Queries {
		ranked := rank(q.Text)
		r.NDCG10 += NDCG(ranked, data.Qrels[q.ID], 10)
		r.Recall100 += Recall(ranked, data.Qrels[q.ID], 100)
	}
	n := float64(len(data.Queries))
	r.NDCG10 /= n
	r.Recall100 /= n
	qps := func(k int) float64 {
		var done int
		start := time.Now()
		for time.Since(start) < minTime {
			for _, q := range data.Queries {
				search(q.Text, k)
			}
			done += len(data.Queries)
		}
		return float64(done) / time.Since(start).Seconds()
	}
	r.QueriesPerS, r.QueriesPerSTop = qps(100), qps(10)
	return r
}

// HybridSemanticWeight is the semantic share of the eval's hybrid score:
// the context packer's, pack.DefaultWeights' semantic weight over the two
// query channels' (0.57 / 0.99), so that hybrid measures the product's
// fusion (each channel's score divided by its best, weighted), tuned on
// LoCoMo dev and not on this data set. Measured on SciFact test
// (docs/benchmarks.md, "fusion with the encoder"): with the built-in GloVe embedder
// weights 0.05-0.2 stayed within 0.011 nDCG@10 of lexical alone and larger
// ones lost more; with the MiniLM encoder hybrid beats lexical from 0.1 to
// 0.7.
func HybridSemanticWeight() float64 {
	w := pack.DefaultWeights()
	return w.Semantic / (w.Lexical + w.Semantic)
}

// docScores maps document ids to scores.
type docScores map[string]float64

// ranked returns the ids by score descending, ties by id.
func (s docScores) ranked() []string {
	ids := make([]string, 0, len(s))
	for id := range s {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		if s[ids[i]] != s[ids[j]] {
			return s[ids[i]] > s[ids[j]]
		}
		return ids[i] < ids[j]
	})
	return ids
}

// fuseMaxNormalized scores each document (1-w)*lex/maxLex + w*max(0,sem)/maxSem,
// as the context packer normalises its channels (a channel whose best
// score is not positive adds nothing).
func fuseMaxNormalized(lex, sem docScores, w float64) docScores {
	top := func(s docScores) float64 {
		var m float64
		for _, v := range s {
			m = max(m, v)
		}
		return m
	}
	out := docScores{}
	if m := top(lex); m > 0 {
		for id, v := range lex {
			out[id] += (1 - w) * v / m
		}
	}
	if m := top(sem); m > 0 {
		for id, v := range sem {
			out[id] += w * max(0, v) / m
		}
	}
	return out
}
