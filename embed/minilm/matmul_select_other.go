//go:build !amd64

package minilm

// supportedKernels lists the kernel sets this CPU runs: pure Go only.
func supportedKernels() []*kernels { return []*kernels{&genericKernels} }

func bestKernels() kernels { return genericKernels }
