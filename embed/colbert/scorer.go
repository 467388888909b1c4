package colbert

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// SplitSpeaker cuts a chat turn "Name: text" into its speaker "Name" and
// its content "text"; anything else (no ": ", or a head longer than 40
// bytes or holding a line break or sentence end) is all content, with
// speaker "". The Scorer reads a passage as the rows of "Name:" and of its
// content, each encoded alone, so that a store keeps a turn's content rows
// (Rows) whatever name a pack finds for its speaker: the same rows serve
// "user: I ran ..." and "Caroline: I ran ...".
func SplitSpeaker(text string) (speaker, content string) {
	name, rest, ok := strings.Cut(text, ": ")
	if !ok || len(name) > 40 || strings.ContainsAny(name, "\n.!?") {
		return "", text
	}
	return name, rest
}

// splitSpeakers is SplitSpeaker of each text: the names and the contents.
func splitSpeakers(texts []string) (names, contents []string) {
	names, contents = make([]string, len(texts)), make([]string, len(texts))
	for i, t := range texts {
		names[i], contents[i] = SplitSpeaker(t)
	}
	return names, contents
}

// Rows computes the rows a store keeps of a span (engine.TokenRower): the
// stored rows (Store, Append) of its content (SplitSpeaker). They are the
// rows a Scorer computes when it has none, so a pack has the same bits
// whether it reads them or computes them.
type Rows struct{ e *Encoder }

// NewRows returns the row source of e.
func NewRows(e *Encoder) *Rows { return &Rows{e} }

// Model names the rows: the model, the stored form and the content rule,
// so that rows of another form are never read as these.
func (r *Rows) Model() string { return r.e.Model() + ".content.i8x128" }

// RowBytes is StoredRowBytes.
func (r *Rows) RowBytes() int { return StoredRowBytes }

// Rows returns the encoded stored rows of text's content.
func (r *Rows) Rows(text string) ([]byte, error) {
	_, content := SplitSpeaker(text)
	m, err := r.e.Passage(content, 1)
	if err != nil {
		return nil, err
	}
	return Store(m).Append(nil), nil
}

// Scorer scores passages for a query by MaxSimStored
// (retrieval.LateInteraction): a passage "Name: text" by the rows of
// "Name:" and of its content (SplitSpeaker), in that order. Content rows
// come from the store when it has them (Rows), else from a model pass,
// remembered up to a bound so that packs over the same memory pay a
// passage's pass once. It is safe for concurrent use.
type Scorer struct {
	e        *Encoder
	maxBytes int

	mu    sync.Mutex
	memo  map[string]Stored
	order []string // insertion order, for eviction
	bytes int
}

func storedBytes(s Stored) int { return StoredRowBytes * s.Rows() }

// NewScorer returns a scorer over e that remembers at most maxBytes of
// rows (StoredRowBytes a token), evicting the oldest first.
func NewScorer(e *Encoder, maxBytes int) *Scorer {
	return &Scorer{e: e, maxBytes: maxBytes, memo: make(map[string]Stored)}
}

// Model names the model.
func (s *Scorer) Model() string { return s.e.Model() }

// Query encodes a query for ScoreAll: its stored rows (a Stored).
func (s *Scorer) Query(query string) (any, error) {
	qm, err := s.e.Query(query)
	if err != nil {
		return nil, err
	}
	return Store(qm), nil
}

// ScoreAll writes the score of each passage texts[i] for the query q
// (Query's) to dst.
// stored[i], when not nil, is what Rows computed of spans[i], the stored
// text of the span texts[i] reads (texts[i] may name its speaker where the
// span says "user"); they are used when spans[i]'s content is texts[i]'s,
// and computed otherwise. The texts to encode run on GOMAXPROCS
// goroutines. Each score depends on the query and its passage alone.
func (s *Scorer) ScoreAll(ctx context.Context, query any, texts, spans []string, stored [][]byte, dst []float64) error {
	q, ok := query.(Stored)
	if !ok {
		return fmt.Errorf("colbert: ScoreAll: the query is a %T, not Query's", query)
	}
	speakers, contents, err := s.passageRows(ctx, texts, spans, stored)
	if err != nil {
		return err
	}
	var dots scratch
	for i := range texts {
		dst[i] = maxSimStored(q, &dots, speakers[i], contents[i])
	}
	return nil
}

