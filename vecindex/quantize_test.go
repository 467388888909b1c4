package vecindex

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestStride(t *testing.T) {
	for _, tc := range []struct{ dim, want int }{{0, 0}, {1, 16}, {16, 16}, {17, 32}, {100, 112}, {1536, 1536}, {4095, 4096}} {
		if got := Stride(tc.dim); got != tc.want {
			t.Errorf("Stride(%d) = %d, want %d", tc.dim, got, tc.want)
		}
	}
}

func TestQuantize(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	for _, tc := range []struct {
		name      string
		v         []float32
		want      []int8
		wantScale float32
	}{
		{"empty", nil, nil, 0},
		{"zero", []float32{0, 0, 0}, []int8{0, 0, 0}, 0},
		{"max positive", []float32{1, 0.5, -0.25}, []int8{127, 64, -32}, 1.0 / 127},
		{"max negative", []float32{-2, 1, 0}, []int8{-127, 64, 0}, 2.0 / 127},
		{"half away from zero", []float32{127, 0.5, -0.5, 1.5, -1.5}, []int8{127, 1, -1, 2, -2}, 1},
		{"NaN", []float32{1, nan}, []int8{0, 0}, 0},
		{"Inf", []float32{1, -inf}, []int8{0, 0}, 0},
		{"subnormal", []float32{1e-45}, []int8{0}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := make([]int8, len(tc.v)+5)
			for i := range dst {
				dst[i] = 9
			}
			scale := Quantize(tc.v, dst)
			if scale != tc.wantScale {
				t.Errorf("scale = %v, want %v", scale, tc.wantScale)
			}
			for i, w := range tc.want {
				if dst[i] != w {
					t.Errorf("dst[%d] = %d, want %d", i, dst[i], w)
				}
			}
			for i := len(tc.v); i < len(dst); i++ {
				if dst[i] != 0 {
					t.Errorf("padding dst[%d] = %d, want 0", i, dst[i])
				}
			}
		})
	}
}

// TestQuantizeError: dequantized values are within half a step of the
// originals, and scores approximate the float dot product.
func TestQuantizeError(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for range 200 {
		dim := 1 + r.IntN(300)
		a, b := randUnit(r, dim), randUnit(r, dim)
		qa, qb := make([]int8, dim), make([]int8, dim)
		sa, sb := Quantize(a, qa), Quantize(b, qb)
		for i, x := range a {
			if d := math.Abs(float64(x) - float64(qa[i])*float64(sa)); d > float64(sa)/2*1.0001 {
				t.Fatalf("component %d: %v vs %d*%v", i, x, qa[i], sa)
			}
		}
		var exact float64
		for i := range a {
			exact += float64(a[i]) * float64(b[i])
		}
		if got := Score(DotInt8(qa, qb), sa, sb); math.Abs(got-exact) > 0.03 {
			t.Fatalf("dim %d: score %v, exact %v", dim, got, exact)
		}
	}
}

func TestQuantizePanicsOnShortDst(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	Quantize([]float32{1, 2}, make([]int8, 1))
}

func TestScoreOrder(t *testing.T) {
	// Score multiplies left to right in float64; the product of three
	// values is reproducible bit for bit.
	got := Score(123456789, 0.1, 0.3)
	want := float64(123456789) * float64(float32(0.1)) * float64(float32(0.3))
	if got != want {
		t.Fatalf("Score = %v, want %v", got, want)
	}
}

func randUnit(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	var n float64
	for i := range v {
		v[i] = float32(r.NormFloat64())
		n += float64(v[i]) * float64(v[i])
	}
	n = math.Sqrt(n)
	for i := range v {
		v[i] = float32(float64(v[i]) / n)
	}
	return v
}
