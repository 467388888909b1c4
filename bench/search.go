package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/embed"
	"github.com/loci-memory/loci/embed/glove"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/httpd"
	"github.com/loci-memory/loci/invindex"
	"github.com/loci-memory/loci/retrieval"
	"github.com/loci-memory/loci/vecindex"
	"github.com/loci-memory/loci/wal"
)

// SearchConfig sets up `loci bench search`.
type SearchConfig struct {
	Spans   int    // at least this many spans in one workspace
	Queries int    // timed queries per figure
	Seed    uint64 // data order and synthetic queries
	Data    string // shared data directory: real texts and questions; "" = synthetic corpus
	// Dir, when set, is a data directory whose workspace "bench" of the
	// default tenant already holds at least Spans spans (one `loci import
	// --vectors` made, say): it is opened, timed, and searched as it is;
	// nothing is built or compacted. Empty: a scratch workspace is built.
	Dir string
	// Embedder embeds the queries (and, in a scratch workspace, the
	// texts); nil: GloVe. With Dir it must be the directory's embedder.
	Embedder embed.Embedder
	// NProbe, for a workspace IVF searches, are further probe counts to
	// time and measure the recall of besides the policy's (vecindex.IVFProbe).
	NProbe []int
	// Workspaces, with Dir, are workspaces of the default tenant found
	// there instead of "bench", each of at least Spans spans: each query
	// goes to one of them, drawn with Seed.
	Workspaces []string
	// Progress, if set, receives a line at most every few seconds while a
	// long phase runs (loci bench prints it to stderr).
	Progress func(string)
}

// Latency is a latency distribution in milliseconds.
type Latency struct {
	P50ms float64 `json:"p50_ms"`
	P99ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
}

// SearchResult is what `loci bench search --json` prints.
type SearchResult struct {
	Spans     int `json:"spans"`
	Artifacts int `json:"artifacts"`
	Segments  int `json:"segments"`
	// Workspaces is how many workspaces the queries were spread over
	// (Spans and Artifacts are their sums).
	Workspaces     int     `json:"workspaces"`
	Queries        int     `json:"queries"`
	LexicalTop100  Latency `json:"lexical_top100"`
	LexicalTop10   Latency `json:"lexical_top10"`
	SemanticTop100 Latency `json:"semantic_top100"`
	SemanticTop10  Latency `json:"semantic_top10"`
	Pack2048       Latency `json:"context_pack_2048"`
	// QueryEmbedding is embedding a query alone; the semantic figures
	// above time the vector search of an embedded query without it.
	QueryEmbedding Latency `json:"query_embedding"`
	Embedder       string  `json:"embedder"`
	// Where the workspace is searched by IVF (vecindex.IVFFor): the exact
	// scan of the same queries, and recall@100 of the policy's search
	// against it, then the same for each further probe count.
	SemanticExactTop100 *Latency  `json:"semantic_exact_top100,omitempty"`
	IVF                 []IVFTime `json:"ivf,omitempty"`
	// IVFRecallBySource, where IVF searches the workspace and the texts are
	// real: recall@100 for every real question of each data set (untimed),
	// asked in the first workspace, at the policy's probe count and then
	// at each further one.
	IVFRecallBySource []SourceRecall `json:"ivf_recall_by_source,omitempty"`
	// With Dir: the directory as found. OpenSeconds is engine.Open (a
	// restart); RSS is the process's resident memory after the open, then
	// after every figure was timed (anonymous and file-backed, MiB);
	// DiskBytes is every file under Dir.
	OpenSeconds      float64 `json:"open_seconds,omitempty"`
	DiskBytes        int64   `json:"disk_bytes,omitempty"`
	RSSOpenMiB       float64 `json:"rss_after_open_mib,omitempty"`
	RSSOpenAnonMiB   float64 `json:"rss_after_open_anon_mib,omitempty"`
	RSSAfterMiB      float64 `json:"rss_after_timing_mib,omitempty"`
	RSSAfterAnonMiB  float64 `json:"rss_after_timing_anon_mib,omitempty"`
	HeapAfterOpenMiB float64 `json:"heap_after_open_mib,omitempty"`
	Kernel           string  `json:"int8_kernel"`
	Dataset          string  `json:"dataset"`
}

