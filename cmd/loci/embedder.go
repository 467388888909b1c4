package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/loci-memory/loci/bench"
	"github.com/loci-memory/loci/embed"
	"github.com/loci-memory/loci/embed/crossenc"
	"github.com/loci-memory/loci/embed/glove"
	"github.com/loci-memory/loci/embed/minilm"
	"github.com/loci-memory/loci/embed/openai"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/retrieval"
)

// Embedder names accepted by --embedder (env LOCI_EMBEDDER).
const (
	embedderMiniLM = "minilm" // the built-in sentence encoder (default)
	embedderGloVe  = "glove"  // the built-in averaged GloVe word vectors
	embedderOpenAI = "openai" // an OpenAI-compatible endpoint (EMBEDDINGS_URL, ...)
	embedderNone   = "none"   // lexical retrieval only
)

// The encoder computes in process: packs embed the query while the lexical
// channel searches (retrieval.Packer.ContextPack).
var _ embed.InProcess = (*minilm.Embedder)(nil)

const embedderNames = "minilm | glove | openai | none"

// defaultEmbedderName is LOCI_EMBEDDER, else openai when EMBEDDINGS_URL is
// set (as before embedders had names), else minilm.
func defaultEmbedderName() string {
	if v := os.Getenv("LOCI_EMBEDDER"); v != "" {
		return v
	}
	if os.Getenv("EMBEDDINGS_URL") != "" {
		return embedderOpenAI
	}
	return embedderMiniLM
}

// embedderOptions sets the engine's embedder options for a name. The
// built-in encoder and remote providers cost milliseconds per span, so
// embedding runs behind ingest (engine.Options.EmbedInBackground).
func embedderOptions(name string, o *engine.Options) error {
	o.EmbedInBackground = true
	switch name {
	case embedderMiniLM:
		e, err := minilm.Default()
		if err != nil {
			return err
		}
		o.Embedder = e
	case embedderGloVe:
		o.Embedder = glove.New()
	case embedderOpenAI:
		e, err := openAIFromEnv()
		if err != nil {
			return err
		}
		o.Embedder = e
	case embedderNone:
		o.NoEmbedder = true
	default:
		return fmt.Errorf("LOCI_EMBEDDER: unknown embedder %q (one of %s)", name, embedderNames)
	}
	return nil
}

// openAIFromEnv returns the OpenAI-compatible embedder configured by
// EMBEDDINGS_URL and friends. Without EMBEDDINGS_DIM the dimension is probed
// at start, so the provider must answer then; with it, the service starts
// regardless and a provider that is down only degrades packs to lexical
// retrieval, with a note.
func openAIFromEnv() (embed.Embedder, error) {
	cfg, ok, err := openai.ConfigFromEnv()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("LOCI_EMBEDDER=openai needs EMBEDDINGS_URL (and EMBEDDINGS_MODEL, EMBEDDINGS_API_KEY, EMBEDDINGS_DIM as the provider requires)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := openai.New(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("EMBEDDINGS_URL: %w (set EMBEDDINGS_DIM to start without asking the provider)", err)
	}
	return e, nil
}

// benchEmbedding is the semantic channel of a benchmark's server.
func benchEmbedding(name string) (bench.Embedding, error) {
	var o engine.Options
	if err := embedderOptions(name, &o); err != nil {
		return bench.Embedding{}, err
	}
	return bench.Embedding{Embedder: o.Embedder}, nil
}

// Reranker names accepted by --reranker (env LOCI_RERANKER).
const (
	rerankerCrossEnc = "crossenc" // the built-in cross-encoder (default)
	rerankerNone     = "none"     // packs are not reranked
	rerankerNames    = "crossenc | none"
)

// reranker returns the relevance model of a name, nil for none.
func reranker(name string) (retrieval.Reranker, error) {
	switch name {
	case rerankerCrossEnc:
		r, err := crossenc.Default()
		if err != nil {
			return nil, err
		}
		return r, nil
	case rerankerNone:
		return nil, nil
	}
	return nil, fmt.Errorf("--reranker %q: want %s", name, rerankerNames)
}
