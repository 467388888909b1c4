package retrieval

import (
	"context"
	"fmt"

	"github.com/loci-memory/loci/pack"
)

// LateInteraction scores passages for a query by their token vectors
// (embed/colbert: MaxSim). ScoreAll writes one score per passage to dst;
// each must depend on its query and passage alone, so that packs stay
// deterministic.
type LateInteraction interface {
	Model() string
	ScoreAll(ctx context.Context, query string, passages []string, dst []float64) error
}

// SetLateInteraction has every pack score its depth best candidates (by
// fused relevance, pack.Rank) with li before deciding (pack.LateWeight
// says how the scores blend in). Call it before the first pack.
//
// Not yet a request option: the passages' token vectors are computed when
// a pack asks for them (li may remember them), since segments do not store
// them yet, which costs about a model pass per new candidate. Evaluations
// use it (bench/lateinteraction) to measure what late interaction gives.
func (p *Packer) SetLateInteraction(li LateInteraction, depth int) {
	p.li, p.liDepth = li, min(depth, MaxRerankDepth)
}

// lateInteraction has li score the depth best candidates of g and records
// the scores in them. It runs outside the engine's lock.
func (g *gathered) lateInteraction(ctx context.Context, li LateInteraction, query string, depth int) error {
	ids, passages, at := g.best(depth)
	if len(ids) == 0 {
		return nil
	}
	scores := make([]float64, len(ids))
	if err := li.ScoreAll(ctx, query, passages, scores); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("retrieval: late interaction: %w", err)
	}
	for k := range g.cands {
		c := &g.cands[k]
		if i, ok := at[c.SpanID]; ok {
			c.Late, c.LateScored = scores[i], true
		}
	}
	g.late = fmt.Sprintf(pack.AssumeLate, len(ids), li.Model())
	return nil
}
