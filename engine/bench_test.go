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
