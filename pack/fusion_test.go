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
			score(cs, DefaultWeights().effective(true), in[0].Timestamp, 720, nil, nil, false, nil, nil)
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
			score(cs, Weights{Lexical: 1}.effective(true), in[0].Timestamp, 720, nil, queryTerms(tt.query), false, newTermPairs(tt.query), nil)
			for i, c := range cs {
				if c.rel != tt.want[i] {
					t.Errorf("span %d: relevance %v, want %v", i+1, c.rel, tt.want[i])
				}
			}
		})
	}
}

// TestOwnerPrior: a query in the first person that does not address the
// agent asks about the memory's owner: the turns of agent roles weigh
// SpeakerPrior, when some turn is of an owner role; a named speaker, a
// query that says "you" or none of "I", "me", "my", and a memory of agent
// turns alone leave relevance as it is.
func TestOwnerPrior(t *testing.T) {
	turn := func(n int, session string, seq uint64, text string, lex float64) Candidate {
		c := cnd(n, n, text, lex)
		c.SourceType, c.SessionID, c.Seq = "chat_turn", session, seq
		return c
	}
	note := cnd(4, 4, "assistant: a note, not a turn", 5)
	// A long turn's later span starts with no role: its turn's speaker
	// (TurnSpeaker) says whose it is.
	later := turn(5, "s2", 1, "10. Take Biscuit to the vet for a checkup.", 8)
	later.Start, later.TurnSpeaker = 200, "assistant"
	in := []Candidate{
		turn(1, "s1", 1, "user: I adopted a dog and named him Biscuit.", 10),
		turn(2, "s2", 1, "assistant: Biscuit is a lovely name for a dog! Here are ten tips for a new dog.", 10),
		turn(3, "s3", 1, "Caroline: My dog is called Biscuit.", 5),
		note,
		later,
	}
	for _, tt := range []struct {
		query   string
		turns   []Candidate
		lowered []bool // which spans of turns weigh SpeakerPrior
	}{
		{"What is my dog's name?", in, []bool{false, true, false, false, true}},
		{"What did I name the dog I adopted?", in, []bool{false, true, false, false, true}},
		{"I’m trying to remember my dog’s name", in, []bool{false, true, false, false, true}},
		{"What name did you suggest for my dog?", in, []bool{false, false, false, false, false}},
		{"What is the dog's name?", in, []bool{false, false, false, false, false}},
		// A named speaker: her prior (the user's and the agent's turns
		// have no named speaker, so are left alone), not the owner's.
		{"What did Caroline call my dog?", in, []bool{false, false, false, false, false}},
		{"What is my dog's name?", in[1:], []bool{false, false, false, false}},
	} {
		t.Run(tt.query, func(t *testing.T) {
			base := gather(nil, tt.turns, "")
			score(base, Weights{Lexical: 1}.effective(true), tt.turns[0].Timestamp, 720, nil, nil, false, newTermPairs(tt.query), nil)
			cs := gather(nil, tt.turns, "")
			score(cs, Weights{Lexical: 1}.effective(true), tt.turns[0].Timestamp, 720, nil, queryTerms(tt.query), asksOwner(tt.query), newTermPairs(tt.query), nil)
			for i, c := range cs {
				want := base[i].rel
				if tt.lowered[i] {
					want = round6(SpeakerPrior * want)
				}
				if c.rel != want {
					t.Errorf("span %q: relevance %v, want %v", c.Text, c.rel, want)
				}
			}
		})
	}
}

// TestAdjacency: a span holds a query's adjacent term pair when both terms
// are next to each other in its text, in the query's order, after the
// lexical channel's analysis (stop words and question words dropped,
// Porter stems); a pair listed twice counts once, and only pairs whose
// terms some span holds count in the share.
func TestAdjacency(t *testing.T) {
	// "i" is a term of the lexical channel (Lucene's stop set lacks it):
	// the pairs are (i, rotat), (rotat, databas), (databas, credenti).
	const q = "How do I rotate the database credentials?"
	for _, tt := range []struct {
		query, text string
		want        int
	}{
		{q, "Runbook: rotate the database credentials. 1. Create a new password.", 2},
		{q, "Rotating database credentials takes a minute.", 2},
		{q, "Here I rotate the database credentials.", 3},
		{q, "The billing database credentials are kept in Vault.", 1},
		{q, "We rotate the Kafka credentials every 30 days.", 0},
		{q, "The DBA database on-call rotation starts on Monday.", 0},
		{q, "Credentials of the database: rotate them.", 0},
		{q, "", 0},
		{"rotate rotate database", "rotate database rotate database", 1},         // (rotat, rotat) is no pair
		{"database credentials database credentials", "database credentials", 1}, // (databas, credenti) once; (credenti, databas)
	} {
		if got := newTermPairs(tt.query).count(indexTerms(tt.text)); got != tt.want {
			t.Errorf("%q in %q: %d pairs, want %d", tt.query, tt.text, got, tt.want)
		}
	}
	for _, q := range []string{"credentials", "How?", "the of and", "rotate rotate"} {
		if tp := newTermPairs(q); tp != nil {
			t.Errorf("%q: pairs %v, want none", q, tp.pairs)
		}
	}
	tp := newTermPairs(q)
	tp.count(indexTerms("The billing database credentials are kept in Vault."))
	if n := tp.reachable(); n != 1 {
		t.Errorf("reachable pairs after one text: %d, want 1", n)
	}
	tp.count(indexTerms("We rotate the Kafka credentials every 30 days."))
	if n := tp.reachable(); n != 2 {
		t.Errorf("reachable pairs after two texts: %d, want 2 (no text holds i)", n)
	}
}

// TestAdjacencyBonus: the lexical channel's score counts (1 +
// AdjacencyBonus × adjacency) times before it is normalised, so a span
// that states the query's terms together outranks shorter spans with a
// higher BM25 that share its words apart; candidates only the semantic
// channel returned are left alone.
func TestAdjacencyBonus(t *testing.T) {
	in := []Candidate{
		cnd(1, 1, "Runbook: rotate the database credentials. Step one is long.", 0.425),
		cnd(2, 2, "The billing database credentials are kept in Vault.", 0.44),
		cnd(3, 3, "We rotate the Kafka credentials every 30 days.", 0.43),
		cnd(4, 4, "Rotate the database credentials before Friday.", 0),
	}
	in[3].Semantic, in[3].InSemantic = 0.5, true
	cs := gather(nil, in, "")
	const q = "rotate the database credentials" // pairs (rotat, databas), (databas, credenti)
	score(cs, Weights{Lexical: 1}.effective(true), in[0].Timestamp, 720, nil, queryTerms(q), false, newTermPairs(q), nil)
	want := []float64{1, round6(0.44 * 1.5 / (0.425 * 2)), round6(0.43 / (0.425 * 2)), 0}
	for i, c := range cs {
		if round6(c.lex) != want[i] {
			t.Errorf("span %d: lexical %v, want %v", i+1, c.lex, want[i])
		}
	}
}
