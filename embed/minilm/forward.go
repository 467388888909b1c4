package minilm

import (
	"fmt"
	"math"
	"sync"
)

// Encoder turns token ids into a sentence embedding with a BERT model: word,
// position and token-type embeddings, a layer norm, the transformer layers
// (multi-head self-attention, then a GELU feed-forward, each with a residual
// connection and a layer norm), mean pooling over the tokens and L2
// normalisation, as sentence-transformers runs all-MiniLM-L6-v2. Each text
// is encoded alone, without padding, so no attention mask is needed. It is
// safe for concurrent use.
type Encoder struct {
	m       *Model
	scratch sync.Pool // *buffers
}

// buffers are the activations of one forward pass, reused across calls so
// that encoding allocates nothing on the hot path.
type buffers struct {
	x, ctx, tmp []float32 // tokens × hidden
	qkv         []float32 // tokens × 3·hidden: query, key, value of each token
	ff          []float32 // tokens × intermediate
	scores      []float32 // par rows of tokens, rounded up to 16
	kt          []float32 // each head's keys, transposed: head size × tokens rounded up to 16
	q           qscratch
	crew        *crew // the pass's helpers (nil: none)
}

// NewEncoder returns an encoder running m.
func NewEncoder(m *Model) *Encoder {
	return &Encoder{m: m}
}

// Dim is the length of the embeddings (the model's hidden size).
func (e *Encoder) Dim() int { return e.m.Hidden }

func (b *buffers) size(tokens, hidden, inter, par int) {
	n := tokens * hidden
	if cap(b.x) < n {
		b.x, b.ctx, b.tmp = make([]float32, n), make([]float32, n), make([]float32, n)
		b.qkv = make([]float32, 3*n)
	}
	b.x, b.ctx, b.tmp, b.qkv = b.x[:n], b.ctx[:n], b.tmp[:n], b.qkv[:3*n]
	if cap(b.ff) < tokens*inter {
		b.ff = make([]float32, tokens*inter)
	}
	b.ff = b.ff[:tokens*inter]
	tp := (tokens + 15) &^ 15
	if cap(b.kt) < tp*hidden {
		b.kt = make([]float32, tp*hidden)
	}
	if cap(b.scores) < par*tp {
		b.scores = make([]float32, par*tp)
	}
	b.scores = b.scores[:par*tp]
}

// EncodeIDs writes the unit-length embedding of the token ids to dst, which
// must hold Dim() values. ids are what Tokenizer.Encode returns: at most
// MaxSeqLen ids, each below VocabSize. The result depends on the ids alone:
// every token's arithmetic is the same whatever the other texts in a batch,
// the goroutine or GOMAXPROCS.
func (e *Encoder) EncodeIDs(ids []int32, dst []float32) error {
	m := e.m
	T, H := len(ids), m.Hidden
	if T == 0 || T > m.MaxSeqLen {
		return fmt.Errorf("minilm: encode: %d token ids, want 1 to %d", T, m.MaxSeqLen)
	}
	if len(dst) != H {
		return fmt.Errorf("minilm: encode: dst holds %d values, want %d", len(dst), H)
	}
	if err := m.checkIDs(ids); err != nil {
		return fmt.Errorf("minilm: encode: %w", err)
	}
	b := e.run(ids, 0, 1)
	defer e.scratch.Put(b)
	// Mean pooling over every token (no padding), then L2 normalisation.
	clear(dst)
	for t := 0; t < T; t++ {
		for i, v := range b.x[t*H : (t+1)*H] {
			dst[i] += v
		}
	}
	var norm float64
	for i := range dst {
		dst[i] /= float32(T)
		norm += float64(dst[i]) * float64(dst[i])
	}
	if norm > 0 {
		inv := float32(1 / math.Sqrt(norm))
		for i := range dst {
			dst[i] *= inv
		}
	}
	return nil
}

