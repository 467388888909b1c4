// Package vecindex is Loci's semantic channel: embedders that turn text into
// vectors, int8 quantization, an int8 dot-product kernel (SIMD with a pure-Go
// fallback), and exact top-k search over the head's and segments' vectors.
// Search is exact, never approximate: packs must not depend on index layout.
package vecindex

import (
	"context"
	"errors"
)

// Embedder turns texts into unit-length float32 vectors.
type Embedder interface {
	// Model names the vector space, e.g. "glove-6b-100d-sif" or
	// "openai:text-embedding-3-small:1536". Vectors of different models are
	// never compared.
	Model() string
	// Dim is the vector length.
	Dim() int
	// Embed returns one unit-length vector per text, in order. An error that
	// wraps ErrUnavailable means the provider cannot answer now: callers
	// degrade to lexical-only retrieval and say so, they do not fail.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// InProcess marks an Embedder that computes in this process, in CPU time
// bounded by its input (no network, no queue): a caller may wait for it
// while holding a lock that others wait for.
type InProcess interface {
	Embedder
	InProcess()
}

// ErrUnavailable marks an embedder that cannot answer now (down, timing
// out, rate limited past its retries, misconfigured).
var ErrUnavailable = errors.New("vecindex: embedder unavailable")
