package pack

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

func TestSpeakerTerms(t *testing.T) {
	tests := []struct {
		typ   string
		start int
		text  string
		want  string // the speaker's words, as they hash, or "" for none
	}{
		{"chat_turn", 0, "Caroline: I went to the support group.", "caroline"},
		{"chat_turn", 0, "Mary Ann Smith: hello", "mary ann smith"},
		{"chat_turn", 0, "user: what is the refund window?", ""}, // a generic role names no one
		{"chat_turn", 0, "Note: the speaker is not known", ""},
		{"chat_turn", 0, "Dr. Who's Friend: hi", "dr who's friend"},
		{"chat_turn", 12, "Caroline: a later span of a long turn", ""},
		{"note", 0, "Caroline: notes are not turns", ""},
		{"chat_turn", 0, "At 10:30 we met", ""},
		{"chat_turn", 0, "The four of us in the meeting room said: no", ""},
		{"chat_turn", 0, "R2D2: beep", ""},
		{"chat_turn", 0, "no colon here", ""},
		{"chat_turn", 0, ": empty role", ""},
	}
	for _, tt := range tests {
		c := &cand{Candidate: Candidate{SourceType: tt.typ, Start: tt.start, Text: tt.text}}
		var want []uint64
		for _, w := range words(tt.want) {
			h, _ := termHash([]byte(w))
			want = append(want, h)
		}
		if got := speakerTerms(c); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("speakerTerms(%s %d %q) = %v, want %v (%q)", tt.typ, tt.start, tt.text, got, want, tt.want)
		}
	}
}

// chatTurn is a chat turn candidate n of lexical score lex.
func chatTurn(n int, text string, lex float64) Candidate {
	c := cnd(n, n, text, lex)
	c.SourceType = "chat_turn"
	return c
}

// TestAttribution: a question about what one speaker did, whose best
// evidence is another speaker's turn, abstains; the same evidence answers
// the question about the speaker who said it, and a question that names no
// speaker is not affected. Before attribution, the first pack did not
// abstain (query coverage 3/4 from the other speaker's words).
func TestAttribution(t *testing.T) {
	turn := chatTurn
	conversation := []Candidate{
		turn(1, "Melanie: Thanks, Caroline! The charity race was great, I realize self-care is really important.", 10),
		turn(2, "Melanie: I ran a charity race for mental health last Saturday, Caroline.", 9),
		turn(3, "Melanie: The race was tough but I realize how much I love running.", 8),
		turn(4, "Caroline: That sounds great, Mel! I am proud of you.", 5),
	}
	tests := []struct {
		query   string
		abstain bool
	}{
		{"What did Caroline realize after her charity race?", true},
		{"What did Melanie realize after her charity race?", false},
		{"What did someone realize after the charity race?", false},
	}
	for _, tt := range tests {
		r := Pack(req(tt.query, 4096), nil, conversation, est)
		if r.Abstain != tt.abstain || tt.abstain && r.AbstainReason != AbstainLowConfidence || len(r.Citations) != 4 {
			t.Errorf("%q: abstain %v %q (confidence %v, %d citations), want abstain %v",
				tt.query, r.Abstain, r.AbstainReason, r.Confidence, len(r.Citations), tt.abstain)
		}
	}
	// The factor itself: the AttributionTop spans, among the attributed
	// spans the lexical channel returned, with the largest BM25 score
	// times the share of the words asked about they hold. Turns that ask
	// are not read, nor a span the lexical channel did not return or one
	// of unknown speaker, however relevant.
	cs := []*cand{}
	for i, text := range []string{
		"Ann: I planted tulips in the spring.",          // 6 x 2/2
		"Bob: Nice! Did you plant the tulips, Ann?",     // asks: 0
		"Ann: Tulips need sun.",                         // 4 x 1/2
		"Bob: I planted tulips too.",                    // 3 x 2/2
		"Bob: Tulips!",                                  // 2 x 1/2
		"Ann: I planted tulips and roses",               // 1 x 2/2
		"Ann: I planted tulips. Do you like them, Bob?", // asks: 0
	} {
		c := &cand{Candidate: Candidate{SourceType: "chat_turn", Text: text, Lexical: float64(max(6-i, 1)), InLexical: true}, rel: 0.1}
		cs = append(cs, c)
	}
	cs = append(cs,
		&cand{Candidate: Candidate{SourceType: "chat_turn", Text: "Bob: I planted tulips.", Semantic: 0.9, InSemantic: true}, rel: 1},
		&cand{Candidate: Candidate{SourceType: "note", Text: "Bob: I planted tulips.", Lexical: 100, InLexical: true}, rel: 1})
	for _, tt := range []struct {
		query string
		want  float64
	}{
		{"Where did Ann plant tulips?", AttributionFloor + (1-AttributionFloor)*(6.0+2.0+1.0)/(6+2+3+1+1)},
		{"Where did Bob plant tulips?", AttributionFloor + (1-AttributionFloor)*(3.0+1.0)/(6+2+3+1+1)},
		{"Where did Ann and Bob plant tulips?", 1},
		{"Where did Carl plant tulips?", 1},
		{"What did Ann say?", 1}, // nothing asked about that a span states
	} {
		names, content := splitNames(cs, queryTerms(tt.query))
		if got := attribution(cs, names, content); fmt.Sprintf("%.9f", got) != fmt.Sprintf("%.9f", tt.want) {
			t.Errorf("attribution(%q) = %v, want %v", tt.query, got, tt.want)
		}
	}
}

