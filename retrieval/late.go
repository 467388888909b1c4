package retrieval

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/pack"
	"github.com/loci-memory/loci/text"
)

// LateInteraction scores passages for a query by their token vectors
// (embed/colbert's Scorer: MaxSim). ScoreAll writes one score per passage
// to dst: texts are the passages as the model reads them
// (pack.RankTexts), spans the stored texts of their spans, and stored[i],
// when not nil, the rows the engine keeps of spans[i]
// (engine.View.TokenRows, computed by the engine's TokenRower), which the
// scorer uses instead of computing them when they are the rows it would
// compute. Each score must depend on its query and passage alone, so that
// packs stay deterministic whether rows are stored or computed.
//
// Query encodes a query for ScoreAll; a pack calls it at its start, on its
// own goroutine, so that it overlaps with the search.
type LateInteraction interface {
	Model() string
	Query(query string) (LateQuery, error)
	ScoreAll(ctx context.Context, q LateQuery, texts, spans []string, stored [][]byte, dst []float64) error
}

// LateQuery is a query as a LateInteraction encoded it.
type LateQuery = any

// LateWithout is a LateInteraction that can also score, in the same pass,
// each passage's content (its speaker's name aside) for the query without
// some of its words: ScoreAllWithout writes ScoreAll's scores to dst and
// those to content, or reports false (content left as it is) when query
// holds none of words. A pack asks for the query without the names of the
// scored passages' speakers (pack.Candidate's LateContent), which
// attribution weighs turns by: what a turn says about what is asked,
// whoever the query and the turn name, so the same in every client shape.
type LateWithout interface {
	ScoreAllWithout(ctx context.Context, q LateQuery, query string, words []string, texts, spans []string, stored [][]byte, dst, content []float64) (bool, error)
}

// lateQuery is a pack's query encoding, possibly still being computed.
type lateQuery struct {
	done chan struct{}
	q    LateQuery
	err  error
}

// startLateQuery encodes the query with li on its own goroutine.
func startLateQuery(li LateInteraction, query string) *lateQuery {
	lq := &lateQuery{done: make(chan struct{})}
	go func() {
		defer close(lq.done)
		lq.q, lq.err = li.Query(query)
	}()
	return lq
}

// SetLateInteraction gives the Packer its late-interaction model: packs
// whose request sets LateDepth score that many of their best candidates
// (by fused relevance, pack.Rank) with li before deciding (pack.LateWeight
// says how the scores blend in). Call it before the first pack.
func (p *Packer) SetLateInteraction(li LateInteraction) { p.li = li }

// lateInput is what late interaction scores in a pass: the best candidates
// with their stored rows, copied while the View is open (a segment's rows
// are mapped and go with it).
type lateInput struct {
	ids          []uuid.UUID
	texts, spans []string
	stored       [][]byte
	at           map[uuid.UUID]int
}

// lateCandidates picks the depth best candidates of g and reads their
// stored rows from v (docs says where each lives).
func (g *gathered) lateCandidates(v *engine.View, docs map[uuid.UUID]docRef, depth int) {
	ids, texts, at := g.best(depth)
	in := &lateInput{ids: ids, texts: texts, at: at, spans: make([]string, len(ids)), stored: make([][]byte, len(ids))}
	for k := range g.cands {
		c := &g.cands[k]
		i, ok := at[c.SpanID]
		if !ok {
			continue
		}
		in.spans[i] = c.Text
		if d, ok := docs[c.SpanID]; ok {
			in.stored[i] = v.TokenRows(d.part, d.doc)
		}
	}
	g.lateIn = in
}

// lateInteraction has li score the candidates lateCandidates chose and
// records the scores in them. It runs outside the engine's lock.
func (g *gathered) lateInteraction(ctx context.Context, li LateInteraction, lq *lateQuery) error {
	in := g.lateIn
	if in == nil || len(in.ids) == 0 {
		return nil
	}
	<-lq.done
	if lq.err != nil {
		return fmt.Errorf("retrieval: late interaction: %w", lq.err)
	}
	scores := make([]float64, len(in.ids))
	var content []float64 // the contents' scores without the speakers' names
	withContent := false
	var err error
	if lw, ok := li.(LateWithout); ok {
		content = make([]float64, len(in.ids))
		withContent, err = lw.ScoreAllWithout(ctx, lq.q, g.preq.Query, speakerWords(in.texts), in.texts, in.spans, in.stored, scores, content)
	} else {
		err = li.ScoreAll(ctx, lq.q, in.texts, in.spans, in.stored, scores)
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("retrieval: late interaction: %w", err)
	}
	for k := range g.cands {
		c := &g.cands[k]
		if i, ok := in.at[c.SpanID]; ok {
			c.Late, c.LateScored = scores[i], true
			if withContent {
				c.LateContent, c.LateContentScored = content[i], true
			}
		}
	}
	g.late = fmt.Sprintf(pack.AssumeLate, len(in.ids), li.Model())
	return nil
}

// speakerWords returns the words of the speakers' names of texts (passages
// as a model reads them, pack.RankTexts: "Caroline: ..."), lowercased,
// sorted and once each.
func speakerWords(texts []string) []string {
	var words []string
	for _, t := range texts {
		for _, w := range text.SpeakerWords(text.TurnSpeaker(t)) {
			words = append(words, strings.ToLower(w))
		}
	}
	slices.Sort(words)
	return slices.Compact(words)
}
