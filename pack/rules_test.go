package pack

import "testing"

// TestConflictRuleEdges adds to TestDetectConflict the phrase and
// negation forms it leaves out (superseded, supersede, "can not", "never")
// and the value rule's subject test (heads, see sameSubject). Terms are
// chosen so the stemmer leaves them alone: each side's term set is spelled
// out in the comment.
func TestConflictRuleEdges(t *testing.T) {
	tests := []struct {
		name, a, b string
		kind, desc string // kind "" for no conflict
	}{
		// Heads {kiwi mango} and {kiwi mango papaya}: one holds the other.
		{"numerical, one head within the other", "Kiwi mango: 30 days.", "Kiwi mango papaya: 45 days.",
			ConflictNumerical, `numerical: "30 days" vs "45 days"`},
		// Heads {kiwi mango papaya} and {kiwi mango guava}: each names its own thing.
		{"numerical, heads of their own", "Kiwi mango papaya: 30 days.", "Kiwi mango guava: 45 days.", "", ""},
		// Heads {kiwi} and {mango guava}: nothing shared.
		{"numerical, no shared head", "Kiwi: 30 days.", "Mango guava: 45 days.", "", ""},
		{"superseded", "The travel policy was superseded last spring.", "The travel policy allows business class.",
			ConflictSupersession, `supersession: the first says "superseded"`},
		{"supersede, second", "The travel policy allows business class.", "These rules supersede the travel policy.",
			ConflictSupersession, `supersession: the second says "supersede"`},
		{"no longer without overlap", "Kiwi mango papaya no longer ship.", "Guava lychee banana melon grow.", "", ""},
		{"can not", "Contractors can not access the staging cluster.", "Contractors can access the staging cluster.",
			ConflictNegation, `negation: "cannot" vs "can"`},
		{"never approved", "The budget request was never approved.", "The budget request was approved.",
			ConflictNegation, `negation: "rejected" vs "approved"`},
		{"not enabled", "SSO is enabled for the admin console.", "SSO is not enabled for the admin console.",
			ConflictNegation, `negation: "enabled" vs "disabled"`},
		{"negation clauses without overlap", "The budget request was approved. Kiwi mango papaya guava.", "Kiwi mango papaya guava were rejected.", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, desc := detectConflict(featuresOf(tt.a), featuresOf(tt.b), 0, false)
			if kind != tt.kind || desc != tt.desc {
				t.Errorf("got %q %q, want %q %q", kind, desc, tt.kind, tt.desc)
			}
			// Through Pack, in both input orders: the same verdict.
			for _, order := range [][2]string{{tt.a, tt.b}, {tt.b, tt.a}} {
				ca, cb := cnd(1, 1, order[0], 9), cnd(2, 2, order[1], 8)
				r := Pack(req(tt.a+" "+tt.b, 4000), nil, []Candidate{cb, ca}, est)
				if len(r.Citations) != 2 {
					t.Fatalf("%d citations", len(r.Citations))
				}
				if tt.kind == "" && len(r.Conflicts) != 0 || tt.kind != "" && (len(r.Conflicts) != 1 || r.Conflicts[0].Kind != tt.kind) {
					t.Errorf("Pack with %q first: conflicts %+v", order[0], r.Conflicts)
				}
			}
		})
	}
}