// IVFTime is IVF search at one probe count: its latency for top 100 and
// the mean share of the exact top 100 it returns.
type IVFTime struct {
	NProbe        int     `json:"nprobe"`
	Top100        Latency `json:"top100"`
	Recall        float64 `json:"recall_at_100"`
	MinimumRecall float64 `json:"min_recall_at_100"`
}

// SourceRecall is IVF's recall@100 at one probe count against the exact
// scan over every question of one data set.
type SourceRecall struct {
	NProbe        int     `json:"nprobe"`
	Source        string  `json:"source"`
	Questions     int     `json:"questions"`
	Recall        float64 `json:"recall_at_100"`
	MinimumRecall float64 `json:"min_recall_at_100"`
}

// Search builds one workspace of at least cfg.Spans spans through the engine
// (generated artifacts, flushed and compacted), then times lexical (BM25)
// and semantic (GloVe, exact int8) searches and v1 context packs of 2,048
// tokens through engine.DB, one at a time.
func Search(cfg SearchConfig) (*SearchResult, error) {
	if cfg.Spans <= 0 {
		cfg.Spans = 100_000
	}
	if cfg.Queries <= 0 {
		cfg.Queries = 2000
	}
	emb := cfg.Embedder
	if emb == nil {
		emb = glove.New()
	}
	_, real, err := benchCorpus(cfg.Data, cfg.Seed)
	if err != nil {
		return nil, err
	}
	res := &SearchResult{Kernel: vecindex.KernelName(), Queries: cfg.Queries, Embedder: emb.Model()}
	p := newProgress(cfg.Progress)
	tenant := "bench"
	wss := []string{"bench"}
	if len(cfg.Workspaces) > 0 {
		if cfg.Dir == "" {
			return nil, fmt.Errorf("bench.Search: Workspaces need Dir")
		}
		wss = cfg.Workspaces
	}
	res.Workspaces = len(wss)
	smallest := math.MaxInt // the smallest workspace's spans
	var db *engine.DB
	if cfg.Dir != "" {
		tenant = httpd.DefaultTenant
		runtime.GC()
		t := time.Now()
		ctl := control.New(time.Now) // a service's directory holds its state
		if db, err = engine.Open(cfg.Dir, engine.Options{Sync: wal.SyncOff, DisableBackground: true, Embedder: emb, Control: ctl, Logger: quietLogger()}); err != nil {
			return nil, err
		}
		defer db.Close()
		res.OpenSeconds = time.Since(t).Seconds()
		ctl.Attach(db.AppendControl)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		res.HeapAfterOpenMiB = float64(ms.HeapAlloc) / (1 << 20)
		res.RSSOpenMiB, res.RSSOpenAnonMiB = processMemory()
		if res.DiskBytes, err = dirSize(cfg.Dir); err != nil {
			return nil, err
		}
		found, err := db.Workspaces(tenant)
		if err != nil {
			return nil, err
		}
		for _, ws := range wss {
			i := slices.IndexFunc(found, func(w engine.WorkspaceSummary) bool { return w.Workspace == ws })
			if i < 0 || found[i].Spans < cfg.Spans {
				n := 0
				if i >= 0 {
					n = found[i].Spans
				}
				return nil, fmt.Errorf("%s: workspace %q of tenant %q holds %d spans, fewer than the %d asked for", cfg.Dir, ws, tenant, n, cfg.Spans)
			}
			res.Spans += found[i].Spans
			res.Artifacts += found[i].Artifacts
			smallest = min(smallest, found[i].Spans)
		}
	} else {
		next, _, err := benchCorpus(cfg.Data, cfg.Seed)
		if err != nil {
			return nil, err
		}
		var cleanup func()
		if db, cleanup, err = scratchEngine("loci-bench-search-", emb); err != nil {
			return nil, err
		}
		defer cleanup()
		if res.Spans, res.Artifacts, err = fillWorkspace(db, tenant, next, cfg.Spans, p); err != nil {
			return nil, err
		}
		smallest = res.Spans
		stop := p.during("compacting the workspace")
		err = db.Compact()
		stop()
		if err != nil {
			return nil, err
		}
	}
	res.Segments = db.Stats().Segments
	queries := sampleQueries(real, rand.New(rand.NewPCG(cfg.Seed, 99)), cfg.Queries)
	// Query i goes to workspace wsOf[i].
	wsOf := make([]string, len(queries))
	pick := rand.New(rand.NewPCG(cfg.Seed, 11))
	for i := range wsOf {
		wsOf[i] = wss[0]
		if len(wss) > 1 {
			wsOf[i] = wss[pick.IntN(len(wss))]
		}
	}
	switch {
	case cfg.Dir != "" && real != nil && len(wss) > 1:
		res.Dataset = fmt.Sprintf("the %d workspaces %s found in %s, each query to one drawn with seed %d; queries: the %d real questions of %s (SciFact, LoCoMo, HotpotQA, tau-bench), sampled with seed %d",
			len(wss), strings.Join(wss, ","), cfg.Dir, cfg.Seed, len(real.Queries), cfg.Data, cfg.Seed)
	case cfg.Dir != "" && real != nil:
		res.Dataset = fmt.Sprintf("the workspace found in %s; queries: the %d real questions of %s (SciFact, LoCoMo, HotpotQA, tau-bench), sampled with seed %d",
			cfg.Dir, len(real.Queries), cfg.Data, cfg.Seed)
	case real != nil:
		res.Dataset = fmt.Sprintf("real texts of %s (SciFact, LoCoMo, HotpotQA, tau-bench: %d distinct texts, repeated in seeded orders) in one workspace, flushed and compacted; queries: their %d real questions, sampled with seed %d",
			cfg.Data, real.Texts(), len(real.Queries), cfg.Seed)
	default:
		res.Dataset = fmt.Sprintf("synthetic (bench.Corpus seed %d, a 500-word vocabulary: every term is frequent) in one workspace, flushed and compacted; queries: 3-8 words of the vocabulary", cfg.Seed)
	}

	measure := func(search func(i int) error) (Latency, error) {
		lat := make([]time.Duration, 0, len(queries))
		for i := range queries {
			t := time.Now()
			if err := search(i); err != nil {
				return Latency{}, err
			}
			lat = append(lat, time.Since(t))
		}
		slices.Sort(lat)
		ms := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Nanoseconds()) / 1e6 }
		return Latency{P50ms: ms(0.5), P99ms: ms(0.99), MaxMs: ms(1)}, nil
	}
	// Queries are embedded once, untimed, so that the semantic figures
	// are the vector search alone; embedding is timed on its own.
	type qvec struct {
		q []int8
		s float32
	}
	qv := make(map[string]qvec, len(queries))
	for i, q := range queries {
		if _, ok := qv[q]; ok {
			continue
		}
		p.tick("embedding the queries: %d of %d", i, len(queries))
		v, err := emb.Embed(context.Background(), []string{q})
		if err != nil {
			return nil, err
		}
		iq := make([]int8, emb.Dim())
		qv[q] = qvec{iq, vecindex.Quantize(v[0], iq)}
	}
	semantic := func(k int) func(i int) error {
		return func(i int) error {
			q := queries[i]
			_, err := db.SearchSemantic(tenant, wsOf[i], qv[q].q, qv[q].s, k)
			return err
		}
	}
	packer := retrieval.New(db)
	for _, f := range []struct {
		dst  *Latency
		fn   func(i int) error
		name string
	}{
		{&res.LexicalTop100, func(i int) error { _, err := db.SearchLexical(tenant, wsOf[i], queries[i], 100); return err }, "lexical top 100"},
		{&res.LexicalTop10, func(i int) error { _, err := db.SearchLexical(tenant, wsOf[i], queries[i], 10); return err }, "lexical top 10"},
		{&res.SemanticTop100, semantic(100), "semantic top 100"},
		{&res.SemanticTop10, semantic(10), "semantic top 10"},
		{&res.QueryEmbedding, func(i int) error { _, err := emb.Embed(context.Background(), []string{queries[i]}); return err }, "query embedding"},
		{&res.Pack2048, func(i int) error {
			_, err := packer.ContextPack(context.Background(), tenant, retrieval.PackRequest{Workspace: wsOf[i], Query: queries[i], MaxTokens: 2048})
			return err
		}, "context packs"},
	} {
		stop := p.during("timing " + f.name)
		*f.dst, err = measure(f.fn)
		stop()
		if err != nil {
			return nil, err
		}
	}
	if err := searchIVF(db, tenant, smallest, wsOf, queries, func(q string) ([]int8, float32) { return qv[q].q, qv[q].s }, cfg.NProbe, measure, p, res); err != nil {
		return nil, err
	}
	if res.IVF != nil && real != nil {
		qs, err := realQuestions(real, cfg.Data)
		if err != nil {
			return nil, err
		}
		if res.IVFRecallBySource, err = ivfRecallBySource(db, tenant, wss[0], qs, emb, cfg.NProbe, p); err != nil {
			return nil, err
		}
	}
	if cfg.Dir != "" {
		res.RSSAfterMiB, res.RSSAfterAnonMiB = processMemory()
	}
	res.Queries = len(queries)
	return res, nil
}