// TestLateAttribution: when late interaction scored the turns' contents
// without the names, attribution reads those scores, raised to
// AttributionSharpness between the pool's least and largest, in place of
// BM25: every scored turn of known speaker, whether the lexical channel
// returned it or not. Without such scores it reads BM25 as before.
func TestLateAttribution(t *testing.T) {
	mk := func(text string, lex, late float64, scored bool) *cand {
		return &cand{Candidate: Candidate{SourceType: "chat_turn", Text: text, Lexical: lex, InLexical: lex > 0,
			LateContent: late, LateContentScored: scored}, rel: 0.1}
	}
	// BM25 favours Bob's turns (they hold the name "Ann" too); late
	// interaction, reading what each says about planting tulips, Ann's.
	cs := []*cand{
		mk("Bob: Ann, I planted tulips, Ann.", 9, 10, true),                                                                  // place 0
		mk("Ann: I planted tulips in the spring.", 3, 20, true),                                                              // place 1
		mk("Ann: Tulips need sun.", 0, 18, true),                                                                             // place 0.8, holds 1 of 2 asked words
		mk("Bob: Did you plant the tulips, Ann?", 8, 19, true),                                                               // asks: not read
		mk("Bob: tulips planted, Ann", 7, 15, true),                                                                          // place 0.5
		mk("Carl: I planted tulips.", 6, 0, false),                                                                           // not scored: not read
		{Candidate: Candidate{SourceType: "note", Text: "Ann: I planted tulips.", LateContent: 20, LateContentScored: true}}, // no speaker
	}
	pow := func(x float64) float64 { return math.Pow(x, AttributionSharpness) }
	names, content := splitNames(cs, queryTerms("Where did Ann plant tulips?"))
	ann := pow(1) + pow(0.8)*0.5
	want := AttributionFloor + (1-AttributionFloor)*ann/(ann+pow(0.5))
	if got := attribution(cs, names, content); fmt.Sprintf("%.9f", got) != fmt.Sprintf("%.9f", want) {
		t.Errorf("by late interaction: attribution = %v, want %v", got, want)
	}
	// The same turns without late scores: BM25 weighs, and Bob's lead.
	for _, c := range cs {
		c.LateContentScored = false
	}
	bm25 := 3.0 / (9 + 3 + 7 + 6)
	if got, want := attribution(cs, names, content), AttributionFloor+(1-AttributionFloor)*bm25; fmt.Sprintf("%.9f", got) != fmt.Sprintf("%.9f", want) {
		t.Errorf("by BM25: attribution = %v, want %v", got, want)
	}
}

// TestOwnerAttribution: for a question about the memory's owner, the
// owner's turns (user) take the named speaker's place and the agent's
// (assistant) the other party's; turns that ask are read; the factor
// counts once in the strength. A pack whose best matches are the agent's
// is less confident than the same memory with the owner's own remark, and
// than the same question not about the owner.
func TestOwnerAttribution(t *testing.T) {
	turn := chatTurn
	agentOnly := []Candidate{
		turn(1, "assistant: Dr. Johnson's clinic in Springfield takes appointments on weekdays.", 10),
		turn(2, "assistant: Seeing a doctor like Dr. Johnson every six months is common advice.", 9),
		turn(3, "user: I see Dr. Smith for my back.", 2),
	}
	withOwner := append([]Candidate{turn(4, "user: I see Dr. Johnson every six months, can you remind me to book?", 10)}, agentOnly...)
	agent := Pack(req("How often do I see Dr. Johnson?", 4096), nil, agentOnly, est)
	owner := Pack(req("How often do I see Dr. Johnson?", 4096), nil, withOwner, est)
	third := Pack(req("How often does one see Dr. Johnson?", 4096), nil, agentOnly, est)
	if !(agent.Confidence < owner.Confidence/2 && agent.Confidence < third.Confidence/2) {
		t.Errorf("confidence %v when only the agent says it, %v when the owner does, %v for a question not about the owner",
			agent.Confidence, owner.Confidence, third.Confidence)
	}
	// The factor itself, over turns with BM25 6, 5, 4, 3, 2, 1.
	cs := []*cand{}
	for i, text := range []string{
		"assistant: Tulips need sun; plant them in the autumn.", // 6 x 3/3
		"user: I planted tulips, do they need sun?",             // 5 x 3/3, asks: read
		"assistant: Tulips are lovely.",                         // 4 x 1/3
		"user: I planted roses.",                                // 3 x 1/3
		"tool: tulips planted: 40",                              // neither role
		"assistant: Sun.",                                       // 1 x 1/3
	} {
		c := &cand{Candidate: Candidate{SourceType: "chat_turn", Text: text, Lexical: float64(6 - i), InLexical: true}, rel: 0.1}
		cs = append(cs, c)
	}
	q := queryTerms("Where did I plant tulips in the sun?") // plant, tulip, sun
	want := AttributionFloor + (1-AttributionFloor)*(5.0+3.0/3)/(6.0+5.0+4.0/3+3.0/3+1.0/3)
	if got := ownerAttribution(cs, q); fmt.Sprintf("%.9f", got) != fmt.Sprintf("%.9f", want) {
		t.Errorf("ownerAttribution = %v, want %v", got, want)
	}
}

