package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/loci-memory/loci/bench"
	"github.com/loci-memory/loci/embed"
	"github.com/loci-memory/loci/embed/colbert"
	"github.com/loci-memory/loci/embed/crossenc"
	"github.com/loci-memory/loci/embed/glove"
	"github.com/loci-memory/loci/embed/minilm"
	"github.com/loci-memory/loci/embed/openai"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/retrieval"
	"github.com/loci-memory/loci/service"
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

// Late-interaction models accepted by --late-interaction (env
// LOCI_LATE_INTERACTION).
const (
	lateColbert = "colbert" // the built-in answerai-colbert-small-v1
	lateNone    = "none"    // packs never run late interaction
	lateNames   = "colbert | none"
	lateDefault = lateColbert
	// defaultLateDepth is the late_depth of packs that leave it out where
	// the server runs late interaction by default (docs/pack.md § Late
	// interaction).
	defaultLateDepth = 100
	// defaultLateMaxSpans is the largest workspace where packs run late
	// interaction by default and the engine stores token rows: small
	// workspaces (an agent's memory of one user or one conversation) get
	// the better packs at little cost, large ones keep their disk and their
	// latency (docs/benchmarks.md § Late interaction by default).
	defaultLateMaxSpans = 10_000
	// lateMemoBytes bounds the rows a scorer remembers of the texts it
	// computed (the heads' spans, speakers' names): about 14,000 turns.
	lateMemoBytes = 64 << 20
)

// lateSettings are the late-interaction flags of a command that serves
// packs (lateFlags).
type lateSettings struct{ name, depth, maxSpans *string }

// lateFlags defines --late-interaction, --late-depth and --late-max-spans
// on fs.
func lateFlags(fs *flag.FlagSet) lateSettings {
	return lateSettings{
		name:     fs.String("late-interaction", envOr("LOCI_LATE_INTERACTION", lateDefault), "the late-interaction model that scores the best candidates of packs by token vectors, and whose token rows the engine stores in the background (docs/pack.md § Late interaction): "+lateNames+" (env LOCI_LATE_INTERACTION)"),
		depth:    fs.String("late-depth", envOr("LOCI_LATE_DEPTH", strconv.Itoa(defaultLateDepth)), "how many of the best candidates late interaction scores in packs that leave late_depth out, where it runs by default (env LOCI_LATE_DEPTH)"),
		maxSpans: fs.String("late-max-spans", envOr("LOCI_LATE_MAX_SPANS", strconv.Itoa(defaultLateMaxSpans)), "packs that leave late_depth out (v1, v2 balanced and high_recall) run late interaction in workspaces of at most this many spans, and the engine stores token rows for those only; 0: no limit, v2 balanced and high_recall packs only (env LOCI_LATE_MAX_SPANS)"),
	}
}

// apply sets the engine's row source and the service's late interaction.
func (l lateSettings) apply(o *engine.Options, c *service.Config) error {
	depth, err := strconv.Atoi(*l.depth)
	if err != nil || depth < 0 || depth > retrieval.MaxRerankDepth {
		return fmt.Errorf("LOCI_LATE_DEPTH: %q is not an integer between 0 and %d", *l.depth, retrieval.MaxRerankDepth)
	}
	maxSpans, err := strconv.Atoi(*l.maxSpans)
	if err != nil || maxSpans < 0 {
		return fmt.Errorf("LOCI_LATE_MAX_SPANS: %q is not a non-negative integer", *l.maxSpans)
	}
	li, rows, err := lateInteraction(*l.name)
	if err != nil {
		return err
	}
	o.TokenRows, o.TokenRowsMaxWorkspaceSpans = rows, maxSpans
	c.LateInteraction, c.LateInteractionDepth, c.LateInteractionMaxSpans = li, depth, maxSpans
	return nil
}

// lateInteraction returns the late-interaction model of a name and the
// row source the engine stores segments' rows with; nil, nil for none.
func lateInteraction(name string) (retrieval.LateInteraction, engine.TokenRower, error) {
	switch name {
	case lateColbert:
		e, err := colbert.Default()
		if err != nil {
			return nil, nil, err
		}
		return colbert.NewScorer(e, lateMemoBytes), colbert.NewRows(e), nil
	case lateNone:
		return nil, nil, nil
	}
	return nil, nil, fmt.Errorf("--late-interaction %q: want %s", name, lateNames)
}
