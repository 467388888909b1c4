package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Quantized matrix product, int8 activations times int8 weights with int32
// sums (AVX-512 VNNI), one tile of tb tokens × 16·gb outputs per call:
//
//	qgemm{tb}x{gb}VNNI(a *int8, lda int, w *byte, groups int, tp *int32, tps int, bias *float32, out *float32, ldo int)
//
// The inner dimension runs in groups of 64 inputs, each with its own
// activation scale (per token) and weight scale (per output), so that an
// outlier only coarsens its own group. Per group, VPDPBUSD sums
// u8(w+128)·s8(a) over the 64 inputs into int32 (exact: at most
// 64·255·128 < 2^21 in magnitude), then the group is folded into float32
// accumulators:
//
//	acc[t][o] += float32(isum - tp.corr) * wscale[o] * tp.scale + tp.nzs * zsum[o]
//
// where tp.corr = 128·Σa removes the +128 offset of the weights, and the
// last term (tp.nzs = -scale·zero point, zsum[o] = wscale[o]·Σw[o]) the
// activations' zero point. After the last group, out[t][o] = acc + bias[o].
//
// a: the tile's first token row (lda bytes apart); w: the panel of 16·gb
// outputs, per group: 16 steps × gb × 64 bytes of codes (16 outputs × 4
// inputs each), then gb × 16 float32 weight scales, then gb × 16 float32
// zsum; tp: 16-byte records {corr int32, scale, nzs float32, pad} of the
// tile's first token in group 0, tps bytes between groups; out: ldo float32
// between rows.
func genQGemm(tb, gb int) {
	name := fmt.Sprintf("qgemm%dx%dVNNI", tb, gb)
	TEXT(name, NOSPLIT, "func(a *int8, lda int, w *byte, groups int, tp *int32, tps int, bias *float32, out *float32, ldo int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s multiplies a tile of %d tokens by a panel of %d outputs (see internal/asmgen/qgemm.go).", name, tb, 16*gb))
	a, w, groups, tp, tps, row := loadTile(tb)
	facc := make([][]VecVirtual, tb)
	iacc := make([][]VecVirtual, tb)
	for t := range facc {
		facc[t] = make([]VecVirtual, gb)
		iacc[t] = make([]VecVirtual, gb)
		for j := range facc[t] {
			facc[t][j] = ZMM()
			iacc[t][j] = ZMM()
			VXORPS(facc[t][j], facc[t][j], facc[t][j])
		}
	}
	wv := make([]VecVirtual, gb)
	for j := range wv {
		wv[j] = ZMM()
	}
	Label(name + "_group")
	for t := range iacc {
		for j := range iacc[t] {
			VPXORD(iacc[t][j], iacc[t][j], iacc[t][j])
		}
	}
	for s := 0; s < 16; s++ {
		for j := range wv {
			VMOVDQU32(Mem{Base: w, Disp: (s*gb + j) * 64}, wv[j])
		}
		for t := range iacc {
			for j := range wv {
				vpdpbusdBcst(row(t, 4*s), wv[j], iacc[t][j])
			}
		}
	}
	ADDQ(U8(64), a)
	ADDQ(U32(16*gb*64), w)
	// Fold the group: weight scales at w, zsum at w + 64·gb.
	for j := range wv {
		VMOVUPS(Mem{Base: w, Disp: (gb + j) * 64}, wv[j])
	}
	for t := range iacc {
		for j := range wv {
			acc := iacc[t][j]
			VPSUBD_BCST(Mem{Base: tp, Disp: 16 * t}, acc, acc)
			VCVTDQ2PS(acc, acc)
			VMULPS(Mem{Base: w, Disp: j * 64}, acc, acc)
			VFMADD231PS_BCST(Mem{Base: tp, Disp: 16*t + 4}, acc, facc[t][j])
			VFMADD231PS_BCST(Mem{Base: tp, Disp: 16*t + 8}, wv[j], facc[t][j])
		}
	}
	ADDQ(U32(2*gb*64), w)
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
		for j := range facc[t] {
			VADDPS(Mem{Base: bias, Disp: 64 * j}, facc[t][j], facc[t][j])
			VMOVUPS(facc[t][j], Mem{Base: out, Disp: 64 * j})
		}
	}
	VZEROUPPER()
	RET()
}

// loadTile loads the parameters the tile kernels share and returns the
// tile's first row, the panel, the group count, the token records and their
// stride, and the address of byte disp of token row t (t < tb) of the tile.
func loadTile(tb int) (a, w, groups, tp, tps Register, row func(t, disp int) Mem) {
	a = Load(Param("a"), GP64())
	lda := Load(Param("lda"), GP64())
	w = Load(Param("w"), GP64())
	groups = Load(Param("groups"), GP64())
	tp = Load(Param("tp"), GP64())
	tps = Load(Param("tps"), GP64())
	var lda3 GPVirtual
	if tb > 3 {
		lda3 = GP64()
		LEAQ(Mem{Base: lda, Index: lda, Scale: 2}, lda3)
	}
	row = func(t, disp int) Mem {
		switch t {
		case 0:
			return Mem{Base: a, Disp: disp}
		case 1:
			return Mem{Base: a, Index: lda, Scale: 1, Disp: disp}
		case 2:
			return Mem{Base: a, Index: lda, Scale: 2, Disp: disp}
		default:
			return Mem{Base: a, Index: lda3, Scale: 1, Disp: disp}
		}
	}
	return a, w, groups, tp, tps, row
}

// vpdpbusdBcst emits VPDPBUSD.BCST m32, w, acc (acc += per dword, the sum of
// the four products of w's unsigned bytes and m's four signed bytes), which
// avo v0.5.0's instruction table lacks (it predates AVX512_VNNI), as a raw
// instruction with its register uses declared for the allocator.
func vpdpbusdBcst(m Mem, w, acc VecVirtual) {
	Instruction(&ir.Instruction{
		Opcode:   "VPDPBUSD",
		Suffixes: []string{"BCST"},
		Operands: []Op{m, w, acc},
		Inputs:   []Op{m, w, acc},
		Outputs:  []Op{acc},
		ISA:      []string{"AVX512_VNNI"},
	})
}
