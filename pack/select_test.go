package pack

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestRedundancy(t *testing.T) {
	base := wordsText(0, 40)
	tests := []struct {
		name string
		dup  string
		want string
	}{
		{"identical", base, ReasonRedundancy},
		{"one word added", base + " extra", ReasonRedundancy},
		{"case and punctuation", strings.ToUpper(strings.ReplaceAll(base, " ", ", ")), ReasonRedundancy},
		{"shifted window", wordsText(1, 40), ReasonRedundancy}, // 38 of 40 shingles shared
		{"half shared", wordsText(20, 40), "cite:2"},
		{"different", wordsText(100, 40), "cite:2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := cnd(1, 1, base, 10)
			b := cnd(2, 2, tt.dup, 9)
			r := Pack(req("q", 10000), nil, []Candidate{a, b}, est)
			if got := outcome(r, b.SpanID); got != tt.want {
				t.Errorf("outcome %q, want %q", got, tt.want)
			}
			if tt.want == ReasonRedundancy {
				e := exclusionOf(t, r, b.SpanID)
				if !strings.Contains(e.Detail, a.SpanID.String()) || !strings.Contains(e.Detail, "[cite:1]") {
					t.Errorf("detail %q does not name the included span", e.Detail)
				}
			}
		})
	}
	// The threshold is a tuning knob.
	a, b := cnd(1, 1, base, 10), cnd(2, 2, wordsText(20, 40), 9)
	rq := req("q", 10000)
	rq.Tuning.RedundancyJaccard = 0.3
	if got := outcome(Pack(rq, nil, []Candidate{a, b}, est), b.SpanID); got != ReasonRedundancy {
		t.Errorf("threshold 0.3: %q", got)
	}
	// Redundant with a pinned span.
	if got := outcome(Pack(req("q", 10000), []Candidate{a}, []Candidate{cnd(2, 2, base, 9)}, est), spanID(2)); got != ReasonRedundancy {
		t.Errorf("against pinned: %q", got)
	}
}

// shingleSet is the plain shingle set of s.
func shingleSet(s string) map[uint64]bool {
	m := map[uint64]bool{}
	for _, h := range appendShingles(nil, s) {
		m[h] = true
	}
	return m
}

// naiveJaccard is the plain definition; 0 for two empty sets.
func naiveJaccard(a, b map[uint64]bool) float64 {
	inter := 0
	for h := range a {
		if b[h] {
			inter++
		}
	}
	if u := len(a) + len(b) - inter; u > 0 {
		return float64(inter) / float64(u)
	}
	return 0
}

// TestRedundancyIndex: the inverted index finds the most similar included
// span and its exact Jaccard similarity, as a comparison with each would.
func TestRedundancyIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	vocab := strings.Fields("a b c d e f g h i j k l m n o p")
	text := func() string {
		ws := make([]string, r.IntN(40))
		for i := range ws {
			ws[i] = vocab[r.IntN(4+r.IntN(len(vocab)-4))]
		}
		return strings.Join(ws, " ")
	}
	for round := range 50 {
		var x redundancyIndex
		var included []map[uint64]bool
		for range 1 + r.IntN(30) {
			s := text()
			if r.IntN(3) == 0 && len(included) > 0 {
				// A candidate query between additions.
				q := text()
				ord, j := x.mostSimilar(x.distinct(q))
				wantOrd, wantJ := -1, 0.0
				for i, in := range included {
					if nj := naiveJaccard(shingleSet(q), in); nj > wantJ {
						wantOrd, wantJ = i, nj
					}
				}
				if ord != wantOrd || math.Abs(j-wantJ) > 1e-12 {
					t.Fatalf("round %d: got %d %v, want %d %v", round, ord, j, wantOrd, wantJ)
				}
			}
			x.add(len(included), x.distinct(s))
			included = append(included, shingleSet(s))
		}
	}
}

