// Package glove is Loci's built-in word-vector embedder ("glove" to
// loci serve --embedder): the SIF-weighted mean of GloVe 6B 100d word
// vectors, from a table embedded in the binary (docs/format/glove.md). It
// needs no network and no model file, and gives the same bits on every
// platform.
package glove

import (
	"context"
	"math"

	"github.com/loci-memory/loci/embed"
	"github.com/loci-memory/loci/vecindex"
)

// The model name and dimension of the GloVe embedder.
const (
	Model = "glove-6b-100d-sif"
	Dim   = 100
)

// Embedder is Loci's offline word-vector embedder: the SIF-weighted mean of the
// GloVe 6B 100d vectors of a text's words (Arora, Liang and Ma, "A Simple but
// Tough-to-Beat Baseline for Sentence Embeddings", 2017, without the
// common-component removal, which needs a corpus), normalised to unit
// length. The word table is embedded in the binary (glove_file.go).
//
// Text is split into lowercase a-z0-9 words (see tokenize.go); each known
// word adds coef(w) * v(w), where v(w) is its int8 vector and coef(w) its
// scale times the SIF weight a/(a+p(w)), a = 1e-3, with p(w) estimated
// from its frequency rank by Zipf's law. Frequent words ("the", "of") thus
// count for little. A text with no known word embeds to the zero vector,
// which callers treat as "no semantic signal". Results are deterministic:
// words are summed in text order in float32, with explicit roundings that
// forbid fused multiply-adds, so every platform gives the same bits.
//
// The zero value is ready to use and safe for concurrent use.
type Embedder struct{}

// New returns the GloVe embedder.
func New() *Embedder { return &Embedder{} }

// Model implements embed.Embedder.
func (*Embedder) Model() string { return Model }

// Dim implements embed.Embedder.
func (*Embedder) Dim() int { return Dim }

// InProcess marks the embedder as computing in this process (embed.InProcess).
func (*Embedder) InProcess() {}

var _ embed.InProcess = (*Embedder)(nil)

// Embed implements embed.Embedder: one unit-length (or zero) vector per text. It
// fails only if the embedded table is damaged (an error wrapping
// embed.ErrUnavailable, from the first call on) or ctx is done.
func (g *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	t, err := loadGloVe()
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	flat := make([]float32, len(texts)*Dim)
	for i, s := range texts {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		v := flat[i*Dim : (i+1)*Dim : (i+1)*Dim]
		t.embed(s, (*[Dim]float32)(v))
		out[i] = v
	}
	return out, nil
}

// EmbedInto writes the embedding of text into dst, which must hold Dim()
// values, and returns how many of its words were known (0: dst is zero). It
// does not allocate.
func (g *Embedder) EmbedInto(dst []float32, text string) (known int, err error) {
	t, err := loadGloVe()
	if err != nil {
		return 0, err
	}
	if len(dst) != Dim {
		panic("BUG: glove.Embedder.EmbedInto: dst must hold Dim values")
	}
	return t.embed(text, (*[Dim]float32)(dst)), nil
}

// embed sums the weighted vectors of text's known words into dst and
// normalises it; it returns the number of known words.
func (t *gloveTable) embed(text string, dst *[Dim]float32) int {
	var acc [Dim]float32
	known := 0
	var tok tokenizer
	tok.reset(text)
	for {
		w, ok := tok.next()
		if !ok {
			break
		}
		r := t.lookup(w)
		if r < 0 {
			continue
		}
		known++
		vecindex.AxpyInt8(t.coef[r], t.rows[r*Dim:(r+1)*Dim], acc[:])
	}
	var ss float64
	for _, x := range acc {
		ss += float64(float64(x) * float64(x))
	}
	if known == 0 || ss == 0 {
		clear(dst[:])
		return known
	}
	inv := 1 / math.Sqrt(ss)
	for j, x := range acc {
		dst[j] = float32(float64(x) * inv)
	}
	return known
}
