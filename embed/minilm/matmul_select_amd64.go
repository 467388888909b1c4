package minilm

import (
	"math"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// avx512Kernels are the avo-generated float32 and element-wise kernels of
// matmul_amd64.s, with the pure-Go int8 matrix path.
var avx512Kernels = kernels{
	name:         "avx512",
	quant:        quantizeWith(quantGroupsAVX512),
	gelu:         geluWith(geluAVX512, 16),
	softmax:      softmaxVec,
	addLayerNorm: addLayerNormWith(addLayerNormAVX512, 16),
	scores:       scoresVec,
	context:      contextVec,
	f32: [maxBlock]func([]float32, []float32, int, []float32){
		dotRows1F32AVX512, dotRows2F32AVX512, dotRows3F32AVX512, dotRows4F32AVX512,
		dotRows5F32AVX512, dotRows6F32AVX512, dotRows7F32AVX512, dotRows8F32AVX512,
		dotRows9F32AVX512, dotRows10F32AVX512, dotRows11F32AVX512, dotRows12F32AVX512,
		dotRows13F32AVX512, dotRows14F32AVX512, dotRows15F32AVX512, dotRows16F32AVX512,
	},
}

// vnniQKernels are the int8 × int8 kernels, by tile height and panel width.
var vnniQKernels = [4][3]qkernel{
	{qgemm1x1VNNI, qgemm1x2VNNI, qgemm1x3VNNI},
	{qgemm2x1VNNI, qgemm2x2VNNI, qgemm2x3VNNI},
	{qgemm3x1VNNI, qgemm3x2VNNI, qgemm3x3VNNI},
	{qgemm4x1VNNI, qgemm4x2VNNI, qgemm4x3VNNI},
}

// avx2QKernels are the AVX2 int8 kernels, by tile height.
var avx2QKernels = [4]qkernelAVX2{qgemm1x8AVX2, qgemm2x8AVX2, qgemm3x8AVX2, qgemm4x8AVX2}

// avx2Kernels are for CPUs with AVX2 and FMA but no AVX-512: the AVX2 int8
// matrix kernels and element-wise steps (the float32 matrices in Go). The
// element-wise steps give the pure-Go functions' bits (see
// internal/asmgen/vecops_avx2.go), so the AVX2 encoder's output is that of
// the AVX2 int8 kernels with the pure-Go steps.
var avx2Kernels = func() kernels {
	ks := genericKernels
	ks.name = "avx2"
	ks.qAVX2 = &avx2QKernels
	ks.quant = quantizeWith(quantGroupsAVX2)
	ks.gelu = geluWith(geluAVX2, 8)
	ks.softmax = softmaxAVX2Vec
	ks.scores = scoresAVX2Vec
	ks.context = contextAVX2Vec
	ks.addLayerNorm = addLayerNormWith(addLayerNormAVX2, 8)
	return ks
}()

// avx512VNNIKernels adds the VNNI int8 kernels.
var avx512VNNIKernels = func() kernels {
	ks := avx512Kernels
	ks.name = "avx512-vnni"
	ks.q = &vnniQKernels
	return ks
}()

// supportedKernels lists the kernel sets this CPU runs, best first.
// x/sys/cpu reports AVX and AVX-512 only when the OS saves the YMM and ZMM
// state too. The AVX-512 kernels need AVX512F, AVX512VL and AVX512DQ (the
// EVEX VXORPS), the int8 ones also AVX512VNNI; without VNNI, the AVX2 int8
// kernels serve (AVX2 and FMA).
func supportedKernels() []*kernels {
	var ks []*kernels
	avx2 := cpu.X86.HasAVX2 && cpu.X86.HasFMA
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512DQ {
		if cpu.X86.HasAVX512VNNI {
			ks = append(ks, &avx512VNNIKernels)
		}
		if avx2 {
			ks = append(ks, &avx512AVX2Kernels)
		}
		ks = append(ks, &avx512Kernels)
	}
	if avx2 {
		ks = append(ks, &avx2Kernels)
	}
	return append(ks, &genericKernels)
}

// avx512AVX2Kernels are for AVX-512 CPUs without VNNI: the AVX-512 float32
// and element-wise kernels with the AVX2 int8 ones.
var avx512AVX2Kernels = func() kernels {
	ks := avx512Kernels
	ks.name = "avx512-avx2"
	ks.qAVX2 = &avx2QKernels
	return ks
}()

func bestKernels() kernels { return *supportedKernels()[0] }

// softmaxVec is softmaxPadded: the padding set to -Inf comes out as 0.
func softmaxVec(x []float32, n int) {
	if len(x)%16 != 0 || n == 0 {
		softmaxPadded(x, n)
		return
	}
	for i := n; i < len(x); i++ {
		x[i] = float32(math.Inf(-1))
	}
	softmaxAVX512(&x[0], len(x))
}

// scoresVec is scores for a multiple of 16 outputs and a head size that is a
// multiple of 4.
func scoresVec(q, kt []float32, ldk int, out []float32) {
	n, dh := len(out), len(q)
	if n%16 != 0 || n == 0 || dh%4 != 0 || dh == 0 {
		scores(q, kt, ldk, out)
		return
	}
	_ = kt[(dh-1)*ldk+n-1]
	scoresAVX512(&q[0], &kt[0], ldk, n, dh, &out[0])
}

// contextVec is attnContext for a head size that is a multiple of 16.
func contextVec(p, v []float32, ldv int, out []float32) {
	n, dh := len(p), len(out)
	if dh%16 != 0 || dh == 0 || n == 0 {
		attnContext(p, v, ldv, out)
		return
	}
	_ = v[(n-1)*ldv+dh-1]
	contextAVX512(&p[0], &v[0], ldv, n, dh, &out[0])
}

// softmaxAVX2Vec is softmaxPadded with the exponentials and the scaling 8
// at a time, the tail past a multiple of 8 in Go. The kernel runs
// math.Exp's normal path only, so inputs with a non-finite value or a
// spread beyond 708 (far outside what attention scores do) take the pure-Go
// path.
func softmaxAVX2Vec(x []float32, n int) {
	m := n &^ 7
	if m == 0 {
		softmaxPadded(x, n)
		return
	}
	lo, mx, finite := rangeAVX2(&x[0], m)
	for _, v := range x[m:n] {
		lo, mx = min(lo, v), max(mx, v)
		finite = finite && !math.IsInf(float64(v), 0) && v == v
	}
	// lo - mx is the least x[i] - mx (rounding is monotonic).
	if !finite || float64(lo-mx) < -708 {
		softmaxPadded(x, n)
		return
	}
	sum := expSumAVX2(&x[0], m, mx)
	for i := m; i < n; i++ {
		ev := math.Exp(float64(x[i] - mx))
		x[i] = float32(ev)
		sum += ev
	}
	inv := float32(1 / sum)
	scaleAVX2(&x[0], m, inv)
	for i := m; i < n; i++ {
		x[i] *= inv
	}
	clear(x[n:])
}

// scoresAVX2Vec is scores for a multiple of 8 outputs.
func scoresAVX2Vec(q, kt []float32, ldk int, out []float32) {
	n, dh := len(out), len(q)
	if n%8 != 0 || n == 0 || dh == 0 {
		scores(q, kt, ldk, out)
		return
	}
	_ = kt[(dh-1)*ldk+n-1]
	vecMatAVX2(&q[0], &kt[0], ldk, dh, n, &out[0])
}

// contextAVX2Vec is attnContext for a head size that is a multiple of 8:
// the same product as scores.
func contextAVX2Vec(p, v []float32, ldv int, out []float32) {
	scoresAVX2Vec(p, v, ldv, out)
}

// widenCodes sets a16[i] = int16(a[i]), 16 at a time (len(a) is a multiple
// of 64), for the AVX2 int8 kernels.
func widenCodes(a []int8, a16 []int16) {
	if len(a) == 0 {
		return
	}
	_ = a16[len(a)-1]
	widenAVX2(&a[0], &a16[0], len(a))
}

// quantizeWith returns quantizeActs on a kernel that quantizes one token's
// groups (quantGroupsAVX512, quantGroupsAVX2), called once per token.
func quantizeWith(k func(x *float32, scale *float32, groups int, a *int8, tp *int32, tps int)) func([]float32, int, int, []float32, []int8, []qtok) {
	return func(x []float32, T, K int, inScale []float32, a []int8, tp []qtok) {
		_, _, _ = x[T*K-1], inScale[K-1], a[T*K-1]
		_ = tp[K/groupSize*T-1]
		for t := 0; t < T; t++ {
			k(&x[t*K], &inScale[0], K/groupSize, &a[t*K], (*int32)(unsafe.Pointer(&tp[t])), T*int(unsafe.Sizeof(qtok{})))
		}
	}
}

// geluWith returns gelu on a kernel that takes a multiple of width values,
// the tail (if any) in Go.
func geluWith(k func(x *float32, n int), width int) func([]float32) {
	return func(x []float32) {
		n := len(x) / width * width
		if n > 0 {
			k(&x[0], n)
		}
		gelu(x[n:])
	}
}

// addLayerNormWith returns addLayerNorm on a kernel for rows of a multiple
// of width values (other rows in Go).
func addLayerNormWith(k func(x, y, w, b *float32, n int, eps float32), width int) func(x, y, w, b []float32, eps float32) {
	return func(x, y, w, b []float32, eps float32) {
		n := len(x)
		if n%width != 0 || n == 0 {
			addLayerNorm(x, y, w, b, eps)
			return
		}
		_, _ = w[n-1], b[n-1]
		var yp *float32
		if y != nil {
			yp = &y[:n][0]
		}
		k(&x[0], yp, &w[0], &b[0], n, eps)
	}
}
