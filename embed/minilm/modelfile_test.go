package minilm

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
)

func TestParseModel(t *testing.T) {
	m, err := ParseModel(modelFile)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Name: "all-minilm-l6-v2-w8a8", VocabSize: 30522, Hidden: 384, Layers: 6, Heads: 12,
		Intermediate: 1536, MaxPositions: 512, MaxSeqLen: 256, LayerNormEps: 1e-12}
	if m.Config != want {
		t.Errorf("config %+v, want %+v", m.Config, want)
	}
	if m.Vocab[101] != "[CLS]" || m.Vocab[102] != "[SEP]" || m.Vocab[100] != "[UNK]" {
		t.Errorf("special tokens at 100-102: %q", m.Vocab[100:103])
	}
	if m.layers[0].out.w.q == nil || m.layers[0].out.w.perRow || !m.wordEmb.perRow || m.layers[0].qkv.w.rows != 3*384 {
		t.Error("expected int8 group matrices, int8 rows for the word embeddings, query, key and value stacked")
	}
}

// resealed returns a copy of the model file with f applied to its body and
// the checksum recomputed, so that parsing reaches the structural checks.
func resealed(f func(body []byte)) []byte {
	b := append([]byte(nil), modelFile...)
	body := b[:len(b)-4]
	f(body)
	binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.Checksum(body, castagnoli))
	return b
}

func TestParseModelCorrupt(t *testing.T) {
	le := binary.LittleEndian
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"truncated", modelFile[:len(modelFile)/2]},
		{"bit flip", func() []byte {
			b := append([]byte(nil), modelFile...)
			b[len(b)/3] ^= 1
			return b
		}()},
		{"bad magic", resealed(func(b []byte) { b[0] = 'X' })},
		{"heads do not divide hidden", resealed(func(b []byte) { le.PutUint32(b[20:], 7) })},
		{"vocabulary length", resealed(func(b []byte) { le.PutUint32(b[8:], 30521) })},
		{"tensor count", resealed(func(b []byte) { le.PutUint32(b[48:], le.Uint32(b[48:])-1) })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseModel(tc.data)
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("ParseModel: %v, want ErrCorrupt", err)
			}
		})
	}
	v3 := resealed(func(b []byte) { le.PutUint16(b[4:], 3) })
	if _, err := ParseModel(v3); err == nil || errors.Is(err, ErrCorrupt) {
		t.Errorf("version 3: %v, want a version error", err)
	}
}
