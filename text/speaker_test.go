package text

import (
	"slices"
	"testing"
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
