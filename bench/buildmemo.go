package bench

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/loci-memory/loci/embed"
)

// buildMemo wraps a benchmark server's embedder while the workspace is
// built: a text repeated in the corpus (bench pack and bench search draw
// 100k spans from about 14k distinct texts) is embedded once, and its copies
// get the same vector. Embedding is a pure function of the text (the same
// bits alone or batched, see embed/minilm's TestDeterminism), so the
// workspace is bit for bit the one the server would have built alone, only
// sooner. Once the build is over (stop), every call goes to the embedder:
// the timed requests embed their queries as loci serve does.
type buildMemo struct {
	embed.Embedder
	on atomic.Bool

	mu       sync.Mutex
	vecs     map[string][]float32
	embedded int // distinct texts embedded while on
	served   int // texts answered while on
}

// buildMemoInProcess is buildMemo over an in-process embedder, which the
// engine treats as such (embed.InProcess).
type buildMemoInProcess struct{ *buildMemo }

func (buildMemoInProcess) InProcess() {}

// withBuildMemo returns e wrapped, memoizing until stop is called.
func withBuildMemo(e embed.Embedder) (wrapped embed.Embedder, m *buildMemo) {
	m = &buildMemo{Embedder: e, vecs: map[string][]float32{}}
	m.on.Store(true)
	if _, ok := e.(embed.InProcess); ok {
		return buildMemoInProcess{m}, m
	}
	return m, m
}

// stop ends memoization and frees the vectors; it returns how many texts
// were answered and how many distinct ones were embedded.
func (m *buildMemo) stop() (served, embedded int) {
	m.on.Store(false)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.vecs = nil
	return m.served, m.embedded
}

// Embed answers texts from the memo, embedding the ones it lacks (each
// distinct text once) with the wrapped embedder.
func (m *buildMemo) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if !m.on.Load() {
		return m.Embedder.Embed(ctx, texts)
	}
	out := make([][]float32, len(texts))
	var missing []string
	slot := map[string]int{} // a missing text -> its index in missing
	m.mu.Lock()
	for i, t := range texts {
		if v, ok := m.vecs[t]; ok {
			out[i] = v
		} else if _, ok := slot[t]; !ok {
			slot[t] = len(missing)
			missing = append(missing, t)
		}
	}
	m.mu.Unlock()
	if len(missing) > 0 {
		vs, err := m.Embedder.Embed(ctx, missing)
		if err != nil {
			return nil, err
		}
		m.mu.Lock()
		if m.vecs != nil {
			for i, t := range missing {
				m.vecs[t] = vs[i]
			}
			m.embedded += len(missing)
		}
		m.mu.Unlock()
		for i, t := range texts {
			if out[i] == nil {
				out[i] = vs[slot[t]]
			}
		}
	}
	m.mu.Lock()
	m.served += len(texts)
	m.mu.Unlock()
	for i, v := range out {
		out[i] = append([]float32(nil), v...) // callers own their vectors
	}
	return out, nil
}