// run embeds ids (token type 0 for the first typeSplit ids and 1 for the
// rest; typeSplit 0 means all 0) and runs every layer, its matrix products
// and attention heads split among par goroutines: the final states are in
// the returned buffers' x, which the caller puts back in e.scratch.
func (e *Encoder) run(ids []int32, typeSplit, par int) *buffers {
	m := e.m
	T, H := len(ids), m.Hidden
	b, _ := e.scratch.Get().(*buffers)
	if b == nil {
		b = new(buffers)
	}
	par = max(1, par)
	b.size(T, H, m.Intermediate, par)
	b.crew = newCrew(par)
	defer func() { b.crew.close(); b.crew = nil }()

	// Embeddings: word + position + token type, then layer norm.
	for t, id := range ids {
		row := b.x[t*H : (t+1)*H]
		m.wordEmb.rowTo(int(id), row)
		pos := m.posEmb.f[t*H : (t+1)*H]
		typ := m.typeEmb.f[:H]
		if typeSplit > 0 && t >= typeSplit {
			typ = m.typeEmb.f[H : 2*H]
		}
		for i := range row {
			row[i] += pos[i] + typ[i]
		}
		active.addLayerNorm(row, nil, m.embNormW, m.embNormB, m.LayerNormEps)
	}
	for li := range m.layers {
		e.layer(&m.layers[li], b, T)
	}
	return b
}

// TokenStatesOn writes the final hidden state of each of the token ids
// (token type 0), len(ids) rows of Dim() values in order, to dst, with the
// pass split among par goroutines as in ScorePairOn: the same bits
// whatever par is. Late interaction (embed/colbert) scores a query against
// a passage by these states, token by token.
func (e *Encoder) TokenStatesOn(ids []int32, dst []float32, par int) error {
	m := e.m
	T, H := len(ids), m.Hidden
	if T == 0 || T > m.MaxSeqLen {
		return fmt.Errorf("minilm: token states: %d token ids, want 1 to %d", T, m.MaxSeqLen)
	}
	if len(dst) != T*H {
		return fmt.Errorf("minilm: token states: dst holds %d values, want %d", len(dst), T*H)
	}
	if err := m.checkIDs(ids); err != nil {
		return fmt.Errorf("minilm: token states: %w", err)
	}
	b := e.run(ids, 0, par)
	copy(dst, b.x[:T*H])
	e.scratch.Put(b)
	return nil
}

// Classifier reports whether the model has a classification head, that is
// whether it is a cross-encoder (ScorePair) rather than a sentence encoder
// (EncodeIDs).
func (e *Encoder) Classifier() bool { return e.m.head != nil }

// ScorePair returns a cross-encoder's relevance logit for a pair of texts
// encoded as one sequence, [CLS] a [SEP] b [SEP]: ids holds it, and its
// first split ids ([CLS] a [SEP]) have token type 0, the rest type 1. The
// logit is the classifier applied to the pooled state of [CLS]. As with
// EncodeIDs, the result depends on the ids and split alone.
func (e *Encoder) ScorePair(ids []int32, split int) (float32, error) {
	return e.ScorePairOn(ids, split, 1)
}

// ScorePairOn is ScorePair with one pass split among par goroutines: each
// matrix product by its outputs, attention by its heads. Every value is
// computed as on one goroutine, so the logit is the same bits whatever par
// is; a pair that is scored alone takes about 1/par of the time.
func (e *Encoder) ScorePairOn(ids []int32, split, par int) (float32, error) {
	m := e.m
	T, H := len(ids), m.Hidden
	if m.head == nil {
		return 0, fmt.Errorf("minilm: score pair: model %s has no classification head", m.Name)
	}
	if T < 2 || T > m.MaxSeqLen || split < 1 || split > T {
		return 0, fmt.Errorf("minilm: score pair: %d token ids split at %d, want 2 to %d ids and a split inside", T, split, m.MaxSeqLen)
	}
	if err := m.checkIDs(ids); err != nil {
		return 0, fmt.Errorf("minilm: score pair: %w", err)
	}
	b := e.run(ids, split, par)
	defer e.scratch.Put(b)
	hd := m.head
	// Pooler: tanh(P · x[CLS] + p), in float32 with float64 sums for the
	// one row it runs on; then the classifier's dot product.
	cls := b.x[:H]
	var logit float64
	for o := 0; o < H; o++ {
		pooled := math.Tanh(float64(dotF32(hd.poolW.f[o*H:(o+1)*H], cls) + hd.poolB[o]))
		logit += pooled * float64(hd.clsW[o])
	}
	return float32(logit) + hd.clsB, nil
}

