package vecindex_test

import (
	"context"
	"fmt"

	"github.com/loci-memory/loci/embed/glove"
	"github.com/loci-memory/loci/vecindex"
)

// Embed texts with the offline GloVe embedder, store them quantized in the
// head's MemVectors and a segment's SegVectors, and search both at once.
func Example() {
	g := glove.New()
	texts := []string{
		"The database migration failed and the rollback corrupted two tables.",
		"Buy milk, bread and eggs on the way home.",
		"The striker scored twice in the second half.",
		"Our backup restored the lost customer records.",
	}
	vecs, err := g.Embed(context.Background(), texts)
	if err != nil {
		panic(err)
	}
	head := vecindex.NewMemVectors(g.Model(), g.Dim())
	older := vecindex.NewMemVectors(g.Model(), g.Dim())
	q8 := make([]int8, g.Dim())
	for i, v := range vecs {
		scale := vecindex.Quantize(v, q8)
		key := [16]byte{byte(i)}
		if i < 2 {
			older.Add(key, q8, scale)
		} else {
			head.Add(key, q8, scale)
		}
	}
	// The older documents live in a segment: encode, then read in place.
	seg, err := vecindex.OpenSegVectors(older.Section())
	if err != nil {
		panic(err)
	}

	qv, _ := g.Embed(context.Background(), []string{"database crash data loss"})
	qs := vecindex.Quantize(qv[0], q8)
	for _, h := range vecindex.Search([]vecindex.Part{seg, head}, q8, qs, 2) {
		fmt.Println(texts[h.Key[0]])
	}
	// Output:
	// The database migration failed and the rollback corrupted two tables.
	// Our backup restored the lost customer records.
}
