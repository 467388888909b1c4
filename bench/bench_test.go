package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loci-memory/loci/embed/glove"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/httpd"
	"github.com/loci-memory/loci/vecindex"
	"github.com/loci-memory/loci/wal"
)

func TestCorpusDeterministic(t *testing.T) {
	a, b := NewCorpus(7), NewCorpus(7)
	for i := 0; i < 200; i++ {
		if x, y := a.Next("w"), b.Next("w"); !reflect.DeepEqual(x, y) {
			t.Fatalf("item %d differs for the same seed", i)
		}
	}
	if reflect.DeepEqual(NewCorpus(1).Next("w"), NewCorpus(2).Next("w")) {
		t.Fatal("different seeds give the same data")
	}
}

// The benchmarks run end to end at toy sizes, so their code stays working.
func TestIngestSmall(t *testing.T) {
	r, err := Ingest(IngestConfig{Dir: t.TempDir(), Writers: 4, Artifacts: 300, Sync: wal.SyncAlways, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Artifacts != 300 || r.ArtifactsPerS <= 0 || r.P50us <= 0 || r.P99us < r.P50us || r.DiskBytes <= r.PayloadBytes/2 || r.Fsync != "always" {
		t.Fatalf("implausible result %+v", r)
	}
	// Every payload byte reaches the WAL, and the close flushes a segment.
	if _, err := os.Stat("/proc/self/io"); err == nil && (r.WrittenBytes < r.PayloadBytes || r.WriteAmplification < 1) {
		t.Fatalf("written %d bytes for %d of payload (amplification %v)", r.WrittenBytes, r.PayloadBytes, r.WriteAmplification)
	}
}

// TestCompactSmall: bench compact merges a directory's small segments in
// place and counts what it wrote.
func TestCompactSmall(t *testing.T) {
	dir := t.TempDir()
	emb := Embedding{Embedder: glove.New()}
	spans := addWorkspace(t, dir, "w", &emb, 100, 3)
	r, err := Compact(CompactConfig{Dir: dir, Embedding: emb})
	if err != nil {
		t.Fatal(err)
	}
	if r.Spans != spans || r.Workspaces != 1 || r.SegmentsBefore != 3 || r.SegmentsAfter != 1 || r.SegmentBytesAfter <= 0 || r.Seconds <= 0 {
		t.Fatalf("implausible result %+v (%d spans ingested)", r, spans)
	}
	if _, err := os.Stat("/proc/self/io"); err == nil && r.WrittenBytes < r.SegmentBytesAfter {
		t.Fatalf("the merged segment is %d bytes, but %d were written", r.SegmentBytesAfter, r.WrittenBytes)
	}
	if _, err := Compact(CompactConfig{}); err == nil {
		t.Fatal("bench compact without a directory")
	}
}

func TestRestartSmall(t *testing.T) {
	r, err := Restart(RestartConfig{Dir: t.TempDir(), Artifacts: 500, Seed: 1, Restarts: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.OpenSeconds) != 2 || r.HeadArtifacts != 500 || r.DiskBytes <= 0 {
		t.Fatalf("implausible result %+v", r)
	}
}

func TestSearchSmall(t *testing.T) {
	r, err := Search(SearchConfig{Spans: 500, Queries: 20, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Spans < 500 || r.Queries == 0 || r.LexicalTop100.P50ms <= 0 || r.SemanticTop10.P99ms < r.SemanticTop10.P50ms || r.Segments == 0 {
		t.Fatalf("implausible result %+v", r)
	}
}

// TestLoCoMoSmall runs the LoCoMo evaluation on a two-session file in every
// ingest mode and timestamp style: the same turns and questions are counted,
// the easy evidence turn is found, and both modes agree on recall.
func TestLoCoMoSmall(t *testing.T) {
	conv := `[{"sample_id":"x","qa":[
	  {"question":"Where did Ana go hiking?","answer":"Mount Rainier","evidence":["D1:2"],"category":4},
	  {"question":"What colour is Ana's car?","evidence":["D2:1"],"category":5}],
	 "conversation":{"speaker_a":"Ana","speaker_b":"Ben",
	  "session_1_date_time":"1:56 pm on 8 May, 2023","session_1":[
	    {"speaker":"Ana","dia_id":"D1:1","text":"Hi Ben, long week!"},
	    {"speaker":"Ana","dia_id":"D1:2","text":"I went hiking on Mount Rainier last weekend."}],
	  "session_2_date_time":"7:55 pm on 9 June, 2023","session_2":[
	    {"speaker":"Ben","dia_id":"D2:1","text":"I bought a new bike yesterday."}]}}]`
	path := filepath.Join(t.TempDir(), "locomo.json")
	os.WriteFile(path, []byte(conv), 0o644)
	for _, stamps := range []string{TimestampsSpread, TimestampsSession, TimestampsNone} {
		recall := map[string]float64{}
		for _, ingest := range []string{IngestViaEngine, IngestViaHTTP} {
			r, err := EvalLoCoMo(LoCoMoConfig{Data: path, Budgets: []int{64, 512}, Ingest: ingest, Timestamps: stamps})
			if err != nil {
				t.Fatalf("%s/%s: %v", ingest, stamps, err)
			}
			if r.Turns != 3 || r.Questions != 2 || len(r.Budgets) != 2 || r.Budgets[1].RecallByCat["4"] != 1 ||
				r.Ingest != ingest || r.Timestamps != stamps {
				t.Fatalf("%s/%s: implausible result %+v", ingest, stamps, r)
			}
			if cov := r.Budgets[1].AnswerCoverage; cov != 1 || r.Budgets[1].AnswerCoverageByCat["4"] != 1 {
				t.Errorf("%s/%s: answer coverage %v at 512 tokens, want 1 (the pack cites the hike)", ingest, stamps, cov)
			}
			if auc := r.Budgets[1].ConfidenceAUC; auc < 0 || auc > 1 {
				t.Errorf("%s/%s: confidence AUC %v", ingest, stamps, auc)
			}
			recall[ingest] = r.Budgets[0].RecallCat1to4
		}
		if recall[IngestViaEngine] != recall[IngestViaHTTP] {
			t.Errorf("%s: recall at 64 tokens %v in process, %v over HTTP", stamps, recall[IngestViaEngine], recall[IngestViaHTTP])
		}
	}
	if _, err := EvalLoCoMo(LoCoMoConfig{Data: path, Budgets: []int{64}, Timestamps: "hourly"}); err == nil {
		t.Error("an unknown timestamp style was accepted")
	}
	// The three shapes that name the speaker give the same figures (one
	// speaker rule, text.ChatSpeaker).
	for _, ingest := range []string{IngestViaEngine, IngestViaHTTP} {
		var role LoCoMoBudget
		for _, shape := range []string{ShapeRole, ShapePrefix, ShapeActor, ShapeNone} {
			r, err := EvalLoCoMo(LoCoMoConfig{Data: path, Budgets: []int{512}, Ingest: ingest, Shape: shape})
			if err != nil {
				t.Fatalf("%s/%s: %v", ingest, shape, err)
			}
			if r.Turns != 3 || r.Questions != 2 || r.Budgets[0].RecallByCat["4"] != 1 || r.Shape != shape {
				t.Fatalf("%s/%s: implausible result %+v", ingest, shape, r)
			}
			b := r.Budgets[0]
			if shape == ShapeRole {
				role = b
			} else if shape != ShapeNone && (b.RecallCat1to4 != role.RecallCat1to4 || b.AbstainCat5 != role.AbstainCat5 ||
				b.AbstainOther != role.AbstainOther || b.ConfidenceAUC != role.ConfidenceAUC) {
				t.Errorf("%s/%s: %+v, shape role %+v", ingest, shape, b, role)
			}
		}
	}
	if _, err := EvalLoCoMo(LoCoMoConfig{Data: path, Budgets: []int{64}, Shape: "json"}); err == nil {
		t.Error("an unknown shape was accepted")
	}
}

// TestLoCoMoShapes: the payload and actor of a turn in each client shape.
func TestLoCoMoShapes(t *testing.T) {
	a := locomoTurn{Speaker: "Ana", Text: "Hi!", First: true}
	b := locomoTurn{Speaker: "Ben", Text: "Hello."}
	for _, tc := range []struct {
		shape, a, b, actorA string
	}{
		{ShapeRole, `{"content":"Hi!","role":"Ana"}`, `{"content":"Hello.","role":"Ben"}`, locomoActor},
		{ShapePrefix, `{"content":"Ana: Hi!","role":"user"}`, `{"content":"Ben: Hello.","role":"assistant"}`, locomoActor},
		{ShapeActor, `{"content":"Hi!","role":"user"}`, `{"content":"Hello.","role":"assistant"}`, "Ana"},
		{ShapeNone, `{"content":"Hi!","role":"user"}`, `{"content":"Hello.","role":"assistant"}`, locomoActor},
	} {
		if got := string(a.payload(tc.shape)); got != tc.a {
			t.Errorf("%s: speaker_a's payload %s, want %s", tc.shape, got, tc.a)
		}
		if got := string(b.payload(tc.shape)); got != tc.b {
			t.Errorf("%s: speaker_b's payload %s, want %s", tc.shape, got, tc.b)
		}
		if got := a.actor(tc.shape); got != tc.actorA {
			t.Errorf("%s: actor %q, want %q", tc.shape, got, tc.actorA)
		}
	}
}

// TestConfidenceAUC: the share of (answerable, unanswerable) pairs that
// confidence orders right, ties counting half.
func TestConfidenceAUC(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		answerable, unanswerable []float64
		want                     float64
	}{
		{"perfect", []float64{0.9, 0.8}, []float64{0.1, 0.2}, 1},
		{"inverted", []float64{0.1}, []float64{0.5, 0.9}, 0},
		{"all tied", []float64{0.5, 0.5}, []float64{0.5}, 0.5},
		{"mixed", []float64{0.9, 0.4}, []float64{0.4, 0.6}, 0.625}, // wins 0.9>0.4, 0.9>0.6; tie 0.4=0.4; loss 0.4<0.6
		{"no unanswerable", []float64{0.9}, nil, 0},
	} {
		if got := confidenceAUC(tc.answerable, tc.unanswerable); got != tc.want {
			t.Errorf("%s: AUC %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestAnswerCoverage: the words of an answer (a string or a number, stop
// words left out, each once) and the share of them a context holds.
func TestAnswerCoverage(t *testing.T) {
	const context = "[cite:1] 2023-05-08 Ana: I went hiking on Mount Rainier, in 2022!"
	for _, tc := range []struct {
		answer string
		words  []string
		want   float64
	}{
		{`"Mount Rainier"`, []string{"mount", "rainier"}, 1},
		{`"the Rainier and the Hood"`, []string{"rainier", "hood"}, 0.5},
		{`2022`, []string{"2022"}, 1},
		{`1000000`, []string{"1000000"}, 0},
		{`"Hiking, hiking; HIKING"`, []string{"hiking"}, 1},
		{`"Seattle"`, []string{"seattle"}, 0},
	} {
		words := answerWords(json.RawMessage(tc.answer))
		if !slices.Equal(words, tc.words) {
			t.Errorf("%s: words %q, want %q", tc.answer, words, tc.words)
			continue
		}
		if got := answerCoverage(words, context); got != tc.want {
			t.Errorf("%s: coverage %v, want %v", tc.answer, got, tc.want)
		}
	}
	if words := answerWords(nil); words != nil {
		t.Errorf("no answer: words %q", words)
	}
}

// TestLoCoMoStamps: how each style stamps the third turn of a session.
func TestLoCoMoStamps(t *testing.T) {
	when := time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)
	tr := locomoTurn{When: when, Pos: 2}
	for style, want := range map[string]time.Time{
		TimestampsSpread:  when.Add(2 * time.Second),
		TimestampsSession: when,
		TimestampsNone:    {},
	} {
		if got := tr.stamp(style); !got.Equal(want) {
			t.Errorf("%s: %v, want %v", style, got, want)
		}
	}
}

// TestPackHTTPDistinctRequests checks that `loci bench pack` times distinct
// requests by default (each stores its own receipt, as a new question
// does), and that with Repeats the sampled real questions repeat.
func TestPackHTTPDistinctRequests(t *testing.T) {
	data := "../../shared/data"
	if _, err := os.Stat(data); err != nil {
		t.Skip("shared data not present: the real questions are needed for repeats")
	}
	for _, repeats := range []bool{false, true} {
		res, err := PackHTTP(PackHTTPConfig{Spans: 300, Requests: 150, Concurrency: []int{1}, MaxTokens: 256, Seed: 3,
			Data: data, Sync: wal.SyncOff, Repeats: repeats})
		if err != nil {
			t.Fatal(err)
		}
		sent := 200 + 150 // warm-up and timed
		switch {
		case !repeats && res.Receipts != sent:
			t.Errorf("distinct requests: %d receipts for %d packs", res.Receipts, sent)
		case repeats && res.Receipts >= sent:
			t.Errorf("repeats allowed: %d receipts for %d packs; the sample should repeat", res.Receipts, sent)
		}
		if res.DistinctRequests == repeats {
			t.Errorf("repeats %v: distinct_requests %v", repeats, res.DistinctRequests)
		}
	}
}

// TestPackHTTPProfile checks that a profile sends v2 packs: the v1
// endpoint refuses a profile field, and v2 refuses an unknown profile.
func TestPackHTTPProfile(t *testing.T) {
	cfg := PackHTTPConfig{Spans: 300, Requests: 20, Concurrency: []int{1}, MaxTokens: 256, Seed: 3, Sync: wal.SyncOff,
		Profile: "high_recall", NoRerank: true}
	res, err := PackHTTP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Profile != "high_recall" {
		t.Errorf("profile %q in the result", res.Profile)
	}
	cfg.Profile = "fastest"
	if _, err := PackHTTP(cfg); err == nil {
		t.Error("an unknown profile was packed")
	}
}

// TestPackHTTPReusesDir checks that a second `loci bench pack --dir` run
// reuses the workspace the first built, and that its requests are still
// distinct from the first run's (every pack stores a new receipt).
func TestPackHTTPReusesDir(t *testing.T) {
	dir := t.TempDir()
	cfg := PackHTTPConfig{Spans: 300, Requests: 50, Concurrency: []int{1}, MaxTokens: 256, Seed: 3, Sync: wal.SyncOff, Dir: dir}
	first, err := PackHTTP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	second, err := PackHTTP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if first.Reused || !second.Reused {
		t.Errorf("reused: first run %v, second %v; want false, true", first.Reused, second.Reused)
	}
	if second.Spans != first.Spans || second.Artifacts != first.Artifacts {
		t.Errorf("second run saw %d spans of %d artifacts, the first built %d of %d", second.Spans, second.Artifacts, first.Spans, first.Artifacts)
	}
	if sent := 200 + 50; first.Receipts != sent || second.Receipts != 2*sent {
		t.Errorf("receipts %d then %d, want %d then %d (every request distinct)", first.Receipts, second.Receipts, sent, 2*sent)
	}
	cfg.Spans = 10_000
	if _, err := PackHTTP(cfg); err == nil {
		t.Error("a directory holding fewer spans than asked for was accepted")
	}
}

// TestPackHTTPAccessLog checks that `loci bench pack --access-log` makes the
// server write one access line per pack, as loci serve does at level info.
func TestPackHTTPAccessLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.jsonl")
	res, err := PackHTTP(PackHTTPConfig{Spans: 200, Requests: 30, Concurrency: []int{1}, MaxTokens: 256, Seed: 5, Sync: wal.SyncOff, AccessLog: path})
	if err != nil {
		t.Fatal(err)
	}
	if !res.AccessLog {
		t.Error("result does not say the access log was on")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	packs := 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec struct{ Msg, Route string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec.Msg == "http request" && rec.Route == "/v1/context-pack" {
			packs++
		}
	}
	if want := 200 + 30; packs != want { // warm-up and timed
		t.Errorf("%d access lines for context packs, want %d", packs, want)
	}
}

// TestSearchDir: `loci bench search --dir` searches a directory's workspace
// as found (here one `bench pack` built), reports its open time and disk,
// and, where the workspace is IVF-searched (test centroids for GloVe, IVF
// from one span), the exact scan beside IVF with IVF's recall: 1 when every
// list is probed, at most 1 when two of eight are.
func TestSearchDir(t *testing.T) {
	dir := t.TempDir()
	emb := glove.New()
	if _, err := PackHTTP(PackHTTPConfig{Spans: 300, Requests: 10, Concurrency: []int{1}, MaxTokens: 256, Seed: 3, Sync: wal.SyncOff,
		Dir: dir, Embedding: Embedding{Embedder: emb}, Data: ""}); err != nil {
		t.Fatal(err)
	}
	// bench restart opens a directory a server wrote (with service state).
	if rr, err := Restart(RestartConfig{Dir: dir, Restarts: 1, Embedder: emb}); err != nil || len(rr.OpenSeconds) != 1 {
		t.Fatalf("restart of a server's directory: %v", err)
	}
	cfg := SearchConfig{Spans: 300, Queries: 30, Seed: 1, Dir: dir, Embedder: emb, NProbe: []int{8}}
	r, err := Search(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Spans < 300 || r.OpenSeconds <= 0 || r.DiskBytes <= 0 || r.RSSOpenMiB <= 0 || r.SemanticTop100.P50ms <= 0 || r.SemanticExactTop100 != nil || r.IVF != nil {
		t.Fatalf("implausible result without IVF %+v", r)
	}

	words, err := emb.Embed(context.Background(), []string{"deploy", "budget", "Friday", "approved", "rejected", "cluster", "refund", "meeting"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := vecindex.NewCentroids(emb.Model(), words)
	if err != nil {
		t.Fatal(err)
	}
	defer vecindex.UseCentroids(c, 1, 2)()
	if r, err = Search(cfg); err != nil {
		t.Fatal(err)
	}
	if r.SemanticExactTop100 == nil || len(r.IVF) != 2 || r.IVF[0].NProbe != 2 || r.IVF[1].NProbe != 8 {
		t.Fatalf("IVF figures %+v / %+v", r.SemanticExactTop100, r.IVF)
	}
	if r.IVF[1].Recall != 1 || r.IVF[1].MinimumRecall != 1 || r.IVF[0].Recall > 1 || r.IVF[0].MinimumRecall > r.IVF[0].Recall {
		t.Fatalf("recall %+v; want 1 with every list probed", r.IVF)
	}
	if r.IVFRecallBySource != nil {
		t.Fatalf("recall by data set %+v on synthetic queries", r.IVFRecallBySource)
	}

	// With the shared data sets: every real question, by data set.
	if data := "../../shared/data"; fileExists(filepath.Join(data, "longmemeval", "longmemeval-s-dev.json")) {
		real := cfg
		real.Data = data
		r, err := Search(real) // the policy probes 2 of 8 lists; cfg 8
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"hotpotqa", "locomo", "longmemeval", "scifact"}
		if len(r.IVFRecallBySource) != 2*len(want) {
			t.Fatalf("recall by data set %+v, want each of %v at nprobe 2 then 8", r.IVFRecallBySource, want)
		}
		for i, s := range r.IVFRecallBySource {
			probe := []int{2, 8}[i/len(want)]
			if s.NProbe != probe || s.Source != want[i%len(want)] || s.Questions < 100 || s.Recall <= 0 || s.Recall > 1 ||
				s.MinimumRecall > s.Recall || (probe == 8) != (s.Recall == 1) { // 2 of 8 lists miss some of every set's
				t.Errorf("recall by data set %d: %+v", i, s)
			}
		}
	}

	cfg.Spans = 10_000
	if _, err := Search(cfg); err == nil || !strings.Contains(err.Error(), "fewer than") {
		t.Fatalf("a directory holding fewer spans than asked for: %v", err)
	}
}

// TestBenchWorkspaces: bench pack and bench search spread their requests
// over the workspaces named, found in the directory, and refuse one that
// is not there.
func TestBenchWorkspaces(t *testing.T) {
	dir := t.TempDir()
	emb := Embedding{Embedder: glove.New()}
	cfg := PackHTTPConfig{Spans: 300, Requests: 10, Concurrency: []int{1}, MaxTokens: 256, Seed: 3, Sync: wal.SyncOff,
		Dir: dir, Embedding: emb, Data: ""}
	first, err := PackHTTP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A second workspace, as loci import or another build would leave it.
	spans := addWorkspace(t, dir, "other", &emb, 300, 1)

	cfg.Workspaces = []string{"bench", "other"}
	r, err := PackHTTP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Requests to "other" store their receipts there: every receipt of the
	// run is counted over both.
	if r.Workspaces != 2 || r.Spans != first.Spans+spans || !r.Reused || r.Receipts != first.Receipts+200+10 {
		t.Fatalf("two workspaces: %+v (first run %d spans, %d receipts; other %d spans)", r, first.Spans, first.Receipts, spans)
	}
	s, err := startServerIn(dir, "", wal.SyncOff, &emb)
	if err != nil {
		t.Fatal(err)
	}
	page, err := s.db.ListReceipts(httpd.DefaultTenant, "other", "", 0, 1)
	s.close()
	if err != nil || page.Total < 50 {
		t.Fatalf("%d of 210 requests went to the second workspace (%v)", page.Total, err)
	}
	sr, err := Search(SearchConfig{Spans: 300, Queries: 30, Seed: 1, Dir: dir, Embedder: emb.Embedder, Workspaces: cfg.Workspaces})
	if err != nil {
		t.Fatal(err)
	}
	if sr.Workspaces != 2 || sr.Spans != r.Spans || sr.Pack2048.P50ms <= 0 {
		t.Fatalf("bench search over two workspaces: %+v", sr)
	}
	cfg.Workspaces = []string{"bench", "missing"}
	if _, err := PackHTTP(cfg); err == nil || !strings.Contains(err.Error(), `no workspace "missing"`) {
		t.Fatalf("a workspace not in the directory: %v", err)
	}
	if _, err := Search(SearchConfig{Spans: 300, Queries: 3, Dir: dir, Embedder: emb.Embedder, Workspaces: cfg.Workspaces}); err == nil ||
		!strings.Contains(err.Error(), `"missing"`) {
		t.Fatalf("bench search, a workspace not in the directory: %v", err)
	}
}

// addWorkspace fills workspace ws of the default tenant in the data
// directory dir with segments segments of at least spans spans each (the
// bench corpus) and returns the spans it holds.
func addWorkspace(t *testing.T, dir, ws string, emb *Embedding, spans, segments int) int {
	t.Helper()
	s, err := startServerIn(dir, "", wal.SyncOff, emb)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	next, _, err := benchCorpus("", 5)
	if err != nil {
		t.Fatal(err)
	}
	ingest := func(b []engine.IngestInput) ([]engine.IngestResult, error) {
		return s.db.IngestBatch(httpd.DefaultTenant, b)
	}
	total := 0
	for range segments {
		n, _, err := fillWithRetry(ingest, ws, next, spans, newProgress(nil), time.Millisecond)
		if err == nil {
			err = s.db.Flush()
		}
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	return total
}

// --backlog ingests its artifacts into the workspace "backlog" before the
// timed requests, which still go to "bench".
func TestPackBacklog(t *testing.T) {
	dir := t.TempDir()
	emb := Embedding{Embedder: glove.New()}
	r, err := PackHTTP(PackHTTPConfig{Spans: 300, Requests: 10, Concurrency: []int{1}, MaxTokens: 256, Seed: 3, Sync: wal.SyncOff,
		Dir: dir, Embedding: emb, Data: "", Backlog: 150})
	if err != nil {
		t.Fatal(err)
	}
	if r.Backlog != 150 || r.BacklogLeft < 0 || r.BacklogLeft > 150 {
		t.Fatalf("backlog %d, left %d", r.Backlog, r.BacklogLeft)
	}
	s, err := startServerIn(dir, "", wal.SyncOff, &emb)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	found, err := s.db.Workspaces(httpd.DefaultTenant)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(found, func(w engine.WorkspaceSummary) bool { return w.Workspace == "backlog" })
	if i < 0 || found[i].Artifacts != 150 {
		t.Fatalf("workspaces after the run: %+v", found)
	}
}
