package vecindex

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// fillers produce test values for the two sides of a dot product: random,
// and the extremes where a kernel that saturates or truncates would go wrong.
var fillers = []struct {
	name string
	val  func(r *rand.Rand, side int) int8
}{
	{"random", func(r *rand.Rand, _ int) int8 { return int8(r.Uint32()) }},
	{"min*min", func(*rand.Rand, int) int8 { return -128 }},
	{"max*max", func(*rand.Rand, int) int8 { return 127 }},
	{"min*max", func(_ *rand.Rand, side int) int8 { return []int8{-128, 127}[side] }},
	{"extremes", func(r *rand.Rand, _ int) int8 {
		return []int8{-128, -127, -1, 0, 1, 126, 127}[r.IntN(7)]
	}},
}

func fill(r *rand.Rand, v []int8, side int, val func(*rand.Rand, int) int8) {
	for i := range v {
		v[i] = val(r, side)
	}
}

func naiveDot(a, b []int8) int32 {
	var s int32
	for i := range a {
		s += int32(a[i]) * int32(b[i])
	}
	return s
}

func TestDotInt8KernelsMatchGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, k := range supportedKernels() {
		for _, f := range fillers {
			t.Run(k.name+"/"+f.name, func(t *testing.T) {
				// Slices start at every offset mod 4 so unaligned loads are
				// covered; the byte after each slice is poisoned to catch
				// over-reads that change results.
				for n := 0; n <= 300; n++ {
					off := n % 4
					ab := make([]int8, n+off+1)
					bb := make([]int8, n+off+1)
					a, b := ab[off:off+n], bb[off:off+n]
					fill(r, a, 0, f.val)
					fill(r, b, 1, f.val)
					ab[off+n], bb[off+n] = 99, 99
					want := naiveDot(a, b)
					if got := dotInt8Generic(a, b); got != want {
						t.Fatalf("n=%d: generic = %d, want %d", n, got, want)
					}
					if got := k.dot(a, b); got != want {
						t.Fatalf("n=%d: %s = %d, want %d", n, k.name, got, want)
					}
				}
			})
		}
	}
}

func TestDotInt8Exact(t *testing.T) {
	// 4096 * (-128*-128) = 67108864: the largest magnitude a 4096-dim
	// vector can reach, far from saturating int16 sums.
	a := make([]int8, 4096)
	for i := range a {
		a[i] = -128
	}
	for _, k := range supportedKernels() {
		if got := k.dot(a, a); got != 4096*16384 {
			t.Errorf("%s: got %d, want %d", k.name, got, 4096*16384)
		}
	}
	if got := DotInt8(a, a); got != 4096*16384 {
		t.Errorf("DotInt8: got %d", got)
	}
}

func TestDotInt8PanicsOnLengthMismatch(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	DotInt8(make([]int8, 3), make([]int8, 4))
}

func TestDotBatchKernelsMatchGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	dims := []int{1, 7, 15, 16, 17, 32, 48, 64, 100, 112, 128, 144, 384, 1536, 4096}
	for _, k := range supportedKernels() {
		for _, f := range fillers {
			for _, dim := range dims {
				t.Run(fmt.Sprintf("%s/%s/dim=%d", k.name, f.name, dim), func(t *testing.T) {
					q := make([]int8, dim)
					for n := 0; n <= 9; n++ {
						data := make([]int8, n*dim)
						fill(r, q, 0, f.val)
						fill(r, data, 1, f.val)
						out := make([]int32, n+1)
						out[n] = 12345 // must stay untouched
						k.batch(q, data, dim, out[:n])
						for i := 0; i < n; i++ {
							if want := naiveDot(q, data[i*dim:(i+1)*dim]); out[i] != want {
								t.Fatalf("n=%d i=%d: %s = %d, want %d", n, i, k.name, out[i], want)
							}
						}
						if out[n] != 12345 {
							t.Fatalf("n=%d: wrote past out", n)
						}
					}
				})
			}
		}
	}
}

func TestDotBatchEdges(t *testing.T) {
	DotBatch(make([]int8, 16), nil, 16, nil)
	out := []int32{7, 7}
	DotBatch(nil, nil, 0, out)
	if out[0] != 0 || out[1] != 0 {
		t.Fatalf("dim 0: got %v", out)
	}
	for _, tc := range []struct {
		name      string
		q, data   int
		dim, nout int
	}{
		{"short query", 15, 32, 16, 2},
		{"short data", 16, 31, 16, 2},
		{"negative dim", 16, 32, -1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			DotBatch(make([]int8, tc.q), make([]int8, tc.data), tc.dim, make([]int32, tc.nout))
		})
	}
}

func TestKernelName(t *testing.T) {
	switch KernelName() {
	case "avx512", "avx2", "generic":
	default:
		t.Fatalf("unknown kernel %q", KernelName())
	}
	t.Logf("kernel: %s; supported: %d", KernelName(), len(supportedKernels()))
}

func FuzzDotInt8(f *testing.F) {
	f.Add([]byte{0x80, 0x80, 0x7f, 0x01}, []byte{0x80, 0x7f, 0x7f, 0xff})
	f.Fuzz(func(t *testing.T, ab, bb []byte) {
		n := min(len(ab), len(bb))
		a, b := make([]int8, n), make([]int8, n)
		for i := range n {
			a[i], b[i] = int8(ab[i]), int8(bb[i])
		}
		want := naiveDot(a, b)
		for _, k := range supportedKernels() {
			if got := k.dot(a, b); got != want {
				t.Fatalf("%s = %d, want %d", k.name, got, want)
			}
		}
	})
}

func TestAxpyKernelsMatchGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	cs := []float32{0, 1, -1, 0.0123, -3.5e-3, 1e-40 /* subnormal */, 3e38, float32(r.NormFloat64())}
	for _, k := range supportedKernels() {
		for n := 0; n <= 300; n++ {
			x := randInt8(r, n)
			if n > 0 {
				x[0], x[n-1] = -128, 127
			}
			base := make([]float32, n+1)
			for i := range base {
				base[i] = float32(r.NormFloat64())
			}
			for _, c := range cs {
				want, got := slices.Clone(base), slices.Clone(base)
				axpyInt8Generic(c, x, want[:n])
				k.axpy(c, x, got[:n])
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s: n=%d c=%v: y[%d] = %v, want %v", k.name, n, c, i, got[i], want[i])
					}
				}
			}
		}
	}
}
