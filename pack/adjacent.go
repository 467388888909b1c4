package pack

import "github.com/loci-memory/loci/invindex"

// AdjacencyBonus: the lexical channel's score of a span counts (1 +
// AdjacencyBonus × adjacency) times, where adjacency is the share of the
// query's adjacent term pairs that the span holds next to each other, in
// the query's order (see termPairs). BM25 scores a bag of words: a short
// note that holds two of the query's three terms, apart or in another
// sense ("the billing database credentials are kept in Vault", "we rotate
// the Kafka credentials"), outscores a longer span that states all three
// together ("Runbook: rotate the database credentials. 1. ..."), whose
// term frequencies its length dilutes. A span that holds the query's terms
// as the query puts them is a direct match; one that shares its words
// scattered is a looser one (the idea of term-dependence models such as
// Metzler and Croft's sequential dependence model). On LoCoMo dev, whose
// answers rarely repeat a question's wording, evidence recall moved by
// +0.006, -0.002, 0 and -0.002 at 512, 1,024, 2,048 and 4,096 tokens
// (docs/pack.md, § Scoring).
const AdjacencyBonus = 1.0

// adjacencyCandidates bounds the candidates whose adjacency is measured: the
// best of the lexical channel by BM25 (ties in the packer's tie order); the
// others count no bonus.
const adjacencyCandidates = 32

// termPairs are the adjacent term pairs of a query as the lexical channel
// analyses it (invindex.AnalyzeQuestion: Lucene's English analysis, stop
// words and a question's scaffolding left out): "How do I rotate the
// database credentials?" has the pairs (i, rotat), (rotat, databas) and
// (databas, credenti) ("i" is not in Lucene's stop set). Pairs of one term twice are left out, and a pair listed twice
// counts once.
type termPairs struct {
	index map[uint64]int32 // wordKey of a query term -> ordinal
	pairs map[[2]int32]int // pair of ordinals -> pair number
	found []bool           // the query terms some text seen by count holds
	hit   []bool           // scratch: the pairs the text at hand holds
}

// newTermPairs returns the pairs of query, or nil when it has none.
func newTermPairs(query string) *termPairs {
	seq := invindex.AnalyzeQuestion(query)
	tp := &termPairs{index: map[uint64]int32{}, pairs: map[[2]int32]int{}}
	keys := make([]uint64, len(seq))
	for i, t := range seq {
		keys[i] = wordKey([]byte(t))
		if _, ok := tp.index[keys[i]]; !ok {
			tp.index[keys[i]] = int32(len(tp.index))
		}
	}
	for i := 0; i+1 < len(seq); i++ {
		p := [2]int32{tp.index[keys[i]], tp.index[keys[i+1]]}
		if _, ok := tp.pairs[p]; !ok && p[0] != p[1] {
			tp.pairs[p] = len(tp.pairs)
		}
	}
	if len(tp.pairs) == 0 {
		return nil
	}
	tp.found, tp.hit = make([]bool, len(tp.index)), make([]bool, len(tp.pairs))
	return tp
}

// count returns how many of the pairs a text holds: both terms next to
// each other, in the pair's order, after the same analysis; terms are the
// wordKeys of its index terms in order (indexTerms). It also marks the
// query terms the text holds (see found).
func (tp *termPairs) count(terms []uint64) int {
	clear(tp.hit)
	prev, n := int32(-1), 0
	for _, t := range terms {
		o, ok := tp.index[t]
		if !ok {
			prev = -1
			continue
		}
		tp.found[o] = true
		if prev >= 0 {
			if k, ok := tp.pairs[[2]int32{prev, o}]; ok && !tp.hit[k] {
				tp.hit[k] = true
				n++
			}
		}
		prev = o
	}
	return n
}

// reachable returns how many pairs have both terms among those found in
// the texts held has seen: pairs with a term no candidate holds cannot
// tell candidates apart.
func (tp *termPairs) reachable() int {
	n := 0
	for p := range tp.pairs {
		if tp.found[p[0]] && tp.found[p[1]] {
			n++
		}
	}
	return n
}
