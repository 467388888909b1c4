package minilm

import (
	"errors"
	"math"
	"slices"
	"sync"
	"unsafe"
)

// linearOp is one linear layer, y = W·(x∘inScale) + bias, for W of out × in.
//
// With int8 weights (one scale per row and group of 64 inputs) the input is
// quantized too, per token and group of 64 (asymmetric int8: a scale and a
// zero point each), and the products are summed in int32: exact, so the
// result does not depend on the kernel's summation order, and 4× as many
// multiply-adds per instruction as float32 (AVX-512 VNNI). Groups keep an
// outlier from coarsening a whole row or token (docs/format/encoder.md has
// the measurements). inScale is the converter's smoothing: it divides each
// input channel by a factor that was multiplied into W's column, which
// moves the outlier channels' range from the activations to the weights.
type linearOp struct {
	w         matrix    // float32, or int8 groups
	bias      []float32 // out
	inScale   []float32 // in
	unitScale bool      // every input scale is 1 (the float32 path skips them)

	// int8 weights only:
	zs   []float32 // out × groups: scale·Σ codes of the group, the weight of the zero point
	pack *panels   // the kernels' layouts, built on first use
}

// panels holds an int8 matrix laid out for the assembly kernels, each
// layout built on first use (a machine runs one kernel set; tests run all).
type panels struct {
	vnniOnce, avx2Once sync.Once
	vnni, avx2         []byte
}

// vnniPanels returns the matrix in the VNNI kernels' layout, or nil if
// they cannot take it (rows not a multiple of 16).
func (op *linearOp) vnniPanels() []byte {
	op.pack.vnniOnce.Do(func() {
		if op.w.rows%16 == 0 {
			op.pack.vnni = packPanels(&op.w, op.zs)
		}
	})
	return op.pack.vnni
}

// avx2Panels returns the matrix in the AVX2 kernels' layout, or nil if
// they cannot take it (rows not a multiple of 8).
func (op *linearOp) avx2Panels() []byte {
	op.pack.avx2Once.Do(func() {
		if op.w.rows%8 == 0 {
			op.pack.avx2 = packPanelsAVX2(&op.w, op.zs)
		}
	})
	return op.pack.avx2
}

// qtok is the quantization of one token's group of 64 inputs: the value of
// code c is scale·(c − zero point). corr = 128·Σc undoes the +128 offset of
// the weight codes in the VNNI kernel; nzs = −scale·zero point. Its layout
// is the kernel's (16 bytes, fields at 0, 4, 8).
type qtok struct {
	corr       int32
	scale, nzs float32
	_          int32
}

// stackLinear stacks linear layers that share their input into one (rows
// concatenated), so the input is quantized once and read in one pass.
func stackLinear(ops ...linearOp) (linearOp, error) {
	first := ops[0]
	out := linearOp{inScale: first.inScale}
	out.w = matrix{cols: first.w.cols}
	for _, op := range ops {
		if op.w.cols != first.w.cols || (op.w.f == nil) != (first.w.f == nil) {
			return linearOp{}, errors.New("query, key and value differ in shape or type")
		}
		if !slices.Equal(op.inScale, first.inScale) {
			return linearOp{}, errors.New("query, key and value have different input scales")
		}
		out.w.rows += op.w.rows
		out.w.f = append(out.w.f, op.w.f...)
		out.w.q = append(out.w.q, op.w.q...)
		out.w.scale = append(out.w.scale, op.w.scale...)
		out.bias = append(out.bias, op.bias...)
	}
	return out, nil
}

// prepare derives what the kernels need from the stored weights: zs, and
// the layout of the kernels this machine runs (ks).
func (op *linearOp) prepare(ks *kernels) {
	op.unitScale = !slices.ContainsFunc(op.inScale, func(v float32) bool { return v != 1 })
	w := &op.w
	if w.q == nil {
		return
	}
	groups := w.cols / groupSize
	op.zs = make([]float32, w.rows*groups)
	for r := 0; r < w.rows; r++ {
		for g := 0; g < groups; g++ {
			var sum int32
			for _, c := range w.q[r*w.cols+g*groupSize : r*w.cols+(g+1)*groupSize] {
				sum += int32(c)
			}
			op.zs[r*groups+g] = w.scale[r*groups+g] * float32(sum)
		}
	}
	op.pack = new(panels)
	switch {
	case ks.q != nil:
		op.vnniPanels()
	case ks.qAVX2 != nil:
		op.avx2Panels()
	}
}

// panelRows is the widest panel of the VNNI kernels: 3 blocks of 16 rows.
const panelRows = 48

