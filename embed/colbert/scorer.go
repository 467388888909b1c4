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
	stored   bool

	mu    sync.Mutex
	memo  map[string]vectors
	order []string // insertion order, for eviction
	bytes int
}

// vectors are a passage's token vectors: m, or s for a scorer of stored
// rows.
type vectors struct {
	m Matrix
	s Stored
}

func (v vectors) bytes() int { return 4*len(v.m) + StoredRowBytes*v.s.Rows() }

// NewScorer returns a scorer over e that remembers at most maxBytes of
// passage vectors (4 × Dims bytes a token), evicting the oldest first.
func NewScorer(e *Encoder, maxBytes int) *Scorer {
	return &Scorer{e: e, maxBytes: maxBytes, memo: make(map[string]vectors)}
}

// NewStoredScorer is NewScorer scoring by MaxSimStored over the query's
// and the passages' stored rows (StoredRowBytes a token), as a store of
// token vectors would keep them.
func NewStoredScorer(e *Encoder, maxBytes int) *Scorer {
	s := NewScorer(e, maxBytes)
	s.stored = true
	return s
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
	ms := make([]vectors, len(passages))
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
					var m Matrix
					if m, errs[i] = s.e.Passage(passages[i], 1); s.stored {
						ms[i].s = Store(m)
					} else {
						ms[i].m = m
					}
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
	if s.stored {
		qs := Store(q)
		for i, v := range ms {
			dst[i] = MaxSimStored(qs, v.s)
		}
		return nil
	}
	for i, v := range ms {
		dst[i] = MaxSim(q, v.m)
	}
	return nil
}

func (s *Scorer) remember(p string, v vectors) {
	if _, ok := s.memo[p]; ok || v.bytes() > s.maxBytes {
		return
	}
	s.memo[p] = v
	s.order = append(s.order, p)
	s.bytes += v.bytes()
	for s.bytes > s.maxBytes {
		old := s.order[0]
		s.order = s.order[1:]
		s.bytes -= s.memo[old].bytes()
		delete(s.memo, old)
	}
}
