package minilm

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// crew splits the steps of one forward pass among goroutines. A pass is
// about 60 short steps (four matrix products and the attention heads of
// each layer, a few hundred microseconds each at chat-turn lengths), and
// waking a parked goroutine for each one cost about as much as the step on
// the 2-vCPU VM measured (a pass of 96 tokens: 17.8 ms on one goroutine,
// 16-17 ms split with a goroutine started per step). So the helpers live
// for the pass and wait for the next step by spinning; they yield the
// processor while they spin, so a busy machine loses little to them.
type crew struct {
	size int                    // goroutines, the caller's included
	gen  atomic.Uint64          // bumped when a step is posted
	done atomic.Int64           // helpers done with the posted step
	stop atomic.Bool            // set when the pass ends
	f    func(part, lo, hi int) // the posted step
	n    int                    // its range
	wg   sync.WaitGroup
}

// newCrew starts size-1 helpers; a crew of size 1 or less is nil, which
// runs every step on the caller's goroutine.
func newCrew(size int) *crew {
	if size <= 1 {
		return nil
	}
	c := &crew{size: size}
	for i := 1; i < size; i++ {
		c.wg.Add(1)
		go c.help(i)
	}
	return c
}

func (c *crew) help(part int) {
	defer c.wg.Done()
	var seen uint64
	for {
		if g := c.gen.Load(); g != seen {
			seen = g
			c.f(part, part*c.n/c.size, (part+1)*c.n/c.size)
			c.done.Add(1)
			continue
		}
		if c.stop.Load() {
			return
		}
		runtime.Gosched()
	}
}

// run runs f over [0, n) split into the crew's size parts of about equal
// size (part i is [i*n/size, (i+1)*n/size), some empty when n is small),
// and returns when all are done.
func (c *crew) run(n int, f func(part, lo, hi int)) {
	if c == nil {
		f(0, 0, n)
		return
	}
	c.f, c.n = f, n
	c.done.Store(0)
	c.gen.Add(1) // publishes f and n to the helpers
	f(0, 0, n/c.size)
	for c.done.Load() != int64(c.size-1) {
		runtime.Gosched()
	}
}

// close stops the helpers; a nil crew has none.
func (c *crew) close() {
	if c == nil {
		return
	}
	c.stop.Store(true)
	c.wg.Wait()
}