// TestDiversityCap: at most max_spans_per_artifact spans per artifact; the
// rest are REDUNDANCY with a detail that says so.
func TestDiversityCap(t *testing.T) {
	var cs []Candidate
	for i := range 5 {
		cs = append(cs, cnd(i+1, 1, wordsText(i*50, 20), float64(10-i)))
	}
	cs = append(cs, cnd(9, 2, wordsText(900, 20), 5))
	r := Pack(req("q", 100000), nil, cs, est)
	for i := range 5 {
		want := "cite:" + fmt.Sprint(i+1)
		if i >= 3 {
			want = ReasonRedundancy
		}
		if got := outcome(r, spanID(i+1)); got != want {
			t.Errorf("span %d: %q, want %q", i+1, got, want)
		}
	}
	if e := exclusionOf(t, r, spanID(4)); e.Detail != "artifact already has 3 spans in the pack (max_spans_per_artifact)" {
		t.Errorf("detail %q", e.Detail)
	}
	if got := outcome(r, spanID(9)); got != "cite:4" {
		t.Errorf("other artifact: %q", got)
	}
	// Pinned spans count towards their artifact's share.
	rq := req("q", 100000)
	rq.Tuning.MaxSpansPerArtifact = 1
	r = Pack(rq, []Candidate{cs[4]}, cs[:4], est)
	for i := range 4 {
		if got := outcome(r, spanID(i+1)); got != ReasonRedundancy {
			t.Errorf("with a pinned span of the artifact, span %d: %q", i+1, got)
		}
	}
}

// TestCoverageDecay: in coverage mode the second span of an artifact
// competes with its relevance discounted by diversity_decay, so a less
// relevant span of another artifact comes first; relevance mode keeps the
// plain order. Reported scores are undiscounted.
func TestCoverageDecay(t *testing.T) {
	// Lexical scores are divided by the best (10); rel = 0.4·that + 0.01
	// (temporal). The relevances are those of the rank fusion this test
	// was written for, times 0.78, so every comparison below is the same.
	a1 := cnd(1, 1, wordsText(0, 20), 10)     // 0.41
	a2 := cnd(2, 1, wordsText(100, 20), 9.85) // 0.404, discounted 0.202
	b1 := cnd(3, 2, wordsText(200, 20), 9.56) // 0.3924
	c1 := cnd(4, 3, wordsText(300, 20), 9.43) // 0.3872
	a3 := cnd(5, 1, wordsText(400, 20), 9.71) // 0.3984, discounted twice 0.0996
	cs := []Candidate{a1, a2, b1, c1, a3}
	order := func(r *Result) string {
		var s []string
		for _, c := range r.Citations {
			s = append(s, fmt.Sprint(c.SpanID[1]))
		}
		return strings.Join(s, ",")
	}
	rq := req("q", 100000)
	rq.Weights = Weights{Lexical: 0.40, Semantic: 0.59, Temporal: 0.01}
	if got := order(Pack(rq, nil, cs, est)); got != "1,2,5,3,4" {
		t.Errorf("relevance mode order %s", got)
	}
	rq.Mode = ModeCoverage
	r := Pack(rq, nil, cs, est)
	if got := order(r); got != "1,3,4,2,5" {
		t.Errorf("coverage mode order %s", got)
	}
	if r.Citations[3].RelevanceScore != 0.404 {
		t.Errorf("reported score %v, want the undiscounted 0.404", r.Citations[3].RelevanceScore)
	}
	rq.Tuning.DiversityDecay = 1 // no discount: the relevance order
	if got := order(Pack(rq, nil, cs, est)); got != "1,2,5,3,4" {
		t.Errorf("coverage mode without decay: %s", got)
	}
	// Decay 0.95: a2 at 0.3838 still loses to b1 and c1 (0.3924, 0.3872);
	// once a2 is in, a3 at 0.3984·0.9025 = 0.3596 comes last.
	rq.Tuning.DiversityDecay = 0.95
	if got := order(Pack(rq, nil, cs, est)); got != "1,3,4,2,5" {
		t.Errorf("coverage mode decay 0.95: %s", got)
	}
	// Decay 0.99: a2 at 0.39996 beats b1; a3 at 0.3984·0.9801 = 0.3905
	// then loses to b1 but beats c1.
	rq.Tuning.DiversityDecay = 0.99
	if got := order(Pack(rq, nil, cs, est)); got != "1,2,3,5,4" {
		t.Errorf("coverage mode decay 0.99: %s", got)
	}
}

