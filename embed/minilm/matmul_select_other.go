//go:build !amd64

package minilm

// supportedKernels lists the kernel sets this CPU runs: pure Go only.
func supportedKernels() []*kernels { return []*kernels{&genericKernels} }

func bestKernels() kernels { return genericKernels }

// widenCodes sets a16[i] = int16(a[i]) (the AVX2 kernels' operand, unused
// here).
func widenCodes(a []int8, a16 []int16) {
	for i, c := range a {
		a16[i] = int16(c)
	}
}
