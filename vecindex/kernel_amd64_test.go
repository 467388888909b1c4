package vecindex

import (
	"slices"
	"testing"
)

// TestGloVeSameBitsWithoutSIMD: the embedder gives the same bits with the
// pure-Go inner loop as with the AVX2 one.
func TestGloVeSameBitsWithoutSIMD(t *testing.T) {
	texts := []string{benchProse, "king queen", "The database crashed at 3am; we restored it from backup."}
	simd, err := NewGloVe().Embed(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	defer func(v bool) { useAVX2Axpy = v }(useAVX2Axpy)
	useAVX2Axpy = false
	generic, err := NewGloVe().Embed(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range texts {
		if !slices.Equal(simd[i], generic[i]) {
			t.Fatalf("text %d: SIMD and generic embeddings differ", i)
		}
	}
}
