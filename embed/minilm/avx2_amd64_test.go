// The pure-Go steps these tests compare with fuse multiply-adds when built
// with GOAMD64=v3 or above (the default, v1, does not, and the AVX2
// kernels follow v1's arithmetic), so they hold for v1 and v2 builds only.

//go:build amd64 && !amd64.v3

package minilm

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/cpu"
)

// needAVX2 skips a test on CPUs without the AVX2 kernels.
func needAVX2(t *testing.T) {
	t.Helper()
	if !cpu.X86.HasAVX2 || !cpu.X86.HasFMA {
		t.Skip("no AVX2 and FMA")
	}
}

// sameBits fails unless got and want hold the same float32 bits.
func sameBits(t *testing.T, name string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v (%#x), go %v (%#x)", name, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// TestAVX2StepsExact checks that the AVX2 element-wise and attention steps
// give the pure-Go functions' bits (unlike the AVX-512 ones, which agree to
// rounding: TestVecOpsAgree), including the softmax's fallbacks to Go.
func TestAVX2StepsExact(t *testing.T) {
	needAVX2(t)
	ks := &avx2Kernels
	rng := rand.New(rand.NewPCG(11, 12))
	randv := func(n int, sd float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * sd)
		}
		return v
	}
	for _, sd := range []float64{0.1, 1, 3, 10} {
		x := append(randv(1536*4+5, sd), -30, 30, -4, 4, -3.9999998, 4.0000005, 0, float32(math.Copysign(0, -1)), 1e-20, -1e-40, 7)
		want := append([]float32(nil), x...)
		gelu(want)
		got := append([]float32(nil), x...)
		ks.gelu(got)
		sameBits(t, "gelu", got, want)
	}

	for _, n := range []int{1, 2, 7, 8, 9, 15, 16, 17, 31, 45, 100, 256, 512} {
		for _, sd := range []float64{0.01, 1, 4, 30, 400} {
			tp := (n + 15) &^ 15
			s := append(randv(n, sd), randv(tp-n, 100)...) // the padding holds garbage
			switch rng.IntN(5) {
			case 0:
				s[rng.IntN(n)] = float32(math.Inf(-1))
			case 1:
				s[rng.IntN(n)] = 88
			case 2: // exponentials down to e^-707.9, near math.Exp's subnormal range
				for i := range s[:n] {
					s[i] = float32(rng.Float64() * -707.9)
				}
				s[rng.IntN(n)] = 0
			}
			want := append([]float32(nil), s...)
			softmaxPadded(want, n)
			got := append([]float32(nil), s...)
			ks.softmax(got, n)
			sameBits(t, "softmax", got, want)
		}
	}

	for _, n := range []int{8, 64, 384, 1024} {
		w, b := randv(n, 1), randv(n, 1)
		for _, y := range [][]float32{nil, randv(n, 5)} {
			x := randv(n, 2)
			x[n/3] = 40 // an outlier channel
			want := append([]float32(nil), x...)
			addLayerNorm(want, y, w, b, 1e-12)
			got := append([]float32(nil), x...)
			ks.addLayerNorm(got, y, w, b, 1e-12)
			sameBits(t, "addLayerNorm", got, want)
		}
	}

	for _, dh := range []int{8, 24, 32, 56, 64} {
		for _, n := range []int{1, 3, 16, 17, 45, 48, 300} {
			tp := (n + 15) &^ 15
			q, kt := randv(dh, 1), randv(dh*tp, 1)
			want, got := make([]float32, tp), make([]float32, tp)
			scores(q, kt, tp, want)
			ks.scores(q, kt, tp, got)
			sameBits(t, "scores", got, want)
			const ld = 1152
			p, v := randv(n, 1), randv(n*ld, 1)
			want, got = make([]float32, dh), make([]float32, dh)
			attnContext(p, v, ld, want)
			ks.context(p, v, ld, got)
			sameBits(t, "context", got, want)
		}
	}
}

// avx2GoSteps is the AVX2 kernel set as it was before the AVX2 element-wise
// steps: the AVX2 int8 kernels, everything else in Go.
func avx2GoSteps() kernels {
	ks := genericKernels
	ks.name = "avx2-go-steps"
	ks.qAVX2 = &avx2QKernels
	return ks
}

// avx2Embeddings returns the embeddings of determinismTexts with ks.
func avx2Embeddings(t *testing.T, ks kernels) [][]float32 {
	e := defaultEmbedder(t)
	saved := active
	defer func() { active = saved }()
	active = ks
	var out [][]float32
	for _, text := range determinismTexts() {
		v := make([]float32, e.Dim())
		if err := e.EmbedOne(text, v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// TestAVX2EncoderExact checks the whole encoder on the AVX2 kernels against
// the AVX2 int8 kernels with the pure-Go steps, bit for bit.
func TestAVX2EncoderExact(t *testing.T) {
	needAVX2(t)
	want := avx2Embeddings(t, avx2GoSteps())
	got := avx2Embeddings(t, avx2Kernels)
	for i := range want {
		sameBits(t, "embedding", got[i], want[i])
	}
}

// avx2Golden is the SHA-256 of the AVX2 kernels' embeddings of
// determinismTexts (float32 bits, little-endian, in order), as the AVX2
// encoder has computed them since the AVX2 int8 kernels came in. The
// product stores embeddings: a change here means vectors computed on an
// AVX2 machine before and after the change differ, which the change must
// say (and the model file's vector-space name should then change).
const avx2Golden = "0d0e67180f9c57ba72f219a01245aabf51d5282e652eb28f88a17950626f7540"

// TestAVX2Golden checks that the AVX2 encoder's output bits have not changed.
func TestAVX2Golden(t *testing.T) {
	needAVX2(t)
	h := sha256.New()
	for _, v := range avx2Embeddings(t, avx2Kernels) {
		for _, f := range v {
			h.Write(binary.LittleEndian.AppendUint32(nil, math.Float32bits(f)))
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != avx2Golden {
		t.Errorf("AVX2 embeddings hash to %s, want %s: the AVX2 encoder's output bits changed", got, avx2Golden)
	}
}
