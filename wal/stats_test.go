package wal

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSyncObserver checks that the observer sees every record made durable
// exactly once, however appends were grouped into fsyncs, under each policy.
func TestSyncObserver(t *testing.T) {
	for _, policy := range []SyncPolicy{SyncAlways, SyncBatch, SyncOff} {
		t.Run(policy.String(), func(t *testing.T) {
			opts, _ := testOptions()
			opts.Sync = policy
			l, _ := mustOpen(t, t.TempDir(), 1, 0, opts)
			var syncs, records atomic.Int64
			var negative atomic.Bool
			l.SetSyncObserver(func(took time.Duration, n int) {
				syncs.Add(1)
				records.Add(int64(n))
				negative.Store(negative.Load() || took < 0 || n < 0)
			})
			const writers, each = 8, 50
			var wg sync.WaitGroup
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < each; i++ {
						if _, err := l.Append(Entry{Type: 1, Payload: []byte("record")}); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			mustClose(t, l) // fsyncs whatever batch and off left unsynced
			if got := records.Load(); got != writers*each {
				t.Errorf("records seen by fsyncs = %d, want %d", got, writers*each)
			}
			if syncs.Load() == 0 || negative.Load() {
				t.Errorf("syncs = %d, negative values %v", syncs.Load(), negative.Load())
			}
			if st := l.Stats(); st.Records != writers*each {
				t.Errorf("Stats().Records = %d", st.Records)
			}
		})
	}
}
