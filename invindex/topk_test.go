package invindex

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTopKProperty: offered hits in random order, with scores from a few
// values (so that most tie) and keys from a few values (so that keys tie
// too), topK returns exactly the k best of all offered by score, key, part
// and doc, however many were tied at the k-th score and whenever they came.
func TestTopKProperty(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 77))
		np := 1 + r.IntN(3)
		var parts []Part
		var all []entry
		for p := range np {
			m := NewMemIndex()
			for d := range 1 + r.IntN(200) {
				var key [16]byte
				key[0] = byte(r.IntN(4)) // few distinct keys: ties on key too
				m.Add(key, []string{"x"})
				all = append(all, entry{score: float64(r.IntN(1 + r.IntN(6))), part: int32(p), doc: uint32(d), key: key})
			}
			parts = append(parts, m)
		}
		r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		k := 1 + r.IntN(len(all)+10)
		var top topK
		top.reset(k, parts)
		for _, e := range all {
			top.offer(e.score, int(e.part), e.doc)
		}
		got := top.hits()
		want := slices.Clone(all)
		slices.SortFunc(want, compareEntries)
		want = want[:min(k, len(want))]
		if len(got) != len(want) {
			t.Fatalf("seed %d k %d: %d hits, want %d", seed, k, len(got), len(want))
		}
		for i := range want {
			w := Hit{Part: int(want[i].part), Doc: want[i].doc, Score: want[i].score, Key: want[i].key}
			if got[i] != w {
				t.Fatalf("seed %d k %d: hit %d is %+v, want %+v", seed, k, i, got[i], w)
			}
		}
	}
}

// TestTopKTiesReadNoKeys: hits tied below the final k-th score are dropped
// without their keys being read.
func TestTopKTiesReadNoKeys(t *testing.T) {
	m := NewMemIndex()
	for range 100 {
		m.Add([16]byte{1}, []string{"x"})
	}
	counter := &keyCounter{Part: m}
	var top topK
	top.reset(10, []Part{counter})
	for d := range 90 {
		top.offer(1, 0, uint32(d)) // 80 tie at score 1
	}
	for d := 90; d < 100; d++ {
		top.offer(2, 0, uint32(d))
	}
	hits := top.hits()
	if len(hits) != 10 || hits[0].Score != 2 || hits[9].Score != 2 {
		t.Fatalf("hits %v", hits)
	}
	if counter.reads != 10 {
		t.Fatalf("%d keys read, want the 10 returned", counter.reads)
	}
}

type keyCounter struct {
	Part
	reads int
}

func (k *keyCounter) Key(doc uint32) [16]byte { k.reads++; return k.Part.Key(doc) }
