package minilm

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestKernelsAgree checks every float32 kernel set this CPU runs against a
// float64 reference, for every block size.
func TestKernelsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, ks := range supportedKernels() {
		for _, n := range []int{16, 48, 384, 1536} {
			w := make([]float32, n)
			for i := range w {
				w[i] = float32(rng.NormFloat64())
			}
			x := make([]float32, maxBlock*n)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			for k := 1; k <= maxBlock; k++ {
				got := make([]float32, k)
				ks.f32[k-1](w, x[:k*n], n, got)
				for j := 0; j < k; j++ {
					var want, mag float64
					for i := range w {
						p := float64(w[i]) * float64(x[j*n+i])
						want += p
						mag += math.Abs(p)
					}
					if d := math.Abs(float64(got[j]) - want); d > 1e-5*mag {
						t.Errorf("%s n=%d K=%d row %d: got %v, want %v (diff %g)", ks.name, n, k, j, got[j], want, d)
					}
				}
			}
		}
	}
}

// randomQOp returns an int8 linear layer of rows × cols with random codes
// (including the extremes ±127 and -128) and scales, prepared for every
// kernel set.
func randomQOp(rng *rand.Rand, rows, cols int) *linearOp {
	groups := cols / groupSize
	op := &linearOp{w: matrix{rows: rows, cols: cols, q: make([]int8, rows*cols), scale: make([]float32, rows*groups)}}
	for i := range op.w.q {
		op.w.q[i] = int8(rng.IntN(256) - 128)
	}
	op.w.q[0], op.w.q[1] = -128, 127
	for i := range op.w.scale {
		op.w.scale[i] = float32(rng.ExpFloat64() * 0.01)
	}
	op.w.scale[0] = 0
	op.bias = make([]float32, rows)
	for i := range op.bias {
		op.bias[i] = float32(rng.NormFloat64())
	}
	op.inScale = randomScales(rng, cols)
	op.prepare(&active)
	return op
}

