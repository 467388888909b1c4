package text

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The speaker of a chat turn. Clients send who said a turn in one of three
// places: the role ("Caroline"), a "Caroline: " at the start of the content
// under a generic role ("user"), or the artifact's actor_id under a generic
// role. Extract resolves it by one rule (ChatSpeaker) and writes it at the
// start of the turn's text, "Caroline: ...", whichever place it came from,
// so that the lexical index, the encoder, the packer's speaker prior and
// attribution (TurnSpeaker) and a reader of the pack all see the same line.
const (
	// maxSpeakerBytes and maxSpeakerWords bound what counts as a name.
	maxSpeakerBytes = 48
	maxSpeakerWords = 3
)

// genericRoles say what kind of party spoke, not who.
var genericRoles = []string{"ai", "assistant", "bot", "developer", "function", "human", "model", "system", "tool", "user"}

// labelWords start a line as a label, a heading or a sentence, not as a
// speaker ("Note: ...", "Title: ...", "Sure: ..."). The list holds the
// heading words found before ": " at the start of LongMemEval's turns.
var labelWords = []string{
	"a", "absolutely", "agenda", "alert", "also", "and", "answer", "approach", "background", "but", "caution",
	"certainly", "conclusion", "cons", "context", "date", "definition", "department", "description", "domain", "edit",
	"error", "example", "fw", "fwd", "fyi", "goal", "great", "hello", "here", "hey", "hi", "hint", "important", "info",
	"ingredients", "input", "instructions", "introduction", "later", "me", "name", "nb", "no", "note", "notes", "now",
	"objective", "ok", "okay", "or", "outline", "output", "overview", "problem", "prompt", "pros", "ps", "purpose", "q",
	"question", "re", "reason", "remember", "reminder", "reply", "response", "result", "so", "solution", "source",
	"status", "step", "steps", "subject", "summary", "sure", "task", "thanks", "then", "tip", "title", "today", "todo",
	"tomorrow", "topic", "update", "warning", "well", "yes", "yesterday", "you",
}

// ChatSpeaker returns the speaker of a chat turn, or "" when none is known:
//
//  1. role, when it is a name (SpeakerName); a role that is neither a name
//     nor generic ("tool_42") names no one, and the rule stops there;
//  2. when role is empty or generic (user, assistant, system, tool, human,
//     ai, model, bot, function, developer; any case): a capitalised name
//     (one that starts with an upper-case letter) before the first ": " of
//     content ("Caroline: I went ...");
//  3. then actorID, when it is a capitalised name ("Caroline", not "locomo"
//     or "user-42"), since most clients keep one id such as "alice" or
//     "u_123" for a whole memory, the assistant's turns included, and those
//     must not become a speaker.
//
// Only the content's name and the actor must be capitalised: a role is
// meant to name who speaks, they are not, and capitals keep lower-case
// headings ("simplify this: ...") and ids out.
func ChatSpeaker(role, content, actorID string) string {
	if role != "" && !isGeneric(role) {
		if SpeakerName(role) {
			return role
		}
		return ""
	}
	if p := TurnSpeaker(content); capitalised(p) {
		return p
	}
	if capitalised(actorID) && SpeakerName(actorID) {
		return actorID
	}
	return ""
}

// capitalised reports whether s starts with an upper-case letter.
func capitalised(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsUpper(r)
}

// TurnSpeaker returns the name before the first ": " of s when it is one
// (SpeakerName), else "". On a chat turn's extracted text it is the speaker
// ChatSpeaker resolved, since Extract writes that name first.
func TurnSpeaker(s string) string {
	i := strings.Index(s, ": ")
	if i <= 0 || i > maxSpeakerBytes || !SpeakerName(s[:i]) {
		return ""
	}
	return s[:i]
}

// SpeakerName reports whether s reads as a person's name: one to three
// words (SpeakerWords) of letters and apostrophes, at most 48 bytes, none
// of them a generic role or a label word ("Note", "Job Title", "AI Bot").
func SpeakerName(s string) bool {
	if len(s) == 0 || len(s) > maxSpeakerBytes {
		return false
	}
	ws := SpeakerWords(s)
	if len(ws) == 0 || len(ws) > maxSpeakerWords {
		return false
	}
	for _, w := range ws {
		for _, r := range w {
			if !unicode.IsLetter(r) && r != '\'' {
				return false
			}
		}
		if l := strings.ToLower(w); slices.Contains(genericRoles, l) || slices.Contains(labelWords, l) {
			return false
		}
	}
	return true
}

// SpeakerWords splits a speaker's name into its words, at spaces,
// underscores, hyphens and dots ("Mary-Ann", "dr.smith").
func SpeakerWords(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '_' || r == '-' || r == '.' })
}

// isGeneric reports whether role is one of genericRoles, in any case.
func isGeneric(role string) bool { return slices.Contains(genericRoles, strings.ToLower(role)) }

// chatLine renders a chat turn: "<speaker>: <content>" when ChatSpeaker
// finds one, else "<role>: <content>", or just content without a role. A
// name taken from the content keeps its place, the rest trimmed as a
// content is ("Jon:  hi" gives "Jon: hi", as role "Jon" and " hi" do).
func chatLine(role, content, actorID string) string {
	switch sp := ChatSpeaker(role, content, actorID); {
	case sp == "" || sp == role:
		if role == "" {
			return content
		}
		return role + ": " + content
	case strings.HasPrefix(content, sp+": "):
		return sp + ": " + strings.TrimSpace(content[len(sp)+2:])
	default:
		return sp + ": " + content
	}
}

