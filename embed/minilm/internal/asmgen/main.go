// Command asmgen generates embed/minilm/matmul_amd64.s and its Go stubs
// embed/minilm/matmul_amd64.go with avo (github.com/mmcloughlin/avo).
//
// It is its own module so that avo stays out of the product's go.mod. Run it
// through go generate in embed/minilm (see gen.go):
//
//	go run -C internal/asmgen . -out ../../matmul_amd64.s -stubs ../../matmul_amd64.go -pkg minilm
//
// The kernels (all but qgemm{tb}x8AVX2 need AVX512F, AVX512VL and
// AVX512DQ):
//
//   - qgemm{tb}x{gb}VNNI (qgemm.go, AVX512_VNNI too): the encoder's hot
//     loop, int8 activations times int8 weights summed in int32 by
//     VPDPBUSD, a tile of tb tokens by 16·gb outputs, tb 1-4, gb 1-3;
//   - qgemm{tb}x8AVX2 (qgemm_avx2.go, AVX2 and FMA): the same product for
//     CPUs without AVX-512 VNNI, int16 pairs by VPMADDWD, 8 outputs, tb 1-4;
//   - quantGroupsAVX512, geluAVX512, softmaxAVX512, addLayerNormAVX512,
//     scoresAVX512, contextAVX512 (vecops.go): the element-wise and
//     attention steps, 16 float32 at a time;
//   - quantGroupsAVX2, widenAVX2, geluAVX2, rangeAVX2, expSumAVX2,
//     scaleAVX2, vecMatAVX2 (scores and context), addLayerNormAVX2
//     (vecops_avx2.go, AVX2 and FMA): the same steps 8 float32 at a time,
//     bit for bit as the pure-Go functions;
//   - dotRows{K}F32AVX512, K 1-16: the dot products of one float32 weight
//     row with K float32 rows (the matrices of a float32 model file), each
//     row's 16 weights loaded once for K fused multiply-adds:
//     out[k] = sum over i < n of w[i] * x[k*n+i], for k < K; n must be a
//     positive multiple of 16, len(w) >= n, len(x) >= K*n, len(out) >= K.
//
// The AVX-512 float32 sums run in a different order from the pure-Go
// functions, so the results agree to rounding, not bit for bit; the AVX2
// steps keep Go's order; the int8 sums are exact.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("amd64")
	for k := 1; k <= maxBlock; k++ {
		genRows(k)
	}
	for tb := 1; tb <= 4; tb++ {
		for gb := 1; gb <= 3; gb++ {
			genQGemm(tb, gb)
		}
	}
	for tb := 1; tb <= 4; tb++ {
		genQGemmAVX2(tb)
	}
	genQuant()
	genGelu()
	genSoftmax()
	genLayerNorm()
	genScores()
	genContext()
	genQuantAVX2()
	genWidenAVX2()
	genGeluAVX2()
	genRangeAVX2()
	genExpSumAVX2()
	genScaleAVX2()
	genVecMatAVX2()
	genLayerNormAVX2()
	Generate()
}

// maxBlock is the largest number of activation rows per kernel call.
const maxBlock = 16

// genRows generates dotRows{k}F32AVX512.
func genRows(k int) {
	name := fmt.Sprintf("dotRows%dF32AVX512", k)
	TEXT(name, NOSPLIT, "func(w []float32, x []float32, n int, out []float32)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets out[k] = Σ w[i]·x[k*n+i] over i < n for k < %d; n must be a positive multiple of 16.", name, k))
	w := Load(Param("w").Base(), GP64())
	x0 := Load(Param("x").Base(), GP64())
	n := Load(Param("n"), GP64())
	out := Load(Param("out").Base(), GP64())

	// Activation rows are n*4 bytes apart. General registers are too few
	// for 16 row pointers, so rows 0-7 are addressed from pA and rows 8-15
	// from pB = pA + 8·stride, each as base + index·scale with the index
	// registers s, 3s, 5s and 7s: offsets 0, s, 2s, 3s, 4s, 5s, 6s, 7s.
	s1 := GP64()
	MOVQ(n, s1)
	SHLQ(U8(2), s1)
	s3, s5, s7 := GP64(), GP64(), GP64()
	LEAQ(Mem{Base: s1, Index: s1, Scale: 2}, s3)
	LEAQ(Mem{Base: s1, Index: s1, Scale: 4}, s5)
	LEAQ(Mem{Base: s1, Index: s3, Scale: 2}, s7)
	pA := x0
	var pB GPVirtual
	if k > 8 {
		pB = GP64()
		LEAQ(Mem{Base: pA, Index: s1, Scale: 8}, pB)
	}
	rowMem := func(r int) Mem {
		base := pA
		if r >= 8 {
			base, r = pB, r-8
		}
		switch r {
		case 0:
			return Mem{Base: base}
		case 1:
			return Mem{Base: base, Index: s1, Scale: 1}
		case 2:
			return Mem{Base: base, Index: s1, Scale: 2}
		case 3:
			return Mem{Base: base, Index: s3, Scale: 1}
		case 4:
			return Mem{Base: base, Index: s1, Scale: 4}
		case 5:
			return Mem{Base: base, Index: s5, Scale: 1}
		case 6:
			return Mem{Base: base, Index: s3, Scale: 2}
		default:
			return Mem{Base: base, Index: s7, Scale: 1}
		}
	}
	acc := make([]VecVirtual, k)
	for r := range acc {
		acc[r] = ZMM()
		VXORPS(acc[r], acc[r], acc[r])
	}
	Label(name + "_loop")
	wv := ZMM()
	VMOVUPS(Mem{Base: w}, wv)
	for r := 0; r < k; r++ {
		VFMADD231PS(rowMem(r), wv, acc[r])
	}
	ADDQ(U8(64), w)
	ADDQ(U8(64), pA)
	if k > 8 {
		ADDQ(U8(64), pB)
	}
	SUBQ(U8(16), n)
	JNZ(LabelRef(name + "_loop"))

	for r := 0; r < k; r++ {
		y, t := YMM(), XMM()
		VEXTRACTF64X4(U8(1), acc[r], y)
		VADDPS(y, acc[r].AsY(), y)
		// EVEX forms only: the allocator may pick X16-X31, which VEX
		// instructions (VEXTRACTF128, VHADDPS) cannot name.
		u := XMM()
		VEXTRACTF32X4(U8(1), y, t)
		VADDPS(t, y.AsX(), t)
		VPERMILPS(U8(0x4e), t, u)
		VADDPS(u, t, t)
		VPERMILPS(U8(0xb1), t, u)
		VADDPS(u, t, t)
		VMOVSS(t, Mem{Base: out, Disp: 4 * r})
	}
	VZEROUPPER()
	RET()
}
