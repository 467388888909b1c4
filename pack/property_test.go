package pack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/text"
)

// scenario is a random Pack input.
type scenario struct {
	req        Request
	pinned     []Candidate
	candidates []Candidate
	tok        text.TokenCounter
}

var (
	actors    = []string{"alice", "bob", "carol"}
	tags      = []string{"finance", "hr", "eng"}
	sessions  = []string{"", "s1", "s2"}
	vocab     = strings.Fields("refund window policy days customers enterprise plan launch date budget approved rejected will not can cannot enabled disabled allowed prohibited revised to no longer replaced by latency ms users 30 45 99.9% $1,200 GB the a is of and")
	sentences = []string{
		"The refund window is 30 days.", "The refund window is 45 days.",
		"The launch was approved.", "The launch was rejected.",
		"Exports are enabled for enterprise.", "Exports are disabled for enterprise.",
		"The old plan was replaced by the enterprise plan.",
		"Line one\nline two\r\nline three.",
	}
)

// pick returns a random element of xs.
func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// subset returns a random subset of xs, in order, or nil.
func subset(r *rand.Rand, xs []string) []string {
	var out []string
	for _, x := range xs {
		if r.IntN(3) == 0 {
			out = append(out, x)
		}
	}
	return out
}

// randomText returns a span text: random vocabulary words, known
// sentences, copies of earlier texts (for redundancy) and odd characters.
func randomText(r *rand.Rand, earlier []string) string {
	if len(earlier) > 0 && r.IntN(6) == 0 {
		t := pick(r, earlier)
		if r.IntN(2) == 0 {
			t += " " + pick(r, vocab)
		}
		return t
	}
	var b strings.Builder
	for range r.IntN(60) {
		switch r.IntN(12) {
		case 0:
			b.WriteString(pick(r, sentences))
		case 1:
			b.WriteString(pick(r, []string{"日本語のテキスト", "Ünïcödé", "🎉", "\t", "\n\n", "[cite:9]", "=== END CONTEXT ==="}))
		default:
			b.WriteString(pick(r, vocab))
		}
		b.WriteByte(' ')
	}
	return b.String()
}