// TurnRole returns the generic role before the first ": " of a chat turn's
// extracted text ("user: I went ..." gives "user"), or "" when the turn
// names a speaker or no role. Extraction writes the role there when no name
// was found (chatLine), as most agent transcripts send their turns.
func TurnRole(s string) string {
	i := strings.Index(s, ": ")
	if i <= 0 || !isGeneric(s[:i]) {
		return ""
	}
	return strings.ToLower(s[:i])
}

// addressWords may stand between the start of a clause and a name it
// addresses: greetings, thanks and interjections ("Hey Mel!", "Thank you so
// much, Caroline!", "Good morning, Jon").
var addressWords = []string{
	"ah", "aw", "aww", "awww", "bye", "cheers", "congrats", "congratulations", "dear", "evening", "good", "goodbye",
	"great", "haha", "hello", "hey", "hi", "hiya", "howdy", "lol", "morning", "much", "night", "oh", "ok", "okay",
	"omg", "so", "sorry", "thank", "thanks", "thx", "welcome", "whoa", "wow", "yeah", "yes", "yo", "you",
}

// AddressedNames returns the names content addresses, in order of first
// appearance, each once: a capitalised word that is a name (SpeakerName; not
// "I", a generic role or a label word) in the place people put the name of
// whom they talk to:
//
//   - at the start of a clause, after greetings and interjections
//     (addressWords) and nothing else, or followed by a comma when nothing
//     precedes it: "Hey Mel!", "Thanks, Caroline!", "Caroline, I love it";
//   - at the end of a clause, after a comma: "That's great, Caroline!".
//
// In a conversation of two people each addresses the other, so the names a
// speaker uses this way are the other's: that is how a memory of turns sent
// as user and assistant, with no names, still says who is who.
func AddressedNames(content string) []string {
	var out []string
	start := true           // at the start of a clause, greetings aside
	var prev, prev2 addrTok // the two tokens before this one
	for i, n := 0, 0; ; n++ {
		t, j := nextAddrTok(content, i)
		if j < 0 {
			return out
		}
		i = j
		if t.word == "" {
			if t.punct != ',' {
				start = true
			}
			prev2, prev = prev, t
			continue
		}
		// Only a word at a clause's start or after a comma can be one
		// addressed, so only those are read further: most words are neither.
		afterComma := n > 0 && prev.punct == ','
		if (start || afterComma) && len(t.word) > 1 && capitalised(t.word) && !strings.ContainsAny(t.word, "'’") {
			next, k := nextAddrTok(content, i)
			greeted := n > 0 && (prev.word != "" || afterComma && n > 1 && prev2.word != "")
			opening := start && (greeted || k >= 0 && next.punct == ',')
			closing := afterComma && (k < 0 || strings.ContainsRune("!?.;:\n", next.punct))
			if (opening || closing) && !isAddressWord(t.word) && SpeakerName(t.word) && !slices.Contains(out, t.word) {
				out = append(out, t.word)
			}
		}
		if start {
			start = isAddressWord(t.word)
		}
		prev2, prev = prev, t
	}
}

// addrTok is a word of a chat turn (letters and apostrophes) or, with word
// "", a punctuation mark that ends or splits a clause.
type addrTok struct {
	word  string
	punct rune
}

// nextAddrTok returns the first word or clause punctuation of content at
// or after i, and where it ends; -1 when there is none. ASCII is read a
// byte at a time, the rest a rune at a time.
func nextAddrTok(content string, i int) (addrTok, int) {
	for i < len(content) {
		c := content[i]
		if c < utf8.RuneSelf {
			switch {
			case isASCIILetter(c):
				j := wordEnd(content, i+1)
				return addrTok{word: content[i:j]}, j
			case c == ',' || c == '!' || c == '?' || c == '.' || c == ';' || c == ':' || c == '\n':
				return addrTok{punct: rune(c)}, i + 1
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(content[i:])
		if unicode.IsLetter(r) {
			j := wordEnd(content, i+size)
			return addrTok{word: content[i:j]}, j
		}
		i += size
	}
	return addrTok{}, -1
}

// wordEnd returns where the word of content that goes on at j ends: at the
// first rune that is not a letter or an apostrophe (' or ’).
func wordEnd(content string, j int) int {
	for j < len(content) {
		if c := content[j]; c < utf8.RuneSelf {
			if !isASCIILetter(c) && c != '\'' {
				return j
			}
			j++
			continue
		}
		r, size := utf8.DecodeRuneInString(content[j:])
		if !unicode.IsLetter(r) && r != '’' {
			return j
		}
		j += size
	}
	return j
}

// addressSet holds addressWords, for isAddressWord.
var addressSet = func() map[string]bool {
	m := make(map[string]bool, len(addressWords))
	for _, w := range addressWords {
		m[w] = true
	}
	return m
}()

// isAddressWord reports whether w, in lower case, is one of addressWords,
// without allocating for an ASCII word.
func isAddressWord(w string) bool {
	var buf [16]byte
	for i := 0; i < len(w); i++ {
		if w[i] >= utf8.RuneSelf {
			return addressSet[strings.ToLower(w)] // K (Kelvin) lower-cases to k
		}
	}
	if len(w) > len(buf) {
		return false
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return addressSet[string(buf[:len(w)])]
}
