package retrieval

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/pack"
)

// Reranker is a relevance model that reads the query and a passage
// together (embed/crossenc): its logits lift the best candidates of a
// pack it finds relevant, not its confidence (pack/rerank.go). ScoreAll writes one
// logit per passage to dst; each must depend on its query and passage
// alone, so that packs stay deterministic.
type Reranker interface {
	Model() string
	ScoreAll(ctx context.Context, query string, passages []string, dst []float32, workers int) error
}

// MaxRerankDepth bounds a request's rerank_depth: each reranked candidate
// costs one forward pass of the model.
const MaxRerankDepth = 100

// SetReranker gives the Packer a relevance model; requests with a rerank
// depth use it. Call it before the first pack.
func (p *Packer) SetReranker(r Reranker) { p.rr = r }

// rerank has the model score the depth best candidates of g (pack.Rank)
// and records the logits in them. It runs outside the engine's lock.
func (g *gathered) rerank(ctx context.Context, rr Reranker, query string, depth int) error {
	ids, passages, at := g.best(depth)
	if len(ids) == 0 {
		return nil
	}
	logits := make([]float32, len(ids))
	if err := rr.ScoreAll(ctx, query, passages, logits, 0); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("retrieval: rerank: %w", err)
	}
	for k := range g.cands {
		c := &g.cands[k]
		if i, ok := at[c.SpanID]; ok {
			c.Rerank, c.Reranked = float64(logits[i]), true
		}
	}
	g.reranked = fmt.Sprintf(pack.AssumeReranked, len(ids), rr.Model())
	return nil
}

// best returns the span ids of the depth best candidates of g (pack.Rank),
// the texts a model reads for them (pack.RankTexts) and each id's place.
func (g *gathered) best(depth int) ([]uuid.UUID, []string, map[uuid.UUID]int) {
	ids, texts := pack.RankTexts(g.preq, g.pinned, g.cands)
	n := min(depth, len(ids))
	at := make(map[uuid.UUID]int, n)
	for i, id := range ids[:n] {
		at[id] = i
	}
	return ids[:n], texts[:n], at
}
