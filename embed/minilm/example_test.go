package minilm_test

import (
	"context"
	"fmt"

	"github.com/loci-memory/loci/embed/minilm"
)

func Example() {
	e, err := minilm.Default()
	if err != nil {
		panic(err)
	}
	vs, err := e.Embed(context.Background(), []string{"Where is the meeting?", "The meeting is in room 4."})
	if err != nil {
		panic(err)
	}
	var cos float32
	for i := range vs[0] {
		cos += vs[0][i] * vs[1][i]
	}
	fmt.Println(e.Model(), e.Dim(), e.Tokenizer().Encode("Where is the meeting?"), cos > 0.5)
	// Output: all-minilm-l6-v2-w8a8 384 [101 2073 2003 1996 3116 1029 102] true
}