// TestRelevanceFloor: candidates far below the best are LOW_RELEVANCE;
// pinned spans are exempt.
func TestRelevanceFloor(t *testing.T) {
	const halfLife = int64(720 * 3600e6)
	rq := req("q", 100000)
	rq.Weights = Weights{Lexical: 0.5, Temporal: 0.5}
	// Temporal t at age -log2(t) half-lives; rel = 0.5·lexical rank score + 0.5·t.
	aged := func(c Candidate, t float64) Candidate {
		c.Timestamp = rq.AsOf - int64(-math.Log2(t)*float64(halfLife))
		return c
	}
	best := cnd(1, 1, wordsText(0, 10), 100)                    // 0.5 + 0.5 = 1
	above := aged(cnd(2, 2, wordsText(100, 10), 0), 0.45)       // 0.225: above the floor 0.2, kept
	below := aged(cnd(3, 3, wordsText(200, 10), 0), 0.38)       // 0.19
	zero := aged(cnd(4, 4, wordsText(300, 10), 0), 1.0/(1<<30)) // about 0
	pin := aged(cnd(5, 5, wordsText(400, 10), 0), 1.0/(1<<30))
	r := Pack(rq, []Candidate{pin}, []Candidate{best, above, below, zero}, est)
	want := map[int]string{1: "cite:2", 2: "cite:3", 3: ReasonLowRelevance, 4: ReasonLowRelevance, 5: "cite:1"}
	for n, w := range want {
		if got := outcome(r, spanID(n)); got != w {
			t.Errorf("span %d: %q, want %q", n, got, w)
		}
	}
	if e := exclusionOf(t, r, spanID(3)); e.Detail != "relevance 0.19 is below the floor 0.2 (the larger of 0.02 and min_relevance 0.2 × the best relevance 1)" || e.RelevanceScore != 0.19 {
		t.Errorf("exclusion %+v", e)
	}
	// The default share, 0.4, stops before 0.225 as well; 0 keeps all
	// but the absolute floor's.
	for _, tt := range []struct {
		share float64
		want  map[int]string
	}{
		{MinRelevance, map[int]string{1: "cite:2", 2: ReasonLowRelevance, 3: ReasonLowRelevance, 4: ReasonLowRelevance, 5: "cite:1"}},
		{0, map[int]string{1: "cite:2", 2: "cite:3", 3: "cite:4", 4: ReasonLowRelevance, 5: "cite:1"}},
	} {
		rq := rq
		rq.Tuning.MinRelevance = tt.share
		r := Pack(rq, []Candidate{pin}, []Candidate{best, above, below, zero}, est)
		for n, w := range tt.want {
			if got := outcome(r, spanID(n)); got != w {
				t.Errorf("min_relevance %v: span %d: %q, want %q", tt.share, n, got, w)
			}
		}
	}
	// The absolute floor: when everything is weak, 0.02 still applies.
	rq.Weights = Weights{Lexical: 0.01, Temporal: 0.99}
	old := cnd(6, 6, wordsText(500, 10), 0)
	old.Timestamp = rq.AsOf - 30*halfLife // 30 half-lives: temporal ~ 0
	r = Pack(rq, nil, []Candidate{old}, est)
	if got := outcome(r, old.SpanID); got != ReasonLowRelevance {
		t.Errorf("weak alone: %q", got)
	}
}

