package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/embed"
	"github.com/loci-memory/loci/embed/glove"
)

// gatedEmbedder is GloVe behind a gate: Embed blocks until the test opens
// it, so a test sees artifacts pending, then embedded. down makes it fail.
type gatedEmbedder struct {
	embed.Embedder
	mu    sync.Mutex
	gate  chan struct{}
	down  bool
	calls int
	texts int
}

func newGatedEmbedder() *gatedEmbedder {
	return &gatedEmbedder{Embedder: glove.New(), gate: make(chan struct{})}
}

func (g *gatedEmbedder) open() { close(g.gate) }

func (g *gatedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	g.mu.Lock()
	g.calls++
	g.texts += len(texts)
	down := g.down
	g.mu.Unlock()
	if down {
		return nil, fmt.Errorf("connection refused: %w", embed.ErrUnavailable)
	}
	return g.Embedder.Embed(ctx, texts)
}

func waitEmbedded(t *testing.T, db *DB, tenant string, ids ...uuid.UUID) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.WaitEmbedded(ctx, tenant, ids); err != nil {
		t.Fatalf("WaitEmbedded: %v", err)
	}
}

func embeddingState(t *testing.T, db *DB, tenant string, id uuid.UUID) string {
	t.Helper()
	s, err := db.EmbeddingState(tenant, id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestBackgroundEmbedding(t *testing.T) {
	g := newGatedEmbedder()
	db := openTest(t, t.TempDir(), Options{DisableBackground: true, Embedder: g, EmbedInBackground: true})
	defer db.Close()
	r, err := db.Ingest("t", chat("ws", "the deploy moved to Friday"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Embedded {
		t.Fatal("acknowledged as embedded before the worker ran")
	}
	if s := embeddingState(t, db, "t", r.ArtifactID); s != EmbeddingPending {
		t.Fatalf("state %q, want pending", s)
	}
	// Lexically indexed and readable at once; no vector yet.
	if h, _ := db.SearchLexical("t", "ws", "deploy", 5); len(h) != 1 {
		t.Fatal("not lexically indexed at acknowledgement")
	}
	v0 := db.DataVersion("t", "ws")
	// Another tenant cannot learn the state of the artifact.
	if _, err := db.EmbeddingState("other", r.ArtifactID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("other tenant: %v", err)
	}
	g.open()
	waitEmbedded(t, db, "t", r.ArtifactID)
	if s := embeddingState(t, db, "t", r.ArtifactID); s != EmbeddingEmbedded {
		t.Fatalf("state %q, want embedded", s)
	}
	if h, err := searchSemantic(db, "t", "ws", "deploy", 5); err != nil || len(h) != 1 {
		t.Fatalf("semantic after embedding: %v %v", h, err)
	}
	if v := db.DataVersion("t", "ws"); v <= v0 {
		t.Fatalf("data version %d did not advance past %d with the vectors", v, v0)
	}
	if db.EmbeddingBacklog() != 0 {
		t.Fatalf("backlog %d", db.EmbeddingBacklog())
	}
}

// A flush waits for the background embedder, so segments are written with
// their vectors; after a restart the vectors records of flushed artifacts
// change nothing but the data version, exactly as they did live.
func TestBackgroundEmbeddingFlushWaitsAndReplays(t *testing.T) {
	dir := t.TempDir()
	g := newGatedEmbedder()
	db := openTest(t, dir, Options{DisableBackground: true, Embedder: g, EmbedInBackground: true})
	var ids []uuid.UUID
	for i := range 5 {
		r, err := db.Ingest("t", chat("ws", fmt.Sprintf("turn %d: the deploy moved to Friday", i)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ArtifactID)
	}
	flushed := make(chan error, 1)
	go func() { flushed <- db.Flush() }()
	select {
	case err := <-flushed:
		t.Fatalf("flush finished before the artifacts were embedded: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	g.open()
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if st := db.Stats(); st.Segments != 1 {
		t.Fatalf("segments %d", st.Segments)
	}
	before, err := searchSemantic(db, "t", "ws", "deploy Friday", 10)
	if err != nil || len(before) != 5 {
		t.Fatalf("semantic from the segment: %v %v", before, err)
	}
	v := db.DataVersion("t", "ws")
	db.Close()

	db = openTest(t, dir, Options{DisableBackground: true, Embedder: glove.New(), EmbedInBackground: true})
	defer db.Close()
	after, err := searchSemantic(db, "t", "ws", "deploy Friday", 10)
	if err != nil || fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("after restart:\n%v\nbefore:\n%v (%v)", after, before, err)
	}
	if got := db.DataVersion("t", "ws"); got != v {
		t.Fatalf("data version %d after restart, %d before", got, v)
	}
	for _, id := range ids {
		if s := embeddingState(t, db, "t", id); s != EmbeddingEmbedded {
			t.Fatalf("%s: %q", id, s)
		}
	}
}

// Artifacts acknowledged but not embedded when the process stops are
// embedded after the restart; packs then equal those of inline embedding.
func TestBackgroundEmbeddingResumesAfterRestart(t *testing.T) {
	dir := t.TempDir()
	g := newGatedEmbedder() // never opened: nothing is embedded before Close
	db := openTest(t, dir, Options{DisableBackground: true, Embedder: g, EmbedInBackground: true})
	texts := []string{"the deploy moved to Friday", "lunch is at noon on Thursday", "Friday's release needs a sign-off"}
	var ids []uuid.UUID
	for _, s := range texts {
		r, err := db.Ingest("t", chat("ws", s))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ArtifactID)
	}
	if n := db.EmbeddingBacklog(); n != 3 {
		t.Fatalf("backlog %d", n)
	}
	if err := db.Close(); err != nil { // must not hang on the blocked embedder
		t.Fatal(err)
	}
	db = openTest(t, dir, Options{DisableBackground: true, Embedder: glove.New(), EmbedInBackground: true})
	defer db.Close()
	waitEmbedded(t, db, "t", ids...)
	req := PackProbe{Workspace: "ws", Query: "when is the deploy?", MaxTokens: 512}
	bg, err := probePack(context.Background(), db, "t", req)
	if err != nil {
		t.Fatal(err)
	}

	inline := openTest(t, t.TempDir(), Options{DisableBackground: true})
	defer inline.Close()
	for _, s := range texts {
		if _, err := inline.Ingest("t", chat("ws", s)); err != nil {
			t.Fatal(err)
		}
	}
	in, err := probePack(context.Background(), inline, "t", req)
	if err != nil {
		t.Fatal(err)
	}
	if bg.ContextText != in.ContextText || len(bg.Citations) != len(in.Citations) {
		t.Fatalf("background pack differs from inline:\n%s\n---\n%s", bg.ContextText, in.ContextText)
	}
}

// An unavailable embedder is asked again until it answers: the artifact
// stays pending meanwhile (it used to settle as failed after four attempts),
// Stats shows the embedder's error, and the artifact is embedded once the
// embedder answers.
func TestBackgroundEmbeddingRetriesUnavailable(t *testing.T) {
	defer func(d, m time.Duration) { embedRetryBackoff, embedRetryMax = d, m }(embedRetryBackoff, embedRetryMax)
	embedRetryBackoff, embedRetryMax = time.Millisecond, 4*time.Millisecond
	g := newGatedEmbedder()
	g.down = true
	g.open()
	db := openTest(t, t.TempDir(), Options{DisableBackground: true, Embedder: g, EmbedInBackground: true})
	defer db.Close()
	r, err := db.Ingest("t", chat("ws", "the deploy moved to Friday"))
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		g.mu.Lock()
		calls := g.calls
		g.mu.Unlock()
		if calls >= 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("embedder asked %d times in 10 s", calls)
		}
	}
	if s := embeddingState(t, db, "t", r.ArtifactID); s != EmbeddingPending {
		t.Fatalf("state %q while the embedder is down, want pending", s)
	}
	if st := db.Stats(); st.EmbeddingBacklog != 1 || !strings.Contains(st.EmbedderError, "connection refused") {
		t.Fatalf("stats while the embedder is down: backlog %d, error %q", st.EmbeddingBacklog, st.EmbedderError)
	}
	g.mu.Lock()
	g.down = false
	g.mu.Unlock()
	waitEmbedded(t, db, "t", r.ArtifactID)
	if s := embeddingState(t, db, "t", r.ArtifactID); s != EmbeddingEmbedded {
		t.Fatalf("state %q once the embedder answers, want embedded", s)
	}
	if st := db.Stats(); st.EmbeddingBacklog != 0 || st.EmbedderError != "" {
		t.Fatalf("stats after: backlog %d, error %q", st.EmbeddingBacklog, st.EmbedderError)
	}
}

// rejectingEmbedder is GloVe that rejects, as a provider rejects input its
// model cannot take (a plain error, not embed.ErrUnavailable), every
// call with a text containing "REJECT".
type rejectingEmbedder struct {
	embed.Embedder
	calls int
}

func (r *rejectingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	r.calls++
	for _, s := range texts {
		if strings.Contains(s, "REJECT") {
			return nil, errors.New("400 Bad Request: input too long")
		}
	}
	return r.Embedder.Embed(ctx, texts)
}

// An embedder that rejects an artifact's text settles that artifact as
// failed, and only it: the batch it came in is asked again artifact by
// artifact. The "no vectors" record of an artifact of several spans reads
// back at the next open (it used to fail: "vectors record: bad span count").
func TestBackgroundEmbeddingRejectedInput(t *testing.T) {
	dir := t.TempDir()
	emb := &rejectingEmbedder{Embedder: glove.New()}
	gate := newGatedEmbedder()
	gate.Embedder = emb
	db := openTest(t, dir, Options{DisableBackground: true, Embedder: gate, EmbedInBackground: true})
	bad, err := db.Ingest("t", chat("ws", strings.Repeat("REJECT this runbook about rotating credentials every quarter. ", 300)))
	if err != nil {
		t.Fatal(err)
	}
	if len(bad.SpanIDs) < 2 {
		t.Fatalf("the rejected artifact has %d spans; the test needs two or more", len(bad.SpanIDs))
	}
	good, err := db.Ingest("t", chat("ws", "the deploy moved to Friday"))
	if err != nil {
		t.Fatal(err)
	}
	gate.open() // both wait in one batch
	waitEmbedded(t, db, "t", bad.ArtifactID, good.ArtifactID)
	if s := embeddingState(t, db, "t", bad.ArtifactID); s != EmbeddingFailed {
		t.Fatalf("rejected artifact: state %q, want failed", s)
	}
	if s := embeddingState(t, db, "t", good.ArtifactID); s != EmbeddingEmbedded {
		t.Fatalf("the other artifact of its batch: state %q, want embedded", s)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTest(t, dir, Options{DisableBackground: true, Embedder: emb, EmbedInBackground: true})
	defer db.Close()
	calls := emb.calls
	if s := embeddingState(t, db, "t", bad.ArtifactID); s != EmbeddingFailed {
		t.Fatalf("rejected artifact after replay: state %q, want failed", s)
	}
	if s := embeddingState(t, db, "t", good.ArtifactID); s != EmbeddingEmbedded {
		t.Fatalf("after replay: state %q, want embedded", s)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if emb.calls != calls {
		t.Fatal("replay asked the embedder again for settled artifacts")
	}
	if h, _ := db.SearchLexical("t", "ws", "rotating credentials", 5); len(h) == 0 {
		t.Fatal("the rejected artifact is not found lexically")
	}
}

// Erasing a workspace drops its pending artifacts: nothing waits for them
// and the embedder is not asked.
func TestBackgroundEmbeddingErasedBeforeEmbedding(t *testing.T) {
	g := newGatedEmbedder()
	db := openTest(t, t.TempDir(), Options{DisableBackground: true, Embedder: g, EmbedInBackground: true})
	defer db.Close()
	r, err := db.Ingest("t", chat("ws", "the deploy moved to Friday"))
	if err != nil {
		t.Fatal(err)
	}
	// Let the worker block inside Embed on the first artifact, erase, then
	// release: its record must not resurrect vectors for an erased artifact.
	if _, err := db.EraseWorkspace("t", "ws"); err != nil {
		t.Fatal(err)
	}
	g.open()
	waitEmbedded(t, db, "t", r.ArtifactID)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if db.EmbeddingBacklog() != 0 {
		t.Fatalf("backlog %d", db.EmbeddingBacklog())
	}
	if h, _ := searchSemantic(db, "t", "ws", "deploy", 5); len(h) != 0 {
		t.Fatal("erased artifact found")
	}
}

// Idempotent retries do not pay the embedder again (inline embedding).
func TestInlineEmbeddingSkipsReplays(t *testing.T) {
	g := newGatedEmbedder()
	g.open()
	db := openTest(t, t.TempDir(), Options{DisableBackground: true, Embedder: g})
	defer db.Close()
	in := chat("ws", "the deploy moved to Friday")
	in.IdempotencyKey = "k1"
	for range 3 {
		if _, err := db.Ingest("t", in); err != nil {
			t.Fatal(err)
		}
	}
	if g.texts != 1 {
		t.Fatalf("embedder embedded %d texts for one artifact sent three times", g.texts)
	}
}

// The embedder is recorded in the data directory; another one is refused
// with a message naming both, until loci reindex rebuilds the vectors.
func TestEmbedderRecordedAndReindex(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, Options{DisableBackground: true, NoEmbedder: true})
	var ids []uuid.UUID
	for _, s := range []string{"the deploy moved to Friday", "the budget is 4000 dollars"} {
		r, err := db.Ingest("t", chat("ws", s))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ArtifactID)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	late, err := db.Ingest("t", chat("ws", "the deploy needs a sign-off")) // stays in the WAL
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, late.ArtifactID)
	db.Close()

	_, err = testOpen(dir, Options{DisableBackground: true, Logger: quietLogger()})
	if !errors.Is(err, errEmbedderMismatch) || !strings.Contains(err.Error(), `"none"`) || !strings.Contains(err.Error(), "glove") {
		t.Fatalf("opening with another embedder: %v", err)
	}

	db = openTest(t, dir, Options{DisableBackground: true, Reindex: true, EmbedInBackground: true})
	var last [3]int
	if err := db.Reindex(context.Background(), func(done, all, spans int) { last = [3]int{done, all, spans} }); err != nil {
		t.Fatal(err)
	}
	if last[0] != last[1] || last[0] == 0 || last[2] < 2 {
		t.Fatalf("progress %v", last)
	}
	db.Close()

	db = openTest(t, dir, Options{DisableBackground: true})
	h, err := searchSemantic(db, "t", "ws", "deploy", 5)
	if err != nil || len(h) != 3 {
		t.Fatalf("semantic after reindex: %v %v", h, err)
	}
	for _, id := range ids {
		if _, err := db.Artifact("t", id); err != nil {
			t.Fatalf("artifact %s after reindex: %v", id, err)
		}
	}
	db.Close()
	if _, err := testOpen(dir, Options{DisableBackground: true, NoEmbedder: true, Logger: quietLogger()}); !errors.Is(err, errEmbedderMismatch) {
		t.Fatalf("lexical-only open of a reindexed directory: %v", err)
	}
}

// While the embedder is down, a head cannot be flushed (its artifacts wait
// for vectors): once the unflushed heads reach the stall limit an ingest
// waits at most roomWait, then is refused with a BackpressureError that
// stores nothing (it used to wait without bound), Health reports it, and
// writes resume once the embedder answers and the heads are flushed.
func TestIngestBackpressureWhileEmbedderDown(t *testing.T) {
	defer func(d, m, w time.Duration) { embedRetryBackoff, embedRetryMax, roomWait = d, m, w }(embedRetryBackoff, embedRetryMax, roomWait)
	embedRetryBackoff, embedRetryMax, roomWait = time.Millisecond, 4*time.Millisecond, 100*time.Millisecond
	g := newGatedEmbedder()
	g.down = true
	g.open()
	db := openTest(t, t.TempDir(), Options{Embedder: g, EmbedInBackground: true, FlushThreshold: 16 << 10})
	defer db.Close()
	var refusal *BackpressureError
	accepted := 0
	for i := 0; i < 1000 && refusal == nil; i++ {
		_, err := db.Ingest("t", chat("ws", fmt.Sprintf("note %d %s", i, strings.Repeat("padding words ", 100))))
		switch {
		case err == nil:
			accepted++
		case errors.As(err, &refusal):
		default:
			t.Fatal(err)
		}
	}
	if refusal == nil {
		t.Fatal("no back-pressure with the embedder down")
	}
	if !errors.Is(refusal, ErrBackpressure) || refusal.Backlog < accepted || refusal.Embedder == nil {
		t.Fatalf("refusal %+v after %d accepted", refusal, accepted)
	}
	// The backlog is exactly what was accepted: the refused write stored nothing.
	if st := db.Stats(); st.EmbeddingBacklog != accepted || st.IngestRefused == "" {
		t.Fatalf("stats: backlog %d of %d accepted, refused %q", st.EmbeddingBacklog, accepted, st.IngestRefused)
	}
	if err := db.Health(); !errors.Is(err, ErrBackpressure) {
		t.Fatalf("Health while writes are refused and the embedder is down: %v", err)
	}
	g.mu.Lock()
	g.down = false
	g.mu.Unlock()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		_, err := db.Ingest("t", chat("ws", "the deploy moved to Friday"))
		if err == nil {
			break
		}
		if !errors.Is(err, ErrBackpressure) || time.Now().After(deadline) {
			t.Fatalf("ingest once the embedder answers: %v", err)
		}
	}
	if err := db.Health(); err != nil {
		t.Fatalf("Health after: %v", err)
	}
}

// A retry of a stored artifact (its idempotency key) stores nothing, so it
// is answered under back-pressure too: torture's idempotency checks after a
// restart with a full embedding backlog got 503.
func TestReplayAnsweredUnderBackpressure(t *testing.T) {
	defer func(d, m, w time.Duration) { embedRetryBackoff, embedRetryMax, roomWait = d, m, w }(embedRetryBackoff, embedRetryMax, roomWait)
	embedRetryBackoff, embedRetryMax, roomWait = time.Millisecond, 4*time.Millisecond, 50*time.Millisecond
	g := newGatedEmbedder()
	g.down = true
	g.open()
	db := openTest(t, t.TempDir(), Options{Embedder: g, EmbedInBackground: true, FlushThreshold: 16 << 10})
	defer db.Close()
	first := chat("ws", "the deploy moved to Friday")
	first.IdempotencyKey = "k1"
	stored, err := db.Ingest("t", first)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		_, err := db.Ingest("t", chat("ws", fmt.Sprintf("note %d %s", i, strings.Repeat("padding words ", 100))))
		if errors.Is(err, ErrBackpressure) {
			break
		}
		if err != nil || i > 1000 {
			t.Fatalf("no back-pressure after %d writes: %v", i, err)
		}
	}
	again, err := db.Ingest("t", first)
	if err != nil || !again.Replayed || again.ArtifactID != stored.ArtifactID {
		t.Fatalf("replay under back-pressure: %+v, %v", again, err)
	}
}

// An import that embeds inline refuses, naming the record, an artifact the
// embedder gives no vectors, and stores nothing: an imported artifact is
// never embedded later (it used to be stored without vectors, with only a
// warning, as every artifact of a batch of long texts was when the batch
// took the encoder past the embed timeout). Without it, every span is
// embedded, in calls of at most importEmbedTexts texts.
func TestImportRefusesWhatItCannotEmbed(t *testing.T) {
	src := openTest(t, t.TempDir(), Options{DisableBackground: true, NoEmbedder: true})
	defer src.Close()
	for i := 0; i < 100; i++ {
		content := fmt.Sprintf("note %d: the deploy moved to Friday", i)
		if i%10 == 3 {
			content = strings.Repeat(content+" and the runbook about rotating credentials changed. ", 40) // several spans
		}
		mustIngest(t, src, "t", chat("w", content))
	}
	mustIngest(t, src, "t", chat("w", "REJECT this one"))
	var items []ImportItem
	if _, err := src.ExportWorkspace("t", "w", func(WorkspaceExport) error { return nil }, func(it ExportItem) error {
		a := *it.Artifact
		items = append(items, ImportItem{Artifact: &a, SpanIDs: it.SpanIDs})
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	emb := &rejectingEmbedder{Embedder: glove.New()}
	dst := openTest(t, t.TempDir(), Options{DisableBackground: true, Embedder: emb})
	defer dst.Close()
	err := dst.Import("t", "w", items)
	// The record named is the first of the embedder call that failed.
	if err == nil || !strings.Contains(err.Error(), "the embedder glove-6b-100d-sif gave no vectors") || !strings.Contains(err.Error(), "engine: import: record ") {
		t.Fatalf("import of an artifact the embedder rejects: %v", err)
	}
	if v := dst.DataVersion("t", "w"); v != 0 {
		t.Fatalf("the refused import stored data (version %d)", v)
	}
	counting := &countingEmbedder{Embedder: glove.New()}
	ok := openTest(t, t.TempDir(), Options{DisableBackground: true, Embedder: counting})
	defer ok.Close()
	if err := ok.Import("t", "w", items[:len(items)-1]); err != nil {
		t.Fatal(err)
	}
	for _, it := range items[:len(items)-1] {
		if s := embeddingState(t, ok, "t", it.Artifact.ID); s != EmbeddingEmbedded {
			t.Fatalf("artifact %s: state %q, want embedded", it.Artifact.ID, s)
		}
	}
	if counting.calls < 2 || counting.most > importEmbedTexts {
		t.Fatalf("%d embedder calls of at most %d texts; want several of at most %d", counting.calls, counting.most, importEmbedTexts)
	}
}

// countingEmbedder counts calls and the most texts in one.
type countingEmbedder struct {
	embed.Embedder
	calls, most int
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.calls++
	c.most = max(c.most, len(texts))
	return c.Embedder.Embed(ctx, texts)
}

// sizesEmbedder is an in-process embedder that records how many texts each
// call embeds; calls wait for gate when it is set.
type sizesEmbedder struct {
	embed.Embedder
	gate chan struct{}
	mu   sync.Mutex
	got  []int
}

func (*sizesEmbedder) InProcess() {}

func (e *sizesEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if e.gate != nil {
		select {
		case <-e.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	e.mu.Lock()
	e.got = append(e.got, len(texts))
	e.mu.Unlock()
	return e.Embedder.Embed(ctx, texts)
}

// calls returns the sizes of the calls made so far and forgets them.
func (e *sizesEmbedder) calls() []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	got := e.got
	e.got = nil
	return got
}

func ingestTurns(t *testing.T, db *DB, n int, tag string) []uuid.UUID {
	t.Helper()
	return ingestTurnsIn(t, db, "ws", n, tag)
}

// ingestTurnsIn ingests n chat turns into workspace ws in one batch, their
// texts "<tag> turn <i>: ...", and returns their ids.
func ingestTurnsIn(t *testing.T, db *DB, ws string, n int, tag string) []uuid.UUID {
	t.Helper()
	ins := make([]IngestInput, n)
	for i := range ins {
		ins[i] = chat(ws, fmt.Sprintf("%s turn %d: the deploy moved to Friday", tag, i))
	}
	rs, err := db.IngestBatch("t", ins)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]uuid.UUID, n)
	for i, r := range rs {
		ids[i] = r.ArtifactID
	}
	return ids
}

// While an ingest runs, the background worker embeds one text per call;
// once none runs, it embeds in batches again.
func TestEmbeddingYieldsToIngest(t *testing.T) {
	e := &sizesEmbedder{Embedder: glove.New()}
	db := openTest(t, t.TempDir(), Options{DisableBackground: true, Embedder: e, EmbedInBackground: true})
	defer db.Close()

	db.embedding.foreground.Add(1) // an ingest runs throughout
	ingestTurns(t, db, 20, "first")
	drained(t, db) // not WaitEmbedded: the embedder does not yield to a waiter
	db.embedding.foreground.Add(-1)
	paced := e.calls()
	if len(paced) != 20 || slices.ContainsFunc(paced, func(n int) bool { return n != 1 }) {
		t.Fatalf("calls while an ingest ran: %v, want 20 of one text", paced)
	}

	// The worker blocks in its first call until the ingest has returned
	// and foregroundLinger has passed; the texts after it are embedded
	// unpaced, in calls of up to pacedChunk (how many depends on how the
	// worker's batches fell while the ingest's records were applied, but
	// of the 19 texts left at least one call takes two or more).
	e.gate = make(chan struct{})
	ids := ingestTurns(t, db, 20, "second")
	for db.embedding.busy() {
		time.Sleep(time.Millisecond)
	}
	close(e.gate)
	drained(t, db)
	if s := embeddingState(t, db, "t", ids[len(ids)-1]); s != EmbeddingEmbedded {
		t.Fatalf("state %q after the backlog drained", s)
	}
	unpaced := e.calls()
	if most := slices.Max(unpaced); most < 2 || most > pacedChunk {
		t.Fatalf("calls with no ingest running: %v, want some of 2 to %d texts", unpaced, pacedChunk)
	}
}

// While a client waits for vectors the worker does not yield, even with
// ingests running.
func TestEmbeddingDoesNotYieldToWaiters(t *testing.T) {
	e := &sizesEmbedder{Embedder: glove.New(), gate: make(chan struct{})}
	db := openTest(t, t.TempDir(), Options{DisableBackground: true, Embedder: e, EmbedInBackground: true})
	defer db.Close()
	db.embedding.foreground.Add(1) // an ingest runs throughout
	defer db.embedding.foreground.Add(-1)
	ids := ingestTurns(t, db, 20, "awaited")
	waited := make(chan error, 1)
	go func() { waited <- db.WaitEmbedded(context.Background(), "t", ids) }()
	for db.embedding.waiters.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	close(e.gate)
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	if got := e.calls(); slices.Max(got) < 2 {
		t.Fatalf("calls while a client waited: %v, want some of 2 to %d texts", got, pacedChunk)
	}
}

// A read (a View: packs and searches) counts as foreground work, as an
// ingest does.
func TestViewIsForeground(t *testing.T) {
	db := openTest(t, t.TempDir(), Options{DisableBackground: true, Embedder: glove.New(), EmbedInBackground: true})
	defer db.Close()
	var during int32
	if err := db.View("t", "ws", func(*View) error {
		during = db.embedding.foreground.Load()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if during != 1 || db.embedding.foreground.Load() != 0 {
		t.Fatalf("foreground %d during a View, %d after; want 1 and 0", during, db.embedding.foreground.Load())
	}
}

// Past half the stall limit the worker stops yielding, ingest or not.
func TestEmbeddingStopsYieldingPastSoftLimit(t *testing.T) {
	// The gate holds the worker's first call until all 20 texts are
	// queued, so that they are not taken one artifact at a time.
	e := &sizesEmbedder{Embedder: glove.New(), gate: make(chan struct{})}
	db := openTest(t, t.TempDir(), Options{DisableBackground: true, Embedder: e, EmbedInBackground: true, FlushThreshold: 1})
	defer db.Close()
	db.embedding.foreground.Add(1)
	defer db.embedding.foreground.Add(-1)
	ingestTurns(t, db, 20, "over")
	close(e.gate)
	drained(t, db)
	if got := e.calls(); slices.Max(got) < 2 {
		t.Fatalf("calls past the soft limit: %v, want batches", got)
	}
}

// drained waits until no artifact waits for the background embedder.
func drained(t *testing.T, db *DB) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for db.EmbeddingBacklog() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("backlog %d after 10 s", db.EmbeddingBacklog())
		}
		time.Sleep(time.Millisecond)
	}
}

// errorLog is a slog handler that keeps the messages logged at ERROR.
type errorLog struct {
	mu   sync.Mutex
	msgs []string
}

func (*errorLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *errorLog) WithAttrs([]slog.Attr) slog.Handler     { return h }
func (h *errorLog) WithGroup(string) slog.Handler          { return h }

func (h *errorLog) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		h.mu.Lock()
		h.msgs = append(h.msgs, r.Message)
		h.mu.Unlock()
	}
	return nil
}

