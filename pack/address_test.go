package pack

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// addressConversation is a conversation of two people sent as user and
// assistant with no names but those they address each other by: user is
// Caroline, assistant is Melanie. The turns are in the order said; lex is
// the lexical score a query about the charity race would give them.
func addressConversation(vocatives bool) []Candidate {
	turns := []struct {
		role, text, plain string
		lex               float64
	}{
		{"assistant", "Hey Caroline! I ran a charity race for mental health last Saturday.", "I ran a charity race for mental health last Saturday.", 9},
		{"user", "Wow, Melanie, a charity race? I went to the support group yesterday.", "Wow, a charity race? I went to the support group yesterday.", 8},
		{"assistant", "Thanks, Caroline! After the race I realize self-care is really important.", "After the race I realize self-care is really important.", 10},
		{"user", "That sounds great, Mel! I painted a sunrise over the lake.", "That sounds great! I painted a sunrise over the lake.", 4},
		{"assistant", "It was tough, Caroline, but I realize how much I love running.", "It was tough but I realize how much I love running.", 7},
		{"user", "Thanks, Melanie. I am proud of you.", "I am proud of you.", 3},
	}
	var cs []Candidate
	for i, t := range turns {
		text := t.text
		if !vocatives {
			text = t.plain
		}
		c := cnd(i+1, i+1, t.role+": "+text, t.lex)
		c.SourceType = "chat_turn"
		c.Timestamp += int64(i) * 1_000_000
		cs = append(cs, c)
	}
	return cs
}

// giftConversation is a conversation where only the other party's turns
// match what a question about Melanie asks: user (Caroline) tells of her
// grandma's gift and addresses Melanie; assistant (Melanie) holds none of
// the question's words, and only the semantic channel returns her turns.
func giftConversation() []Candidate {
	turns := []struct {
		role, text string
		lex        float64
	}{
		{"user", "Hey Melanie! Look at my necklace.", 2},
		{"assistant", "Hi Caroline! Love it, any special meaning?", 0},
		{"user", "Thanks, Melanie! This necklace is a gift from my grandma in Sweden.", 9},
		{"assistant", "That is so sweet, Caroline.", 0},
		{"user", "Bye, Melanie.", 1},
	}
	var cs []Candidate
	for i, t := range turns {
		c := cnd(i+1, i+1, t.role+": "+t.text, t.lex)
		c.SourceType = "chat_turn"
		c.Semantic, c.InSemantic = 0.6, true
		c.Timestamp += int64(i) * 1_000_000
		cs = append(cs, c)
	}
	return cs
}

// TestAddressSpeakers: without names, a question about one person whose
// best evidence is the other's words abstains once the turns say who is
// who by addressing each other, as it does when the names are sent; the
// same question about the person who said them does not, and that
// person's turns come first. Without vocatives (or with them hidden from
// the request) nothing says who is who and nothing abstains.
func TestAddressSpeakers(t *testing.T) {
	named := func(cs []Candidate) []Candidate {
		out := make([]Candidate, len(cs))
		for i, c := range cs {
			c.Text = strings.NewReplacer("user: ", "Caroline: ", "assistant: ", "Melanie: ").Replace(c.Text)
			out[i] = c
		}
		return out
	}
	// The conversation without vocatives, and greetings that carry them:
	// public, or private to someone else.
	greeted := func(visibility string) []Candidate {
		cs := addressConversation(false)
		for i, text := range []string{"user: Hey Melanie!", "assistant: Hi Caroline!", "user: Bye, Melanie.", "assistant: Bye, Caroline."} {
			c := cnd(10+i, 10+i, text, 2)
			c.SourceType, c.CreatorID, c.Permissions.Visibility = "chat_turn", "bob", visibility
			cs = append(cs, c)
		}
		return cs
	}
	for _, tt := range []struct {
		name    string
		cs      []Candidate
		query   string
		abstain bool
		first   string // the first citation's text starts so
	}{
		{"names sent", named(addressConversation(true)), "What did Caroline realize after her charity race?", true, ""},
		{"by address", addressConversation(true), "What did Caroline realize after her charity race?", true, ""},
		{"names sent, the speaker", named(addressConversation(true)), "What did Melanie realize after her charity race?", false, "Melanie: "},
		{"by address, the speaker", addressConversation(true), "What did Melanie realize after her charity race?", false, "assistant: "},
		{"by address, lower case", addressConversation(true), "what did melanie realize after her charity race?", false, "assistant: "},
		{"no vocatives", addressConversation(false), "What did Caroline realize after her charity race?", false, ""},
		{"greetings", greeted("public"), "What did Caroline realize after her charity race?", true, ""},
		{"greetings hidden", greeted("private"), "What did Caroline realize after her charity race?", false, ""},
		// The named person's turns hold no word of the question: the
		// turns that do are the other party's, and the pack abstains.
		{"names sent, only the other's turns match", named(giftConversation()), "What was grandma's gift to Melanie?", true, ""},
		{"by address, only the other's turns match", giftConversation(), "What was grandma's gift to Melanie?", true, ""},
		{"by address, the other's own words", giftConversation(), "What was grandma's gift to Caroline?", false, "user: Thanks"},
	} {
		r := Pack(req(tt.query, 4096), nil, tt.cs, est)
		if r.Abstain != tt.abstain {
			t.Errorf("%s: %q abstains %v (confidence %v), want %v", tt.name, tt.query, r.Abstain, r.Confidence, tt.abstain)
		}
		if tt.first != "" && (len(r.Citations) == 0 || !strings.HasPrefix(r.Citations[0].ContentPreview, tt.first)) {
			t.Errorf("%s: %q first citation %+v, want %q...", tt.name, tt.query, r.Citations[:min(1, len(r.Citations))], tt.first)
		}
	}
}

