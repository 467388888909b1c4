package engine

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/loci-memory/loci/wal"
)

// BenchmarkIngest measures durable single-artifact ingest with parallel
// writers (fsync per the sub-benchmark's policy).
func BenchmarkIngest(b *testing.B) {
	for _, p := range []wal.SyncPolicy{wal.SyncAlways, wal.SyncOff} {
		b.Run("fsync="+p.String(), func(b *testing.B) {
			db := openTest(&testing.T{}, b.TempDir(), Options{Sync: p, Logger: quietLogger()})
			defer db.Close()
			var n atomic.Int64
			b.SetParallelism(32)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					in := chat(fmt.Sprintf("ws-%d", i%8), fmt.Sprintf("Turn %d: the deploy moved to Friday because the cluster budget was revised to 4000 dollars. Please confirm the refund for booking %d.", i, i*7))
					if _, err := db.Ingest("t", in); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkRetentionCutoff measures setting a retention that erases half of
// a workspace held in the head: 4,000 artifacts over 20 days, 10 days kept.
func BenchmarkRetentionCutoff(b *testing.B) {
	const n = 4000
	for b.Loop() {
		b.StopTimer()
		db := openTest(&testing.T{}, b.TempDir(), Options{Sync: wal.SyncOff, Logger: quietLogger(), NoEmbedder: true})
		for i := range n {
			in := chat("w", fmt.Sprintf("Turn %d: the deploy moved to Friday because the cluster budget was revised.", i))
			in.Timestamp = retentionDay(i * 20 / n)
			if _, err := db.Ingest("t", in); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		if err := db.SetRetention("t", "w", 10); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		db.Close()
		b.StartTimer()
	}
}

// BenchmarkIdleCore: what a paced background worker pays per text to ask
// whether a core is idle.
func BenchmarkIdleCore(b *testing.B) {
	for range b.N {
		idleCore()
	}
}