// searchIVF adds the exact scan and IVF's recall to res when the
// workspace is one IVF searches (vecindex.IVFPolicy): the exact top 100 of
// every query (the policy's size raised past the workspace's), then IVF at
// the policy's probe count and at each of nprobes, timed and compared with
// it. The policy is process-wide: nothing else may search meanwhile.
// Query i is asked in workspace wsOf[i]; the smallest workspace holds
// smallest spans.
func searchIVF(db *engine.DB, tenant string, smallest int, wsOf, queries []string, vec func(string) ([]int8, float32), nprobes []int,
	measure func(func(int) error) (Latency, error), p *progress, res *SearchResult) error {
	cents, minSpans, policyProbe := vecindex.IVFPolicy(res.Embedder)
	if cents == nil || smallest < minSpans {
		return nil
	}
	// The exact top 100 of query i (the same question in another
	// workspace is another search).
	exact := map[string]map[uuid.UUID]bool{}
	key := func(i int) string { return wsOf[i] + "\x00" + queries[i] }
	restore := vecindex.UseCentroids(cents, math.MaxInt, policyProbe)
	stop := p.during("timing the exact scan")
	lat, err := measure(func(i int) error {
		v, s := vec(queries[i])
		hits, err := db.SearchSemantic(tenant, wsOf[i], v, s, 100)
		if _, ok := exact[key(i)]; !ok && err == nil {
			exact[key(i)] = map[uuid.UUID]bool{}
			for _, h := range hits {
				exact[key(i)][h.SpanID] = true
			}
		}
		return err
	})
	stop()
	restore()
	if err != nil {
		return err
	}
	res.SemanticExactTop100 = &lat
	for _, np := range append([]int{policyProbe}, nprobes...) {
		restore := vecindex.UseCentroids(cents, minSpans, np)
		t := IVFTime{NProbe: np, MinimumRecall: 1}
		found := map[string]float64{}
		stop := p.during(fmt.Sprintf("timing IVF at nprobe %d", np))
		t.Top100, err = measure(func(i int) error {
			q := key(i)
			v, s := vec(queries[i])
			hits, err := db.SearchSemantic(tenant, wsOf[i], v, s, 100)
			if len(exact[q]) > 0 {
				found[q] = shareFound(exact[q], hits)
			}
			return err
		})
		stop()
		restore()
		if err != nil {
			return err
		}
		for _, r := range found {
			t.Recall += r
			t.MinimumRecall = min(t.MinimumRecall, r)
		}
		t.Recall /= float64(len(found))
		res.IVF = append(res.IVF, t)
	}
	return nil
}

