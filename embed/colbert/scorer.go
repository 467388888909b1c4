package colbert

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
)

// Scorer scores passages for a query by MaxSim (retrieval.LateInteraction),
// remembering the vectors of the passages it encoded, up to a bound, so
// that packs over the same memory pay a passage's model pass once. It is
// safe for concurrent use.
type Scorer struct {
	e        *Encoder
	maxBytes int

	mu    sync.Mutex
	memo  map[string]Matrix
	order []string // insertion order, for eviction
	bytes int
}

// NewScorer returns a scorer over e that remembers at most maxBytes of
// passage vectors (4 × Dims bytes a token), evicting the oldest first.
func NewScorer(e *Encoder, maxBytes int) *Scorer {
	return &Scorer{e: e, maxBytes: maxBytes, memo: make(map[string]Matrix)}
}

// Model names the model.
func (s *Scorer) Model() string { return s.e.Model() }

// ScoreAll writes MaxSim(query, passage) of each passage to dst, encoding
// the passages it does not remember on GOMAXPROCS goroutines. Each score
// depends on the query and its passage alone.
func (s *Scorer) ScoreAll(ctx context.Context, query string, passages []string, dst []float64) error {
	q, err := s.e.Query(query)
	if err != nil {
		return err
	}
	ms := make([]Matrix, len(passages))
	var todo []int
	s.mu.Lock()
	for i, p := range passages {
		if m, ok := s.memo[p]; ok {
			ms[i] = m
		} else {
			todo = append(todo, i)
		}
	}
	s.mu.Unlock()
	errs := make([]error, len(passages))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := int(next.Add(1) - 1); k < len(todo); k = int(next.Add(1) - 1) {
				i := todo[k]
				if errs[i] = ctx.Err(); errs[i] == nil {
					ms[i], errs[i] = s.e.Passage(passages[i], 1)
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	s.mu.Lock()
	for _, i := range todo {
		s.remember(passages[i], ms[i])
	}
	s.mu.Unlock()
	for i, m := range ms {
		dst[i] = MaxSim(q, m)
	}
	return nil
}

func (s *Scorer) remember(p string, m Matrix) {
	if _, ok := s.memo[p]; ok || 4*len(m) > s.maxBytes {
		return
	}
	s.memo[p] = m
	s.order = append(s.order, p)
	s.bytes += 4 * len(m)
	for s.bytes > s.maxBytes {
		old := s.order[0]
		s.order = s.order[1:]
		s.bytes -= 4 * len(s.memo[old])
		delete(s.memo, old)
	}
}
