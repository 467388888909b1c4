package engine

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// eachOnCores calls f(i) for every i in [0, n) on up to GOMAXPROCS
// goroutines and returns the error of the lowest i that failed (nil if none
// did): what a serial loop stopping at its first error would return, though
// later calls may have run. f must only write to its own i's state.
func eachOnCores(n int, f func(i int) error) error {
	errs := make([]error, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				errs[i] = f(i)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
