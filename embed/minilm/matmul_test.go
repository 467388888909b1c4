package minilm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestKernelsAgree checks every kernel set this CPU runs (the AVX-512 one
// on such machines) against a float64 reference, for every block size and
// both code widths, including extreme codes.
func TestKernelsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, ks := range supportedKernels() {
		for _, n := range []int{16, 48, 384, 1536} {
			w8 := make([]int8, n)
			w16 := make([]int16, n)
			w32 := make([]float32, n)
			for i := range w8 {
				w8[i] = int8(rng.IntN(256) - 128)
				w16[i] = int16(rng.IntN(65536) - 32768)
				w32[i] = float32(rng.NormFloat64())
			}
			w8[0], w16[0] = -128, -32768
			x := make([]float32, maxBlock*n)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			for k := 1; k <= maxBlock; k++ {
				got8 := make([]float32, k)
				got16 := make([]float32, k)
				got32 := make([]float32, k)
				ks.i8[k-1](w8, x[:k*n], n, got8)
				ks.i16[k-1](w16, x[:k*n], n, got16)
				ks.f32[k-1](w32, x[:k*n], n, got32)
				for j := 0; j < k; j++ {
					want, mag := refDot(w8, x[j*n:(j+1)*n])
					checkClose(t, ks.name, "int8", n, k, j, got8[j], want, mag)
					want, mag = refDot(w16, x[j*n:(j+1)*n])
					checkClose(t, ks.name, "int16", n, k, j, got16[j], want, mag)
					want, mag = refDot(w32, x[j*n:(j+1)*n])
					checkClose(t, ks.name, "float32", n, k, j, got32[j], want, mag)
				}
			}
		}
	}
}

func refDot[Q int8 | int16 | float32](w []Q, x []float32) (s, mag float64) {
	for i := range w {
		p := float64(w[i]) * float64(x[i])
		s += p
		mag += math.Abs(p)
	}
	return s, mag
}

// checkClose allows float32 rounding: a relative error of 1e-5 of the sum
// of the products' magnitudes.
func checkClose(t *testing.T, kernel, width string, n, k, j int, got float32, want, mag float64) {
	t.Helper()
	if d := math.Abs(float64(got) - want); d > 1e-5*mag {
		t.Errorf("%s %s n=%d K=%d row %d: got %v, want %v (diff %g)", kernel, width, n, k, j, got, want, d)
	}
}

// TestLinearKernelsAgree checks linear, which splits tokens into blocks,
// with every kernel set against the pure-Go one on one model matrix for
// token counts around the block boundaries.
func TestLinearKernelsAgree(t *testing.T) {
	e := defaultEmbedder(t)
	for _, w := range []*matrix{&e.enc.m.layers[0].inter, &e.enc.m.layers[5].out} {
		bias := make([]float32, w.rows)
		for _, T := range []int{1, 3, 15, 16, 17, 33, 256} {
			x := make([]float32, T*w.cols)
			for i := range x {
				x[i] = float32(math.Sin(float64(i)))
			}
			want := make([]float32, T*w.rows)
			linearWith(&genericKernels, want, x, T, w, bias)
			for _, ks := range supportedKernels() {
				got := make([]float32, T*w.rows)
				linearWith(ks, got, x, T, w, bias)
				for i := range got {
					if d := math.Abs(float64(got[i] - want[i])); d > 1e-4*(1+math.Abs(float64(want[i]))) {
						t.Fatalf("%s T=%d %dx%d: dst[%d] = %v, go kernel %v", ks.name, T, w.rows, w.cols, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestEncoderKernelsAgree runs the whole encoder (linear layers and
// attention) with each kernel set against the pure-Go one.
func TestEncoderKernelsAgree(t *testing.T) {
	e := defaultEmbedder(t)
	saved := active
	defer func() { active = saved }()
	text := "The quick brown fox jumps over the lazy dog, twice: once at dawn and once at dusk, near 東京."
	active = genericKernels
	want := make([]float32, e.Dim())
	if err := e.EmbedOne(text, want); err != nil {
		t.Fatal(err)
	}
	for _, ks := range supportedKernels() {
		active = *ks
		got := make([]float32, e.Dim())
		if err := e.EmbedOne(text, got); err != nil {
			t.Fatal(err)
		}
		if c := cosine(got, want); c < 0.99999 {
			t.Errorf("%s kernels: cosine %v to the pure-Go kernels", ks.name, c)
		}
	}
}
