package pack

// role is what a word means to the rules beyond being a term: a stopword,
// a negator, a form of a negation pair, a word the claims read
// (claimWords), a word outside a clause's subject (notSubjectWords).
type role struct {
	stop     bool
	not      bool // "not" or "never": negates a positive form right before or after it
	pos, neg uint // bit sets over negationPairs: the forms the word is by itself
	scene    bool // a unit, scale, change cue or scene word: not part of what a clause is about (claimReader.term)
}

// negationPair is a positive form and its negation. The positive word
// counts as negative when "not" or "never" comes right before or after it
// ("will not", "not approved").
type negationPair struct {
	pos, neg string   // canonical forms, for descriptions
	posWord  string   // the positive word
	negWords []string // words that are the negative form by themselves
}

var negationPairs = []negationPair{
	{"will", "will not", "will", []string{"won't"}},
	{"can", "cannot", "can", []string{"cannot", "can't"}},
	{"approved", "rejected", "approved", []string{"rejected"}},
	{"allowed", "prohibited", "allowed", []string{"prohibited"}},
	{"enabled", "disabled", "enabled", []string{"disabled"}},
}

// lexicon maps the wordKey of every word with a role to the role. One
// lookup per word replaces a stopword map and a string comparison per rule.
var lexicon = func() *lexiconTable {
	t := &lexiconTable{}
	for w := range stopwords {
		t.role(w).stop = true
	}
	t.role("not").not = true
	t.role("never").not = true
	for k, np := range negationPairs {
		t.role(np.posWord).pos |= 1 << k
		for _, n := range np.negWords {
			t.role(n).neg |= 1 << k
		}
	}
	for _, w := range claimWords {
		t.role(w) // claimReader.special reads these
	}
	for _, w := range notSubjectWords() {
		t.role(w).scene = true
	}
	return t
}()

// lexiconTable is an open-addressing table from word hashes to roles.
type lexiconTable struct {
	keys  [1024]uint64
	roles [1024]*role
}

// role returns the role of w, adding it when new.
func (t *lexiconTable) role(w string) *role {
	h := wordKey([]byte(w))
	for i := h & 1023; ; i = (i + 1) & 1023 {
		if t.roles[i] == nil {
			t.keys[i], t.roles[i] = h, &role{}
			return t.roles[i]
		}
		if t.keys[i] == h {
			return t.roles[i]
		}
	}
}

// get returns the role of the word with hash h, or nil.
func (t *lexiconTable) get(h uint64) *role {
	for i := h & 1023; ; i = (i + 1) & 1023 {
		switch {
		case t.roles[i] == nil:
			return nil
		case t.keys[i] == h:
			return t.roles[i]
		}
	}
}