// layer runs one transformer layer on b.x in place.
func (e *Encoder) layer(l *layer, b *buffers, T int) {
	m := e.m
	H := m.Hidden
	ks := &active
	linear(b.qkv, b.x, T, &l.qkv, &b.q, b.crew)
	e.attention(b, T)
	linear(b.tmp, b.ctx, T, &l.attnOut, &b.q, b.crew)
	for t := 0; t < T; t++ {
		ks.addLayerNorm(b.x[t*H:(t+1)*H], b.tmp[t*H:(t+1)*H], l.attnNormW, l.attnNormB, m.LayerNormEps)
	}
	linear(b.ff, b.x, T, &l.inter, &b.q, b.crew)
	ks.gelu(b.ff)
	linear(b.tmp, b.ff, T, &l.out, &b.q, b.crew)
	for t := 0; t < T; t++ {
		ks.addLayerNorm(b.x[t*H:(t+1)*H], b.tmp[t*H:(t+1)*H], l.outNormW, l.outNormB, m.LayerNormEps)
	}
}

// attention computes b.ctx from the queries, keys and values in b.qkv: for
// each head, the softmax of the scaled dot products of each token's query
// with every token's key, applied to the values. The keys are transposed
// per head (head size × tokens, zero padded to 16 tokens) so that a query's
// scores are sums along the tokens, 16 at a time, and a context is a sum of
// value rows read in place: no horizontal sums. The queries are scaled (by
// 1/√head size) once, rather than every score.
func (e *Encoder) attention(b *buffers, T int) {
	H, heads := e.m.Hidden, e.m.Heads
	dh := H / heads
	tp := (T + 15) &^ 15
	ks := &active
	scale := float32(1 / math.Sqrt(float64(dh)))
	for t := 0; t < T; t++ {
		for i := range b.qkv[t*3*H : t*3*H+H] {
			b.qkv[t*3*H+i] *= scale
		}
	}
	// Heads are independent: each has its own transposed keys, and each
	// goroutine its own row of scores.
	b.crew.run(heads, func(part, lo, hi int) {
		scores := b.scores[part*tp : (part+1)*tp]
		for h := lo; h < hi; h++ {
			off := h * dh
			kt := b.kt[h*dh*tp : (h+1)*dh*tp]
			for i := 0; i < dh; i++ {
				clear(kt[i*tp+T : (i+1)*tp]) // the padding
			}
			for s := 0; s < T; s++ {
				for i, v := range b.qkv[s*3*H+H+off : s*3*H+H+off+dh] {
					kt[i*tp+s] = v
				}
			}
			for t := 0; t < T; t++ {
				ks.scores(b.qkv[t*3*H+off:t*3*H+off+dh], kt, tp, scores)
				ks.softmax(scores, T)
				ks.context(scores[:T], b.qkv[2*H+off:], 3*H, b.ctx[t*H+off:t*H+off+dh])
			}
		}
	})
}

// scores sets out[j] = q·(column j of kt) for j < len(out): kt holds len(q)
// rows of ldk values.
func scores(q, kt []float32, ldk int, out []float32) {
	clear(out)
	for i, qi := range q {
		for j, k := range kt[i*ldk : i*ldk+len(out)] {
			out[j] += qi * k
		}
	}
}

