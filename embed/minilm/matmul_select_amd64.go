package minilm

import "golang.org/x/sys/cpu"

// avx512Kernels are the avo-generated kernels of matmul_amd64.s.
var avx512Kernels = kernels{
	name: "avx512",
	i8: [maxBlock]func([]int8, []float32, int, []float32){
		dotRows1I8AVX512, dotRows2I8AVX512, dotRows3I8AVX512, dotRows4I8AVX512,
		dotRows5I8AVX512, dotRows6I8AVX512, dotRows7I8AVX512, dotRows8I8AVX512,
		dotRows9I8AVX512, dotRows10I8AVX512, dotRows11I8AVX512, dotRows12I8AVX512,
		dotRows13I8AVX512, dotRows14I8AVX512, dotRows15I8AVX512, dotRows16I8AVX512,
	},
	i16: [maxBlock]func([]int16, []float32, int, []float32){
		dotRows1I16AVX512, dotRows2I16AVX512, dotRows3I16AVX512, dotRows4I16AVX512,
		dotRows5I16AVX512, dotRows6I16AVX512, dotRows7I16AVX512, dotRows8I16AVX512,
		dotRows9I16AVX512, dotRows10I16AVX512, dotRows11I16AVX512, dotRows12I16AVX512,
		dotRows13I16AVX512, dotRows14I16AVX512, dotRows15I16AVX512, dotRows16I16AVX512,
	},
	f32: [maxBlock]func([]float32, []float32, int, []float32){
		dotRows1F32AVX512, dotRows2F32AVX512, dotRows3F32AVX512, dotRows4F32AVX512,
		dotRows5F32AVX512, dotRows6F32AVX512, dotRows7F32AVX512, dotRows8F32AVX512,
		dotRows9F32AVX512, dotRows10F32AVX512, dotRows11F32AVX512, dotRows12F32AVX512,
		dotRows13F32AVX512, dotRows14F32AVX512, dotRows15F32AVX512, dotRows16F32AVX512,
	},
}

// supportedKernels lists the kernel sets this CPU runs, best first.
// x/sys/cpu reports AVX-512 only when the OS saves the ZMM state too; the
// kernels need AVX512F and AVX512VL.
func supportedKernels() []*kernels {
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL {
		return []*kernels{&avx512Kernels, &genericKernels}
	}
	return []*kernels{&genericKernels}
}

func bestKernels() kernels { return *supportedKernels()[0] }
