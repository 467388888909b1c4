package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The int8 product for CPUs with AVX2 and FMA but not AVX-512 VNNI: one
// tile of tb tokens × 8 outputs per call,
//
//	qgemm{tb}x8AVX2(a *int16, lda int, w *byte, groups int, tp *int32, tps int, bias *float32, out *float32, ldo int)
//
// with the same arithmetic as qgemm{tb}x{gb}VNNI (qgemm.go): exact int32
// sums per group of 64 inputs, folded into float32 as
//
//	acc[t][o] += float32(isum) * wscale[o] * tp.scale + tp.nzs * zsum[o]
//
// but from signed codes, so without the +128 offset (tp.corr is unused).
// The sums are VPMADDWD products of int16 pairs: the activation codes
// widened to int16 beforehand (a, lda bytes between tokens), the weight
// codes sign-extended from int8 as they are loaded. VPMADDUBSW would take
// bytes directly but saturates its int16 pair sums.
//
// w: the panel of 8 outputs, per group: 32 steps of [8 outputs × 2 inputs]
// int8 codes (16 bytes), then 8 float32 weight scales, then 8 float32 zsum.
func genQGemmAVX2(tb int) {
	name := fmt.Sprintf("qgemm%dx8AVX2", tb)
	TEXT(name, NOSPLIT, "func(a *int16, lda int, w *byte, groups int, tp *int32, tps int, bias *float32, out *float32, ldo int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s multiplies a tile of %d tokens by a panel of 8 outputs (see internal/asmgen/qgemm_avx2.go).", name, tb))
	a, w, groups, tp, tps, row := loadTile(tb)
	facc := make([]VecVirtual, tb)
	iacc := make([]VecVirtual, tb)
	for t := range facc {
		facc[t], iacc[t] = YMM(), YMM()
		VXORPS(facc[t], facc[t], facc[t])
	}
	wv, av, prod := YMM(), YMM(), YMM()
	Label(name + "_group")
	for t := range iacc {
		VPXOR(iacc[t], iacc[t], iacc[t])
	}
	for s := 0; s < 32; s++ {
		VPMOVSXBW(Mem{Base: w, Disp: 16 * s}, wv)
		for t := range iacc {
			VPBROADCASTD(row(t, 4*s), av)
			VPMADDWD(av, wv, prod)
			VPADDD(prod, iacc[t], iacc[t])
		}
	}
	ADDQ(U8(128), a) // 64 int16
	ADDQ(U32(32*16), w)
	// Fold the group: weight scales at w, zsum at w + 32.
	for t := range iacc {
		VCVTDQ2PS(iacc[t], iacc[t])
		VMULPS(Mem{Base: w}, iacc[t], iacc[t])
		VBROADCASTSS(Mem{Base: tp, Disp: 16*t + 4}, av)
		VFMADD231PS(av, iacc[t], facc[t])
		VBROADCASTSS(Mem{Base: tp, Disp: 16*t + 8}, av)
		VFMADD231PS(Mem{Base: w, Disp: 32}, av, facc[t])
	}
	ADDQ(U8(64), w)
	ADDQ(tps, tp)
	DECQ(groups)
	JNZ(LabelRef(name + "_group"))

	bias := Load(Param("bias"), GP64())
	out := Load(Param("out"), GP64())
	ldo := Load(Param("ldo"), GP64())
	SHLQ(U8(2), ldo)
	for t := range facc {
		if t > 0 {
			ADDQ(ldo, out)
		}
		VADDPS(Mem{Base: bias}, facc[t], facc[t])
		VMOVUPS(facc[t], Mem{Base: out})
	}
	VZEROUPPER()
	RET()
}