// attnContext sets out = Σ_s p[s]·v[s*ldv : s*ldv+len(out)].
func attnContext(p, v []float32, ldv int, out []float32) {
	clear(out)
	for s, ps := range p {
		for i, x := range v[s*ldv : s*ldv+len(out)] {
			out[i] += ps * x
		}
	}
}

// checkIDs reports the first id outside the vocabulary.
func (m *Model) checkIDs(ids []int32) error {
	for i, id := range ids {
		if id < 0 || int(id) >= m.VocabSize {
			return fmt.Errorf("token %d has id %d outside the vocabulary (%d)", i, id, m.VocabSize)
		}
	}
	return nil
}

// rowTo writes row r of w (float32 or int8 rows), dequantized, to dst.
func (w *matrix) rowTo(r int, dst []float32) {
	if w.f != nil {
		copy(dst, w.f[r*w.cols:(r+1)*w.cols])
		return
	}
	s := w.scale[r]
	for i, q := range w.q[r*w.cols : (r+1)*w.cols] {
		dst[i] = float32(q) * s
	}
}

// addLayerNorm sets x = layerNorm(x + y) (y nil: x alone), the residual
// connection and norm that close each sublayer.
func addLayerNorm(x, y, w, b []float32, eps float32) {
	if y != nil {
		add(x, y)
	}
	layerNorm(x, w, b, eps)
}

// softmaxPadded replaces x[:n] by its softmax and zeroes the rest of x (the
// padding of the attention's scores to a multiple of 16).
func softmaxPadded(x []float32, n int) {
	softmax(x[:n])
	clear(x[n:])
}

// layerNorm normalises x to zero mean and unit variance (biased, as
// PyTorch's LayerNorm), then scales by w and shifts by b. Sums are float64.
func layerNorm(x, w, b []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v)
	}
	mean := sum / float64(len(x))
	var ss float64
	for _, v := range x {
		d := float64(v) - mean
		ss += d * d
	}
	inv := 1 / math.Sqrt(ss/float64(len(x))+float64(eps))
	for i, v := range x {
		x[i] = float32((float64(v)-mean)*inv)*w[i] + b[i]
	}
}

// softmax replaces x by exp(x - max) / sum, in place.
func softmax(x []float32) {
	mx := x[0]
	for _, v := range x[1:] {
		mx = max(mx, v)
	}
	var sum float64
	for i, v := range x {
		ev := math.Exp(float64(v - mx))
		x[i] = float32(ev)
		sum += ev
	}
	inv := float32(1 / sum)
	for i := range x {
		x[i] *= inv
	}
}

// gelu applies the exact GELU, x·Φ(x) = x/2·(1 + erf(x/√2)), BERT's "gelu"
// (not the tanh approximation), in place, with erf from erf32.
func gelu(x []float32) {
	for i, v := range x {
		x[i] = 0.5 * v * (1 + erf32(v*math.Sqrt2/2))
	}
}

// erf32 is erf in float32 by the rational minimax approximation Eigen and
// TensorFlow use (odd degree-13 numerator over even degree-8 denominator on
// [-4, 4], ±1 outside): within 5e-7 of math.Erf (TestErf32), and about ten
// times faster, which matters because GELU runs on 1,536 values per token
// per layer (math.Erf took a third of a query's time).
func erf32(x float32) float32 {
	x = min(max(x, -4), 4)
	x2 := x * x
	p := x2*-2.72614225801306e-10 + 2.77068142495902e-08
	p = x2*p + -2.10102402082508e-06
	p = x2*p + -5.69250639462346e-05
	p = x2*p + -7.34990630326855e-04
	p = x2*p + -2.95459980854025e-03
	p = x2*p + -1.60960333262415e-02
	p *= x
	q := x2*-1.45660718464996e-05 + -2.13374055278905e-04
	q = x2*q + -1.68282697438203e-03
	q = x2*q + -7.37332916720468e-03
	q = x2*q + -1.42647390514189e-02
	return p / q
}

func add(dst, src []float32) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] += src[i]
	}
}

func dotF32(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}
