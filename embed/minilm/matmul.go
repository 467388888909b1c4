package minilm

// kernels are the encoder's inner loops on one kind of CPU:
//
//   - f32[K-1] sets out[k] = Σ w[i]·x[k*n+i] over i < n, for k < K: one
//     float32 row against K activation rows (the matrices of a float32
//     model file), K = 1 … maxBlock;
//   - q, when set, are the int8 × int8 matrix kernels (VNNI), by tile
//     height and panel width; else qAVX2, when set, the AVX2 ones by tile
//     height; else the pure-Go int8 path runs;
//   - quant, gelu, softmax and addLayerNorm are the element-wise steps
//     (quantizeActs, gelu, softmaxPadded, addLayerNorm), scores and context
//     the attention's products (scores, attnContext).
//
// The pure-Go kernels run everywhere; the AVX-512 and AVX2 ones
// (avo-generated, matmul_amd64.s) where the CPU has them
// (matmul_select_amd64.go).
type kernels struct {
	name         string
	f32          [maxBlock]func(w []float32, x []float32, n int, out []float32)
	q            *[4][3]qkernel
	qAVX2        *[4]qkernelAVX2
	quant        func(x []float32, T, K int, inScale []float32, a []int8, tp []qtok)
	gelu         func(x []float32)
	softmax      func(x []float32, n int)
	addLayerNorm func(x, y, w, b []float32, eps float32)
	scores       func(q, kt []float32, ldk int, out []float32)
	context      func(p, v []float32, ldv int, out []float32)
}

// maxBlock is the largest number of rows a float32 kernel takes at once: 16
// accumulators plus the row fit AVX-512's 32 registers.
const maxBlock = 16

var genericKernels = func() kernels {
	ks := kernels{name: "go", quant: quantizeActs, gelu: gelu, softmax: softmaxPadded, addLayerNorm: addLayerNorm,
		scores: scores, context: attnContext}
	for i := range ks.f32 {
		ks.f32[i] = dotRowsF32Go
	}
	return ks
}()

// active is the best kernel set this CPU runs (see matmul_select_*.go).
var active = bestKernels()

// KernelName says which kernels run: "avx512-vnni", "avx512-avx2",
// "avx512", "avx2" or "go".
func KernelName() string { return active.name }

// linear computes dst = op(x) for T tokens: x is T × in, dst T × out, both
// row-major. s is room for the quantized activations.
func linear(dst, x []float32, T int, op *linearOp, s *qscratch, c *crew) {
	linearOn(&active, dst, x, T, op, s, c)
}

// qscratch is the reusable room of one linear layer's quantized input.
type qscratch struct {
	a   []int8
	a16 []int16 // AVX2 path: a widened
	tp  []qtok
	xs  []float32 // float32 path: the input times inScale
}

func (s *qscratch) size(T, K int) {
	if cap(s.a) < T*K {
		s.a = make([]int8, T*K)
		s.tp = make([]qtok, T*K/groupSize+1)
	}
}

// linearWith is linear with the kernel set ks: an int8 matrix on the best
// int8 kernels ks has (VNNI, else AVX2, else Go), a float32 one on ks.f32.
func linearWith(ks *kernels, dst, x []float32, T int, op *linearOp, s *qscratch) {
	linearOn(ks, dst, x, T, op, s, nil)
}

// linearOn is linearWith with the outputs split among the goroutines of
// c (nil: this one alone): every output is computed as linearWith
// computes it, so the bits do not depend on the crew.
func linearOn(ks *kernels, dst, x []float32, T int, op *linearOp, s *qscratch, c *crew) {
	in, out := op.w.cols, op.w.rows
	x = x[:T*in]
	dst = dst[:T*out]
	if op.w.f == nil {
		s.size(T, in)
		a, tp := s.a[:T*in], s.tp[:T*in/groupSize]
		ks.quant(x, T, in, op.inScale, a, tp)
		if ks.q != nil {
			if pk := op.vnniPanels(); pk != nil {
				c.run((out+panelRows-1)/panelRows, func(_, lo, hi int) {
					qlinearVNNI(ks.q, dst, a, tp, T, op, pk, lo, hi)
				})
				return
			}
		}
		if ks.qAVX2 != nil {
			if pk := op.avx2Panels(); pk != nil {
				if cap(s.a16) < T*in {
					s.a16 = make([]int16, T*in)
				}
				widenCodes(a, s.a16[:T*in])
				c.run(out/8, func(_, lo, hi int) {
					qlinearAVX2(ks.qAVX2, dst, s.a16, tp, T, op, pk, lo, hi)
				})
				return
			}
		}
		c.run(out, func(_, lo, hi int) { qlinearGo(dst, a, tp, T, op, lo, hi) })
		return
	}
	if !op.unitScale {
		if cap(s.xs) < T*in {
			s.xs = make([]float32, T*in)
		}
		xs := s.xs[:T*in]
		for i, v := range x {
			xs[i] = v * op.inScale[i%in]
		}
		x = xs
	}
	c.run(out, func(_, lo, hi int) { linearF32(ks, dst, x, T, &op.w, op.bias, lo, hi) })
}

// linearF32 is linear for a float32 matrix: tokens in blocks of up to
// maxBlock, split evenly (20 tokens run as 10 + 10), each weight row applied
// to a whole block at once so that it is read once per block.
func linearF32(ks *kernels, dst, x []float32, T int, w *matrix, bias []float32, lo, hi int) {
	in, out := w.cols, w.rows
	if in%16 != 0 {
		ks = &genericKernels
	}
	var acc [maxBlock]float32
	blocks := (T + maxBlock - 1) / maxBlock
	for t := 0; t < T; {
		k := (T - t + blocks - 1) / blocks
		blocks--
		xb := x[t*in : (t+k)*in]
		for o := lo; o < hi; o++ {
			ks.f32[k-1](w.f[o*in:(o+1)*in], xb, in, acc[:k])
			b := bias[o]
			for j := 0; j < k; j++ {
				dst[(t+j)*out+o] = acc[j] + b
			}
		}
		t += k
	}
}

// dotRowsF32Go is the pure-Go float32 kernel.
func dotRowsF32Go(w []float32, x []float32, n int, out []float32) {
	for j := range out {
		out[j] = dotF32(w[:n], x[j*n:(j+1)*n])
	}
}