// labelledQuestion is a real question and the data set it comes from.
type labelledQuestion struct{ source, text string }

// realQuestions is every distinct question of real (SciFact, LoCoMo,
// HotpotQA) and of LongMemEval's dev split under data when it is there,
// each with its data set, in the order read.
func realQuestions(real *RealCorpus, data string) ([]labelledQuestion, error) {
	var qs []labelledQuestion
	seen := map[string]bool{}
	add := func(source, text string) {
		if !seen[text] && len(invindex.Analyze(text, nil)) > 0 {
			seen[text] = true
			qs = append(qs, labelledQuestion{source, text})
		}
	}
	for i, q := range real.Queries {
		add(real.Sources[i], q)
	}
	path := filepath.Join(data, "longmemeval", "longmemeval-s-dev.json")
	if _, err := os.Stat(path); err != nil {
		return qs, nil // an older copy of the data sets
	}
	lme, err := readLongMemEval(path)
	if err != nil {
		return nil, err
	}
	for _, q := range lme {
		add("longmemeval", q.Question)
	}
	return qs, nil
}

// ivfRecallBySource measures IVF at the policy's probe count, then at each
// of nprobes, against the exact scan for every question of qs, asked in
// workspace ws, and gives recall@100 per data set, sets in name order
// within a probe count. It is untimed: the timed sample has too few
// questions of the smaller sets. The policy is process-wide: nothing else
// may search meanwhile.
func ivfRecallBySource(db *engine.DB, tenant, ws string, qs []labelledQuestion, emb embed.Embedder, nprobes []int, p *progress) ([]SourceRecall, error) {
	cents, minSpans, probe := vecindex.IVFPolicy(emb.Model())
	if cents == nil {
		return nil, nil
	}
	type qvec struct {
		q []int8
		s float32
	}
	vecs := make([]qvec, len(qs))
	const batch = 64
	for i := 0; i < len(qs); i += batch {
		p.tick("embedding every real question: %d of %d", i, len(qs))
		texts := make([]string, 0, batch)
		for _, q := range qs[i:min(i+batch, len(qs))] {
			texts = append(texts, q.text)
		}
		v, err := emb.Embed(context.Background(), texts)
		if err != nil {
			return nil, err
		}
		for j := range v {
			iq := make([]int8, emb.Dim())
			vecs[i+j] = qvec{iq, vecindex.Quantize(v[j], iq)}
		}
	}
	search := func(limit, probe int, what string) ([][]engine.SearchHit, error) {
		defer vecindex.UseCentroids(cents, limit, probe)()
		stop := p.during(what)
		defer stop()
		found := make([][]engine.SearchHit, len(qs))
		for i := range qs {
			var err error
			if found[i], err = db.SearchSemantic(tenant, ws, vecs[i].q, vecs[i].s, 100); err != nil {
				return nil, err
			}
		}
		return found, nil
	}
	exactHits, err := search(math.MaxInt, probe, "every real question, exact scan")
	if err != nil {
		return nil, err
	}
	exact := make([]map[uuid.UUID]bool, len(qs))
	for i, hits := range exactHits {
		exact[i] = make(map[uuid.UUID]bool, len(hits))
		for _, h := range hits {
			exact[i][h.SpanID] = true
		}
	}
	var out []SourceRecall
	for _, np := range append([]int{probe}, nprobes...) {
		ivf, err := search(minSpans, np, fmt.Sprintf("every real question, IVF at nprobe %d", np))
		if err != nil {
			return nil, err
		}
		by := map[string]*SourceRecall{}
		var names []string
		for i, q := range qs {
			if len(exact[i]) == 0 {
				continue
			}
			r := by[q.source]
			if r == nil {
				r = &SourceRecall{NProbe: np, Source: q.source, MinimumRecall: 1}
				by[q.source] = r
				names = append(names, q.source)
			}
			share := shareFound(exact[i], ivf[i])
			r.Questions++
			r.Recall += share
			r.MinimumRecall = min(r.MinimumRecall, share)
		}
		slices.Sort(names)
		for _, name := range names {
			r := *by[name]
			r.Recall /= float64(r.Questions)
			out = append(out, r)
		}
	}
	return out, nil
}