// packPanels lays the int8 matrix out for the VNNI kernels (see
// internal/asmgen/qgemm.go): panels of up to 48 rows; per panel and group
// of 64 inputs, 16 steps of [16 rows × 4 inputs] per block of 16 rows, each
// code +128 (the kernel's weight operand is unsigned), then the blocks'
// scales, then their zs. rows must be a multiple of 16.
func packPanels(w *matrix, zs []float32) []byte {
	groups := w.cols / groupSize
	out := make([]byte, 0, w.rows*w.cols+8*w.rows*groups)
	for r0 := 0; r0 < w.rows; r0 += panelRows {
		gb := min(panelRows, w.rows-r0) / 16
		for g := 0; g < groups; g++ {
			for s := 0; s < 16; s++ {
				for j := 0; j < gb; j++ {
					for l := 0; l < 16; l++ {
						r := r0 + 16*j + l
						for _, c := range w.q[r*w.cols+g*groupSize+4*s : r*w.cols+g*groupSize+4*s+4] {
							out = append(out, byte(int(c)+128))
						}
					}
				}
			}
			for _, v := range [2][]float32{w.scale, zs} {
				for j := 0; j < gb; j++ {
					for l := 0; l < 16; l++ {
						out = binaryAppendF32(out, v[(r0+16*j+l)*groups+g])
					}
				}
			}
		}
	}
	return out
}

// packPanelsAVX2 lays the int8 matrix out for the AVX2 kernels (see
// internal/asmgen/qgemm_avx2.go): panels of 8 rows; per panel and group of
// 64 inputs, 32 steps of [8 rows × 2 inputs] signed codes, then the 8 rows'
// scales, then their zs. rows must be a multiple of 8.
func packPanelsAVX2(w *matrix, zs []float32) []byte {
	groups := w.cols / groupSize
	out := make([]byte, 0, w.rows*w.cols+8*w.rows*groups)
	for r0 := 0; r0 < w.rows; r0 += 8 {
		for g := 0; g < groups; g++ {
			for s := 0; s < 32; s++ {
				for l := 0; l < 8; l++ {
					i := (r0+l)*w.cols + g*groupSize + 2*s
					out = append(out, byte(w.q[i]), byte(w.q[i+1]))
				}
			}
			for _, v := range [2][]float32{w.scale, zs} {
				for l := 0; l < 8; l++ {
					out = binaryAppendF32(out, v[(r0+l)*groups+g])
				}
			}
		}
	}
	return out
}