func TestScore(t *testing.T) {
	const hour = int64(3600e6)
	rq := req("q", 1000)
	a := cnd(1, 1, "a", 10)
	a.Semantic, a.InSemantic = 0.8, true
	b := cnd(2, 2, "b", 5)
	b.Semantic = 1.7 // clamped to 1
	b.Timestamp = rq.AsOf - 720*hour
	c := cnd(3, 3, "c", math.Inf(1)) // non-finite: 0
	c.Semantic = -0.3                // clamped to 0
	c.Timestamp = rq.AsOf + 100*hour // future: as of AsOf
	cs := gather(nil, []Candidate{a, b, c}, "")
	w := DefaultWeights().effective(true)
	score(cs, w, rq.AsOf, 720, nil, nil, false, nil, nil)
	// Channels contribute their score divided by the channel's best: lexical
	// a 10/10, b 5/10, c 0 (non-finite); semantic only a, which the channel
	// returned (b's 1.7 is not a returned score), 0.8/0.8.
	want := []float64{
		round6(w.Lexical*1 + w.Semantic*1 + w.Temporal*1),
		round6(w.Lexical*0.5 + w.Temporal*0.5),
		round6(w.Temporal),
	}
	for i, c := range cs {
		if c.rel != want[i] {
			t.Errorf("span %d: relevance %v, want %v", i+1, c.rel, want[i])
		}
	}
	// A channel whose best score is not positive contributes nothing, and a
	// negative cosine counts as 0.
	d1 := cnd(1, 1, "d1", 0)
	d1.Lexical, d1.InLexical, d1.Semantic, d1.InSemantic = -2, true, 0.5, true
	d2 := cnd(2, 2, "d2", 0)
	d2.Semantic, d2.InSemantic = -0.2, true
	cs = gather(nil, []Candidate{d1, d2}, "")
	score(cs, w, rq.AsOf, 720, nil, nil, false, nil, nil)
	if cs[0].lex != 0 || cs[0].sem != 1 || cs[1].sem != 0 {
		t.Errorf("lexical %v, semantic %v and %v", cs[0].lex, cs[0].sem, cs[1].sem)
	}
	// Semantic unavailable: its weight goes to the others in proportion.
	d := DefaultWeights()
	w = d.effective(false)
	if math.Abs(w.Lexical-d.Lexical/(d.Lexical+d.Temporal)) > 1e-12 || w.Semantic != 0 || math.Abs(w.Temporal-d.Temporal/(d.Lexical+d.Temporal)) > 1e-12 {
		t.Errorf("weights without semantic %+v", w)
	}
	r := Pack(Request{Query: "a", MaxTokens: 100}, nil, []Candidate{a}, est)
	if len(r.Assumptions) != 1 || r.Assumptions[0] != AssumeNoSemantic || r.ChannelContributions[1].Weight != 0 {
		t.Errorf("assumptions %q, contributions %+v", r.Assumptions, r.ChannelContributions)
	}
	// Zero and negative weights fall back to the defaults.
	if got := (Weights{-1, 0, math.NaN()}).effective(true); got != DefaultWeights().effective(true) {
		t.Errorf("weights %+v", got)
	}
}

// TestContext: a candidate near a stronger one in its session (or, with no
// session, in its artifact) gets a share of the stronger one's own
// relevance: ContextShare one place away, ContextShareStep less per place
// further, up to ContextWindow places; never from another group
// (TestNeighboursFollowConversationOrder covers the order itself).
func TestContext(t *testing.T) {
	const sec = int64(1e6)
	rq := req("q", 1000)
	at := func(c Candidate, session string, ts int64) Candidate {
		c.SessionID, c.Timestamp = session, rq.AsOf+ts
		return c
	}
	strong := at(cnd(1, 1, "strong", 10), "s1", 10*sec)
	after := at(cnd(2, 2, "after", 0), "s1", 11*sec)         // next in s1
	further := at(cnd(3, 3, "further", 0), "s1", 12*sec)     // two places after
	before := at(cnd(4, 4, "before", 0), "s1", 9*sec)        // previous in s1
	other := at(cnd(5, 5, "other session", 0), "s2", 10*sec) // another session
	late := at(cnd(6, 6, "late", 0), "s1", 10*sec-601*sec)   // two places before
	chunk1 := at(cnd(7, 7, "chunk one", 8), "", 0)           // no session: its artifact groups
	chunk2 := at(cnd(8, 7, "chunk two", 0), "", 0)
	chunk2.Start = 100
	lone := at(cnd(9, 9, "other artifact", 0), "", 0)
	third := at(cnd(10, 10, "third", 0), "s1", 13*sec)   // three places after
	fourth := at(cnd(11, 11, "fourth", 0), "s1", 14*sec) // four places after: out of the window
	fifth := at(cnd(12, 12, "fifth", 0), "s1", 15*sec)   // five places after
	for _, c := range []*Candidate{&after, &further, &before, &other, &late, &chunk2, &lone, &third, &fourth, &fifth} {
		c.Lexical, c.InLexical = 0, false
	}
	cs := gather(nil, []Candidate{strong, after, further, before, other, late, chunk1, chunk2, lone, third, fourth, fifth}, "")
	w := DefaultWeights().effective(true)
	score(cs, w, rq.AsOf, 720, nil, nil, false, nil, nil)
	rel := map[int]float64{}
	for _, c := range cs {
		rel[int(c.SpanID[1])] = c.rel
	}
	temporal := func(ts int64) float64 {
		return w.Temporal * math.Exp2(-float64(max(0, rq.AsOf-(rq.AsOf+ts)))/3600e6/720)
	}
	own1 := round6(w.Lexical*1 + temporal(10*sec))
	own7 := round6(w.Lexical*0.8 + temporal(0))
	want := map[int]float64{
		1:  own1,
		2:  round6(ContextShare * own1),
		3:  round6(0.70 * own1), // its neighbour "after" lends only its own relevance, not what it got from "strong"
		4:  round6(ContextShare * own1),
		5:  round6(temporal(10 * sec)),
		6:  round6(0.70 * own1),
		7:  own7,
		8:  round6(ContextShare * own7),
		9:  round6(temporal(0)),
		10: round6(0.65 * own1),
		11: round6(temporal(14 * sec)),
		12: round6(temporal(15 * sec)),
	}
	for n, w := range want {
		if rel[n] != w {
			t.Errorf("span %d: relevance %v, want %v", n, rel[n], w)
		}
	}
}

