package retrieval

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/loci-memory/loci/embed/colbert"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/internal/enginetest"
	"github.com/loci-memory/loci/pack"
)

// byWord is a late-interaction model for tests: a passage holding its word
// scores 10, any other 0.
type byWord string

func (byWord) Model() string { return "by-word" }

func (byWord) Query(q string) (LateQuery, error) { return q, nil }

func (w byWord) ScoreAll(_ context.Context, _ LateQuery, passages, _ []string, _ [][]byte, dst []float64) error {
	for i, p := range passages {
		dst[i] = 0
		if strings.Contains(p, string(w)) {
			dst[i] = 10
		}
	}
	return nil
}

// TestLateInteractionPack packs with late interaction over a chat: the
// scores order the pack (a model that favours one turn puts it first), the
// pack says how it was ordered, and with the built-in model the same
// request gives the same bytes again, from a scorer that remembers the
// passages' vectors and from a fresh one.
func TestLateInteractionPack(t *testing.T) {
	enc, err := colbert.Default()
	if err != nil {
		t.Fatal(err)
	}
	db := twoRunners(t)
	ctx := context.Background()
	pk := func(p *Packer, query string) *pack.Result {
		t.Helper()
		res, err := p.ContextPack(ctx, "t", PackRequest{Workspace: "ws", Query: query, MaxTokens: 512, ActorID: "alice", LateDepth: 10})
		if err != nil {
			t.Fatal(err)
		}
		return res.Result
	}
	q := "What race did Caroline run?"
	if res := pk(New(db), q); !strings.HasPrefix(res.Citations[0].Text, "Caroline: I ran a marathon") {
		t.Fatalf("first citation %q without late interaction, want Caroline's marathon", res.Citations[0].Text)
	}
	biscuit := New(db)
	biscuit.SetLateInteraction(byWord("Biscuit"))
	if res := pk(biscuit, q); !strings.Contains(res.Citations[0].Text, "Biscuit") {
		t.Errorf("first citation %q with a model that favours Biscuit", res.Citations[0].Text)
	}
	p := New(db)
	p.SetLateInteraction(colbert.NewScorer(enc, 1<<20))
	res := pk(p, q)
	if !strings.HasPrefix(res.Citations[0].Text, "Caroline: I ran a marathon") {
		t.Errorf("first citation %q, want Caroline's marathon", res.Citations[0].Text)
	}
	want := fmt.Sprintf(pack.AssumeLate, len(twoRunnersTurns), enc.Model())
	if !slices.Contains(res.Assumptions, want) {
		t.Errorf("assumptions %q, want %q", res.Assumptions, want)
	}
	if again := pk(p, q); again.PackHash != res.PackHash {
		t.Error("the same request gave another pack")
	}
	fresh := New(db)
	fresh.SetLateInteraction(colbert.NewScorer(enc, 0))
	if other := pk(fresh, q); other.PackHash != res.PackHash {
		t.Error("a scorer that remembers nothing gave another pack")
	}
	if plain := pk(New(db), q); slices.Contains(plain.Assumptions, want) || !slices.Contains(plain.Assumptions, pack.AssumeNoLate) {
		t.Errorf("a Packer without late interaction asked for it: %q, want %q", plain.Assumptions, pack.AssumeNoLate)
	}
	without, err := p.ContextPack(ctx, "t", PackRequest{Workspace: "ws", Query: q, MaxTokens: 512, ActorID: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(without.Result.Assumptions, want) {
		t.Errorf("a pack without late_depth used late interaction: %q", without.Result.Assumptions)
	}
}

// contentByWord is byWord with ScoreAllWithout: without words, a
// passage's content (its speaker aside) scores 10 when it holds content,
// else 0. It records the words it was asked to leave out.
type contentByWord struct {
	byWord
	content string
	words   *[]string
}

func (w contentByWord) ScoreAllWithout(ctx context.Context, q LateQuery, query string, words []string, passages, spans []string, stored [][]byte, dst, content []float64) (bool, error) {
	*w.words = append(*w.words, words...)
	if err := w.byWord.ScoreAll(ctx, q, passages, spans, stored, dst); err != nil {
		return false, err
	}
	for i, p := range passages {
		_, c := colbert.SplitSpeaker(p)
		content[i] = 0
		if strings.Contains(c, w.content) {
			content[i] = 10
		}
	}
	return true, nil
}

// TestLateContentAttribution: a model that can score contents without
// names (LateWithout) is asked to leave out the scored turns' speakers,
// and attribution reads its scores: the turns that state the marathon are
// Caroline's, so asked about Caroline the pack keeps its confidence, and
// it loses it when the model finds what is asked in Melanie's turn only
// (the race last Sunday, which BM25 alone finds in no one else's).
func TestLateContentAttribution(t *testing.T) {
	db := twoRunners(t)
	pk := func(li LateInteraction) *pack.Result {
		t.Helper()
		p := New(db)
		p.SetLateInteraction(li)
		res, err := p.ContextPack(context.Background(), "t", PackRequest{Workspace: "ws", Query: "Did Caroline run a race last Sunday?", MaxTokens: 512, ActorID: "alice", LateDepth: 10})
		if err != nil {
			t.Fatal(err)
		}
		return res.Result
	}
	var words []string
	caroline := pk(contentByWord{byWord("marathon"), "marathon", &words})
	if !slices.Equal(words, []string{"caroline", "melanie"}) {
		t.Errorf("words left out %q, want the speakers caroline and melanie", words)
	}
	melanie := pk(contentByWord{byWord("marathon"), "charity race", &words})
	if caroline.Abstain || !melanie.Abstain || melanie.Confidence >= caroline.Confidence {
		t.Errorf("confidence %v (abstain %v) when Caroline's turn states it, %v (abstain %v) when only Melanie's does",
			caroline.Confidence, caroline.Abstain, melanie.Confidence, melanie.Abstain)
	}
}

// countingLate counts the passages a LateInteraction was given stored rows
// for.
type countingLate struct {
	LateInteraction
	stored, passages int
}

func (c *countingLate) ScoreAll(ctx context.Context, query LateQuery, texts, spans []string, stored [][]byte, dst []float64) error {
	c.passages += len(texts)
	for _, r := range stored {
		if r != nil {
			c.stored++
		}
	}
	return c.LateInteraction.ScoreAll(ctx, query, texts, spans, stored, dst)
}

// TestLateInteractionStoredRows: once the engine has the token rows (a
// segment's file, the head's in memory), packs read them instead of
// computing them, and give the same bytes.
func TestLateInteractionStoredRows(t *testing.T) {
	enc, err := colbert.Default()
	if err != nil {
		t.Fatal(err)
	}
	db := enginetest.Open(t, t.TempDir(), engine.Options{DisableBackground: true, TokenRows: colbert.NewRows(enc)})
	for i, tr := range twoRunnersTurns {
		in := enginetest.Chat("ws", tr.text)
		in.Payload = []byte(fmt.Sprintf(`{"role":%q,"content":%q}`, tr.role, tr.text))
		enginetest.MustIngest(t, db, "t", in)
		if i == 3 { // four turns in a segment, two in the head
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	req := PackRequest{Workspace: "ws", Query: "What race did Caroline run?", MaxTokens: 512, LateDepth: 10}
	pk := func() (*pack.Result, *countingLate) {
		t.Helper()
		li := &countingLate{LateInteraction: colbert.NewScorer(enc, 0)}
		p := New(db)
		p.SetLateInteraction(li)
		res, err := p.ContextPack(context.Background(), "t", req)
		if err != nil {
			t.Fatal(err)
		}
		return res.Result, li
	}
	computed, li := pk()
	if li.passages != len(twoRunnersTurns) || li.stored != 0 {
		t.Fatalf("before the rows are built: %d passages, %d with stored rows; want %d, 0", li.passages, li.stored, len(twoRunnersTurns))
	}
	if n, err := db.BuildTokenRows(); err != nil || n != 1 {
		t.Fatalf("BuildTokenRows = %d, %v", n, err)
	}
	read, li := pk()
	if li.stored != len(twoRunnersTurns) {
		t.Fatalf("after the build: %d passages with stored rows, want all %d (the segment's file, the head's memory)", li.stored, len(twoRunnersTurns))
	}
	if read.PackHash != computed.PackHash || read.Confidence != computed.Confidence {
		t.Fatalf("stored rows gave another pack: %s (%v), computed %s (%v)", read.PackHash, read.Confidence, computed.PackHash, computed.Confidence)
	}
}

// TestLateMaxSpans: a request with LateMaxSpans runs its LateDepth only in
// a workspace of at most that many visible spans, and then gives the pack
// and the receipt id of the same request with that depth asked for
// outright; in a larger one, those of the request without it.
func TestLateMaxSpans(t *testing.T) {
	db := twoRunners(t) // six turns, one span each
	p := New(db)
	p.SetLateInteraction(byWord("Biscuit"))
	ctx := context.Background()
	pk := func(depth, maxSpans int) *PackResponse {
		t.Helper()
		res, err := p.ContextPack(ctx, "t", PackRequest{Workspace: "ws", Query: "What race did Caroline run?", MaxTokens: 512,
			ActorID: "alice", LateDepth: depth, LateMaxSpans: maxSpans})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	with, without := pk(10, 0), pk(0, 0)
	if with.Result.PackHash == without.Result.PackHash {
		t.Fatal("the model changes nothing here: the test cannot tell")
	}
	for _, c := range []struct {
		maxSpans int
		want     *PackResponse
	}{{6, with}, {100, with}, {5, without}, {1, without}} {
		got := pk(10, c.maxSpans)
		if got.Result.PackHash != c.want.Result.PackHash || got.ReceiptID != c.want.ReceiptID {
			t.Errorf("LateMaxSpans %d in a workspace of 6 spans: pack %s receipt %s, want %s %s", c.maxSpans,
				got.Result.PackHash, got.ReceiptID, c.want.Result.PackHash, c.want.ReceiptID)
		}
	}
}

// TestLateMaxSpansFiltered: the workspace's size decides, not the part a
// metadata filter leaves: the engine stores rows by workspace size, and a
// filter on a large workspace must not make its packs compute them.
func TestLateMaxSpansFiltered(t *testing.T) {
	db := enginetest.Open(t, t.TempDir(), engine.Options{DisableBackground: true})
	for i, tr := range twoRunnersTurns {
		in := enginetest.Chat("ws", tr.text)
		if i%2 == 0 {
			in.Metadata = map[string]string{"topic": "sport"}
		}
		enginetest.MustIngest(t, db, "t", in)
	}
	p := New(db)
	p.SetLateInteraction(byWord("Biscuit"))
	for _, c := range []struct {
		maxSpans int
		want     bool
	}{{6, true}, {4, false}} {
		res, err := p.ContextPack(context.Background(), "t", PackRequest{Workspace: "ws", Query: "What race did Caroline run?",
			MaxTokens: 512, LateDepth: 10, LateMaxSpans: c.maxSpans, Metadata: map[string]string{"topic": "sport"}})
		if err != nil {
			t.Fatal(err)
		}
		ran := slices.ContainsFunc(res.Result.Assumptions, func(a string) bool { return strings.Contains(a, "late interaction") })
		if ran != c.want {
			t.Errorf("LateMaxSpans %d, 3 of the workspace's 6 spans filtered in: late interaction ran %v, want %v", c.maxSpans, ran, c.want)
		}
	}
}