func binaryAppendF32(b []byte, v float32) []byte {
	u := math.Float32bits(v)
	return append(b, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
}

// quantizeActs quantizes T rows of x (each of length K = 64·groups, times
// inScale) per token and group of 64: asymmetric int8 whose range
// [lo, hi] always holds 0, so zero is exact and the zero point fits int8.
// Codes go to a (T × K), the parameters to tp (groups × T, group-major as
// the kernel walks them). Rounding is to nearest even, as VCVTPS2DQ does.
func quantizeActs(x []float32, T, K int, inScale []float32, a []int8, tp []qtok) {
	var v [groupSize]float32
	groups := K / groupSize
	for t := 0; t < T; t++ {
		for g := 0; g < groups; g++ {
			src := x[t*K+g*groupSize : t*K+(g+1)*groupSize]
			sc := inScale[g*groupSize : (g+1)*groupSize]
			for i := range v {
				v[i] = src[i] * sc[i]
			}
			var lo, hi float32
			for _, f := range v {
				lo, hi = min(lo, f), max(hi, f)
			}
			dst := a[t*K+g*groupSize : t*K+(g+1)*groupSize]
			scale := (hi - lo) / 255
			if !(scale >= 1e-30) { // all zero (or tiny, or NaN): code 0 means 0
				clear(dst)
				tp[g*T+t] = qtok{}
				continue
			}
			inv := 1 / scale
			z := -128 - int32(math.RoundToEven(float64(lo*inv)))
			var sum int32
			for i, f := range v {
				c := min(max(int32(math.RoundToEven(float64(f*inv)))+z, -128), 127)
				dst[i] = int8(c)
				sum += c
			}
			tp[g*T+t] = qtok{corr: 128 * sum, scale: scale, nzs: -scale * float32(z)}
		}
	}
}

// qkernel is one VNNI kernel (qgemm{tb}x{gb}VNNI).
type qkernel func(a *int8, lda int, w *byte, groups int, tp *int32, tps int, bias *float32, out *float32, ldo int)

// qlinearVNNI computes dst (T × rows) from the quantized activations with
// the VNNI kernels: per panel, tiles of up to 4 tokens, so that the panel
// stays in cache while every token passes over it.
func qlinearVNNI(ks *[4][3]qkernel, dst []float32, a []int8, tp []qtok, T int, op *linearOp, pk []byte, lo, hi int) {
	K, N := op.w.cols, op.w.rows
	groups := K / groupSize
	_ = dst[T*N-1]
	_ = a[T*K-1]
	_ = tp[groups*T-1]
	// Every panel but the last is panelRows wide.
	off := lo * groups * (panelRows / 16) * (16*64 + 2*64)
	for r0 := lo * panelRows; r0 < min(N, hi*panelRows); r0 += panelRows {
		gb := min(panelRows, N-r0) / 16
		size := groups * gb * (16*64 + 2*64)
		panel := pk[off : off+size]
		off += size
		for t0 := 0; t0 < T; t0 += 4 {
			tb := min(4, T-t0)
			ks[tb-1][gb-1](&a[t0*K], K, &panel[0], groups, (*int32)(unsafe.Pointer(&tp[t0])), T*int(unsafe.Sizeof(qtok{})),
				&op.bias[r0], &dst[t0*N+r0], N)
		}
	}
}

// qkernelAVX2 is one AVX2 kernel (qgemm{tb}x8AVX2).
type qkernelAVX2 func(a *int16, lda int, w *byte, groups int, tp *int32, tps int, bias *float32, out *float32, ldo int)

// qlinearAVX2 is qlinearVNNI for the AVX2 kernels: the codes are widened
// to int16 first (a16, T × K), panels are 8 rows.
func qlinearAVX2(ks *[4]qkernelAVX2, dst []float32, a16 []int16, tp []qtok, T int, op *linearOp, pk []byte, lo, hi int) {
	K, N := op.w.cols, op.w.rows
	groups := K / groupSize
	_ = dst[T*N-1]
	_ = tp[groups*T-1]
	_ = a16[T*K-1]
	size := groups * (32*16 + 2*32)
	for r0 := lo * 8; r0 < hi*8; r0 += 8 {
		panel := pk[r0/8*size : (r0/8+1)*size]
		for t0 := 0; t0 < T; t0 += 4 {
			tb := min(4, T-t0)
			ks[tb-1](&a16[t0*K], 2*K, &panel[0], groups, (*int32)(unsafe.Pointer(&tp[t0])), T*int(unsafe.Sizeof(qtok{})),
				&op.bias[r0], &dst[t0*N+r0], N)
		}
	}
}

// qlinearGo is the pure-Go int8 path: the same integer sums, folded into
// float32 in the same order as the VNNI kernel (so the two agree to float32
// rounding of the fused multiply-adds). Four tokens share each pass over a
// weight row's group (the last ones repeat a token to fill the four).
func qlinearGo(dst []float32, a []int8, tp []qtok, T int, op *linearOp, lo, hi int) {
	K, N := op.w.cols, op.w.rows
	groups := K / groupSize
	w := op.w
	for o := lo; o < hi; o++ {
		wr := w.q[o*K : (o+1)*K]
		sw, zs := w.scale[o*groups:(o+1)*groups], op.zs[o*groups:(o+1)*groups]
		for t0 := 0; t0 < T; t0 += 4 {
			var ts [4]int
			var rows [4][]int8
			for j := range ts {
				ts[j] = min(t0+j, T-1)
				rows[j] = a[ts[j]*K : (ts[j]+1)*K]
			}
			var acc [4]float32
			for g := 0; g < groups; g++ {
				lo, hi := g*groupSize, (g+1)*groupSize
				s := dot4I8(wr[lo:hi], rows[0][lo:hi], rows[1][lo:hi], rows[2][lo:hi], rows[3][lo:hi])
				for j := range acc {
					p := tp[g*T+ts[j]]
					acc[j] = fma32(float32(s[j])*sw[g], p.scale, acc[j])
					acc[j] = fma32(p.nzs, zs[g], acc[j])
				}
			}
			for j := 0; j < min(4, T-t0); j++ {
				dst[(t0+j)*N+o] = acc[j] + op.bias[o]
			}
		}
	}
}

// dot4I8 returns the exact int32 dot products of a group of 64 int8
// weights with four groups of 64 int8 activations.
func dot4I8(w, a0, a1, a2, a3 []int8) [4]int32 {
	w, a0, a1, a2, a3 = w[:groupSize], a0[:groupSize], a1[:groupSize], a2[:groupSize], a3[:groupSize]
	var s0, s1, s2, s3 int32
	for i, wi := range w {
		wv := int32(wi)
		s0 += wv * int32(a0[i])
		s1 += wv * int32(a1[i])
		s2 += wv * int32(a2[i])
		s3 += wv * int32(a3[i])
	}
	return [4]int32{s0, s1, s2, s3}
}

// fma32 is x·y + z rounded once to float32 (up to a double rounding through
// float64 in rare ties), as VFMADD231PS computes it.
func fma32(x, y, z float32) float32 {
	return float32(math.FMA(float64(x), float64(y), float64(z)))
}