// TestGather: duplicates merge whatever their order; session scoping drops
// retrieved spans of other sessions but never pinned ones.
func TestGather(t *testing.T) {
	lex := cnd(1, 1, "span one", 7)
	sem := lex
	sem.Lexical, sem.InLexical, sem.Semantic, sem.InSemantic = 0, false, 0.6, true
	sem.Marks = Marks{Private: true, PrivateFor: []string{"bob"}}
	lex.Marks = Marks{Private: true, PrivateFor: []string{"alice", "bob"}}
	for _, in := range [][]Candidate{{lex, sem}, {sem, lex}} {
		cs := gather(nil, in, "")
		if len(cs) != 1 {
			t.Fatalf("%d candidates", len(cs))
		}
		c := cs[0]
		if c.Lexical != 7 || c.Semantic != 0.6 || !c.InLexical || !c.InSemantic ||
			strings.Join(c.Marks.PrivateFor, ",") != "alice,bob" {
			t.Errorf("merged %+v", c.Candidate)
		}
	}
	other := cnd(2, 2, "other session", 5)
	other.SessionID = "s2"
	mine := cnd(3, 3, "my session", 5)
	mine.SessionID = "s1"
	pinnedOther := cnd(4, 4, "pinned elsewhere", 0)
	pinnedOther.SessionID = "s2"
	markedPinned := cnd(5, 5, "marked pinned elsewhere", 1)
	markedPinned.SessionID = "s2"
	markedPinned.Marks.Pinned = true
	rq := req("session", 1000)
	rq.SessionID = "s1"
	r := Pack(rq, []Candidate{pinnedOther}, []Candidate{other, mine, markedPinned}, est)
	if got := outcome(r, other.SpanID); got != "" {
		t.Errorf("other session: %q, want dropped silently", got)
	}
	for _, c := range []Candidate{mine, pinnedOther, markedPinned} {
		if got := outcome(r, c.SpanID); !strings.HasPrefix(got, "cite:") {
			t.Errorf("%s: %q", c.Text, got)
		}
	}
	if n := r.ChannelContributions[2].CandidateCount; n != 3 {
		t.Errorf("temporal candidates %d, want 3 (after scoping)", n)
	}
}

func TestTuningEffective(t *testing.T) {
	if (Tuning{}).effective() != DefaultTuning() {
		t.Error("zero tuning is not the default")
	}
	got := Tuning{MinConfidence: 2, MinEvidenceTokens: -1, MaxSpansPerArtifact: 0, DiversityDecay: math.NaN(), RedundancyJaccard: 0, TemporalHalfLifeHours: -5, MinRelevance: 1.5}.effective()
	if got != DefaultTuning() {
		t.Errorf("invalid fields not defaulted: %+v", got)
	}
	keep := Tuning{MinConfidence: 0, MinEvidenceTokens: 0, MaxSpansPerArtifact: 1, DiversityDecay: 0, RedundancyJaccard: 1, TemporalHalfLifeHours: 1, MinRelevance: 0}
	if got := keep.effective(); got != keep {
		t.Errorf("valid fields changed: %+v", got)
	}
}