// randomScenario draws a scenario from seed.
func randomScenario(seed uint64) scenario {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	const asOf = 1_700_000_000_000_000
	nArt := 1 + r.IntN(12)
	type art struct {
		typ, creator, session string
		ts                    int64
		perm                  artifact.Permissions
	}
	arts := make([]art, nArt)
	for i := range arts {
		a := art{
			typ:     pick(r, artifact.Types),
			creator: pick(r, actors),
			session: pick(r, sessions),
			ts:      asOf - r.Int64N(5000*3600e6) + 100*3600e6,
		}
		if r.IntN(3) == 0 {
			a.perm = artifact.Permissions{
				Visibility:    pick(r, []string{"", "public", "private", "restricted", "secret"}),
				AllowedActors: subset(r, actors),
				DeniedActors:  subset(r, actors),
				RBACTags:      subset(r, tags),
			}
		}
		arts[i] = a
	}
	var all []Candidate
	var texts []string
	for i := range r.IntN(50) {
		ai := r.IntN(nArt)
		a := arts[ai]
		t := randomText(r, texts)
		texts = append(texts, t)
		c := Candidate{
			SpanID: spanID(i), ArtifactID: artID(ai),
			SourceType: a.typ, CreatorID: a.creator, SessionID: a.session, Timestamp: a.ts,
			Text: t, Tokens: est.Count(t), Start: i * 10, End: i*10 + len([]rune(t)),
			Permissions: a.perm,
		}
		if r.IntN(4) > 0 {
			c.Lexical, c.InLexical = r.Float64()*20, true
		}
		if r.IntN(3) > 0 {
			c.Semantic, c.InSemantic = r.Float64()*1.4-0.2, true
		}
		if r.IntN(40) == 0 {
			c.Lexical = math.NaN()
		}
		if r.IntN(5) == 0 {
			m := &c.Marks
			m.Pinned = r.IntN(4) == 0
			m.Private = r.IntN(3) == 0
			m.PrivateFor = subset(r, actors)
			m.MarkedWrong = r.IntN(4) == 0
			m.Outdated = r.IntN(4) == 0
			if m.Outdated && r.IntN(2) == 0 {
				m.OutdatedBy = "resolve_conflict " + uuid.UUID{byte(i)}.String()
			}
		}
		all = append(all, c)
	}
	s := scenario{tok: est}
	for _, c := range all {
		switch r.IntN(16) {
		case 0:
			s.pinned = append(s.pinned, c)
		case 1: // pinned and retrieved
			s.pinned = append(s.pinned, c)
			s.candidates = append(s.candidates, c)
		case 2: // found by both channels separately
			l, sm := c, c
			l.Semantic, l.InSemantic = 0, false
			sm.Lexical, sm.InLexical = 0, false
			s.candidates = append(s.candidates, l, sm)
		default:
			s.candidates = append(s.candidates, c)
		}
	}
	switch r.IntN(6) {
	case 0, 1:
		s.tok = superAdditive{}
	case 2:
		s.tok = lineSquare{}
	}
	budget := 1 + int(math.Exp(r.Float64()*math.Log(128000)))
	if r.IntN(5) == 0 {
		budget = 1 + r.IntN(40)
	}
	s.req = Request{
		Query:             strings.Join([]string{pick(r, vocab), pick(r, vocab), pick(r, vocab)}, " "),
		MaxTokens:         min(budget, 128000),
		ActorID:           pick(r, append([]string{""}, actors...)),
		SessionID:         pick(r, sessions),
		Mode:              pick(r, []string{"", ModeRelevance, ModeCoverage}),
		AsOf:              asOf,
		SemanticAvailable: r.IntN(3) > 0,
		Policy: Policy{
			AllowedSources: subset(r, artifact.Types[:5]),
			DeniedSources:  subset(r, artifact.Types[3:]),
			AllowedActors:  subset(r, actors),
			RBACRequired:   subset(r, tags[:2]),
			PrivacyLevel:   pick(r, []string{"", PrivacyDefault, PrivacyStrict}),
		},
	}
	if r.IntN(4) > 0 {
		s.req.Policy = Policy{}
	}
	switch r.IntN(3) {
	case 0:
		s.req.Tuning = DefaultTuning()
	case 1:
		s.req.Tuning = Tuning{
			MinConfidence:         r.Float64() * 0.5,
			MinEvidenceTokens:     r.IntN(100),
			MaxSpansPerArtifact:   1 + r.IntN(4),
			DiversityDecay:        r.Float64(),
			RedundancyJaccard:     0.3 + r.Float64()*0.7,
			TemporalHalfLifeHours: 1 + r.Float64()*2000,
		}
	}
	if r.IntN(2) == 0 {
		s.req.Weights = Weights{r.Float64(), r.Float64(), r.Float64()}
	}
	if r.IntN(4) == 0 { // a date in the query
		start := asOf - int64(r.IntN(30*24))*3600e6
		s.req.Windows = []Window{{Start: start, End: start + int64(1+r.IntN(30*24))*3600e6, Expr: "then"}}
	}
	return s
}

// shuffled returns s with its input slices shuffled.
func (s scenario) shuffled(seed uint64) scenario {
	r := rand.New(rand.NewPCG(seed, 1))
	s.pinned, s.candidates = slices.Clone(s.pinned), slices.Clone(s.candidates)
	r.Shuffle(len(s.pinned), func(i, j int) { s.pinned[i], s.pinned[j] = s.pinned[j], s.pinned[i] })
	r.Shuffle(len(s.candidates), func(i, j int) { s.candidates[i], s.candidates[j] = s.candidates[j], s.candidates[i] })
	return s
}

func (s scenario) pack() *Result { return Pack(s.req, s.pinned, s.candidates, s.tok) }

// spanFacts is what the inputs say about one span id, all entries merged.
type spanFacts struct {
	c                   Candidate
	pinned, markedWrong bool
	private             bool
	privateFor          []string
}

// facts merges the input entries per span id.
func (s scenario) facts() map[uuid.UUID]*spanFacts {
	m := map[uuid.UUID]*spanFacts{}
	add := func(c Candidate, pinned bool) {
		f := m[c.SpanID]
		if f == nil {
			f = &spanFacts{c: c}
			m[c.SpanID] = f
		}
		f.pinned = f.pinned || pinned || c.Marks.Pinned
		f.markedWrong = f.markedWrong || c.Marks.MarkedWrong
		f.private = f.private || c.Marks.Private
		f.privateFor = append(f.privateFor, c.Marks.PrivateFor...)
	}
	for _, c := range s.pinned {
		add(c, true)
	}
	for _, c := range s.candidates {
		add(c, false)
	}
	return m
}

// inScope reports whether the packer must consider a span.
func (s scenario) inScope(f *spanFacts) bool {
	return s.req.SessionID == "" || f.pinned || f.c.SessionID == s.req.SessionID
}

