//go:build !amd64

package vecindex

// Off amd64 there is only the pure-Go kernel.

func supportedKernels() []kernel { return []kernel{genericKernel} }

func bestKernel() kernel { return genericKernel }

// AxpyInt8 sets y[i] += float32(c * float32(x[i])) for i < len(x), the
// product rounded to float32 before the add; len(y) >= len(x). It is the
// inner loop of embed/glove, which sums int8 word vectors.
func AxpyInt8(c float32, x []int8, y []float32) { axpyInt8Generic(c, x, y) }