// shareFound is the share of exact (a non-empty set of span ids) that hits
// returned: recall against the exact top k.
func shareFound(exact map[uuid.UUID]bool, hits []engine.SearchHit) float64 {
	n := 0
	for _, h := range hits {
		if exact[h.SpanID] {
			n++
		}
	}
	return float64(n) / float64(len(exact))
}

// fillWorkspace ingests artifacts from next into workspace "bench" of
// tenant, in batches of 256, until it holds at least spans spans.
func fillWorkspace(db *engine.DB, tenant string, next func(ws string) engine.IngestInput, spans int, p *progress) (nSpans, nArtifacts int, err error) {
	ingest := func(b []engine.IngestInput) ([]engine.IngestResult, error) { return db.IngestBatch(tenant, b) }
	return fillWithRetry(ingest, "bench", next, spans, p, time.Second)
}

// fillWithRetry ingests artifacts from next into workspace ws with ingest,
// in batches of 256, until it holds at least spans spans. A batch refused
// for back-pressure (engine.ErrBackpressure: nothing of it was stored) is
// sent again after wait, as a client honouring Retry-After does: a build
// with the encoder outruns the background embedder by far. A refusal that
// names the embedder as unavailable ends the build with that error.
func fillWithRetry(ingest func([]engine.IngestInput) ([]engine.IngestResult, error), ws string, next func(ws string) engine.IngestInput,
	spans int, p *progress, wait time.Duration) (nSpans, nArtifacts int, err error) {
	for nSpans < spans {
		p.tick("building the workspace: %d of %d spans", nSpans, spans)
		batch := make([]engine.IngestInput, 256)
		for i := range batch {
			batch[i] = next(ws)
		}
		rs, err := ingest(batch)
		for errors.Is(err, engine.ErrBackpressure) {
			var bp *engine.BackpressureError
			if errors.As(err, &bp) && bp.Embedder != nil {
				return 0, 0, fmt.Errorf("%w (the embedder: %v)", err, bp.Embedder)
			}
			p.tick("building the workspace: %d of %d spans, waiting for the embedder (%v)", nSpans, spans, err)
			time.Sleep(wait)
			rs, err = ingest(batch)
		}
		if err != nil {
			return 0, 0, err
		}
		for _, r := range rs {
			nSpans += len(r.SpanIDs)
			nArtifacts++
		}
	}
	return nSpans, nArtifacts, nil
}

// benchCorpus is where a benchmark's texts come from: the shared data sets
// under data (real texts, and real questions in RealCorpus.Queries), or the
// synthetic corpus when data is "".
func benchCorpus(data string, seed uint64) (func(ws string) engine.IngestInput, *RealCorpus, error) {
	if data == "" {
		return NewCorpus(seed).Next, nil, nil
	}
	real, err := LoadRealCorpus(data, seed)
	if err != nil {
		return nil, nil, err
	}
	return real.Next, real, nil
}

// sampleQueries draws n queries with rng: real questions when real is set,
// else 3-8 words of the synthetic vocabulary. Queries that analyse to
// nothing (all stop words) are left out: they cost nothing.
func sampleQueries(real *RealCorpus, rng *rand.Rand, n int) []string {
	queries := make([]string, n)
	for i := range queries {
		if real != nil {
			queries[i] = real.Queries[rng.IntN(len(real.Queries))]
			continue
		}
		w := make([]string, 3+rng.IntN(6))
		for j := range w {
			w[j] = words[rng.IntN(len(words))]
		}
		queries[i] = strings.Join(w, " ")
	}
	return slices.DeleteFunc(queries, func(q string) bool { return len(invindex.Analyze(q, nil)) == 0 })
}
