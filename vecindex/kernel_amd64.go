package vecindex

import "golang.org/x/sys/cpu"

// On amd64 the kernels are the avo-generated AVX-512 and AVX2 functions of
// dot_amd64.s (axpy has only an AVX2 version: at 100 values a row, wider
// registers would not pay). x/sys/cpu reports AVX2 and AVX-512 only when the OS saves the
// wider register state too. AVX-512 needs AVX512F (the ZMM folds) and
// AVX512BW (VPMOVSXBW and VPMADDWD on ZMM).
var (
	avx2Kernel   = kernel{name: "avx2", dot: dotAVX2Go, batch: dotBatchAVX2Go, axpy: axpyInt8AVX2Go, sketch: sketchBatchAVX2, gather: dotGatherAVX2Go}
	avx512Kernel = kernel{name: "avx512", dot: dotAVX512Go, batch: dotBatchAVX512Go, axpy: axpyInt8AVX2Go, sketch: sketchBatchAVX512, gather: dotGatherAVX512Go}
)

func hasAVX2() bool   { return cpu.X86.HasAVX2 }
func hasAVX512() bool { return cpu.X86.HasAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW }

// supportedKernels lists the kernels this CPU can run, best first.
func supportedKernels() []kernel {
	var ks []kernel
	if hasAVX512() {
		ks = append(ks, avx512Kernel)
	}
	if hasAVX2() {
		ks = append(ks, avx2Kernel)
	}
	return append(ks, genericKernel)
}

func bestKernel() kernel { return supportedKernels()[0] }

// dotAVX2Go runs dotAVX2 on the whole 16-byte chunks and the generic kernel
// on the tail.
func dotAVX2Go(a, b []int8) int32 {
	n := len(a) &^ 15
	var s int32
	if n > 0 {
		s = dotAVX2(a[:n], b[:n])
	}
	if n < len(a) {
		s += dotInt8Generic(a[n:], b[n:])
	}
	return s
}

func dotAVX512Go(a, b []int8) int32 {
	n := len(a) &^ 15
	var s int32
	if n > 0 {
		s = dotAVX512(a[:n], b[:n])
	}
	if n < len(a) {
		s += dotInt8Generic(a[n:], b[n:])
	}
	return s
}

func dotBatchAVX2Go(q, data []int8, dim int, out []int32) {
	if dim%16 != 0 {
		for i := range out {
			out[i] = dotAVX2Go(q, data[i*dim:(i+1)*dim])
		}
		return
	}
	dotBatchAVX2(q, data, dim, out)
}

func dotBatchAVX512Go(q, data []int8, dim int, out []int32) {
	if dim%16 != 0 {
		for i := range out {
			out[i] = dotAVX512Go(q, data[i*dim:(i+1)*dim])
		}
		return
	}
	dotBatchAVX512(q, data, dim, out)
}

// dotGatherAVX2Go checks what the kernel cannot afford to: every listed row
// lies in data (a bad index would read out of bounds).
func dotGatherAVX2Go(q, data []int8, dim int, idx, out []int32) {
	if dim%16 != 0 || !gatherInBounds(data, dim, idx[:len(out)]) {
		dotGatherGeneric(q, data, dim, idx, out)
		return
	}
	dotGatherAVX2(q, data, dim, idx, out)
}

func dotGatherAVX512Go(q, data []int8, dim int, idx, out []int32) {
	if dim%16 != 0 || !gatherInBounds(data, dim, idx[:len(out)]) {
		dotGatherGeneric(q, data, dim, idx, out)
		return
	}
	dotGatherAVX512(q, data, dim, idx, out)
}

// gatherInBounds reports whether every row idx lists lies in data; the
// generic kernel then panics on the bad index, as a slice access should.
func gatherInBounds(data []int8, dim int, idx []int32) bool {
	rows := len(data) / dim
	for _, i := range idx {
		if uint32(i) >= uint32(rows) {
			return false
		}
	}
	return true
}

// useAVX2Axpy selects the AVX2 axpy. AxpyInt8 calls it directly, not
// through activeKernel, so that escape analysis sees the accumulator stay on
// the caller's stack.
var useAVX2Axpy = hasAVX2()

// AxpyInt8 sets y[i] += float32(c * float32(x[i])) for i < len(x), the
// product rounded to float32 before the add (no fused multiply-add), so
// every kernel gives the same bits; len(y) >= len(x). It is the inner loop
// of embed/glove, which sums int8 word vectors.
func AxpyInt8(c float32, x []int8, y []float32) {
	if useAVX2Axpy {
		axpyInt8AVX2Go(c, x, y)
		return
	}
	axpyInt8Generic(c, x, y)
}

// axpyInt8AVX2Go runs axpyInt8AVX2 on whole groups of 8 and the generic
// loop on the rest.
func axpyInt8AVX2Go(c float32, x []int8, y []float32) {
	n := len(x) &^ 7
	y = y[:len(x)]
	if n > 0 {
		axpyInt8AVX2(c, x[:n], y[:n])
	}
	if n < len(x) {
		axpyInt8Generic(c, x[n:], y[n:])
	}
}
