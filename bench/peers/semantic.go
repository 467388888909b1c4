package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/export"
	"github.com/loci-memory/loci/vecindex"
	"github.com/loci-memory/loci/wal"
)

// semantic compares semantic top-100: Loci's workspace of cfg.vecSpans
// spans against pgvector's HNSW index over the very same vectors, both asked
// the same query vectors. The vectors are the built-in encoder's (minilm,
// 384-d) of the shared data sets' texts and questions, as `loci bench ivf
// --cache` writes them (cfg.vectors); past its texts, the rest are derived
// from them (derive): embedding 100k texts takes over ten minutes of both
// cores. Each span's text names its vector, and the engine's embedder
// (tableEmbedder) looks it up, so Loci stores exactly the vectors pgvector
// gets.
func semantic(cfg config, p *peer) ([]row, error) {
	corpus, err := readVectorCorpus(cfg.vectors)
	if err != nil {
		return nil, fmt.Errorf("-vectors: %w", err)
	}
	real := len(corpus.texts)
	var vecs [][]float32
	source := "real minilm vectors of the shared texts"
	if cfg.export != "" {
		logf("semantic: reading %d span vectors from %s", cfg.vecSpans, cfg.export)
		vecs, err = readExportVectors(cfg.export, cfg.vecSpans, len(corpus.queries[0]))
		if err != nil {
			return nil, fmt.Errorf("-semantic-export: %w", err)
		}
		real = len(vecs)
		source = "real minilm span vectors of " + filepath.Base(cfg.export)
	} else {
		vecs = derive(corpus.texts, cfg.vecSpans, cfg.seed)
	}
	emb := &tableEmbedder{model: corpus.model, vecs: vecs}
	dir, err := os.MkdirTemp(cfg.tmp, "peers-semantic-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	db, err := engine.Open(filepath.Join(dir, "loci"), engine.Options{Sync: wal.SyncOff, DisableBackground: true, Embedder: emb})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	ids := map[uuid.UUID]int{}
	base := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	for next := 0; next < len(vecs); {
		if next%25600 == 0 {
			logf("semantic: building Loci's workspace, %d of %d spans", next, len(vecs))
		}
		batch := make([]engine.IngestInput, 0, 256)
		for i := next; i < min(next+256, len(vecs)); i++ {
			b, _ := json.Marshal(map[string]string{"role": "user", "content": fmt.Sprintf("vector %d", i)})
			batch = append(batch, engine.IngestInput{Workspace: "bench", ActorID: "agent", Type: "chat_turn", Payload: b,
				Timestamp: base.Add(time.Duration(i) * time.Minute)})
		}
		rs, err := db.IngestBatch("bench", batch)
		if err != nil {
			return nil, err
		}
		for j, r := range rs {
			if !r.Embedded || len(r.SpanIDs) != 1 {
				return nil, fmt.Errorf("artifact %d: %d spans, embedded %v, want one embedded span", next+j, len(r.SpanIDs), r.Embedded)
			}
			ids[r.SpanIDs[0]] = next + j
		}
		next += len(batch)
	}
	if err := db.Compact(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.seed, 99))
	qvecs := make([][]float32, cfg.queries)
	for i := range qvecs {
		qvecs[i] = corpus.queries[rng.IntN(len(corpus.queries))]
	}
	vecFile, qFile := filepath.Join(dir, "vectors.f32"), filepath.Join(dir, "queries.f32")
	if err := writeF32(vecFile, vecs); err != nil {
		return nil, err
	}
	if err := writeF32(qFile, qvecs); err != nil {
		return nil, err
	}
	logf("semantic: %d spans; loading pgvector and building its HNSW index (m 16, ef_construction 64), or reusing them (-pg-reuse)", len(vecs))
	var load struct {
		Rows               int
		CopyS              float64 `json:"copy_s"`
		IndexS             float64 `json:"index_s"`
		Pgvector, Postgres string
		Reused             bool
	}
	// The HNSW graph must fit in maintenance_work_mem or pgvector builds it
	// on disk, far slower: about 1.8 KB a 384-d row, with room to spare.
	mem := max(2, (len(vecs)*4<<10+1<<30-1)>>30)
	if err := p.call(map[string]any{"op": "pg_load_vectors", "dsn": cfg.dsn, "vectors": vecFile, "dim": len(vecs[0]), "m": 16, "ef_construction": 64,
		"maintenance_work_mem": fmt.Sprintf("%dGB", mem), "reuse": cfg.pgReuse}, &load); err != nil {
		return nil, err
	}
	built := fmt.Sprintf("HNSW build %.0f s", load.IndexS)
	if load.Reused {
		built = "HNSW index of an earlier run reused (-pg-reuse)"
	}
	logf("semantic: pgvector %s on PostgreSQL %s: copy %.1f s, %s", load.Pgvector, load.Postgres, load.CopyS, built)
	var opened struct{ Queries int }
	if err := p.call(map[string]any{"op": "pg_open_queries", "dsn": cfg.dsn, "queries": qFile, "dim": len(vecs[0])}, &opened); err != nil {
		return nil, err
	}

	logf("semantic: exact float top 100 of %d queries", len(qvecs))
	kth := exactKth(vecs, qvecs, 100)
	recall := func(qi int, got []int) float64 {
		ok := 0
		for _, id := range got {
			if dot(vecs[id], qvecs[qi]) >= kth[qi]-1e-5 {
				ok++
			}
		}
		return float64(ok) / 100
	}
	codes := make([][]int8, len(qvecs))
	scales := make([]float32, len(qvecs))
	for i, v := range qvecs {
		codes[i] = make([]int8, len(v))
		scales[i] = vecindex.Quantize(v, codes[i])
	}
	loci := func(i int) ([]int, time.Duration, error) {
		t := time.Now()
		hits, err := db.SearchSemantic("bench", "bench", codes[i], scales[i], 100)
		d := time.Since(t)
		got := make([]int, len(hits))
		for j, h := range hits {
			got[j] = ids[h.SpanID]
		}
		return got, d, err
	}
	type pgReply struct {
		Ns  int64
		IDs []int
	}
	pg := func(i, ef int) (pgReply, error) {
		var r pgReply
		err := p.call(map[string]any{"op": "pg_search", "i": i, "ef": ef, "k": 100}, &r)
		return r, err
	}
	lociRecall := 0.0
	for i := range qvecs {
		got, _, err := loci(i)
		if err != nil {
			return nil, err
		}
		lociRecall += recall(i, got)
	}
	lociRecall /= float64(len(qvecs))
	efs, err := ints(cfg.efs)
	if err != nil {
		return nil, err
	}
	chosen, chosenRecall := 0, 0.0
	var tried []string
	for _, ef := range efs {
		r := 0.0
		var lat dist
		for i := range qvecs {
			res, err := pg(i, ef)
			if err != nil {
				return nil, err
			}
			r += recall(i, res.IDs)
			lat = append(lat, time.Duration(res.Ns))
		}
		r /= float64(len(qvecs))
		tried = append(tried, fmt.Sprintf("ef %d: recall %.3f, p50 %.2f ms", ef, r, lat.q(0.5)))
		logf("semantic: pgvector ef_search %d recall@100 %.3f (Loci %.3f)", ef, r, lociRecall)
		chosen, chosenRecall = ef, r
		if r >= lociRecall {
			break
		}
	}
	var lociLat, pgLat dist
	for i := range qvecs {
		var d time.Duration
		var r pgReply
		err := interleaved(i, func() (err error) {
			_, d, err = loci(i)
			return err
		}, func() (err error) {
			r, err = pg(i, chosen)
			return err
		})
		if err != nil {
			return nil, err
		}
		lociLat = append(lociLat, d)
		pgLat = append(pgLat, time.Duration(r.Ns))
	}
	var exec dist
	for i := range min(200, len(qvecs)) {
		var r struct {
			ExecMs float64 `json:"exec_ms"`
		}
		if err := p.call(map[string]any{"op": "pg_search", "i": i, "ef": chosen, "k": 100, "explain": true}, &r); err != nil {
			return nil, err
		}
		exec = append(exec, time.Duration(r.ExecMs*1e6))
	}
	what := fmt.Sprintf("semantic top-100, %d spans (%d %s, %d derived), 384-d, %d real questions", len(vecs), min(real, len(vecs)), source, max(0, len(vecs)-real), len(qvecs))
	kind := "exact int8 scan"
	if len(vecs) >= vecindex.IVFMinSpans {
		kind = "IVF where its model has centroids"
	}
	return []row{
		{what, "Loci engine (in-process, SearchSemantic, " + kind + ")", lociLat.String(),
			fmt.Sprintf("recall@100 %.3f against the exact float scan; query vector given (embedding not timed)", lociRecall)},
		{what, fmt.Sprintf("pgvector %s HNSW m 16 ef_construction 64, ef_search %d (PostgreSQL %s, psycopg over loopback)", load.Pgvector, chosen, load.Postgres), pgLat.String(),
			fmt.Sprintf("recall@100 %.3f (ef_search tried, not interleaved: %s); includes the client round trip; EXPLAIN ANALYZE execution time %s (%d queries); %s", chosenRecall, strings.Join(tried, ", "), exec, len(exec), built)},
	}, nil
}