// TestPossessiveTerms: a possessive names the same term as the bare word,
// so "What does Melanie's necklace symbolize?" names the speaker Melanie.
// Words keep their apostrophe, and before the stemmer dropped 's the term
// was "melanie'", which matched nothing.
func TestPossessiveTerms(t *testing.T) {
	for _, tt := range [][2]string{{"Melanie's", "Melanie"}, {"the team's budget", "team budget"}} {
		if got, want := queryTerms(tt[0]), queryTerms(tt[1]); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("terms of %q = %v, of %q = %v", tt[0], got, tt[1], want)
		}
	}
}

// TestNamedTerms: the words of a query that name something, as
// ownerGrounding reads them.
func TestNamedTerms(t *testing.T) {
	for _, tt := range []struct{ query, want string }{
		{"How often do I see Dr. Johnson?", "Dr Johnson"},                    // an abbreviation does not end the sentence
		{"How many Italian restaurants have I tried in my city?", "Italian"}, // "How" starts it; "I" is no name
		{"How many days before I bought my iPad did I attend the Holiday Market?", "iPad Holiday Market"},
		{"What did I buy in March? Which Tuesday was it?", ""},              // a sentence's first word, months, weekdays
		{"I'm planning a trip. Can you suggest a hotel in Miami?", "Miami"}, // "Can" starts the second sentence
		{"Where did I hang 'Ethereal Dreams' by Emma Taylor?", "Ethereal Dreams Emma Taylor"},
		{"Did I read books by C. S. Lewis at St. Mary's?", "Lewis St Mary's"}, // initials are single letters
		{"what did i eat yesterday?", ""},
		{"How Often Do I See Dr. Johnson?", ""},                                // Title Case: case names nothing
		{"HOW OFTEN DO I SEE DR. JOHNSON?", ""},                                // nor do capitals throughout
		{"When did I visit Yosemite National Park?", "Yosemite National Park"}, // no stopword capitalised
		{"Do I see Dr. Johnson or Dr. Brown?", "Dr Johnson Brown"},             // most words capitalised, no stopword
		{"Dr. Johnson?", "Johnson"},
	} {
		if got, want := namedTerms(tt.query).terms, queryTerms(tt.want); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("namedTerms(%q) = %v, want the terms of %q %v", tt.query, got, tt.want, want)
		}
	}
}

