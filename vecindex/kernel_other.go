//go:build !amd64

package vecindex

// Off amd64 there is only the pure-Go kernel.

func supportedKernels() []kernel { return []kernel{genericKernel} }

func bestKernel() kernel { return genericKernel }

func axpyInt8(c float32, x []int8, y []float32) { axpyInt8Generic(c, x, y) }