// exactKth is, for each query, the 100th best (k-th) dot product over vecs:
// a hit is correct when it scores at least that (ties count).
func exactKth(vecs, queries [][]float32, k int) []float32 {
	out := make([]float32, len(queries))
	var wg sync.WaitGroup
	next := make(chan int)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := make([]float32, len(vecs))
			for qi := range next {
				for i, v := range vecs {
					s[i] = dot(v, queries[qi])
				}
				slices.Sort(s)
				out[qi] = s[len(s)-k]
			}
		}()
	}
	for i := range queries {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

func dot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func writeF32(path string, vecs [][]float32) error {
	return writeFile(path, func(w *bufio.Writer) error {
		for _, v := range vecs {
			if err := binary.Write(w, binary.LittleEndian, v); err != nil {
				return err
			}
		}
		return nil
	})
}

// tableEmbedder gives a text that ends in "vector <i>" the vector vecs[i].
type tableEmbedder struct {
	model string
	vecs  [][]float32
}

func (e *tableEmbedder) Model() string { return e.model }
func (e *tableEmbedder) Dim() int      { return len(e.vecs[0]) }
func (e *tableEmbedder) InProcess()    {}

func (e *tableEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		_, num, _ := strings.Cut(t, "vector ") // the span's text is "user: vector <i>"
		n, err := strconv.Atoi(num)
		if err != nil || n < 0 || n >= len(e.vecs) {
			return nil, fmt.Errorf("tableEmbedder: no vector for %q", t)
		}
		out[i] = e.vecs[n]
	}
	return out, nil
}

