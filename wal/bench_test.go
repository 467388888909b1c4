package wal

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
)

// BenchmarkAppend measures group-committed appends of 128-byte records
// under SyncAlways, with 1 and 16 appenders per CPU.
func BenchmarkAppend(b *testing.B) {
	for _, par := range []int{1, 16} {
		b.Run(fmt.Sprintf("appenders=%dxCPU", par), func(b *testing.B) {
			opts := Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			l, err := Open(b.TempDir(), 1, 0, opts, func(Record) error { return nil })
			if err != nil {
				b.Fatal(err)
			}
			payload := make([]byte, 128)
			b.SetBytes(int64(len(payload)))
			b.SetParallelism(par)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				e := Entry{Type: 1, Payload: payload}
				for pb.Next() {
					if _, err := l.Append(e); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			st := l.Stats()
			b.ReportMetric(float64(st.Records)/float64(max(st.Batches, 1)), "records/batch")
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
		})
	}
}
