package bench

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/loci-memory/loci/embed/minilm"
	"github.com/loci-memory/loci/vecindex"
)

// IVFCorpus is the reference corpus of the IVF centroids and of their
// recall measurement: the texts of the shared data sets embedded with the
// built-in encoder (SciFact abstracts, LoCoMo turns, HotpotQA paragraphs,
// τ-bench messages, then LongMemEval turns up to maxLME), and their real
// questions as queries. Vectors are unit length, Dim() values each.
type IVFCorpus struct {
	Model   string
	Dim     int
	Texts   [][]float32
	Queries [][]float32
}

// LoadIVFCorpus embeds the corpus under dataDir (../shared/data), or reads
// it from cache when that file exists (and writes it there otherwise, when
// cache is not empty): embedding tens of thousands of texts takes minutes.
// At most maxTexts texts are kept (0: all), evenly spaced. Texts are cut to their first maxBytes bytes (at a rune boundary; 0: whole),
// which bounds the encoder's cost per text (it reads at most 256 tokens).
func LoadIVFCorpus(dataDir, cache string, maxLME, maxTexts, maxBytes int, progress func(string)) (*IVFCorpus, error) {
	if cache != "" {
		if c, err := readIVFCorpus(cache); err == nil {
			return c, nil
		}
	}
	rc, err := LoadRealCorpus(dataDir, 1)
	if err != nil {
		return nil, err
	}
	var texts []string
	for _, d := range rc.docs {
		var p struct{ Title, Content string }
		if json.Unmarshal(d.payload, &p) == nil {
			texts = append(texts, joinNonEmpty(p.Title, p.Content))
		}
	}
	var lme []struct {
		Sessions [][]struct {
			Content string `json:"content"`
		} `json:"haystack_sessions"`
	}
	if err := readJSON(filepath.Join(dataDir, "longmemeval", "longmemeval-s-dev.json"), &lme); err != nil {
		return nil, err
	}
	n := 0
lmeLoop:
	for _, q := range lme {
		for _, s := range q.Sessions {
			for _, t := range s {
				if n >= maxLME {
					break lmeLoop
				}
				texts = append(texts, t.Content)
				n++
			}
		}
	}
	if maxTexts > 0 && len(texts) > maxTexts {
		// An evenly spaced sample keeps every data set's share.
		sample := make([]string, maxTexts)
		for i := range sample {
			sample[i] = texts[i*len(texts)/maxTexts]
		}
		texts = sample
	}
	if maxBytes > 0 {
		for i, t := range texts {
			texts[i] = cutText(t, maxBytes)
		}
	}
	emb, err := minilm.Default()
	if err != nil {
		return nil, err
	}
	c := &IVFCorpus{Model: emb.Model(), Dim: emb.Dim()}
	start := time.Now()
	if c.Texts, err = embedAll(emb, texts, progress); err != nil {
		return nil, err
	}
	if c.Queries, err = embedAll(emb, rc.Queries, progress); err != nil {
		return nil, err
	}
	progress(fmt.Sprintf("embedded %d texts and %d queries in %v", len(c.Texts), len(c.Queries), time.Since(start).Round(time.Second)))
	if cache != "" {
		if err := writeIVFCorpus(cache, c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// cutText returns the longest prefix of s of at most n bytes that ends at
// a rune boundary.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func joinNonEmpty(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + " " + b
}

// embedAll embeds texts in order, in batches of 512 so that progress
// shows; each batch runs on every core (minilm.Embedder.Embed).
func embedAll(emb *minilm.Embedder, texts []string, progress func(string)) ([][]float32, error) {
	const batch = 512
	out := make([][]float32, 0, len(texts))
	for i := 0; i < len(texts); i += batch {
		vs, err := emb.Embed(context.Background(), texts[i:min(i+batch, len(texts))])
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
		progress(fmt.Sprintf("embedded %d of %d", len(out), len(texts)))
	}
	return out, nil
}

// The cache file: model length u16, model, dim u32, texts u32, queries u32,
// then every vector's float32 values, little endian.
func writeIVFCorpus(path string, c *IVFCorpus) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	le := binary.LittleEndian
	_ = binary.Write(w, le, uint16(len(c.Model)))
	_, _ = w.WriteString(c.Model)
	_ = binary.Write(w, le, [3]uint32{uint32(c.Dim), uint32(len(c.Texts)), uint32(len(c.Queries))})
	for _, v := range append(slices.Clip(c.Texts), c.Queries...) {
		_ = binary.Write(w, le, v)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func readIVFCorpus(path string) (*IVFCorpus, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	le := binary.LittleEndian
	var ml uint16
	if err := binary.Read(r, le, &ml); err != nil {
		return nil, err
	}
	model := make([]byte, ml)
	if _, err := io.ReadFull(r, model); err != nil {
		return nil, err
	}
	var h [3]uint32
	if err := binary.Read(r, le, &h); err != nil {
		return nil, err
	}
	c := &IVFCorpus{Model: string(model), Dim: int(h[0])}
	read := func(n uint32) ([][]float32, error) {
		out := make([][]float32, n)
		for i := range out {
			out[i] = make([]float32, c.Dim)
			if err := binary.Read(r, le, out[i]); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	if c.Texts, err = read(h[1]); err != nil {
		return nil, err
	}
	if c.Queries, err = read(h[2]); err != nil {
		return nil, err
	}
	return c, nil
}

// TrainIVF trains nlist centroids on vecs by spherical k-means, and
// deterministically: k-means++ seeding from a PCG stream of seed, then
// exactly iters Lloyd iterations, sums in float64 in index order, ties to
// the lower centroid; an empty list keeps its previous centroid. The same
// inputs give bit-identical centroids on every machine.
func TrainIVF(vecs [][]float32, nlist, iters int, seed uint64, progress func(string)) [][]float32 {
	dim := len(vecs[0])
	rng := rand.New(rand.NewPCG(seed, 0x1f5))
	cents := make([][]float32, 0, nlist)
	cents = append(cents, slices.Clone(vecs[rng.IntN(len(vecs))]))
	// k-means++: the next centroid at random, weighted by the squared
	// distance to the nearest one chosen so far (for unit vectors 2-2cos).
	d2 := make([]float64, len(vecs))
	for i := range d2 {
		d2[i] = math.Inf(1)
	}
	for len(cents) < nlist {
		last := cents[len(cents)-1]
		total := 0.0
		for i, v := range vecs {
			d := max(0, 2-2*dot64(v, last))
			d2[i] = min(d2[i], d)
			total += d2[i]
		}
		x := rng.Float64() * total
		pick := len(vecs) - 1
		for i, d := range d2 {
			if x < d {
				pick = i
				break
			}
			x -= d
		}
		cents = append(cents, slices.Clone(vecs[pick]))
	}
	assign := make([]int, len(vecs))
	for it := range iters {
		parallelRange(len(vecs), func(i int) { assign[i] = nearest(cents, vecs[i]) })
		sums := make([][]float64, nlist)
		for c := range sums {
			sums[c] = make([]float64, dim)
		}
		counts := make([]int, nlist)
		for i, v := range vecs {
			c := assign[i]
			counts[c]++
			for j, x := range v {
				sums[c][j] += float64(x)
			}
		}
		empty := 0
		for c := range cents {
			if counts[c] == 0 {
				empty++
				continue
			}
			norm := 0.0
			for _, x := range sums[c] {
				norm += x * x
			}
			norm = math.Sqrt(norm)
			for j := range cents[c] {
				cents[c][j] = float32(sums[c][j] / norm)
			}
		}
		progress(fmt.Sprintf("k-means iteration %d of %d: %d empty lists", it+1, iters, empty))
	}
	return cents
}

func dot64(a, b []float32) float64 {
	s := 0.0
	for i, x := range a {
		s += float64(x) * float64(b[i])
	}
	return s
}

func nearest(cents [][]float32, v []float32) int {
	best, bs := 0, math.Inf(-1)
	for c, x := range cents {
		if s := dot64(v, x); s > bs {
			best, bs = c, s
		}
	}
	return best
}

// parallelRange calls f(i) for every i in [0, n) on every core; f must only
// write to its own i.
func parallelRange(n int, f func(i int)) {
	var wg sync.WaitGroup
	w := runtime.GOMAXPROCS(0)
	for g := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += w {
				f(i)
			}
		}()
	}
	wg.Wait()
}

// IVFRecallRow is the recall of IVF search against the exact scan for one
// list count and nprobe: the mean share of the exact top k that IVF finds,
// and the mean share of the documents it scores.
type IVFRecallRow struct {
	Lists   int     `json:"lists"`
	NProbe  int     `json:"nprobe"`
	Recall  float64 `json:"recall_at_k"`
	Minimum float64 `json:"min_recall"`
	Scanned float64 `json:"share_scored"`
}

// IVFRecall measures, for each nprobe, IVF search over docs with the
// centroids in file against the exact scan, top k, on queries.
func IVFRecall(file []byte, docs, queries [][]float32, k int, nprobes []int) ([]IVFRecallRow, error) {
	cents, err := vecindex.ParseCentroids(file)
	if err != nil {
		return nil, err
	}
	dim := len(docs[0])
	mv := vecindex.NewMemVectorsWith(cents.Model(), dim, cents)
	row := make([]int8, vecindex.Stride(dim))
	for i, v := range docs {
		var key [16]byte
		binary.BigEndian.PutUint32(key[:], uint32(i))
		s := vecindex.Quantize(v, row)
		mv.Add(key, row[:dim], s)
	}
	parts := []vecindex.Part{mv}
	type qv struct {
		q []int8
		s float32
	}
	qs := make([]qv, len(queries))
	exact := make([]map[[16]byte]bool, len(queries))
	for i, v := range queries {
		q := make([]int8, vecindex.Stride(dim))
		qs[i] = qv{q, vecindex.Quantize(v, q)}
		exact[i] = map[[16]byte]bool{}
		for _, h := range vecindex.Search(parts, q, qs[i].s, k) {
			exact[i][h.Key] = true
		}
	}
	var out []IVFRecallRow
	for _, np := range nprobes {
		r := IVFRecallRow{Lists: cents.Lists(), NProbe: np, Minimum: 1}
		for i, q := range qs {
			hits, scored := vecindex.SearchIVF(parts, cents, q.q, q.s, k, np)
			found := 0
			for _, h := range hits {
				if exact[i][h.Key] {
					found++
				}
			}
			rec := 1.0
			if len(exact[i]) > 0 {
				rec = float64(found) / float64(len(exact[i]))
			}
			r.Recall += rec
			r.Minimum = min(r.Minimum, rec)
			r.Scanned += float64(scored) / float64(len(docs))
		}
		r.Recall /= float64(len(qs))
		r.Scanned /= float64(len(qs))
		out = append(out, r)
	}
	return out, nil
}

// IVFConfig configures IVF: train centroids (or read them) and measure
// their recall.
type IVFConfig struct {
	Data, Cache string
	LongMemEval int
	MaxBytes    int
	MaxTexts    int
	Lists       int
	Iters       int
	Seed        uint64
	Centroids   string // measure this file instead of training
	Out         string
	K           int
	NProbe      []int
	Progress    func(string)
}

// IVFResult is what IVF measured. Centroids are trained on the even-numbered
// texts; recall is measured on the real questions (never trained on) over
// all texts, and over the odd-numbered (held-out) texts alone.
type IVFResult struct {
	Model     string         `json:"model"`
	Texts     int            `json:"texts"`
	Queries   int            `json:"queries"`
	Lists     int            `json:"lists"`
	Iters     int            `json:"iters"`
	Seed      uint64         `json:"seed"`
	CentroidB int            `json:"centroid_file_bytes"`
	All       []IVFRecallRow `json:"recall_all_texts"`
	// HeldOut holds the recall over growing samples of the held-out texts
	// (a quarter, a half, all, evenly spaced): how the probe count that
	// reaches a recall falls as a workspace grows.
	HeldOut []IVFHeldOut `json:"recall_held_out_texts"`
	CPU     string       `json:"cpu"`
}

// IVFHeldOut is the recall over Texts held-out texts.
type IVFHeldOut struct {
	Texts  int            `json:"texts"`
	Recall []IVFRecallRow `json:"recall"`
}

// IVF trains or reads centroids and measures them.
func IVF(cfg IVFConfig) (*IVFResult, error) {
	c, err := LoadIVFCorpus(cfg.Data, cfg.Cache, cfg.LongMemEval, cfg.MaxTexts, cfg.MaxBytes, cfg.Progress)
	if err != nil {
		return nil, err
	}
	var train, held [][]float32
	for i, v := range c.Texts {
		if i%2 == 0 {
			train = append(train, v)
		} else {
			held = append(held, v)
		}
	}
	res := &IVFResult{Model: c.Model, Texts: len(c.Texts), Queries: len(c.Queries), Lists: cfg.Lists, Iters: cfg.Iters, Seed: cfg.Seed, CPU: cpuModel()}
	var file []byte
	if cfg.Centroids != "" {
		if file, err = os.ReadFile(cfg.Centroids); err != nil {
			return nil, err
		}
		res.Lists, res.Iters = 0, 0
	} else {
		start := time.Now()
		cents := TrainIVF(train, cfg.Lists, cfg.Iters, cfg.Seed, cfg.Progress)
		cfg.Progress(fmt.Sprintf("trained %d centroids in %v", cfg.Lists, time.Since(start).Round(time.Second)))
		if file, err = vecindex.EncodeCentroids(c.Model, cents); err != nil {
			return nil, err
		}
		if cfg.Out != "" {
			if err := os.WriteFile(cfg.Out, file, 0o644); err != nil {
				return nil, err
			}
		}
	}
	res.CentroidB = len(file)
	if res.All, err = IVFRecall(file, c.Texts, c.Queries, cfg.K, cfg.NProbe); err != nil {
		return nil, err
	}
	for _, n := range []int{len(held) / 4, len(held) / 2, len(held)} {
		sample := make([][]float32, n) // evenly spaced: every data set's share
		for i := range sample {
			sample[i] = held[i*len(held)/n]
		}
		rows, err := IVFRecall(file, sample, c.Queries, cfg.K, cfg.NProbe)
		if err != nil {
			return nil, err
		}
		res.HeldOut = append(res.HeldOut, IVFHeldOut{n, rows})
	}
	return res, nil
}