// passageRows returns the rows of each passage's speaker ("Name:", none
// when it names none) and of its content, from stored, the memo or a model
// pass (ScoreAll says which).
func (s *Scorer) passageRows(ctx context.Context, texts, spans []string, stored [][]byte) (speakers, contents []Stored, err error) {
	speakers = make([]Stored, len(texts))
	contents = make([]Stored, len(texts))
	// The texts to encode, each once, and where their rows go.
	type need struct {
		text string
		dst  []*Stored
		rows Stored
	}
	var todo []*need
	byText := map[string]*need{}
	want := func(text string, dst *Stored) {
		if n, ok := byText[text]; ok {
			n.dst = append(n.dst, dst)
			return
		}
		if r, ok := s.memo[text]; ok {
			*dst = r
			return
		}
		n := &need{text: text, dst: []*Stored{dst}}
		byText[text] = n
		todo = append(todo, n)
	}
	// Stored rows are decoded before the memo is locked: most passages
	// have them, and concurrent packs need not wait for each other's.
	names, bodies := splitSpeakers(texts)
	decoded := make([]bool, len(texts))
	for i, content := range bodies {
		if i < len(stored) && stored[i] != nil {
			if _, c := SplitSpeaker(spans[i]); c == content {
				if r, err := DecodeStored(stored[i]); err == nil {
					contents[i], decoded[i] = r, true
				}
			}
		}
	}
	s.mu.Lock()
	for i, content := range bodies {
		if names[i] != "" {
			want(names[i]+":", &speakers[i])
		}
		if !decoded[i] {
			want(content, &contents[i])
		}
	}
	s.mu.Unlock()
	errs := make([]error, len(todo))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := int(next.Add(1) - 1); k < len(todo); k = int(next.Add(1) - 1) {
				if errs[k] = ctx.Err(); errs[k] == nil {
					var m Matrix
					if m, errs[k] = s.e.Passage(todo[k].text, 1); errs[k] == nil {
						todo[k].rows = Store(m)
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	s.mu.Lock()
	for _, n := range todo {
		for _, d := range n.dst {
			*d = n.rows
		}
		s.remember(n.text, n.rows)
	}
	s.mu.Unlock()
	return speakers, contents, nil
}

// ScoreAllWithout is ScoreAll for q (Query's encoding of query), writing
// the same scores to dst, and in the same pass over the rows the score of
// each passage's content alone (its speaker's rows aside) for the query
// without the rows of words to content (retrieval.LateWithout): what a passage says about what is
// asked, whoever the query and the passage name. A word is matched whole,
// as its WordPiece ids in a run of the query's that neither starts nor
// ends inside a word, with a possessive after it ("Caroline's": caroline
// ' s); matching is by ids, so case does not matter (the vocabulary is
// uncased). The query's other rows keep what its one pass gave them
// (as good a weight for attribution on LoCoMo dev as a pass over the
// query without the words; docs/benchmarks.md § Attribution by late
// interaction). It reports false, and leaves content, when the query
// holds none of words.
func (s *Scorer) ScoreAllWithout(ctx context.Context, q any, query string, words []string, texts, spans []string, stored [][]byte, dst, content []float64) (bool, error) {
	rows, ok := q.(Stored)
	if !ok {
		return false, fmt.Errorf("colbert: ScoreAllWithout: the query is a %T, not Query's", q)
	}
	keep := s.keepRows(rows, query, words)
	if keep == nil {
		return false, s.ScoreAll(ctx, q, texts, spans, stored, dst)
	}
	speakers, contents, err := s.passageRows(ctx, texts, spans, stored)
	if err != nil {
		return false, err
	}
	var dots scratch
	for i := range texts {
		dst[i], content[i] = maxSimSplit(rows, keep, speakers[i], contents[i], &dots)
	}
	return true, nil
}

func (s *Scorer) remember(text string, r Stored) {
	if _, ok := s.memo[text]; ok || storedBytes(r) > s.maxBytes {
		return
	}
	s.memo[text] = r
	s.order = append(s.order, text)
	s.bytes += storedBytes(r)
	for s.bytes > s.maxBytes {
		old := s.order[0]
		s.order = s.order[1:]
		s.bytes -= storedBytes(s.memo[old])
		delete(s.memo, old)
	}
}

// keepRows returns which rows of q (Query's encoding of query) are not
// those of words (ScoreAllWithout), or nil when none is.
func (s *Scorer) keepRows(q Stored, query string, words []string) []bool {
	ids := s.e.QueryIDs(query)
	if len(ids) != q.Rows() || len(ids) < 3 {
		return nil
	}
	keep := make([]bool, len(ids))
	for i := range keep {
		keep[i] = true
	}
	possessive := func(j int) bool {
		if j+1 >= len(ids)-1 || ids[j+1] != s.e.apostropheS[2] {
			return false
		}
		return ids[j] == s.e.apostropheS[0] || ids[j] == s.e.apostropheS[1]
	}
	found := false
	for _, w := range words {
		wid := s.e.QueryIDs(w)
		wid = wid[1 : len(wid)-1] // [CLS] … [SEP] off
		if len(wid) == 0 {
			continue
		}
		for i := 1; i+len(wid) <= len(ids)-1; i++ { // [CLS] and [SEP] are never a word
			if !slices.Equal(ids[i:i+len(wid)], wid) || s.e.continues(ids[i]) || s.e.continues(ids[i+len(wid)]) {
				continue
			}
			found = true
			end := i + len(wid)
			if possessive(end) {
				end += 2
			}
			for k := i; k < end; k++ {
				keep[k] = false
			}
		}
	}
	if !found {
		return nil
	}
	return keep
}
