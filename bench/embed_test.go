package bench

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loci-memory/loci/embed/minilm"
)

// embedTestData writes a small file in LoCoMo's layout under dir/locomo:
// eight short questions, one too long for the query phase, a duplicate, and
// ten turns over two sessions.
func embedTestData(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	long := strings.Repeat("what did they say about the weekend trip to the mountains and ", 4) + "why?"
	conv := `[{"sample_id":"x","qa":[
	 {"question":"When did Caroline go to the support group?","evidence":["D1:1"],"category":2},
	 {"question":"What does Melanie paint?","evidence":["D1:2"],"category":1},
	 {"question":"What does Melanie paint?","evidence":["D1:2"],"category":1},
	 {"question":"` + long + `","evidence":["D1:3"],"category":1},
	 {"question":"Where did Caroline move from?","evidence":["D2:1"],"category":1},
	 {"question":"What instrument does Melanie play?","evidence":["D2:2"],"category":1},
	 {"question":"Who is Caroline's mentor?","evidence":["D2:3"],"category":1},
	 {"question":"Which book did Melanie recommend?","evidence":["D2:4"],"category":1},
	 {"question":"How old is the dog?","evidence":["D2:5"],"category":1}],
	"conversation":{"speaker_a":"Caroline","speaker_b":"Melanie",
	 "session_1_date_time":"1:56 pm on 8 May, 2023","session_1":[
	  {"speaker":"Caroline","dia_id":"D1:1","text":"I went to a LGBTQ support group yesterday and it was so powerful."},
	  {"speaker":"Melanie","dia_id":"D1:2","text":"I paint sunsets by the lake, it calms me down."},
	  {"speaker":"Caroline","dia_id":"D1:3","text":"The transgender stories were so inspiring!"},
	  {"speaker":"Melanie","dia_id":"D1:4","text":"That sounds wonderful."},
	  {"speaker":"Caroline","dia_id":"D1:5","text":"   "}],
	 "session_2_date_time":"10:37 am on 27 June, 2023","session_2":[
	  {"speaker":"Caroline","dia_id":"D2:1","text":"I moved from Sweden four years ago."},
	  {"speaker":"Melanie","dia_id":"D2:2","text":"I play the clarinet in a small band."},
	  {"speaker":"Caroline","dia_id":"D2:3","text":"My mentor is a counselor who helped me a lot."},
	  {"speaker":"Melanie","dia_id":"D2:4","text":"You should read Charlotte's Web, I loved it as a kid."},
	  {"speaker":"Caroline","dia_id":"D2:5","text":"Our dog turned three last week!"},
	  {"speaker":"Melanie","dia_id":"D2:6","text":"Happy birthday to the pup."}]}}]`
	if err := os.MkdirAll(filepath.Join(dir, "locomo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "locomo", "locomo-dev.json"), []byte(conv), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestEmbedFlags(t *testing.T) {
	fs := flag.NewFlagSet("bench embed", flag.ContinueOnError)
	cfg := EmbedFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if cfg.Queries != 2000 || cfg.Texts != 512 || cfg.Threads != 2 || cfg.Rounds != 3 || cfg.BatchSize != 32 ||
		cfg.Python != "python3" || !cfg.Reference || cfg.Data != "../shared/data" || cfg.Warmup <= 0 {
		t.Fatalf("defaults %+v", cfg)
	}
	fs = flag.NewFlagSet("bench embed", flag.ContinueOnError)
	cfg = EmbedFlags(fs)
	err := fs.Parse([]string{"--queries", "10", "--texts", "5", "--threads", "1", "--python", "/opt/py/bin/python",
		"--reference=false", "--rounds", "2", "--warmup", "0", "--reference-timeout", "1m", "--data", "/d"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Queries != 10 || cfg.Texts != 5 || cfg.Threads != 1 || cfg.Python != "/opt/py/bin/python" || cfg.Reference ||
		cfg.Rounds != 2 || cfg.Warmup != 0 || cfg.ReferenceTimeout != time.Minute || cfg.Data != "/d" {
		t.Fatalf("parsed %+v", cfg)
	}
	for _, bad := range []EmbedConfig{{Queries: 0, Texts: 1, Threads: 1, Rounds: 1, BatchSize: 1},
		{Queries: 1, Texts: 1, Threads: 0, Rounds: 1, BatchSize: 1}, {Queries: 1, Texts: 1, Threads: 1, Rounds: 1, BatchSize: 1, Warmup: -1}} {
		if _, err := Embed(bad); err == nil || !strings.Contains(err.Error(), "must be at least") {
			t.Fatalf("%+v: error %v", bad, err)
		}
	}
}

func TestEmbedSentencesDeterministic(t *testing.T) {
	e, err := minilm.Default()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(embedTestData(t), "locomo", "locomo-dev.json")
	q1, x1, err := embedSentences(path, e.Tokenizer(), 1, 100, 100)
	if err != nil {
		t.Fatal(err)
	}
	q2, x2, _ := embedSentences(path, e.Tokenizer(), 1, 100, 100)
	if !slices.Equal(q1, q2) || !slices.Equal(x1, x2) {
		t.Fatal("the same seed picks different sentences")
	}
	if len(q1) != 7 || len(x1) != 10 {
		t.Fatalf("%d questions (want 7: distinct, at most 32 tokens) and %d turns (want the 10 non-empty)", len(q1), len(x1))
	}
	for _, q := range q1 {
		if n := len(e.Tokenizer().Encode(q)); n > maxQueryTokens {
			t.Fatalf("query of %d tokens: %q", n, q)
		}
	}
	q3, x3, _ := embedSentences(path, e.Tokenizer(), 2, 100, 100)
	if slices.Equal(q1, q3) && slices.Equal(x1, x3) {
		t.Fatal("another seed picks the same order")
	}
	q4, x4, _ := embedSentences(path, e.Tokenizer(), 1, 3, 4)
	if !slices.Equal(q4, q1[:3]) || !slices.Equal(x4, x1[:4]) {
		t.Fatal("fewer sentences are not a prefix of the same order")
	}
	// The real dev set, when present: its selection is stable too.
	if real := "../../shared/data/locomo/locomo-dev.json"; fileExists(real) {
		a, b, err := embedSentences(real, e.Tokenizer(), 1, 2000, 512)
		if err != nil {
			t.Fatal(err)
		}
		c, d, _ := embedSentences(real, e.Tokenizer(), 1, 2000, 512)
		if !slices.Equal(a, c) || !slices.Equal(b, d) || len(b) != 512 || len(a) < 500 {
			t.Fatalf("LoCoMo dev: %d questions, %d turns, or unstable", len(a), len(b))
		}
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestEmbedGoSmall runs the Go side end to end at a toy size: figures are
// plausible, GOMAXPROCS is restored, and the skipped reference is said so.
func TestEmbedGoSmall(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	r, err := Embed(EmbedConfig{Queries: 20, Texts: 6, Threads: 2, Warmup: 2, Rounds: 2, BatchSize: 32,
		Data: embedTestData(t), Seed: 1, Reference: false})
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOMAXPROCS(0) != procs {
		t.Fatalf("GOMAXPROCS left at %d, was %d", runtime.GOMAXPROCS(0), procs)
	}
	q, b := r.Loci.Query, r.Loci.Batch
	if q.Calls != 20 || q.Threads != 1 || q.P50ms <= 0 || q.P99ms < q.P50ms || q.MaxMs < q.P99ms || q.MeanMs <= 0 ||
		b.Texts != 6 || b.Threads != 2 || len(b.Rounds) != 2 || b.TextsPerS <= 0 || b.TokensPerS <= b.TextsPerS {
		t.Fatalf("implausible loci figures %+v %+v", q, b)
	}
	if r.Loci.Model == "" || r.Loci.Kernel != minilm.KernelName() || r.GOMAXPROCSQuery != 1 || r.GOMAXPROCSBatch != 2 ||
		r.Queries.Count != 7 || r.Queries.MaxTokens > maxQueryTokens || r.LoadAvgStart == "" || r.LoadAvgEnd == "" {
		t.Fatalf("implausible result %+v", r)
	}
	if r.Reference != nil || r.Ratio != nil || r.Targets.Batch != nil || !strings.Contains(r.ReferenceSkipped, "--reference=false") {
		t.Fatalf("reference not skipped plainly: %q", r.ReferenceSkipped)
	}
	var out strings.Builder
	if err := r.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "query p50 ms") || !strings.Contains(out.String(), "--reference=false") {
		t.Fatalf("table:\n%s", out.String())
	}
}

// TestEmbedReferenceMissing: without a usable Python the Go side is still
// reported, and the reason is plain.
func TestEmbedReferenceMissing(t *testing.T) {
	cfg := EmbedConfig{Queries: 5, Texts: 3, Threads: 1, Warmup: 1, Rounds: 1, BatchSize: 32, Data: embedTestData(t), Seed: 1,
		Reference: true, Python: filepath.Join(t.TempDir(), "no-such-python"), ReferenceTimeout: time.Minute}
	r, err := Embed(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Reference != nil || r.Loci.Query.Calls != 5 || !strings.Contains(r.ReferenceSkipped, "reference skipped") ||
		!strings.Contains(r.ReferenceSkipped, "not found") || !strings.Contains(r.ReferenceSkipped, "--python") {
		t.Fatalf("reference %v, reason %q", r.Reference, r.ReferenceSkipped)
	}

	// A real Python without the packages: the script says which is missing.
	// PYTHONPATH shadows sentence_transformers, so this holds wherever it is
	// installed, and nothing heavy is imported.
	if _, err := exec.LookPath("python3"); err != nil {
		t.Log("no python3 on PATH: missing-package path not run")
		return
	}
	shadow := t.TempDir()
	if err := os.MkdirAll(filepath.Join(shadow, "sentence_transformers"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shadow, "sentence_transformers", "__init__.py"),
		[]byte("raise ImportError(\"No module named 'sentence_transformers'\")\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PYTHONPATH", shadow)
	cfg.Python = "python3"
	if r, err = Embed(cfg); err != nil {
		t.Fatal(err)
	}
	if r.Reference != nil || r.Loci.Query.Calls != 5 || !strings.Contains(r.ReferenceSkipped, "missing Python package") ||
		!strings.Contains(r.ReferenceSkipped, "sentence_transformers") {
		t.Fatalf("reference %v, reason %q", r.Reference, r.ReferenceSkipped)
	}
}

// TestEmbedReferenceProtocol stands a shell script in for Python: loci
// reads the reference's JSON, computes its figures and the ratios.
func TestEmbedReferenceProtocol(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "python")
	// 4 query calls of 10 ms, 2 rounds of 3 texts in 0.5 s (6 texts/s) and 1 s.
	out := `{"implementation":"fake","model":"m","model_file_bytes":90000000,"cpu_capability":"AVX2","query_threads":1,` +
		`"query_latencies_s":[0.01,0.01,0.01,0.01],"batch_threads":1,"batch_size":32,"batch_seconds":[0.5,1.0]}`
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'noise on stdout'\necho '"+out+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := Embed(EmbedConfig{Queries: 4, Texts: 3, Threads: 1, Warmup: 1, Rounds: 1, BatchSize: 32, Data: embedTestData(t),
		Seed: 1, Reference: true, Python: fake, ReferenceScript: fake, ReferenceTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ref := r.Reference
	if ref == nil {
		t.Fatalf("no reference: %s", r.ReferenceSkipped)
	}
	if ref.Query.P50ms != 10 || ref.Query.MeanMs != 10 || ref.Batch.TextsPerS != 6 || ref.Batch.BatchSize != 32 || ref.Kernel != "AVX2" {
		t.Fatalf("reference figures %+v", ref)
	}
	if want := ratio(10, r.Loci.Query.P50ms); r.Ratio.QueryP50 != want || r.Ratio.Batch != ratio(r.Loci.Batch.TextsPerS, 6) || r.Targets.Batch == nil {
		t.Fatalf("ratio %+v", r.Ratio)
	}
}
