package pack

import (
	"math"
	"slices"
	"testing"
)

// TestConfidenceFormula checks the documented formula on a hand-computed
// case.
func TestConfidenceFormula(t *testing.T) {
	a := cnd(1, 1, "The refund window is thirty days for annual plans.", 10)
	a.Tokens = 100
	b := cnd(2, 2, "Refunds go to the original card.", 5)
	b.Tokens = 50
	rq := req("refund window for monthly plans", 10000)
	r := Pack(rq, nil, []Candidate{a, b}, est)
	// query terms: refund window monthly plan; a holds refund, window, plan,
	// b only refund -> Q = 3/4 (the best single span)
	// strength = Q * A^2, A = 1 (notes: no speakers)
	// D = 150/200, C = 1, V = 2/3
	strength := 0.75
	support := 0.5*0.75 + 0.3*1 + 0.2*2.0/3
	want := round6(strength * (0.6 + 0.4*support))
	if math.Abs(r.Confidence-want) > 2e-6 {
		t.Errorf("confidence %v, want %v", r.Confidence, want)
	}
	if r.Abstain {
		t.Errorf("abstained: %q", r.AbstainReason)
	}
}

// TestConfidenceSignals: the components move confidence the documented way.
func TestConfidenceSignals(t *testing.T) {
	long := wordsText(0, 150)
	mk := func(n, a int, txt string, lex float64) Candidate {
		c := cnd(n, a, txt, lex)
		c.Tokens = 200
		return c
	}
	conf := func(query string, budget int, cs ...Candidate) float64 {
		return Pack(req(query, budget), nil, cs, est).Confidence
	}
	matching := mk(1, 1, "Refund window policy. "+long, 10)
	base := conf("refund window policy", 100000, matching)
	if other := conf("parking garage hours", 100000, matching); other >= base {
		t.Errorf("query coverage: unrelated query %v >= matching %v", other, base)
	}
	if diverse := conf("refund window policy", 100000, matching, mk(2, 2, "Refund window policy. "+wordsText(500, 150), 10)); diverse <= base {
		t.Errorf("source diversity: two artifacts %v <= one %v", diverse, base)
	}
	short := mk(1, 1, "Refund window policy.", 10)
	short.Tokens = 20
	if shallow := conf("refund window policy", 100000, short); shallow >= base {
		t.Errorf("evidence depth: 20 tokens %v >= 200 tokens %v", shallow, base)
	}
	cut := conf("refund window policy", est.Count(headerEvidence+footer+evidenceLine(1, matching.Text))+5,
		matching, mk(2, 2, "Refund window policy. "+wordsText(500, 150), 10))
	if cut >= conf("refund window policy", 100000, matching, mk(2, 2, "Refund window policy. "+wordsText(500, 150), 10)) {
		t.Errorf("budget coverage: cut %v not below uncut", cut)
	}
}

func TestAbstention(t *testing.T) {
	// Few evidence tokens: below the default floor of 5, and below a
	// request's own floor.
	frag := cnd(1, 1, "Refunds.", 10)
	r := Pack(req("refund", 1000), nil, []Candidate{frag}, est)
	if !r.Abstain || r.AbstainReason != AbstainFewTokens || len(r.Citations) != 1 {
		t.Errorf("fragment: abstain %v %q, %d citations", r.Abstain, r.AbstainReason, len(r.Citations))
	}
	tiny := cnd(1, 1, "Refunds: 30 days.", 10)
	rq := req("refund", 1000)
	rq.Tuning.MinEvidenceTokens = 20
	if r := Pack(rq, nil, []Candidate{tiny}, est); !r.Abstain || r.AbstainReason != AbstainFewTokens || len(r.Citations) != 1 {
		t.Errorf("min_evidence_tokens 20: abstain %v %q, %d citations", r.Abstain, r.AbstainReason, len(r.Citations))
	}
	if r := Pack(req("refund", 1000), nil, []Candidate{tiny}, est); r.Abstain {
		t.Errorf("defaults: abstained %q", r.AbstainReason)
	}

	// Low confidence: only recency, no query match.
	rq = req("quarterly revenue forecast", 1000)
	rq.SemanticAvailable = false
	stale := cnd(2, 2, wordsText(0, 150), 0)
	stale.Tokens = 200
	stale.InLexical = false
	r = Pack(rq, nil, []Candidate{stale}, est)
	if !r.Abstain || r.AbstainReason != AbstainLowConfidence || len(r.Citations) != 1 || r.ContextText == "" {
		t.Errorf("low confidence: abstain %v %q confidence %v, %d citations", r.Abstain, r.AbstainReason, r.Confidence, len(r.Citations))
	}
	rq.Tuning.MinConfidence = 0
	if r := Pack(rq, nil, []Candidate{stale}, est); r.Abstain {
		t.Errorf("min_confidence 0: abstained %q", r.AbstainReason)
	}

	// Nothing at all: insufficient evidence, whatever the thresholds.
	rq.Tuning = Tuning{MinConfidence: 0, MinEvidenceTokens: 0, MaxSpansPerArtifact: 3, DiversityDecay: 0.5, RedundancyJaccard: 0.8, TemporalHalfLifeHours: 720, MinRelevance: HighRecallMinRelevance}
	if r := Pack(rq, nil, nil, est); !r.Abstain || r.AbstainReason != AbstainFewTokens || r.Confidence != 0 {
		t.Errorf("empty: %v %q %v", r.Abstain, r.AbstainReason, r.Confidence)
	}
}