// TestChatTurnConflicts checks the two rules that keep chat from
// conflicting with itself: a chat turn's speaker ("Maria: ") is not part of
// its first clause's subject, and cues that do not move an object ("went",
// "new", "now") need the clauses' subjects to overlap, not only the word
// after the cue; and cue words that name no change are not cues ("a move",
// "pushed me to", "reached out", "new to me", "so moving"). The turns are
// pairs of LoCoMo's (dev) the rules used to flag, reworded; each also runs
// as a note, where "Maria:" is a label and the subject.
func TestChatTurnConflicts(t *testing.T) {
	tests := []struct {
		name, a, b  string
		chat, notes string // the verdict on chat turns (their speaker a label) and on notes
	}{
		{"one speaker, no shared subject", "Maria: That changed everything! What did they say when they read it?",
			"Maria: A resident of the shelter, Cindy, wrote the letter.",
			"", `supersession: the first says "changed"`},
		{"went, the word after it shared", "Caroline: Last week I went to an LGBTQ+ pride parade. Everyone there was so happy.",
			"Caroline: I told the students about my journey and asked them to get involved in the LGBTQ community.",
			"", `supersession: the first says "went"`},
		{"new, the word after it shared", "Andrew: The new spot in town serves ramen.",
			"Andrew: That spot by the lake is lovely.",
			"", `supersession: the first says "new"`},
		// A move still changes what the other says though only its object is shared.
		{"moved, its object shared", "Maya: I moved the painting to the bedroom, above my bed.",
			"Maya: The painting hangs above the living room sofa.",
			`supersession: the first says "moved"`, `supersession: the first says "moved"`},
		{"a value changed", "Maya: My home address is now 48 Birch Lane.", "Maya: My home address is 12 Elm Street.",
			`supersession: the first says "now"`, `supersession: the first says "now"`},
		// Between chat turns a cue that moves no object needs values on
		// both sides (cueClash); notes keep the subject rule.
		{"now, no values, chat", "Nate: My tournament practice is great now.",
			"Nate: My tournament practice is great fun with the team.",
			"", `supersession: the first says "now"`},
		// Cue words that name no change of a stated value (incidental,
		// cancelsCue): in chat they joined turns of one topic, as notes too.
		{"a move, a noun", "Caroline: Adoption is a move towards my goal of a family.",
			"Caroline: My goal is a family through adoption.", "", ""},
		{"pushed me, the speaker its object", "Jon: Losing my job pushed me to start my own business.",
			"Jon: I lost my job at the bank, so I'm starting my own business.", "", ""},
		{"reached out", "Maria: I reached out to the shelter and I volunteer there.",
			"Maria: I volunteer at the homeless shelter.", "", ""},
		{"new to me", "Nate: Streaming is new to me but I love streaming games.",
			"Nate: I love streaming games with friends.", "", ""},
		{"so moving, an adjective", "Maria: The letter from the shelter was so moving.",
			"Maria: The shelter sent a letter.", "", ""},
		{"moved, its object not the speaker", "Maria: The shelter moved the letter reading to the hall.",
			"Maria: The letter reading at the shelter is in the kitchen.",
			`supersession: the first says "moved"`, `supersession: the first says "moved"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, chat := range []bool{true, false} {
				ca, cb := cnd(1, 1, tt.a, 9), cnd(2, 2, tt.b, 8)
				ca.Timestamp++ // a is newer
				want := tt.notes
				if chat {
					ca.SourceType, cb.SourceType, want = "chat_turn", "chat_turn", tt.chat
				}
				fa := featuresAfter(ca.Text, (&cand{Candidate: ca}).speakerLabel())
				fb := featuresAfter(cb.Text, (&cand{Candidate: cb}).speakerLabel())
				if _, desc := detectConflict(fa, fb, -1, chat); desc != want {
					t.Errorf("chat %v: got %q, want %q", chat, desc, want)
				}
				r := Pack(req(tt.a+" "+tt.b, 4000), nil, []Candidate{cb, ca}, est)
				if got := len(r.Conflicts); got != min(len(want), 1) {
					t.Errorf("chat %v: Pack found %d conflicts, want %d", chat, got, min(len(want), 1))
				}
			}
		})
	}
}

// TestSpeakerLabel checks where a chat turn's speaker is read as one: the
// first span of a chat turn, by name or generic role, and nowhere else.
func TestSpeakerLabel(t *testing.T) {
	tests := []struct {
		source, text string
		start, want  int
	}{
		{"chat_turn", "Maria: I went home.", 0, len("Maria: ")},
		{"chat_turn", "user: I went home.", 0, len("user: ")},
		{"chat_turn", "I went home.", 0, 0},
		{"chat_turn", "Refund window: 30 days.", 40, 0}, // a later span of a long turn
		{"note", "Refund window: 30 days.", 0, 0},
		{"document", "Maria: I went home.", 0, 0},
	}
	for _, tt := range tests {
		c := cand{Candidate: Candidate{SourceType: tt.source, Text: tt.text, Start: tt.start}}
		if got := c.speakerLabel(); got != tt.want {
			t.Errorf("%s %q at %d: %d, want %d", tt.source, tt.text, tt.start, got, tt.want)
		}
	}
}
