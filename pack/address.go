package pack

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/loci-memory/loci/text"
)

// Speakers named by address. Most agent transcripts send their turns as
// role "user" and "assistant" with no name anywhere, so a chat turn's text
// ("user: I ran a charity race last Sunday.") names no speaker and neither
// the speaker prior nor attribution applies. But people address each other
// by name ("Thanks, Caroline!", "Hey Mel!"): in a conversation of two
// parties, the names one role addresses are the other role's. So the turns
// of each role are taken as said by the names the other role addresses it
// by, for the speaker prior, attribution and query coverage alike, as if
// the client had sent the names.
const (
	// AddressVotes is how many visible turns of one role must address a
	// name before it names the other role.
	AddressVotes = 2
	// AddressMajority is how many times more often a name must be
	// addressed from one side than from the other.
	AddressMajority = 5
)

// addressSpeakers sets the speaker of the chat turns of cs sent under one
// of two generic roles (text.TurnRole), from the query's terms that the
// visible turns (those passing the policy and feedback filters of req: a
// hidden turn never says who is who) address by name
// (text.AddressedNames); query is queryTerms(req.Query). A query term is a
// role's name when at least AddressVotes turns of the other role address
// it, AddressMajority times as many as turns of its own role do, and its
// own turns say it at most half as often as it is addressed (a third party
// is talked about by both sides; one's own name is rarely said). Only the
// lexical channel's turns are read:
// a turn that addresses or says a query term holds it. The turns of a role
// get its names as speakerTerms, or a term no query holds when it has none
// (said by someone the query does not name), and are marked byAddr. Nothing
// changes when no query term is a role's name, or when the visible turns
// are under fewer or more than two generic roles. It reads the candidates
// and the query, never their order, so the pack stays a pure function of
// its inputs.
func addressSpeakers(cs []*cand, req Request, query []uint64) {
	if len(query) == 0 {
		return
	}
	type turn struct {
		c       *cand
		role    string
		content string
		side    int
		visible bool
	}
	var turns []turn
	var roles []string
	for _, c := range cs {
		if c.SourceType != "chat_turn" || c.Start != 0 {
			continue
		}
		role := text.TurnRole(c.Text)
		if role == "" {
			continue
		}
		t := turn{c: c, role: role, content: c.Text[len(role)+len(": "):], visible: visibleTo(c, req)}
		turns = append(turns, t)
		if t.visible && !slices.Contains(roles, role) {
			roles = append(roles, role)
		}
	}
	if len(roles) != 2 {
		return
	}
	slices.Sort(roles)
	// A turn that addresses or says a query term holds it, so only the
	// lexical channel's visible turns are read. votes[h][i]: those that
	// address the query's name h to role i (said by the other role).
	var read []turn
	votes := make(map[uint64]*[2]int)
	for i := range turns {
		t := &turns[i]
		t.side = slices.Index(roles, t.role)
		if t.side < 0 || !t.c.InLexical || !(finite(t.c.Lexical) > 0) || !t.visible {
			continue
		}
		read = append(read, *t)
		for _, h := range t.c.addressed(req.Analyses, t.content) {
			if _, asked := slices.BinarySearch(query, h); asked {
				tally(votes, h)[1-t.side]++
			}
		}
	}
	// The names addressed from one side, then how often their own side
	// says them.
	var found []uint64
	for h, v := range votes {
		if max(v[0], v[1]) >= AddressVotes && max(v[0], v[1]) >= AddressMajority*min(v[0], v[1]) {
			found = append(found, h)
		}
	}
	if len(found) == 0 {
		return
	}
	slices.Sort(found)
	says := make([][2]int, len(found))
	for _, t := range read {
		for i, held := range heldMask(t.content, found) {
			if held {
				says[i][t.side]++
			}
		}
	}
	var named [2][]uint64
	for j, h := range found {
		v := votes[h]
		for i := range 2 {
			if v[i] >= AddressVotes && v[i] >= AddressMajority*v[1-i] && 2*says[j][i] <= v[i] {
				named[i] = append(named[i], h)
			}
		}
	}
	if len(named[0]) == 0 && len(named[1]) == 0 {
		return
	}
	for i := range named {
		if len(named[i]) == 0 {
			named[i] = []uint64{wordKey([]byte("\x00" + roles[i]))}
		}
	}
	for _, t := range turns {
		if t.side >= 0 {
			t.c.spk, t.c.spkRead, t.c.byAddr = named[t.side], true, true
		}
	}
	for _, c := range cs { // a long turn's later spans: its role is their speaker's (TurnSpeaker)
		if c.SourceType == "chat_turn" && c.Start != 0 {
			if side := slices.Index(roles, text.TurnRole(c.turnHead())); side >= 0 {
				c.spk, c.spkRead, c.byAddr = named[side], true, true
			}
		}
	}
}

// addressedTerms returns the term hashes (nameTerm) of the names content
// addresses (text.AddressedNames), each once.
func addressedTerms(content string) []uint64 {
	var hs []uint64
	for _, n := range text.AddressedNames(content) {
		if h, ok := nameTerm(n); ok && !slices.Contains(hs, h) {
			hs = append(hs, h)
		}
	}
	return hs
}

// tally returns m[h], adding it when missing.
func tally(m map[uint64]*[2]int, h uint64) *[2]int {
	if m[h] == nil {
		m[h] = new([2]int)
	}
	return m[h]
}

// visibleTo reports whether c passes the policy and feedback filters of
// req: only what the request may see may say who is who.
func visibleTo(c *cand, req Request) bool {
	if policyDenial(&c.Candidate, req.ActorID, req.Policy) != "" {
		return false
	}
	reason, _ := feedbackDenial(&c.Marks, req.ActorID, req.Policy)
	return reason == ""
}

// nameTerm returns the term hash of w when w is written as a name: a
// capitalised word of two letters or more that text.SpeakerName accepts.
func nameTerm(w string) (uint64, bool) {
	if r, _ := utf8.DecodeRuneInString(w); len(w) < 2 || !unicode.IsUpper(r) || !text.SpeakerName(w) {
		return 0, false
	}
	h, kind := termHash([]byte(strings.ToLower(w)))
	return h, kind == kindTerm
}
