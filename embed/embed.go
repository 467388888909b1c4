// Package embed is what Loci knows of an embedder: the Embedder interface
// that turns text into vectors, the InProcess marker and ErrUnavailable.
// The embedders themselves live beneath it (embed/minilm, embed/glove,
// embed/openai); only the program that wires Loci together (cmd/loci),
// benchmarks and tests import them, so the storage engine, retrieval and
// the index (vecindex) know the interface and nothing else.
package embed

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
// out, rate limited past its retries, misconfigured). Its text predates
// this package and is kept, so that messages read as they did.
var ErrUnavailable = errors.New("embed: embedder unavailable")
