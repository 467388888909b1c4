package text

import (
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestChatSpeaker(t *testing.T) {
	tests := []struct {
		name, role, content, actor, want string
	}{
		{"role is the name", "Caroline", "I went to the support group.", "locomo", "Caroline"},
		{"role wins over content and actor", "Caroline", "Melanie: hi", "Melanie", "Caroline"},
		{"lower-case role", "caroline", "hi", "", "caroline"},
		{"three-word role", "Mary Ann Smith", "hi", "", "Mary Ann Smith"},
		{"prefix under user", "user", "Caroline: I went to the support group.", "locomo", "Caroline"},
		{"prefix under assistant", "assistant", "Melanie: Good for you!", "locomo", "Melanie"},
		{"prefix without a role", "", "Caroline: hi", "", "Caroline"},
		{"prefix wins over actor", "user", "Caroline: hi", "Melanie", "Caroline"},
		{"actor under user", "user", "I went to the support group.", "Caroline", "Caroline"},
		{"actor under assistant", "assistant", "Good for you!", "Melanie", "Melanie"},
		{"actor without a role", "", "hi", "Caroline", "Caroline"},
		{"generic roles in any case", "Assistant", "hi", "", ""},
		{"every generic role", "developer", "hi", "", ""},
		{"lower-case actor is an id", "user", "hi", "locomo", ""},
		{"actor with digits is an id", "user", "hi", "User42", ""},
		{"generic actor", "user", "hi", "System", ""},
		{"a time is no prefix", "user", "10:30: meet at the dock", "", ""},
		{"a time falls back to the actor", "user", "10:30: meet at the dock", "Caroline", "Caroline"},
		{"a label is no prefix", "user", "Note: bring the tent", "", ""},
		{"a label falls back to the actor", "user", "Note: bring the tent", "Caroline", "Caroline"},
		{"a generic prefix", "", "User: hi", "", ""},
		{"a sentence is no prefix", "user", "The game was called Counter-Strike: fun", "", ""},
		{"four words are no name", "user", "Mary Ann de Smith: hi", "", ""},
		{"a role that is no name names no one", "tool_42", "Caroline: hi", "Caroline", ""},
		{"no colon", "user", "no names here", "", ""},
		{"an interjection is no prefix", "assistant", "Sure: mash three ripe bananas", "", ""},
		{"a heading is no prefix", "user", "Job Title: data engineer", "", ""},
		{"a lower-case prefix is no name", "user", "simplify this: the text", "", ""},
		{"a role made of generic words", "AI Bot", "hi", "Caroline", ""},
	}
	for _, tt := range tests {
		if got := ChatSpeaker(tt.role, tt.content, tt.actor); got != tt.want {
			t.Errorf("%s: ChatSpeaker(%q, %q, %q) = %q, want %q", tt.name, tt.role, tt.content, tt.actor, got, tt.want)
		}
	}
}

// TestChatTurnShapes: the same turn sent in each client shape is extracted
// to the same text, which names its speaker (TurnSpeaker); without a name
// anywhere the role stays as sent.
func TestChatTurnShapes(t *testing.T) {
	tests := []struct {
		shape, actor, payload, want, speaker string
	}{
		{"role", "locomo", `{"role":"Caroline","content":"I went to the support group."}`, "Caroline: I went to the support group.", "Caroline"},
		{"prefix", "locomo", `{"role":"user","content":"Caroline: I went to the support group."}`, "Caroline: I went to the support group.", "Caroline"},
		{"actor", "Caroline", `{"role":"user","content":"I went to the support group."}`, "Caroline: I went to the support group.", "Caroline"},
		{"actor, string payload", "Caroline", `"I went to the support group."`, "Caroline: I went to the support group.", "Caroline"},
		{"none", "locomo", `{"role":"user","content":"I went to the support group."}`, "user: I went to the support group.", ""},
		{"none, string payload", "locomo", `"I went to the support group."`, "I went to the support group.", ""},
		{"prefix with more space", "locomo", `{"role":"user","content":"Caroline:   I went to the support group."}`, "Caroline: I went to the support group.", "Caroline"},
		{"role, content with space", "locomo", `{"role":"Caroline","content":"  I went to the support group."}`, "Caroline: I went to the support group.", "Caroline"},
		{"label", "u_1", `{"role":"user","content":"Note: bring the tent"}`, "user: Note: bring the tent", ""},
		{"odd role kept", "Caroline", `{"role":"tool_42","content":"hi"}`, "tool_42: hi", ""},
	}
	for _, tt := range tests {
		got, err := Extract("chat_turn", tt.actor, []byte(tt.payload))
		if err != nil {
			t.Fatalf("%s: %v", tt.shape, err)
		}
		if got != tt.want {
			t.Errorf("%s: Extract = %q, want %q", tt.shape, got, tt.want)
		}
		if sp := TurnSpeaker(got); sp != tt.speaker {
			t.Errorf("%s: TurnSpeaker(%q) = %q, want %q", tt.shape, got, sp, tt.speaker)
		}
	}
	// The actor is read only for chat turns.
	if got, _ := Extract("note", "Caroline", []byte(`{"content":"hi"}`)); got != "hi" {
		t.Errorf("note with an actor: %q, want %q", got, "hi")
	}
}

func TestAddressedNames(t *testing.T) {
	tests := []struct {
		content string
		want    []string
	}{
		{"Thanks, Caroline! That's really sweet.", []string{"Caroline"}},
		{"Hey Mel! Long time no talk!", []string{"Mel"}},
		{"Thank you so much, Caroline!", []string{"Caroline"}},
		{"Good morning, Jon. Ready?", []string{"Jon"}},
		{"That charity race sounds great, Mel!", []string{"Mel"}},
		{"Wow, Melanie, that's amazing!", []string{"Melanie"}},
		{"Caroline, I love it.", []string{"Caroline"}},
		{"Hi Tim! Great to see you, Tim.", []string{"Tim"}},
		{"Hey Caroline! Thanks, Mel.", []string{"Caroline", "Mel"}},
		// Not addressed: talked about, possessives, places, sentence starts.
		{"I went hiking with Sarah last week.", nil},
		{"Caroline's necklace is from Sweden.", nil},
		{"Sarah and I went to Paris, then home.", nil},
		{"Yesterday, I went to the park.", nil},
		{"I told Melanie about it, and she laughed.", nil},
		{"Thanks for the tip, it helped.", nil},
		{"Hey there! How are you?", nil},
		{"I met her in Paris, France, last year.", nil},
		{"Well, I think so.", nil},
		{"", nil},
	}
	for _, tt := range tests {
		if got := AddressedNames(tt.content); !slices.Equal(got, tt.want) {
			t.Errorf("AddressedNames(%q) = %q, want %q", tt.content, got, tt.want)
		}
	}
}

func TestTurnRole(t *testing.T) {
	tests := []struct{ text, want string }{
		{"user: I went to the support group.", "user"},
		{"Assistant: Sure.", "assistant"},
		{"Caroline: I went to the support group.", ""},
		{"Note: a label", ""},
		{"no role here", ""},
	}
	for _, tt := range tests {
		if got := TurnRole(tt.text); got != tt.want {
			t.Errorf("TurnRole(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

// addressedNamesRef is AddressedNames as first written, every word read
// the same way: the oracle of FuzzAddressedNames.
func addressedNamesRef(content string) []string {
	type token struct {
		word  string // "" for punctuation
		punct rune
	}
	var toks []token
	for i := 0; i < len(content); {
		r, size := utf8.DecodeRuneInString(content[i:])
		switch {
		case unicode.IsLetter(r):
			j := i + size
			for j < len(content) {
				r2, s2 := utf8.DecodeRuneInString(content[j:])
				if !unicode.IsLetter(r2) && r2 != '\'' && r2 != '’' {
					break
				}
				j += s2
			}
			toks = append(toks, token{word: content[i:j]})
			i = j
		case strings.ContainsRune(",!?.;:\n", r):
			toks = append(toks, token{punct: r})
			i += size
		default:
			i += size
		}
	}
	clauseEnd := func(k int) bool { return k >= len(toks) || strings.ContainsRune("!?.;:\n", toks[k].punct) }
	var out []string
	start := true // at the start of a clause, greetings aside
	for k, t := range toks {
		if t.word == "" {
			if t.punct != ',' {
				start = true
			}
			continue
		}
		lower := strings.ToLower(t.word)
		name := capitalised(t.word) && len(t.word) > 1 && SpeakerName(t.word) && !strings.ContainsAny(t.word, "'’") &&
			!slices.Contains(addressWords, lower)
		if name {
			greeted := k > 0 && (toks[k-1].word != "" || toks[k-1].punct == ',' && k > 1 && toks[k-2].word != "")
			comma := len(toks) > k+1 && toks[k+1].punct == ','
			opening := start && (greeted || comma)
			closing := k > 0 && toks[k-1].punct == ',' && clauseEnd(k+1)
			if (opening || closing) && !slices.Contains(out, t.word) {
				out = append(out, t.word)
			}
		}
		start = start && slices.Contains(addressWords, lower)
	}
	return out
}

// FuzzAddressedNames: AddressedNames, which reads only the words that may
// be addressed and ASCII a byte at a time, finds what reading every word
// finds (addressedNamesRef).
func FuzzAddressedNames(f *testing.F) {
	for _, s := range []string{
		"Hey Mel! How are you?", "Thanks, Caroline!", "Caroline, I love it", "That's great, Caroline!",
		"Good morning, Jon. Jon, see you", "O\u212aAY Jon, fine", "\xffHey Ann", "İstanbul, Ann; Wow Zoë, ok",
		"Hey there, Anna's here", "Hi Mary-Ann,  hi JOHN!", "Congratulations Bob", "so\nHey Sam",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := AddressedNames(s), addressedNamesRef(s); !slices.Equal(got, want) {
			t.Fatalf("AddressedNames(%q) = %q, every word read %q", s, got, want)
		}
	})
}

// BenchmarkAddressedNames reads an assistant's long turn, the kind of text
// most of a user-assistant memory is, and a short chat turn.
func BenchmarkAddressedNames(b *testing.B) {
	long := strings.Repeat("Great question! Here are a few **Italian restaurants** in Boston you might enjoy:\n\n"+
		"1. **Giacomo's**: a cozy North End spot known for seafood pasta. Reservations are not taken, so arrive early.\n"+
		"2. **Mamma Maria**: upscale, with a seasonal menu; try the osso buco. It's a favourite of locals, Sarah.\n"+
		"Let me know if you'd like more options, or directions from Back Bay!\n", 4)
	for _, tt := range []struct{ name, s string }{
		{"long", long},
		{"short", "Hey Mel! I went to a LGBTQ support group yesterday and it was so powerful."},
	} {
		b.Run(tt.name, func(b *testing.B) {
			b.SetBytes(int64(len(tt.s)))
			for b.Loop() {
				AddressedNames(tt.s)
			}
		})
	}
}