// TestOwnerGrounding: a question about the owner that names a thing only the
// agent's turns hold ("Italian" in the assistant's suggestions, where the
// user told of Korean restaurants) abstains, where before it kept the
// confidence of the question the memory answers. A name held by the owner's
// turn, a note, or a question not about the owner is not affected.
func TestOwnerGrounding(t *testing.T) {
	turn := chatTurn
	memory := []Candidate{
		turn(1, "user: I've tried three Korean restaurants in my city so far, the last one in Midtown.", 10),
		turn(2, "assistant: If you like Korean food, you could also try the Italian restaurants downtown.", 9),
		turn(3, "assistant: Italian restaurants often serve fresh pasta.", 8),
	}
	swapped := Pack(req("How many Italian restaurants have I tried in my city?", 4096), nil, memory, est)
	asked := Pack(req("How many Korean restaurants have I tried in my city?", 4096), nil, memory, est)
	if !swapped.Abstain || asked.Abstain || !(swapped.Confidence < asked.Confidence/3) {
		t.Errorf("Italian: confidence %v abstain %v; Korean: %v %v", swapped.Confidence, swapped.Abstain, asked.Confidence, asked.Abstain)
	}
	if p := Pack(req("Which Italian restaurants are there in the city?", 4096), nil, memory, est); p.Abstain {
		t.Errorf("a question not about the owner: confidence %v, abstains", p.Confidence)
	}
	noted := append([]Candidate{cnd(4, 4, "Restaurants tried: two Italian ones.", 5)}, memory...)
	if p := Pack(req("How many Italian restaurants have I tried in my city?", 4096), nil, noted, est); p.Abstain {
		t.Errorf("a note holds the name: confidence %v, abstains", p.Confidence)
	}

	// The factor itself.
	cs := []*cand{
		{Candidate: Candidate{SourceType: "chat_turn", Text: "assistant: Dr. Johnson and Dr. Brown take new patients."}},
		{Candidate: Candidate{SourceType: "chat_turn", Start: 60, TurnSpeaker: "assistant", Text: "Ask Dr. Johnson's office."}},
		{Candidate: Candidate{SourceType: "chat_turn", Text: "user: I see Dr. Smith for my back."}},
		{Candidate: Candidate{SourceType: "document", Text: "Clinic list: Brown, Smith."}},
	}
	named := namedTerms("Do I see Dr. Johnson or Dr. Brown?") // dr, johnson, brown: johnson only in the agent's words
	want := AttributionFloor + (1-AttributionFloor)*(2.0/3)*(2.0/3)
	if got := ownerGrounding(cs, named); fmt.Sprintf("%.9f", got) != fmt.Sprintf("%.9f", want) {
		t.Errorf("ownerGrounding = %v, want %v", got, want)
	}
	if got := ownerGrounding(cs, namedTerms("Do I see Dr. Smith?")); got != 1 {
		t.Errorf("ownerGrounding of a held name = %v, want 1", got)
	}
	if got := ownerGrounding(cs, names{}); got != 1 {
		t.Errorf("ownerGrounding without names = %v, want 1", got)
	}
}

// TestHasWordPrefix: ownerGrounding's quick look finds a key at a word's
// start in any case, and not inside a word.
func TestHasWordPrefix(t *testing.T) {
	for _, tt := range []struct {
		s, key string
		want   bool
	}{
		{"We tried the Italian place.", "italia", true},
		{"ITALIAN FOOD", "italia", true},
		{"italian", "italia", true},
		{"(italian)", "italia", true},
		{"nonitalian food", "italia", false},
		{"éitalian", "italia", false},     // a letter before it
		{"—Italian food", "italia", true}, // a dash is no letter
		{"\xffitalian", "italia", true},   // nor is a byte that is no rune
		{"Ital", "italia", false},         // too short
		{"I dream of drives; Dr. Smith", "dr", true},
		{"address and hydrant", "dr", false},
		{"anything", "", true},
	} {
		if got := hasWordPrefix(tt.s, tt.key); got != tt.want {
			t.Errorf("hasWordPrefix(%q, %q) = %v, want %v", tt.s, tt.key, got, tt.want)
		}
	}
}

// FuzzOwnerGrounding: for any query and span text, namedTerms and the quick
// look do not panic, and the quick look never changes the factor: it equals
// the one read from every span's words.
func FuzzOwnerGrounding(f *testing.F) {
	for _, s := range [][2]string{
		{"How often do I see Dr. Johnson?", "user: I see Dr. Smith, and Dr. Johnson's clinic."},
		{"Did I buy the iPad at St. Mary's?", "IPAD bought near st marys"},
		{"Where did I move the Policies?", "user: the policy moved"},
		{"Zürich or ÖREBRO, which did I visit?", "I visited zürich and Örebro"},
		{"How Often Do I See Dr. Johnson?", "Johnson"},
		{"I. A. B. c.", "\xff\xfe I"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, query, text string) {
		named := namedTerms(query)
		if len(named.keys) != len(named.terms) || !slices.IsSorted(named.terms) {
			t.Fatalf("namedTerms(%q) = %+v", query, named)
		}
		cs := []*cand{
			{Candidate: Candidate{SourceType: "note", Text: text}},
			{Candidate: Candidate{SourceType: "chat_turn", Text: "user: " + text}},
		}
		// The factor without the quick look: every span's words read.
		held := make([]bool, len(named.terms))
		for _, c := range cs {
			for i, h := range heldMask(c.Text, named.terms) {
				held[i] = held[i] || h
			}
		}
		want := 1.0
		if len(named.terms) > 0 {
			n := 0
			for _, h := range held {
				if h {
					n++
				}
			}
			g := float64(n) / float64(len(named.terms))
			if n < len(named.terms) {
				want = AttributionFloor + (1-AttributionFloor)*(g*g) // as ownerGrounding associates it
			}
		}
		if got := ownerGrounding(cs, named); got != want {
			t.Fatalf("ownerGrounding(%q over %q) = %v, read from every word %v", query, text, got, want)
		}
	})
}