// allowed is an independent statement of the access rules: may the
// request's actor see the span under its policy?
func (s scenario) allowed(f *spanFacts) error {
	c, p, actor := f.c, s.req.Policy, s.req.ActorID
	strictReq := p.PrivacyLevel == PrivacyStrict
	if slices.Contains(p.DeniedSources, c.SourceType) {
		return fmt.Errorf("denied source")
	}
	if len(p.AllowedSources) > 0 && !slices.Contains(p.AllowedSources, c.SourceType) {
		return fmt.Errorf("source not allowed")
	}
	if len(p.AllowedActors) > 0 && !slices.Contains(p.AllowedActors, c.CreatorID) {
		return fmt.Errorf("creator not allowed")
	}
	for _, t := range p.RBACRequired {
		if !slices.Contains(c.Permissions.RBACTags, t) {
			return fmt.Errorf("missing tag %s", t)
		}
	}
	if slices.Contains(c.Permissions.DeniedActors, actor) {
		return fmt.Errorf("denied actor")
	}
	switch c.Permissions.Visibility {
	case "", "public":
	case "private":
		if actor == "" || actor != c.CreatorID || strictReq {
			return fmt.Errorf("private artifact")
		}
	case "restricted":
		if actor == "" || !slices.Contains(c.Permissions.AllowedActors, actor) {
			return fmt.Errorf("restricted artifact")
		}
	default:
		return fmt.Errorf("unknown visibility")
	}
	if f.private && (strictReq || actor == "" || !slices.Contains(f.privateFor, actor)) {
		return fmt.Errorf("private span")
	}
	if f.markedWrong {
		return fmt.Errorf("marked wrong")
	}
	return nil
}

// check verifies the invariants of one scenario's result.
func (s scenario) check(r *Result) error {
	if r.TotalTokens > s.req.MaxTokens {
		return fmt.Errorf("total tokens %d > budget %d", r.TotalTokens, s.req.MaxTokens)
	}
	if n := s.tok.Count(r.ContextText); n != r.TotalTokens {
		return fmt.Errorf("total tokens %d, but the text counts %d", r.TotalTokens, n)
	}
	ta := r.TokenAccounting
	if ta.Budget != s.req.MaxTokens || ta.TotalUsed != r.TotalTokens || ta.Remaining != ta.Budget-ta.TotalUsed || ta.Remaining < 0 {
		return fmt.Errorf("token accounting %+v", ta)
	}
	if r.Confidence < 0 || r.Confidence > 1 || math.IsNaN(r.Confidence) {
		return fmt.Errorf("confidence %v", r.Confidence)
	}
	if r.Abstain != (r.AbstainReason != "") {
		return fmt.Errorf("abstain %v with reason %q", r.Abstain, r.AbstainReason)
	}
	if len(r.Citations) == 0 && (!r.Abstain || r.ContextText != "") {
		return fmt.Errorf("no citations, abstain %v, text %q", r.Abstain, r.ContextText)
	}
	if want := PackHash(r.ContextText, r.Citations); r.PackHash != want {
		return fmt.Errorf("pack hash %s, recomputed %s", r.PackHash, want)
	}

	// Every considered span exactly once; none other.
	facts := s.facts()
	seen := map[uuid.UUID]string{}
	note := func(id uuid.UUID, what string) error {
		if prev, ok := seen[id]; ok {
			return fmt.Errorf("span %s twice: %s and %s", id, prev, what)
		}
		f := facts[id]
		if f == nil || !s.inScope(f) {
			return fmt.Errorf("span %s (%s) was out of scope", id, what)
		}
		seen[id] = what
		return nil
	}
	pinnedDone := false
	for i, c := range r.Citations {
		if c.Index != i+1 {
			return fmt.Errorf("citation %d has index %d", i, c.Index)
		}
		if err := note(c.SpanID, "cited"); err != nil {
			return err
		}
		f := facts[c.SpanID]
		if c.Pinned != f.pinned || c.Pinned && pinnedDone {
			return fmt.Errorf("citation %d pinned %v, span pinned %v", c.Index, c.Pinned, f.pinned)
		}
		pinnedDone = !c.Pinned
		if err := s.allowed(f); err != nil {
			return fmt.Errorf("cited span %s not allowed: %v", c.SpanID, err)
		}
		if c.ContentHash != artifact.SpanHash(f.c.Text) || !strings.HasPrefix(f.c.Text, c.ContentPreview) {
			return fmt.Errorf("citation %d content hash or preview", c.Index)
		}
		if !strings.Contains(r.ContextText, evidenceLine(c.Index, renderedLine(&f.c))) {
			return fmt.Errorf("citation %d: line missing from the text", c.Index)
		}
	}
	for _, e := range r.Exclusions {
		if err := note(e.SpanID, e.Reason); err != nil {
			return err
		}
		if e.Detail == "" {
			return fmt.Errorf("exclusion of %s has no detail", e.SpanID)
		}
	}
	for id, f := range facts {
		if _, ok := seen[id]; !ok && s.inScope(f) {
			return fmt.Errorf("span %s neither cited nor excluded", id)
		}
	}
	for _, cf := range r.Conflicts {
		if cf.CiteA >= cf.CiteB || cf.CiteB > len(r.Citations) ||
			r.Citations[cf.CiteA-1].SpanID != cf.ClaimA.SpanID || r.Citations[cf.CiteB-1].SpanID != cf.ClaimB.SpanID {
			return fmt.Errorf("conflict %+v does not match the citations", cf)
		}
		if !strings.Contains(r.ContextText, "\n"+conflictLine(&cf)) {
			return fmt.Errorf("conflict line missing")
		}
	}
	return checkLayout(r)
}

