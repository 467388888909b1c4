package bench

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestTrainIVFDeterministic: the same vectors, list count, iterations and
// seed give bit-identical centroids (what lets a centroid file be
// reproduced), unit length, and another seed gives others.
func TestTrainIVFDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vecs := make([][]float32, 600)
	for i := range vecs {
		v := make([]float32, 24)
		n := 0.0
		for j := range v {
			x := r.NormFloat64() + float64(i%5)*float64(j%3) // a few clusters
			v[j], n = float32(x), n+x*x
		}
		for j := range v {
			v[j] /= float32(math.Sqrt(n))
		}
		vecs[i] = v
	}
	quiet := func(string) {}
	a := TrainIVF(vecs, 8, 5, 7, quiet)
	b := TrainIVF(vecs, 8, 5, 7, quiet)
	c := TrainIVF(vecs, 8, 5, 8, quiet)
	same := func(x, y [][]float32) bool {
		for i := range x {
			for j := range x[i] {
				if math.Float32bits(x[i][j]) != math.Float32bits(y[i][j]) {
					return false
				}
			}
		}
		return true
	}
	if len(a) != 8 || !same(a, b) {
		t.Fatal("two trainings on the same inputs differ")
	}
	if same(a, c) {
		t.Error("another seed gave the same centroids")
	}
	for i, v := range a {
		if n := dot64(v, v); math.Abs(n-1) > 1e-5 {
			t.Errorf("centroid %d has squared norm %v", i, n)
		}
	}
}
