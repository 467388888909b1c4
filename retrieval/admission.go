package retrieval

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// packCounters counts packs at admission (see PackCounts).
type packCounters struct {
	started, cancelled atomic.Uint64
	waiting            atomic.Int64
}

// PackCounts says how packs have passed admission since New.
type PackCounts struct {
	Started   uint64 // admitted: computed, or computing now
	Cancelled uint64 // gave up waiting because their context ended
	Waiting   int64  // waiting for a slot now
}

// PackCounts returns the admission counters: operators see abandoned work
// shed, and tests can wait for a queue state instead of sleeping.
func (p *Packer) PackCounts() PackCounts {
	return PackCounts{Started: p.count.started.Load(), Cancelled: p.count.cancelled.Load(),
		Waiting: p.count.waiting.Load()}
}

// admitPack takes an admission slot, waiting in order while all are busy,
// unless ctx ends first. The caller releases the slot.
func (p *Packer) admit(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		p.count.cancelled.Add(1)
		return fmt.Errorf("retrieval: context pack not started: %w", err)
	}
	select {
	case p.slots <- struct{}{}:
	default:
		p.count.waiting.Add(1)
		select {
		case p.slots <- struct{}{}:
			p.count.waiting.Add(-1)
		case <-ctx.Done():
			p.count.waiting.Add(-1)
			p.count.cancelled.Add(1)
			return fmt.Errorf("retrieval: context pack gave up waiting for a slot: %w", ctx.Err())
		}
	}
	p.count.started.Add(1)
	return nil
}

// ReservePackSlots takes n of the pack admission slots (at most all of
// them) until release is called, so that packs beyond the rest wait as they
// would under load. Load tests and tests of the admission queue use it.
func (p *Packer) ReservePackSlots(n int) (release func()) {
	n = min(n, cap(p.slots))
	for i := 0; i < n; i++ {
		p.slots <- struct{}{}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			for i := 0; i < n; i++ {
				<-p.slots
			}
		})
	}
}
