package vecindex

import (
	"math/rand/v2"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
)

// TestSearchAllowedMatchesReference: SearchAllowed over random parts and
// random allowed subsets (some parts unrestricted, some allowing nothing,
// bitmaps reaching past a part's end) gives, hit for hit and bit for bit,
// the flat reference scan of the allowed documents alone.
func TestSearchAllowedMatchesReference(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 300
	params.Rng.Seed(20261124)
	props := gopter.NewProperties(params)
	props.Property("a filtered search is the search of the allowed documents", prop.ForAll(
		func(seed uint64, dim, n, k, nparts int, ties bool, keep int) bool {
			r := rand.New(rand.NewPCG(seed, 7))
			var d testDocs
			if ties {
				d = tieDocs(r, n, dim)
			} else {
				d = randDocs(r, n, dim)
			}
			q := make([]int8, dim)
			qs := Quantize(randUnit(r, dim), q)
			parts, firsts := split(t, r, d, dim, nparts)
			allow := make([]*roaring.Bitmap, len(parts))
			var kept testDocs
			var global []int // kept's document i is d's document global[i]
			for pi, p := range parts {
				open := r.IntN(4) == 0
				if !open {
					allow[pi] = roaring.New()
					allow[pi].Add(uint32(p.NumDocs() + r.IntN(3))) // past the end: ignored
				}
				for doc := range p.NumDocs() {
					if !open && r.IntN(100) >= keep {
						continue
					}
					if !open {
						allow[pi].Add(uint32(doc))
					}
					g := firsts[pi] + doc
					kept.keys, kept.vecs, kept.scales = append(kept.keys, d.keys[g]), append(kept.vecs, d.vecs[g]), append(kept.scales, d.scales[g])
					global = append(global, g)
				}
			}
			want := refSearch(kept, q, qs, k)
			for i := range want {
				want[i].Doc = uint32(global[want[i].Doc])
			}
			return sameHits(t, SearchAllowed(parts, allow, q, qs, k), want, firsts)
		},
		gen.UInt64(), gen.IntRange(1, 70), gen.IntRange(0, 3000), gen.IntRange(1, 40), gen.IntRange(1, 6), gen.Bool(), gen.IntRange(0, 100),
	))
	props.TestingRun(t)
}
