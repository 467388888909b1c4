package vecindex

import (
	"context"
	"github.com/loci-memory/loci/embed"
	"math"
)

// GloVe model name and dimension.
const (
	GloVeModel = "glove-6b-100d-sif"
	GloVeDim   = 100
)

// GloVe is Loci's default, offline embedder: the SIF-weighted mean of the
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
type GloVe struct{}

// NewGloVe returns the GloVe embedder.
func NewGloVe() *GloVe { return &GloVe{} }

// Model implements Embedder.
func (*GloVe) Model() string { return GloVeModel }

// Dim implements Embedder.
func (*GloVe) Dim() int { return GloVeDim }

// InProcess marks the embedder as computing in this process (embed.InProcess).
func (*GloVe) InProcess() {}

var _ embed.InProcess = (*GloVe)(nil)

// Embed implements Embedder: one unit-length (or zero) vector per text. It
// fails only if the embedded table is damaged (an error wrapping
// ErrUnavailable, from the first call on) or ctx is done.
func (g *GloVe) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	t, err := loadGloVe()
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	flat := make([]float32, len(texts)*GloVeDim)
	for i, s := range texts {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		v := flat[i*GloVeDim : (i+1)*GloVeDim : (i+1)*GloVeDim]
		t.embed(s, (*[GloVeDim]float32)(v))
		out[i] = v
	}
	return out, nil
}

// EmbedInto writes the embedding of text into dst, which must hold Dim()
// values, and returns how many of its words were known (0: dst is zero). It
// does not allocate.
func (g *GloVe) EmbedInto(dst []float32, text string) (known int, err error) {
	t, err := loadGloVe()
	if err != nil {
		return 0, err
	}
	if len(dst) != GloVeDim {
		panic("BUG: vecindex.GloVe.EmbedInto: dst must hold GloVeDim values")
	}
	return t.embed(text, (*[GloVeDim]float32)(dst)), nil
}

// embed sums the weighted vectors of text's known words into dst and
// normalises it; it returns the number of known words.
func (t *gloveTable) embed(text string, dst *[GloVeDim]float32) int {
	var acc [GloVeDim]float32
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
		axpyInt8(t.coef[r], t.rows[r*GloVeDim:(r+1)*GloVeDim], acc[:])
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