// TestAddressLaterSpan: a long turn's later span is taken as said by the
// name its role is addressed by, as the turn's first span is.
func TestAddressLaterSpan(t *testing.T) {
	cs := addressConversation(true)
	rest := cs[2]
	rest.SpanID[0]++
	rest.Text, rest.Start, rest.TurnSpeaker = "After the race I realize self-care is really important.", 300, "assistant"
	cs = append(cs, rest)
	for _, query := range []string{"What did Melanie realize after her charity race?", "What did Caroline realize after her charity race?"} {
		r := Request{Query: query, MaxTokens: 4096, AsOf: 1 << 40}
		g := gather(nil, cs, "")
		addressSpeakers(g, r, queryTerms(query))
		var first, later *cand
		for _, c := range g {
			switch c.SpanID {
			case cs[2].SpanID:
				first = c
			case rest.SpanID:
				later = c
			}
		}
		if !first.byAddr || !later.byAddr || !slices.Equal(first.spk, later.spk) {
			t.Errorf("%q: the later span's speaker %v (by address %v), its turn's %v (%v)", query, later.spk, later.byAddr, first.spk, first.byAddr)
		}
	}
}

// TestRankTexts: a relevance model reads a turn whose speaker was found by
// address as said by that name, as the query writes it; a turn of a role
// the query names no one of, and any turn when names are not found, read
// as sent. The order is Rank's.
func TestRankTexts(t *testing.T) {
	req := Request{Query: "What did caroline realize after the charity race?", MaxTokens: 512, AsOf: 1 << 40}
	cs := addressConversation(true)
	ids, texts := RankTexts(req, nil, cs)
	if !slices.Equal(ids, Rank(req, nil, cs)) || len(texts) != len(ids) {
		t.Fatalf("RankTexts gives %d ids, %d texts, not Rank's order", len(ids), len(texts))
	}
	byID := map[uuid.UUID]string{}
	for i, id := range ids {
		byID[id] = texts[i]
	}
	for _, c := range cs {
		got := byID[c.SpanID]
		switch {
		case strings.HasPrefix(c.Text, "user: "):
			if want := "Caroline: " + strings.TrimPrefix(c.Text, "user: "); got != want {
				t.Errorf("user turn read as %q, want %q", got, want)
			}
		case got != c.Text:
			// The query names no one of the assistant's side.
			t.Errorf("assistant turn read as %q, want it as sent", got)
		}
	}
	// Without vocatives nobody is found: every turn reads as sent.
	plain := addressConversation(false)
	ids, texts = RankTexts(req, nil, plain)
	for i, id := range ids {
		for _, c := range plain {
			if c.SpanID == id && texts[i] != c.Text {
				t.Errorf("turn %q read as %q with no speaker found", c.Text, texts[i])
			}
		}
	}
}