// Closing while a background flush waits for the embedder is a normal stop,
// not a maintenance failure: nothing is logged as an error.
func TestCloseDuringFlushWaitLogsNoError(t *testing.T) {
	logs := &errorLog{}
	e := &sizesEmbedder{Embedder: glove.New(), gate: make(chan struct{})} // never opened
	db := openTest(t, t.TempDir(), Options{Embedder: e, EmbedInBackground: true, FlushThreshold: 1,
		Logger: slog.New(logs)})
	ingestTurns(t, db, 3, "pending")
	deadline := time.Now().Add(10 * time.Second)
	for {
		db.mu.RLock()
		frozen := len(db.frozen)
		db.mu.RUnlock()
		if frozen > 0 {
			break // the flush has frozen the head and waits for its vectors
		}
		if time.Now().After(deadline) {
			t.Fatal("no background flush started")
		}
		time.Sleep(time.Millisecond)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if len(logs.msgs) > 0 {
		t.Fatalf("Close logged errors: %q", logs.msgs)
	}
}

// idleCore sees a processor that no other goroutine runs on or waits for,
// and none while goroutines fill every processor.
func TestIdleCore(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	// Other tests' background workers may run for a moment: wait for a
	// quiet read.
	for deadline := time.Now().Add(5 * time.Second); !idleCore(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no idle core in 5 s with GOMAXPROCS 2 and nothing else to run")
		}
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	for range 20 { // each wake-up waits for a spinner's preemption (about 10 ms)
		if idleCore() {
			t.Fatal("an idle core while two goroutines spin on the two processors")
		}
		time.Sleep(time.Millisecond)
	}
}
