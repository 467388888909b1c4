package pack

import (
	"fmt"
	"testing"
)

// TestChannelNormalisation: each query channel contributes its score
// divided by its best score among the candidates it returned, whatever the
// scale (BM25 in the tens, cosines below 1) and however many ties.
func TestChannelNormalisation(t *testing.T) {
	for _, tt := range []struct {
		name     string
		lex, sem []float64 // per candidate; NaN-free; a negative sem is a returned negative cosine
		inSem    []bool
		wantLex  []float64
		wantSem  []float64
	}{
		{"BM25 scale", []float64{12, 6, 3}, []float64{0, 0, 0}, []bool{false, false, false},
			[]float64{1, 0.5, 0.25}, []float64{0, 0, 0}},
		{"cosines keep their distance to the best", []float64{0, 0, 0}, []float64{0.8, 0.4, 0.2}, []bool{true, true, true},
			[]float64{0, 0, 0}, []float64{1, 0.5, 0.25}},
		{"ties score the same", []float64{5, 5, 1}, []float64{0.5, 0.5, 0.5}, []bool{true, true, true},
			[]float64{1, 1, 0.2}, []float64{1, 1, 1}},
		{"negative cosines count as 0", []float64{1, 0, 0}, []float64{0.3, -0.1, 0}, []bool{true, true, false},
			[]float64{1, 0, 0}, []float64{1, 0, 0}},
		{"no positive cosine: the channel gives nothing", []float64{2, 1, 0}, []float64{-0.2, -0.1, 0}, []bool{true, true, false},
			[]float64{1, 0.5, 0}, []float64{0, 0, 0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var in []Candidate
			for i := range tt.lex {
				c := cnd(i+1, i+1, fmt.Sprintf("span %d", i), tt.lex[i])
				c.Semantic, c.InSemantic = tt.sem[i], tt.inSem[i]
				in = append(in, c)
			}
			cs := gather(nil, in, "")
			score(cs, DefaultWeights().effective(true), in[0].Timestamp, 720, nil)
			for i, c := range cs {
				if c.lex != tt.wantLex[i] || c.sem != tt.wantSem[i] {
					t.Errorf("span %d: lexical %v semantic %v, want %v %v", i+1, c.lex, c.sem, tt.wantLex[i], tt.wantSem[i])
				}
			}
		})
	}
}

// TestSpeakerPrior: when the query names the speaker of a chat turn, the
// turns of speakers it does not name weigh SpeakerPrior of their relevance,
// after the context step; spans of unknown speaker and queries that name
// no speaker (or every speaker) are left alone.
func TestSpeakerPrior(t *testing.T) {
	turn := func(n int, session string, seq uint64, text string, lex float64) Candidate {
		c := cnd(n, n, text, lex)
		c.SourceType, c.SessionID, c.Seq = "chat_turn", session, seq
		return c
	}
	later := turn(4, "s2", 1, "Mel: the rest of a long turn", 5)
	later.Start = 200 // not the first span of its turn: speaker unknown
	note := cnd(5, 5, "Mel: a note, not a turn", 5)
	in := []Candidate{
		turn(1, "s1", 1, "Caroline: I painted a sunrise.", 10),
		turn(2, "s1", 2, "Mel: That is lovely!", 0),
		turn(3, "s3", 1, "Mel: I painted a lake.", 10),
		later, note,
	}
	own := func(lex float64) float64 { return lex / 10 } // lexical weight 1: own relevance = BM25 / the best
	p := func(x float64) float64 { return round6(SpeakerPrior * x) }
	for _, tt := range []struct {
		query string
		want  []float64 // relevance of spans 1-5
	}{
		{"What did Caroline paint?", []float64{own(10), p(round6(ContextShare * own(10))), p(own(10)), own(5), own(5)}},
		{"What did Mel paint?", []float64{p(own(10)), round6(ContextShare * own(10)), own(10), own(5), own(5)}},
		{"What did Caroline's friend Mel paint?", []float64{own(10), round6(ContextShare * own(10)), own(10), own(5), own(5)}},
		{"What was painted?", []float64{own(10), round6(ContextShare * own(10)), own(10), own(5), own(5)}},
		{"What did Dana paint?", []float64{own(10), round6(ContextShare * own(10)), own(10), own(5), own(5)}},
	} {
		t.Run(tt.query, func(t *testing.T) {
			cs := gather(nil, in, "")
			score(cs, Weights{Lexical: 1}.effective(true), in[0].Timestamp, 720, queryTerms(tt.query))
			for i, c := range cs {
				if c.rel != tt.want[i] {
					t.Errorf("span %d: relevance %v, want %v", i+1, c.rel, tt.want[i])
				}
			}
		})
	}
}
