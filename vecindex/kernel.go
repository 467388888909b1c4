package vecindex

// DotInt8 returns the dot product of a and b as an exact int32: the sum of
// int32(a[i])*int32(b[i]), with int32 wrap-around, which cannot happen for
// len(a) < 2^17 (every product is at most 128*128 = 2^14). a and b must have
// the same length; it panics otherwise.
//
// On amd64 with AVX2 or AVX-512 it runs a SIMD kernel on whole 16-byte
// chunks and the pure-Go kernel on the rest; KernelName says which one.
// Results are identical on every path.
func DotInt8(a, b []int8) int32 {
	if len(a) != len(b) {
		panic("BUG: vecindex.DotInt8: vectors of different lengths")
	}
	return dotInt8(a, b)
}

// DotBatch scores one query against n = len(out) consecutive vectors of dim
// int8 each: out[i] = DotInt8(q[:dim], data[i*dim:(i+1)*dim]). It is what
// search uses: one call per block of vectors amortises the call overhead and
// keeps the query in L1. dim is normally a stride (Stride), a multiple of 16,
// which takes the SIMD path with no tail handling; other dims work too, one
// DotInt8 per vector. It panics when len(q) < dim or len(data) < n*dim.
func DotBatch(q, data []int8, dim int, out []int32) {
	if dim < 0 || len(q) < dim || (dim > 0 && len(data)/dim < len(out)) {
		panic("BUG: vecindex.DotBatch: query or data shorter than dim and len(out) require")
	}
	if len(out) == 0 {
		return
	}
	if dim == 0 {
		clear(out)
		return
	}
	dotBatch(q[:dim], data[:len(out)*dim], dim, out)
}

// KernelName names the int8 kernel in use: "avx512", "avx2" or "generic".
// Benchmarks print it next to their figures.
func KernelName() string {
	return activeKernel.name
}

// kernel is one implementation of the two int8 primitives. Tests run every
// kernel the CPU supports against the generic one.
type kernel struct {
	name string
	// dot returns a·b; len(a) == len(b), any length.
	dot func(a, b []int8) int32
	// batch is DotBatch after its checks: dim > 0, len(q) == dim,
	// len(data) == len(out)*dim.
	batch func(q, data []int8, dim int, out []int32)
	// axpy sets y[i] += float32(c * float32(x[i])) for i < len(x);
	// len(y) >= len(x). The GloVe embedder's inner loop.
	axpy func(c float32, x []int8, y []float32)
	// sketch sets out[i] to the product of q with the 4-bit codes of
	// sketch row i (see sketchDotGeneric), the two-stage scan's first
	// stage: rowBytes is a positive multiple of 64, len(q) == 2*rowBytes,
	// len(data) == len(out)*rowBytes.
	sketch func(q []int8, data []byte, rowBytes int, out []int32)
	// gather is dotBatch over the vectors idx lists: out[i] =
	// q·data[idx[i]*dim:(idx[i]+1)*dim], len(idx) == len(out), every row in
	// data. The two-stage scan rescores its survivors with it.
	gather func(q, data []int8, dim int, idx, out []int32)
}

var genericKernel = kernel{name: "generic", dot: dotInt8Generic, batch: dotBatchGeneric, axpy: axpyInt8Generic, sketch: sketchBatchGeneric, gather: dotGatherGeneric}

// activeKernel is the best kernel this CPU supports, chosen once at start-up.
var activeKernel = bestKernel()

func dotInt8(a, b []int8) int32 { return activeKernel.dot(a, b) }

func dotBatch(q, data []int8, dim int, out []int32) { activeKernel.batch(q, data, dim, out) }

func sketchBatch(q []int8, data []byte, rowBytes int, out []int32) {
	activeKernel.sketch(q, data, rowBytes, out)
}

func dotGather(q, data []int8, dim int, idx, out []int32) {
	activeKernel.gather(q, data, dim, idx, out)
}