// TestQueryCoveragePerSpan: query coverage counts the terms found together
// in one span, so the query's terms scattered over two spans make weaker
// evidence than the same terms in one, and a pack whose best span holds a
// sixteenth of the query's terms abstains under the default min_confidence.
func TestQueryCoveragePerSpan(t *testing.T) {
	mk := func(n, a int, txt string, lex float64) Candidate {
		c := cnd(n, a, txt, lex)
		c.Tokens = 200
		return c
	}
	conf := func(query string, cs ...Candidate) *Result { return Pack(req(query, 100000), nil, cs, est) }
	together := conf("harbour crane inspection",
		mk(1, 1, "The harbour crane inspection is due. "+wordsText(0, 100), 10),
		mk(2, 2, "Unrelated notes. "+wordsText(300, 100), 5))
	scattered := conf("harbour crane inspection",
		mk(1, 1, "The harbour is busy. "+wordsText(0, 100), 10),
		mk(2, 2, "A crane inspection is due. "+wordsText(300, 100), 5))
	if scattered.Confidence >= together.Confidence {
		t.Errorf("scattered terms %v >= terms together %v", scattered.Confidence, together.Confidence)
	}
	if together.Abstain {
		t.Errorf("terms together: abstained %q (confidence %v)", together.AbstainReason, together.Confidence)
	}
	// Best span: 2 of 3 terms -> Q^2.5 = 0.363 at most; keeps.
	if scattered.Abstain {
		t.Errorf("two of three terms in one span: abstained %q (confidence %v)", scattered.AbstainReason, scattered.Confidence)
	}
	// Each span holds one of the seventeen terms: Q = 1/17 = 0.0588 < 0.06.
	third := conf("harbour crane inspection report schedule overtime budget forklift pallet customs tariff berth pilot gantry hawser quay bollard",
		mk(1, 1, "The harbour is busy. "+wordsText(0, 100), 10),
		mk(2, 2, "A crane arrived. "+wordsText(300, 100), 5),
		mk(3, 3, "The inspection passed. "+wordsText(600, 100), 4))
	if !third.Abstain || third.AbstainReason != AbstainLowConfidence {
		t.Errorf("one of seventeen terms per span: abstain %v %q (confidence %v)", third.Abstain, third.AbstainReason, third.Confidence)
	}
	if len(third.Citations) != 3 {
		t.Errorf("an abstaining pack still carries its evidence: %d citations", len(third.Citations))
	}
}

// TestOneSentenceFactAnswers: with the default tuning, one correct sentence
// that answers the query is evidence. With the former min_evidence_tokens
// of 20 each of these abstained as "Insufficient evidence tokens".
func TestOneSentenceFactAnswers(t *testing.T) {
	for _, tc := range []struct{ fact, query string }{
		{"The standup meeting is at 9:30 on Mondays.", "when is the standup meeting"},
		{"Caroline: I went to the LGBTQ support group yesterday.", "When did Caroline go to the LGBTQ support group?"},
		{"Refunds are accepted within 30 days.", "refund window days"},
		{"Our database password rotates every 90 days.", "how often does the database password rotate"},
	} {
		c := cnd(1, 1, tc.fact, 10)
		c.Tokens = est.Count(tc.fact)
		rq := req(tc.query, 4096)
		rq.Tuning = Tuning{}
		r := Pack(rq, nil, []Candidate{c}, est)
		if r.Abstain || len(r.Citations) != 1 {
			t.Errorf("%q (%d tokens) for %q: abstain %v %q, confidence %v, %d citations",
				tc.fact, c.Tokens, tc.query, r.Abstain, r.AbstainReason, r.Confidence, len(r.Citations))
		}
	}
}

// TestQueryCoverageOfTheBest: query coverage reads the CoverageTop most
// relevant included spans, so a weak match that a larger budget lets in
// does not raise confidence, however many of the query's terms it holds;
// the same span among the best does.
func TestQueryCoverageOfTheBest(t *testing.T) {
	query := "harbour crane inspection schedule"
	var cs []Candidate
	for i := range CoverageTop {
		cs = append(cs, cnd(i+1, i+1, "The harbour is busy today. "+wordsText(100*i, 30), 10))
	}
	weak := cnd(CoverageTop+1, CoverageTop+1, "Harbour crane inspection schedule: Mondays. "+wordsText(900, 30), 1)
	strong := weak
	strong.Lexical = 20
	conf := func(cs ...Candidate) *Result { return Pack(req(query, 100000), nil, cs, est) }
	base := conf(cs...)
	withWeak := conf(append(slices.Clone(cs), weak)...)
	withStrong := conf(append(slices.Clone(cs), strong)...)
	if len(withWeak.Citations) != CoverageTop+1 {
		t.Fatalf("the weak match is not included: %d citations", len(withWeak.Citations))
	}
	// base and withWeak differ only in depth and diversity, not in Q.
	if withWeak.Confidence > 1.5*base.Confidence {
		t.Errorf("a weak match that holds every query term raised confidence from %v to %v", base.Confidence, withWeak.Confidence)
	}
	if withStrong.Confidence < 3*base.Confidence {
		t.Errorf("the same span as the best match: confidence %v, not well above %v", withStrong.Confidence, base.Confidence)
	}
}