// TestQLinear checks the int8 path of every kernel set against a float64
// computation of the same quantized values (so it tests the kernels, tails
// and the quantizer's bookkeeping, not the quantization error), and the
// kernel sets against each other: the integer sums are exact, so they may
// differ only by the rounding of the float32 fold.
func TestQLinear(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, shape := range [][2]int{{16, 64}, {48, 384}, {64, 128}, {112, 192}, {1152, 384}, {384, 1536}} {
		op := randomQOp(rng, shape[0], shape[1])
		N, K := shape[0], shape[1]
		groups := K / groupSize
		for _, T := range []int{1, 2, 3, 4, 5, 7, 8, 13, 33} {
			x := make([]float32, T*K)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
				if rng.IntN(50) == 0 {
					x[i] *= 30 // outliers
				}
			}
			if T > 2 {
				clear(x[2*K : 2*K+groupSize]) // an all-zero group
			}
			var s qscratch
			want := make([]float32, T*N)
			linearWith(&genericKernels, want, x, T, op, &s)
			// float64 reference from the quantized activations
			for tt := 0; tt < T; tt++ {
				for o := 0; o < N; o++ {
					// mag bounds the float32 terms the kernels add up (the
					// codes' sum and the zero point's), which may cancel.
					var ref, mag float64
					for g := 0; g < groups; g++ {
						p := s.tp[g*T+tt]
						z := int32(0)
						if p.scale != 0 {
							z = int32(math.Round(float64(-p.nzs / p.scale)))
						}
						ws := float64(op.w.scale[o*groups+g]) * float64(p.scale)
						var sum, zsum float64
						for i := g * groupSize; i < (g+1)*groupSize; i++ {
							sum += float64(op.w.q[o*K+i]) * float64(s.a[tt*K+i])
							zsum += float64(op.w.q[o*K+i]) * float64(z)
						}
						ref += ws * (sum - zsum)
						mag += math.Abs(ws*sum) + math.Abs(ws*zsum)
					}
					ref += float64(op.bias[o])
					mag += math.Abs(ref)
					if d := math.Abs(float64(want[tt*N+o]) - ref); d > 1e-6*mag {
						t.Fatalf("go %dx%d T=%d dst[%d][%d] = %v, float64 %v (terms of magnitude %g)", N, K, T, tt, o, want[tt*N+o], ref, mag)
					}
				}
			}
			for _, ks := range supportedKernels() {
				got := make([]float32, T*N)
				linearWith(ks, got, x, T, op, &s)
				for i := range got {
					if d := math.Abs(float64(got[i] - want[i])); d > 1e-5*(1+math.Abs(float64(want[i]))) {
						t.Fatalf("%s %dx%d T=%d: dst[%d] = %v, go %v", ks.name, N, K, T, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestQuantizeActs checks the activation quantizer: every value within half
// a step of its code's value, zero exact, and every kernel set's quantizer
// giving the same codes (they compute the same float32 operations).
func TestQuantizeActs(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const T, K = 3, 192
	x := make([]float32, T*K)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * 3)
	}
	x[5] = 0
	for i := K; i < K+groupSize; i++ {
		x[i] = float32(i) // all positive: lo is 0
	}
	clear(x[2*K : 2*K+groupSize]) // all zero
	unit := make([]float32, K)
	for i := range unit {
		unit[i] = 1
	}
	a := make([]int8, T*K)
	tp := make([]qtok, T*K/groupSize)
	quantizeActs(x, T, K, unit, a, tp)
	for _, ks := range supportedKernels() {
		for _, sc := range [][]float32{unit, randomScales(rng, K)} {
			want, wantTp := make([]int8, T*K), make([]qtok, T*K/groupSize)
			quantizeActs(x, T, K, sc, want, wantTp)
			got, gotTp := make([]int8, T*K), make([]qtok, T*K/groupSize)
			ks.quant(x, T, K, sc, got, gotTp)
			if !slices.Equal(got, want) || !slices.Equal(gotTp, wantTp) {
				t.Errorf("%s quantizer differs from quantizeActs:\n%v %v\n%v %v", ks.name, got, gotTp, want, wantTp)
			}
		}
	}
	for tt := 0; tt < T; tt++ {
		for g := 0; g < K/groupSize; g++ {
			p := tp[g*T+tt]
			if p.scale == 0 {
				for i := g * groupSize; i < (g+1)*groupSize; i++ {
					if x[tt*K+i] != 0 || a[tt*K+i] != 0 {
						t.Errorf("token %d value %d: %v, code %d in a zero group", tt, i, x[tt*K+i], a[tt*K+i])
					}
				}
				continue
			}
			z := float32(math.Round(float64(-p.nzs / p.scale)))
			var sum int32
			for i := g * groupSize; i < (g+1)*groupSize; i++ {
				c := a[tt*K+i]
				sum += int32(c)
				v := p.scale * (float32(c) - z)
				if d := math.Abs(float64(v - x[tt*K+i])); d > 0.5001*float64(p.scale) {
					t.Errorf("token %d value %d: %v quantized to %v (step %v)", tt, i, x[tt*K+i], v, p.scale)
				}
			}
			if p.corr != 128*sum {
				t.Errorf("token %d group %d: corr %d, want %d", tt, g, p.corr, 128*sum)
			}
		}
	}
	if z := float32(math.Round(float64(-tp[0].nzs / tp[0].scale))); float32(a[5]) != z {
		t.Errorf("0 quantized to code %d, zero point %v", a[5], z)
	}
}

func randomScales(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(math.Exp(rng.NormFloat64()))
	}
	return s
}

// TestLinearKernelsAgree runs every kernel set on the model's own matrices
// against the pure-Go one, for token counts around the tile boundaries.
func TestLinearKernelsAgree(t *testing.T) {
	e := defaultEmbedder(t)
	for _, op := range []*linearOp{&e.enc.m.layers[0].qkv, &e.enc.m.layers[5].out} {
		for _, T := range []int{1, 3, 4, 5, 16, 17, 256} {
			x := make([]float32, T*op.w.cols)
			for i := range x {
				x[i] = float32(math.Sin(float64(i)))
			}
			var s qscratch
			want := make([]float32, T*op.w.rows)
			linearWith(&genericKernels, want, x, T, op, &s)
			for _, ks := range supportedKernels() {
				got := make([]float32, T*op.w.rows)
				linearWith(ks, got, x, T, op, &s)
				for i := range got {
					if d := math.Abs(float64(got[i] - want[i])); d > 1e-5*(1+math.Abs(float64(want[i]))) {
						t.Fatalf("%s T=%d %dx%d: dst[%d] = %v, go kernel %v", ks.name, T, op.w.rows, op.w.cols, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestLinearSplitSameBits: a product split among goroutines by its
// outputs gives every kernel set's bits of the product on one goroutine,
// for output counts that do and do not divide evenly into panels.
func TestLinearSplitSameBits(t *testing.T) {
	e := defaultEmbedder(t)
	l := &e.enc.m.layers[0]
	for _, op := range []*linearOp{&l.qkv, &l.attnOut, &l.inter, &l.out} {
		for _, T := range []int{1, 5, 17, 96} {
			x := make([]float32, T*op.w.cols)
			for i := range x {
				x[i] = float32(math.Sin(float64(i) * 0.37))
			}
			for _, ks := range supportedKernels() {
				var s qscratch
				want := make([]float32, T*op.w.rows)
				linearWith(ks, want, x, T, op, &s)
				for _, par := range []int{2, 3, 7, 40} {
					got := make([]float32, T*op.w.rows)
					c := newCrew(par)
					linearOn(ks, got, x, T, op, &s, c)
					c.close()
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s T=%d %dx%d par %d: dst[%d] = %v, on one goroutine %v", ks.name, T, op.w.rows, op.w.cols, par, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// TestEncoderKernelsAgree runs the whole encoder (linear layers, attention,
// GELU, layer norms) with each kernel set against the pure-Go one. The
// float32 steps round differently (fused multiply-adds, summation order),
// and a difference in the last bit can move an activation across a
// quantization boundary, so agreement is to a cosine of 0.9999, not 1.
func TestEncoderKernelsAgree(t *testing.T) {
	e := defaultEmbedder(t)
	saved := active
	defer func() { active = saved }()
	for _, text := range []string{
		"The quick brown fox jumps over the lazy dog, twice: once at dawn and once at dusk, near 東京.",
		"Thanks!",
		"",
	} {
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
			if c := cosine(got, want); c < 0.9999 {
				t.Errorf("%s kernels, %q: cosine %v to the pure-Go kernels", ks.name, text, c)
			}
		}
	}
}

// TestVecOpsAgree checks every kernel set's element-wise and attention
// steps against the pure-Go ones, including the softmax's padding and
// extreme inputs.
func TestVecOpsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	randv := func(n int, sd float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * sd)
		}
		return v
	}
	near := func(name string, got, want []float32, tol float64) {
		t.Helper()
		for i := range want {
			if d := math.Abs(float64(got[i] - want[i])); d > tol*(1+math.Abs(float64(want[i]))) || math.IsNaN(float64(got[i])) {
				t.Fatalf("%s[%d] = %v, go %v", name, i, got[i], want[i])
			}
		}
	}
	for _, ks := range supportedKernels() {
		x := append(randv(1536*2, 3), -30, 30, -4, 4, 0, -0.5, 1e-20, 7)
		x = append(x, randv(8, 1)...)
		want := append([]float32(nil), x...)
		gelu(want)
		got := append([]float32(nil), x...)
		ks.gelu(got)
		near(ks.name+" gelu", got, want, 1e-6)

		for _, n := range []int{1, 2, 15, 16, 17, 100, 256} {
			tp := (n + 15) &^ 15
			s := append(randv(n, 4), randv(tp-n, 100)...) // the padding holds garbage
			s[0] = 80
			want := append([]float32(nil), s...)
			softmaxPadded(want, n)
			got := append([]float32(nil), s...)
			ks.softmax(got, n)
			near(ks.name+" softmax", got, want, 2e-6)
			for i := n; i < tp; i++ {
				if got[i] != 0 {
					t.Fatalf("%s softmax n=%d: padding %d = %v", ks.name, n, i, got[i])
				}
			}
		}

		w, b := randv(384, 1), randv(384, 1)
		for _, y := range [][]float32{nil, randv(384, 5)} {
			x := randv(384, 2)
			x[99] = 40 // an outlier channel
			want := append([]float32(nil), x...)
			addLayerNorm(want, y, w, b, 1e-12)
			got := append([]float32(nil), x...)
			ks.addLayerNorm(got, y, w, b, 1e-12)
			near(ks.name+" addLayerNorm", got, want, 2e-5)
		}

		const dh, ld = 32, 1152
		for _, n := range []int{1, 3, 16, 17, 48} {
			tp := (n + 15) &^ 15
			q, kt := randv(dh, 1), randv(dh*tp, 1)
			want, got := make([]float32, tp), make([]float32, tp)
			scores(q, kt, tp, want)
			ks.scores(q, kt, tp, got)
			near(ks.name+" scores", got, want, 1e-5)
			p, v := randv(n, 1), randv(n*ld, 1)
			want, got = make([]float32, dh), make([]float32, dh)
			attnContext(p, v, ld, want)
			ks.context(p, v, ld, got)
			near(ks.name+" context", got, want, 1e-5)
		}
	}
}
