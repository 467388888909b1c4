// Command asmgen generates embed/minilm/matmul_amd64.s and its Go stubs
// embed/minilm/matmul_amd64.go with avo (github.com/mmcloughlin/avo).
//
// It is its own module so that avo stays out of the product's go.mod. Run it
// through go generate in embed/minilm (see gen.go):
//
//	go run -C internal/asmgen . -out ../../matmul_amd64.s -stubs ../../matmul_amd64.go -pkg minilm
//
// The kernels are the encoder's hot loop: the dot products of one quantized
// weight row (int8 or int16 codes) with K float32 activation rows at once,
// so each 16 codes are loaded, sign-extended to int32 (VPMOVSXBD or
// VPMOVSXWD) and converted to float32 (VCVTDQ2PS) once for K fused
// multiply-adds (VFMADD231PS) into K accumulators. They need AVX512F and
// AVX512VL (EVEX forms on XMM and YMM registers in the final reduction).
//
//	dotRows{K}I8AVX512(w []int8, x []float32, n int, out []float32)
//	dotRows{K}I16AVX512(w []int16, x []float32, n int, out []float32)
//	dotRows{K}F32AVX512(w []float32, x []float32, n int, out []float32)
//
// for K in 1 to 16 (16 accumulators and the codes fit the 32 ZMM registers,
// and a query of up to 16 tokens then reads each weight row once): out[k] = sum over i < n of float32(w[i]) * x[k*n+i],
// for k < K; n must be a positive multiple of 16, len(w) >= n,
// len(x) >= K*n and len(out) >= K. Sums run in a different order from the
// pure-Go kernels, so results agree to rounding, not bit for bit.
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
		genRows(k, "I8")
		genRows(k, "I16")
		genRows(k, "F32")
	}
	Generate()
}

// maxBlock is the largest number of activation rows per kernel call.
const maxBlock = 16

// genRows generates dotRows{k}{codes}AVX512; codes is I8, I16 or F32 (the
// weight row is float32 too: attention and float32 model files).
func genRows(k int, codes string) {
	suffix := codes
	typ := map[string]string{"I8": "[]int8", "I16": "[]int16", "F32": "[]float32"}[codes]
	name := fmt.Sprintf("dotRows%d%sAVX512", k, suffix)
	TEXT(name, NOSPLIT, fmt.Sprintf("func(w %s, x []float32, n int, out []float32)", typ))
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets out[k] = Σ float32(w[i])·x[k*n+i] over i < n for k < %d; n must be a positive multiple of 16.", name, k))
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
	switch codes {
	case "I8":
		VPMOVSXBD(Mem{Base: w}, wv)
		VCVTDQ2PS(wv, wv)
	case "I16":
		VPMOVSXWD(Mem{Base: w}, wv)
		VCVTDQ2PS(wv, wv)
	default:
		VMOVUPS(Mem{Base: w}, wv)
	}
	for r := 0; r < k; r++ {
		VFMADD231PS(rowMem(r), wv, acc[r])
	}
	ADDQ(U8(map[string]int{"I8": 16, "I16": 32, "F32": 64}[codes]), w)
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
