package colbert

import (
	"bytes"
	"context"
	"slices"
	"testing"
)

func TestSplitSpeaker(t *testing.T) {
	for _, c := range []struct{ in, speaker, content string }{
		{"Caroline: I ran a race.", "Caroline", "I ran a race."},
		{"user: Caroline: I ran.", "user", "Caroline: I ran."},
		{"no speaker here", "", "no speaker here"},
		{"Dr. Smith: hello", "", "Dr. Smith: hello"},
		{"Why? Because: reasons", "", "Why? Because: reasons"},
		{"line\nbreak: x", "", "line\nbreak: x"},
		{"a name longer than forty bytes, said by nobody: x", "", "a name longer than forty bytes, said by nobody: x"},
		{"Caroline:no space", "", "Caroline:no space"},
	} {
		if sp, ct := SplitSpeaker(c.in); sp != c.speaker || ct != c.content {
			t.Errorf("SplitSpeaker(%q) = %q, %q; want %q, %q", c.in, sp, ct, c.speaker, c.content)
		}
	}
}

// TestScorer: a passage scores MaxSimStored of the query's rows and the
// rows of its speaker's "Name:" then its content, each encoded alone; the
// same bits whether the content rows were remembered, computed, or read
// from the store (Rows), also for a span that names its speaker otherwise;
// stored rows of another content are not used; the memo keeps its bound.
func TestScorer(t *testing.T) {
	e, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	query := "Where does Caroline's sister live?"
	texts := []string{
		"Caroline: My sister lives in Lisbon and works as a nurse.",
		"Caroline: I ran a charity race last Sunday.",
		"We adopted a puppy named Oscar last month.",
	}
	enc := func(s string) Stored {
		m, err := e.Passage(s, 1)
		if err != nil {
			t.Fatal(err)
		}
		return Store(m)
	}
	qm, _ := e.Query(query)
	q := Store(qm)
	want := make([]float64, len(texts))
	for i, p := range texts {
		name, content := SplitSpeaker(p)
		r := enc(content)
		if name != "" {
			n := enc(name + ":")
			r = Stored{Scales: append(n.Scales, r.Scales...), Vals: append(n.Vals, r.Vals...)}
		}
		want[i] = MaxSimStored(q, r)
	}
	if want[0] <= want[1] {
		t.Fatalf("the sister's turn scores %.3f, the race %.3f", want[0], want[1])
	}

	rows := NewRows(e)
	if rows.RowBytes() != StoredRowBytes || rows.Model() == e.Model() {
		t.Fatalf("Rows: %d bytes a row, model %q", rows.RowBytes(), rows.Model())
	}
	spans := []string{"user: My sister lives in Lisbon and works as a nurse.", texts[1], texts[2]}
	stored := make([][]byte, len(spans))
	for i, sp := range spans {
		if stored[i], err = rows.Rows(sp); err != nil {
			t.Fatal(err)
		}
	}
	if _, c := SplitSpeaker(texts[0]); !bytes.Equal(stored[0], enc(c).Append(nil)) {
		t.Fatal("Rows of a turn are not its content's stored rows")
	}
	// A span whose content is not the text's: its rows are not used.
	otherSpans := slices.Clone(spans)
	otherSpans[1] = "Caroline: My sister lives in Lisbon and works as a nurse."
	other := slices.Clone(stored)
	other[1] = stored[0]
	one := StoredRowBytes * enc("My sister lives in Lisbon and works as a nurse.").Rows()
	s := NewScorer(e, one+1) // room for about one passage
	for _, c := range []struct {
		name   string
		spans  []string
		stored [][]byte
	}{{"computed", spans, nil}, {"remembered", spans, nil}, {"stored", spans, stored},
		{"stored, one of another content", otherSpans, other}, {"computed again", spans, nil}} {
		got := make([]float64, len(texts))
		if err := s.ScoreAll(context.Background(), mustQuery(t, s, query), texts, c.spans, c.stored, got); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: scores %v, want %v", c.name, got, want)
		}
		if s.bytes > s.maxBytes || len(s.memo) != len(s.order) {
			t.Fatalf("%s: remembers %d texts in %d bytes, bound %d", c.name, len(s.memo), s.bytes, s.maxBytes)
		}
	}
	// Rows that match are read, not computed: changed ones change the score.
	changed := slices.Clone(stored)
	changed[2] = rows2x(stored[2])
	got := make([]float64, len(texts))
	if err := NewScorer(e, 0).ScoreAll(context.Background(), mustQuery(t, s, query), texts, spans, changed, got); err != nil {
		t.Fatal(err)
	}
	if got[2] == want[2] || got[0] != want[0] {
		t.Fatalf("with changed stored rows: %v, want %v but for the third", got, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := NewScorer(e, 0).ScoreAll(ctx, mustQuery(t, s, query), texts, spans, nil, make([]float64, 3)); err == nil {
		t.Error("ScoreAll on a cancelled context computed rows")
	}
	if err := s.ScoreAll(context.Background(), query, texts, spans, nil, make([]float64, 3)); err == nil {
		t.Error("ScoreAll took a query Query did not encode")
	}
}

// rows2x returns encoded rows with every scale doubled.
func rows2x(b []byte) []byte {
	r, err := DecodeStored(b)
	if err != nil {
		panic(err)
	}
	for i := range r.Scales {
		r.Scales[i] *= 2
	}
	return r.Append(nil)
}

func mustQuery(t *testing.T, s *Scorer, query string) any {
	t.Helper()
	q, err := s.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestScoreAllWithout: the rows left out are those of each whole word (any
// case) and of a possessive after it; a piece of a longer word is not a
// word; a query holding none of the words reports false. The scores are
// ScoreAll's bits, and the contents' scores those of MaxSimStored over the
// rows kept and the content rows alone, whoever the speaker.
func TestScoreAllWithout(t *testing.T) {
	e, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	s := NewScorer(e, 1<<20)
	for _, c := range []struct {
		query string
		words []string
		drop  []int // positions left out, [CLS] at 0; nil: none found
	}{
		{"Where does Caroline's sister live?", []string{"caroline"}, []int{3, 4, 5}}, // caroline ' s
		{"Where does CAROLINE live?", []string{"caroline", "melanie"}, []int{3}},     // any case
		{"Where does Caroline live?", []string{"melanie"}, nil},                      // not there
		{"Is a carolinean a person?", []string{"caroline"}, nil},                     // a piece of a word
		{"Did Mel and Caroline meet?", []string{"caroline", "mel"}, []int{2, 4}},     // two words
		{"Caroline, Caroline!", []string{"caroline"}, []int{1, 3}},                   // every time
	} {
		q, err := s.Query(c.query)
		if err != nil {
			t.Fatal(err)
		}
		ids := e.QueryIDs(c.query)
		keep := s.keepRows(q.(Stored), c.query, c.words)
		if (keep == nil) != (c.drop == nil) {
			t.Errorf("%q without %v: rows kept %v, want positions %v left out (ids %v)", c.query, c.words, keep, c.drop, ids)
			continue
		}
		for i := range keep {
			if keep[i] == slices.Contains(c.drop, i) {
				t.Errorf("%q without %v: rows kept %v, want positions %v left out (ids %v)", c.query, c.words, keep, c.drop, ids)
				break
			}
		}
	}
	query := "What did Caroline run last Sunday?"
	q, _ := s.Query(query)
	texts := []string{"Caroline: I ran a charity race last Sunday.", "Melanie: I ran a charity race last Sunday.", "no speaker ran here"}
	rows, err := NewRows(e).Rows(texts[0])
	if err != nil {
		t.Fatal(err)
	}
	stored := [][]byte{rows, nil, nil} // one read from the store, the others computed
	want := make([]float64, len(texts))
	if err := s.ScoreAll(context.Background(), q, texts, texts, stored, want); err != nil {
		t.Fatal(err)
	}
	got, content := make([]float64, len(texts)), make([]float64, len(texts))
	ok, err := s.ScoreAllWithout(context.Background(), q, query, []string{"caroline", "melanie"}, texts, texts, stored, got, content)
	if err != nil || !ok {
		t.Fatalf("ScoreAllWithout: %v %v", ok, err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("scores %v, ScoreAll gives %v", got, want)
	}
	if want[0] <= want[1] {
		t.Errorf("with the name, Caroline's turn scores %v, Melanie's %v: the speaker's rows should count", want[0], want[1])
	}
	keep := s.keepRows(q.(Stored), query, []string{"caroline"})
	var kept Stored
	for i, k := range keep {
		if k {
			kept.Scales = append(kept.Scales, q.(Stored).Scales[i])
			kept.Vals = append(kept.Vals, q.(Stored).Vals[i*StoredDims:(i+1)*StoredDims]...)
		}
	}
	for i, text := range texts {
		_, c := SplitSpeaker(text)
		m, err := e.Passage(c, 1)
		if err != nil {
			t.Fatal(err)
		}
		if w := MaxSimStored(kept, Store(m)); content[i] != w {
			t.Errorf("content score of %q: %v, want %v", text, content[i], w)
		}
	}
	if content[0] != content[1] {
		t.Errorf("the same content said by two speakers: %v and %v", content[0], content[1])
	}
	if ok, err := s.ScoreAllWithout(context.Background(), q, query, []string{"melanie"}, texts, texts, stored, got, content); ok || err != nil || !slices.Equal(got, want) {
		t.Errorf("a query without the words: ok %v, err %v, scores %v (want %v)", ok, err, got, want)
	}
}
