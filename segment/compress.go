package segment

import (
	"sync"

	"github.com/klauspost/compress/zstd"
)

// One encoder and one decoder serve the whole process: EncodeAll and DecodeAll
// are safe for concurrent use and keep their own pools of state.
var (
	zstdEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
		return zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.SpeedFastest), // flush speed bounds ingest; see docs/benchmarks.md
			zstd.WithEncoderCRC(false),               // entries carry a CRC-32C already
			zstd.WithLowerEncoderMem(true),
		)
	})
	zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
		return zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderMaxMemory(maxZstdEntry),
			zstd.WithDecoderMaxWindow(maxZstdEntry),
			zstd.WithDecodeAllCapLimit(true), // never inflate past the recorded raw length
		)
	})
)

// minCompress is the smallest entry worth trying to compress.
const minCompress = 64

// maybeCompress returns the zstd compression of raw appended to dst and true
// when that is smaller than raw, else dst unchanged and false.
func maybeCompress(dst, raw []byte) ([]byte, bool, error) {
	if len(raw) < minCompress || len(raw) > maxZstdEntry {
		return dst, false, nil
	}
	enc, err := zstdEncoder()
	if err != nil {
		return dst, false, err
	}
	out := enc.EncodeAll(raw, dst)
	if len(out)-len(dst) >= len(raw) {
		return dst, false, nil
	}
	return out, true, nil
}

// decompress inflates a zstd body that must decode to exactly rawLen bytes
// (rawLen <= maxZstdEntry, checked by the caller).
func decompress(body []byte, rawLen int) ([]byte, error) {
	dec, err := zstdDecoder()
	if err != nil {
		return nil, err
	}
	return dec.DecodeAll(body, make([]byte, 0, rawLen))
}