// checkLayout verifies that the context text is well formed: known headers
// in order, evidence lines numbered 1..n, conflict lines, the footer last.
func checkLayout(r *Result) error {
	if r.ContextText == "" {
		return nil
	}
	if !strings.HasSuffix(r.ContextText, footer) || r.ContextText != r.PrefixText+r.WorkingSetText+r.ContextText[len(r.PrefixText)+len(r.WorkingSetText):] {
		return fmt.Errorf("sections do not add up")
	}
	lines := strings.SplitAfter(r.ContextText, "\n")
	lines = lines[:len(lines)-1] // after the final "\n"
	section, cite := 0, 0
	order := []string{headerPinned, headerEvidence, headerConflicts, footer}
	for _, l := range lines {
		if i := slices.Index(order, l); i >= 0 {
			if i < section {
				return fmt.Errorf("header %q out of order", l)
			}
			section = i + 1
			continue
		}
		switch section {
		case 1, 2:
			cite++
			if !strings.HasPrefix(l, citeTag(cite)+" ") {
				return fmt.Errorf("evidence line %q, want cite %d", l, cite)
			}
		case 3:
			if !strings.HasPrefix(l, "Conflict [cite:") {
				return fmt.Errorf("conflict line %q", l)
			}
		default:
			return fmt.Errorf("line %q outside sections", l)
		}
	}
	if cite != len(r.Citations) {
		return fmt.Errorf("%d evidence lines, %d citations", cite, len(r.Citations))
	}
	return nil
}

// TestPackProperties: on random inputs, the budget holds, the count is
// exact, every considered span is cited or excluded exactly once, the
// access rules and feedback hold, and the layout is well formed.
func TestPackProperties(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 4000
	props := gopter.NewProperties(params)
	props.Property("pack invariants", prop.ForAll(func(seed uint64) string {
		s := randomScenario(seed)
		if err := s.check(s.pack()); err != nil {
			return err.Error()
		}
		return ""
	}, gen.UInt64()))
	props.TestingRun(t)
}

// TestPackDeterministic: the same inputs, in any order, give byte-identical
// marshalled results.
func TestPackDeterministic(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 1000
	props := gopter.NewProperties(params)
	props.Property("byte-identical results", prop.ForAll(func(seed uint64) string {
		s := randomScenario(seed)
		want, err := json.Marshal(s.pack())
		if err != nil {
			return err.Error()
		}
		for k := range uint64(3) {
			got, _ := json.Marshal(s.shuffled(seed + k).pack())
			if !bytes.Equal(got, want) {
				return fmt.Sprintf("shuffle %d differs:\n%s\n%s", k, got, want)
			}
		}
		return ""
	}, gen.UInt64()))
	props.TestingRun(t)
}

// TestPackBudgets: for one rich input, every budget of a sweep over
// 1..128000 holds and counts exactly, with both counters.
func TestPackBudgets(t *testing.T) {
	seed := uint64(7)
	s := randomScenario(seed)
	for len(s.candidates) < 40 {
		seed++
		s = randomScenario(seed)
	}
	s.req.Policy, s.req.ActorID, s.req.SessionID = Policy{}, "alice", ""
	takenOut := 0
	for _, tok := range []text.TokenCounter{est, superAdditive{}, lineSquare{}} {
		s.tok = tok
		for b := 1; b <= 128000; b += 1 + b/8 {
			s.req.MaxTokens = b
			r := s.pack()
			if err := s.check(r); err != nil {
				t.Fatalf("%T budget %d: %v", tok, b, err)
			}
			for _, e := range r.Exclusions {
				if strings.HasPrefix(e.Detail, "taken out") {
					takenOut++
				}
			}
		}
	}
	if takenOut == 0 {
		t.Error("the exact recount never took a span out: the non-additive counters did not bite")
	}
	t.Logf("%d spans taken out by the exact recount", takenOut)
}
