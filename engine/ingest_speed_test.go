package engine

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
)

// randomSpans returns spans with varied texts: prose, numbers, unicode,
// empty text.
func randomSpans(r *rand.Rand, n int) []artifact.Span {
	words := strings.Fields("The deploy deploys deployed window is Tuesday 14:00 UTC it's Café naïve 東京 👍 " +
		"runs running runner's 2024-05-01 v1.2.3 a an the of x86_64 3.14 résumé ΑΒΓ")
	spans := make([]artifact.Span, n)
	for i := range spans {
		var sb strings.Builder
		for k := r.IntN(120); k > 0; k-- {
			sb.WriteString(words[r.IntN(len(words))])
			if r.IntN(7) == 0 {
				fmt.Fprintf(&sb, " %d", r.IntN(100000))
			}
			sb.WriteString([]string{" ", ". ", "\n", ", "}[r.IntN(4)])
		}
		spans[i] = artifact.Span{ID: uuid.New(), Ordinal: uint32(i), Timestamp: r.Int64() - r.Int64(), Text: sb.String()}
	}
	return spans
}

// TestSpanTermsAndKeys: what prepare computes for the head (spanTerms,
// spanTieKeys) equals what the head computed before (countSpans,
// spanTieKey), span for span.
func TestSpanTermsAndKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for round := range 300 {
		spans := randomSpans(r, r.IntN(5))
		got, want := spanTerms(spans), countSpans(spans)
		if len(got) != len(want) {
			t.Fatalf("round %d: %d counted docs, want %d", round, len(got), len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			if g.Len != w.Len || !reflect.DeepEqual(append([]string{}, g.Terms...), append([]string{}, w.Terms...)) ||
				!reflect.DeepEqual(append([]uint32{}, g.TFs...), append([]uint32{}, w.TFs...)) {
				t.Fatalf("round %d, span %d: spanTerms %+v, countSpans %+v", round, i, g, w)
			}
		}
		keys := spanTieKeys(spans)
		for i := range spans {
			if keys[i] != spanTieKey(&spans[i]) {
				t.Fatalf("round %d, span %d: spanTieKeys %x, spanTieKey %x", round, i, keys[i], spanTieKey(&spans[i]))
			}
		}
	}
}