// vectorCorpus is the file `loci bench ivf --cache` writes: model name,
// dimension, the texts' vectors and the questions' vectors (unit length).
type vectorCorpus struct {
	model          string
	texts, queries [][]float32
}

func readVectorCorpus(path string) (*vectorCorpus, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	if len(b) < 2 {
		return nil, fmt.Errorf("%s: too short", path)
	}
	ml := int(le.Uint16(b))
	if len(b) < 2+ml+12 {
		return nil, fmt.Errorf("%s: too short", path)
	}
	c := &vectorCorpus{model: string(b[2 : 2+ml])}
	h := b[2+ml:]
	dim, nt, nq := int(le.Uint32(h)), int(le.Uint32(h[4:])), int(le.Uint32(h[8:]))
	body := h[12:]
	if len(body) != 4*dim*(nt+nq) {
		return nil, fmt.Errorf("%s: %d bytes of vectors, want %d", path, len(body), 4*dim*(nt+nq))
	}
	all := make([][]float32, nt+nq)
	for i := range all {
		all[i] = make([]float32, dim)
		for j := range all[i] {
			all[i][j] = math.Float32frombits(le.Uint32(body[4*(i*dim+j):]))
		}
	}
	c.texts, c.queries = all[:nt], all[nt:]
	return c, nil
}

// derive returns n vectors: the real ones first, then, cycling through
// them, each real vector moved by seeded Gaussian noise of norm about 0.33
// and normalised again (cosine about 0.95 to its origin): as `loci bench
// search` repeats real texts to reach a size, with each copy made distinct
// so that no two vectors tie.
func derive(real [][]float32, n int, seed uint64) [][]float32 {
	out := slices.Clone(real[:min(n, len(real))])
	rng := rand.New(rand.NewPCG(seed, 7))
	dim := len(real[0])
	sigma := 0.33 / math.Sqrt(float64(dim))
	for i := 0; len(out) < n; i++ {
		src := real[i%len(real)]
		v := make([]float32, dim)
		var norm float64
		for j := range v {
			x := float64(src[j]) + sigma*rng.NormFloat64()
			v[j] = float32(x)
			norm += x * x
		}
		inv := float32(1 / math.Sqrt(norm))
		for j := range v {
			v[j] *= inv
		}
		out = append(out, v)
	}
	return out
}

// readExportVectors reads the first n span vectors of a `loci embed` output
// (docs/format/export.md § Span vectors, decoded by export.DecodeVector),
// each of dim values, in file order.
func readExportVectors(path string, n, dim int) ([][]float32, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	out := make([][]float32, 0, n)
	for line := 1; len(out) < n; line++ {
		b, err := r.ReadBytes('\n')
		if len(b) == 0 && err != nil {
			return nil, fmt.Errorf("%d span vectors in the file, want %d", len(out), n)
		}
		var rec struct{ Vectors []string }
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		for _, s := range rec.Vectors[:min(len(rec.Vectors), n-len(out))] {
			v, err := export.DecodeVector(s)
			if err != nil || len(v) != dim {
				return nil, fmt.Errorf("line %d: a vector of %d values, want %d (%v)", line, len(v), dim, err)
			}
			out = append(out, v)
		}
	}
	return out, nil
}
