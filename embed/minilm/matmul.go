package minilm

// kernels computes the encoder's hot loop: out[k] = Σ float32(w[i])·x[k*n+i]
// over i < n, for k < K, the dot products of one quantized weight row with
// K activation rows. Index K-1 of each array holds the kernel for K rows,
// K = 1 … maxBlock. The pure-Go kernels run everywhere; the AVX-512 ones (avo-generated,
// matmul_amd64.s) where the CPU has AVX512F, and only for n a multiple of 16.
type kernels struct {
	name string
	i8   [maxBlock]func(w []int8, x []float32, n int, out []float32)
	i16  [maxBlock]func(w []int16, x []float32, n int, out []float32)
	f32  [maxBlock]func(w []float32, x []float32, n int, out []float32)
}

// maxBlock is the largest number of tokens a kernel takes at once: 16
// accumulators plus the codes fit AVX-512's 32 registers, and a query of up
// to 16 tokens reads each weight row once.
const maxBlock = 16

var genericKernels = func() kernels {
	ks := kernels{name: "go"}
	for i := range ks.i8 {
		ks.i8[i], ks.i16[i], ks.f32[i] = dotRowsGo[int8], dotRowsGo[int16], dotRowsF32Go
	}
	return ks
}()

// active is the best kernel set this CPU runs (see matmul_select_*.go).
var active = bestKernels()

// KernelName says which matmul kernels run: "avx512" or "go".
func KernelName() string { return active.name }

// linear computes dst = x · wᵀ + bias for T tokens: x is T × w.cols,
// dst is T × w.rows, both row-major. It is the encoder's hot loop (over 95%
// of its multiply-adds). Tokens are taken in blocks of 8 (then 4, then 1)
// Tokens are taken in blocks of up to maxBlock, split evenly (20 tokens run
// as 10 + 10), and each weight row is applied to a whole block at once, so
// a row's codes are read and converted once per block while the block's
// activations stay in cache.
func linear(dst, x []float32, T int, w *matrix, bias []float32) {
	linearWith(&active, dst, x, T, w, bias)
}

func linearWith(ks *kernels, dst, x []float32, T int, w *matrix, bias []float32) {
	in, out := w.cols, w.rows
	x = x[:T*in]
	dst = dst[:T*out]
	if in%16 != 0 {
		ks = &genericKernels
	}
	var acc [maxBlock]float32
	blocks := (T + maxBlock - 1) / maxBlock
	for t := 0; t < T; {
		k := (T - t + blocks - 1) / blocks
		blocks--
		bi := k - 1
		xb := x[t*in : (t+k)*in]
		for o := 0; o < out; o++ {
			switch {
			case w.q != nil:
				ks.i8[bi](w.q[o*in:(o+1)*in], xb, in, acc[:k])
			case w.q16 != nil:
				ks.i16[bi](w.q16[o*in:(o+1)*in], xb, in, acc[:k])
			default:
				ks.f32[bi](w.f[o*in:(o+1)*in], xb, in, acc[:k])
			}
			s, b := float32(1), bias[o]
			if w.f == nil {
				s = w.scale[o]
			}
			for j := 0; j < k; j++ {
				dst[(t+j)*out+o] = acc[j]*s + b
			}
		}
		t += k
	}
}

// dotRowsGo is the pure-Go kernel: four activation rows per pass over w,
// then one at a time.
func dotRowsGo[Q int8 | int16](w []Q, x []float32, n int, out []float32) {
	k := len(out)
	j := 0
	for ; j+4 <= k; j += 4 {
		out[j], out[j+1], out[j+2], out[j+3] = dot4I(w, x[j*n:(j+4)*n], n)
	}
	for ; j < k; j++ {
		out[j] = dotI(w[:n], x[j*n:(j+1)*n])
	}
}

// dotRowsF32Go is the pure-Go kernel for a float32 row.
func dotRowsF32Go(w []float32, x []float32, n int, out []float32) {
	for j := range out {
		out[j] = dotF32(w[:n], x[j*n:(j+1)*n])
	}
}

// dotRowsBlocked sets out[j] = w[:n]·x[j*n:(j+1)*n] for every j < len(out),
// in kernel calls of up to maxBlock rows.
func dotRowsBlocked(ks *kernels, w, x []float32, n int, out []float32) {
	if n%16 != 0 {
		ks = &genericKernels
	}
	for j := 0; j < len(out); j += maxBlock {
		k := min(maxBlock, len(out)-j)
		ks.f32[k-1](w, x[j*n:(j+k)*n], n, out[j:j+k])
	}
}

// dot4I returns the dot products of the integer row w with four
// consecutive float32 rows of length n in x.
func dot4I[Q int8 | int16](w []Q, x []float32, n int) (a0, a1, a2, a3 float32) {
	x0, x1, x2, x3 := x[:n], x[n:2*n], x[2*n:3*n], x[3*n:4*n]
	w = w[:n]
	for i, q := range w {
		f := float32(q)
		a0 += x0[i] * f
		a1 += x1[i] * f
		a2 += x2[i] * f
		a3 += x3[i] * f
	}
	return
}

// dotI returns the dot product of the integer row w and the float32 row x.
func dotI[Q int8 | int16](w []Q, x []float32) float32 {
	x = x[:len(w)]
	var s0, s1 float32
	i := 0
	for ; i+2 <= len(w); i += 2 {
		s0 += x[i] * float32(w[i])
		s1 += x[i+1] * float32(w[i+1])
	}
	for ; i < len(w); i++ {
		s0 += x[i] * float32(w[i])
	}
	return s0 + s1
}
