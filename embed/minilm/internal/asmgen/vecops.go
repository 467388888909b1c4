package main

import (
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The element-wise steps of the forward pass, 16 float32 at a time. Each
// mirrors a pure-Go function of the package (named in its doc) and computes
// the same formula, so the two agree to float32 rounding (fused
// multiply-adds and summation order differ).

// f32c returns a float32 constant in memory, for broadcasts.
func f32c(name string, v float32) Mem {
	return ConstData(name, U32(math.Float32bits(v)))
}

// reduceZ folds the 16 lanes of z with op (VMINPS, VMAXPS, VADDPS or
// VPADDD) into lane 0 of the returned XMM register; z is clobbered. EVEX
// forms only, as in genRows.
func reduceZ(z VecVirtual, op func(...Op)) VecVirtual {
	y, x, u := YMM(), XMM(), XMM()
	VEXTRACTF64X4(U8(1), z, y)
	op(y, z.AsY(), y)
	VEXTRACTF32X4(U8(1), y, x)
	op(x, y.AsX(), x)
	VPERMILPS(U8(0x4e), x, u)
	op(u, x, x)
	VPERMILPS(U8(0xb1), x, u)
	op(u, x, x)
	return x
}

// genQuant generates
//
//	quantGroupsAVX512(x *float32, scale *float32, groups int, a *int8, tp *int32, tps int)
//
// quantizeActs for one token: per group of 64 inputs, v = x·scale, lo =
// min(v, 0), hi = max(v, 0), step = (hi-lo)/255, inv = 1/step, zero point
// z = -128 - rne(lo·inv), codes clamp(rne(v·inv) + z, -128, 127) to a,
// {128·Σcodes, step, -step·z} to tp (tps bytes between groups). A step
// below 1e-30 (all zero) gives zero codes and a zero record. Every
// operation is the one quantizeActs performs, so the codes are identical.
func genQuant() {
	TEXT("quantGroupsAVX512", NOSPLIT, "func(x *float32, scale *float32, groups int, a *int8, tp *int32, tps int)")
	Pragma("noescape")
	Doc("quantGroupsAVX512 quantizes one token's groups of 64 inputs as quantizeActs does (internal/asmgen/vecops.go).")
	x := Load(Param("x"), GP64())
	sc := Load(Param("scale"), GP64())
	groups := Load(Param("groups"), GP64())
	a := Load(Param("a"), GP64())
	tp := Load(Param("tp"), GP64())
	tps := Load(Param("tps"), GP64())
	zero := ZMM()
	VXORPS(zero, zero, zero)
	c255, one, minus1, tiny := f32c("q_c255", 255), f32c("q_one", 1), f32c("q_minus1", -1), uint32(math.Float32bits(1e-30))
	m128, p127 := ConstData("q_m128", U32(0xffffff80)), ConstData("q_p127", U32(127))

	Label("quant_group")
	v := make([]VecVirtual, 4)
	for i := range v {
		v[i] = ZMM()
		VMOVUPS(Mem{Base: x, Disp: 64 * i}, v[i])
		VMULPS(Mem{Base: sc, Disp: 64 * i}, v[i], v[i])
	}
	lo, hi := ZMM(), ZMM()
	VMINPS(v[1], v[0], lo)
	VMAXPS(v[1], v[0], hi)
	for _, w := range v[2:] {
		VMINPS(w, lo, lo)
		VMAXPS(w, hi, hi)
	}
	VMINPS(zero, lo, lo)
	VMAXPS(zero, hi, hi)
	los := reduceZ(lo, func(o ...Op) { VMINPS(o...) })
	his := reduceZ(hi, func(o ...Op) { VMAXPS(o...) })
	step := XMM()
	VSUBSS(los, his, step) // hi - lo
	VDIVSS(c255, step, step)
	bits := GP32()
	VMOVD(step, bits)
	CMPL(bits, U32(tiny))
	JL(LabelRef("quant_zero")) // also catches a negative step; NaN bits are above

	inv := XMM()
	VMOVSS(one, inv)
	VDIVSS(step, inv, inv) // 1 / step
	t := XMM()
	VMULSS(inv, los, t) // lo * inv
	z := GP32()
	VCVTSS2SI(t, z)
	NEGL(z)
	SUBL(U8(128), z)
	invz, zv := ZMM(), ZMM()
	VBROADCASTSS(inv, invz)
	VPBROADCASTD(z, zv)
	sum := ZMM()
	VPXORD(sum, sum, sum)
	for i, w := range v {
		VMULPS(invz, w, w)
		VCVTPS2DQ(w, w)
		VPADDD(zv, w, w)
		VPMAXSD_BCST(m128, w, w)
		VPMINSD_BCST(p127, w, w)
		VPADDD(w, sum, sum)
		VPMOVDB(w, Mem{Base: a, Disp: 16 * i})
	}
	ss := reduceZ(sum, func(o ...Op) { VPADDD(o...) })
	corr := GP32()
	VMOVD(ss, corr)
	SHLL(U8(7), corr)
	MOVL(corr, Mem{Base: tp})
	VMOVSS(step, Mem{Base: tp, Disp: 4})
	// nzs = (-step) * float32(z), as Go evaluates -scale * float32(z).
	zf := XMM()
	VCVTSI2SSL(z, zf, zf)
	ns := XMM()
	VMULSS(minus1, step, ns)
	VMULSS(zf, ns, ns)
	VMOVSS(ns, Mem{Base: tp, Disp: 8})
	JMP(LabelRef("quant_next"))

	Label("quant_zero")
	VMOVDQU32(zero, Mem{Base: a})
	MOVQ(U32(0), Mem{Base: tp})
	MOVL(U32(0), Mem{Base: tp, Disp: 8})

	Label("quant_next")
	ADDQ(U32(256), x)
	ADDQ(U32(256), sc)
	ADDQ(U8(64), a)
	ADDQ(tps, tp)
	DECQ(groups)
	JNZ(LabelRef("quant_group"))
	VZEROUPPER()
	RET()
}

// genGelu generates geluAVX512(x *float32, n int): gelu in place, n a
// positive multiple of 16, with erf32's rational approximation.
func genGelu() {
	TEXT("geluAVX512", NOSPLIT, "func(x *float32, n int)")
	Pragma("noescape")
	Doc("geluAVX512 applies gelu (x/2·(1+erf32(x/√2))) to n float32 in place; n must be a positive multiple of 16.")
	x := Load(Param("x"), GP64())
	n := Load(Param("n"), GP64())
	num := []float32{-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
		-7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02}
	den := []float32{-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
		-1.42647390514189e-02}
	numc := make([]Mem, len(num))
	for i, c := range num {
		numc[i] = f32c("gelu_p"+string(rune('0'+i)), c)
	}
	denc := make([]Mem, len(den))
	for i, c := range den {
		denc[i] = f32c("gelu_q"+string(rune('0'+i)), c)
	}
	rsqrt2, lo4, hi4, half := f32c("gelu_rsqrt2", float32(math.Sqrt2/2)), f32c("gelu_lo4", -4), f32c("gelu_hi4", 4), f32c("gelu_half", 0.5)
	Label("gelu_loop")
	v, e, e2, p, q := ZMM(), ZMM(), ZMM(), ZMM(), ZMM()
	VMOVUPS(Mem{Base: x}, v)
	VMULPS_BCST(rsqrt2, v, e)
	VMAXPS_BCST(lo4, e, e)
	VMINPS_BCST(hi4, e, e)
	VMULPS(e, e, e2)
	VBROADCASTSS(numc[0], p)
	for _, c := range numc[1:] {
		VFMADD213PS_BCST(c, e2, p) // p = p·e2 + c
	}
	VMULPS(e, p, p)
	VBROADCASTSS(denc[0], q)
	for _, c := range denc[1:] {
		VFMADD213PS_BCST(c, e2, q)
	}
	VDIVPS(q, p, p) // erf
	VADDPS_BCST(f32c("gelu_one", 1), p, p)
	VMULPS_BCST(half, v, v)
	VMULPS(p, v, v)
	VMOVUPS(v, Mem{Base: x})
	ADDQ(U8(64), x)
	SUBQ(U8(16), n)
	JNZ(LabelRef("gelu_loop"))
	VZEROUPPER()
	RET()
}

// genSoftmax generates softmaxAVX512(x *float32, n int): x = exp(x - max) /
// sum in place, n a positive multiple of 16; padding set to -Inf comes out
// as exactly 0. exp is Cephes' expf: x = n·ln2 + r, |r| <= ln2/2, e^r by a
// degree-6 polynomial, scaled by 2^n with VSCALEFPS (which also turns n =
// -Inf into 0).
func genSoftmax() {
	TEXT("softmaxAVX512", NOSPLIT, "func(x *float32, n int)")
	Pragma("noescape")
	Doc("softmaxAVX512 replaces x[:n] by its softmax in place; n must be a positive multiple of 16, -Inf entries give 0.")
	x := Load(Param("x"), GP64())
	n := Load(Param("n"), GP64())
	p, cnt := GP64(), GP64()
	m := ZMM()
	VBROADCASTSS(f32c("sm_minf", float32(math.Inf(-1))), m)
	MOVQ(x, p)
	MOVQ(n, cnt)
	Label("sm_max")
	VMAXPS(Mem{Base: p}, m, m)
	ADDQ(U8(64), p)
	SUBQ(U8(16), cnt)
	JNZ(LabelRef("sm_max"))
	ms := reduceZ(m, func(o ...Op) { VMAXPS(o...) })
	mz := ZMM()
	VBROADCASTSS(ms, mz)

	log2e, ln2hi, ln2lo := f32c("sm_log2e", float32(math.Log2E)), f32c("sm_ln2hi", 0.693359375), f32c("sm_ln2lo", -2.12194440e-4)
	xmin, nmin := f32c("sm_xmin", -87.33654), f32c("sm_nmin", -126)
	coef := []float32{1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1}
	cm := make([]Mem, len(coef))
	for i, c := range coef {
		cm[i] = f32c("sm_c"+string(rune('0'+i)), c)
	}
	one := f32c("sm_one", 1)
	sum := ZMM()
	VXORPS(sum, sum, sum)
	MOVQ(x, p)
	MOVQ(n, cnt)
	Label("sm_exp")
	t, k, kc, r, y := ZMM(), ZMM(), ZMM(), ZMM(), ZMM()
	VMOVUPS(Mem{Base: p}, t)
	VSUBPS(mz, t, t)
	VMULPS_BCST(log2e, t, k)
	VRNDSCALEPS(U8(0), k, k) // round to nearest even; -Inf stays
	VMAXPS_BCST(xmin, t, t)
	VMAXPS_BCST(nmin, k, kc)
	VFNMADD231PS_BCST(ln2hi, kc, t) // t -= kc·ln2hi
	VFNMADD231PS_BCST(ln2lo, kc, t)
	VMOVAPS(t, r)
	VBROADCASTSS(cm[0], y)
	for _, c := range cm[1:] {
		VFMADD213PS_BCST(c, r, y)
	}
	VMULPS(r, r, t)
	VFMADD213PS(r, t, y) // y = y·r² + r
	VADDPS_BCST(one, y, y)
	VSCALEFPS(k, y, y)
	VMOVUPS(y, Mem{Base: p})
	VADDPS(y, sum, sum)
	ADDQ(U8(64), p)
	SUBQ(U8(16), cnt)
	JNZ(LabelRef("sm_exp"))
	ss := reduceZ(sum, func(o ...Op) { VADDPS(o...) })
	inv := XMM()
	VMOVSS(one, inv)
	VDIVSS(ss, inv, inv)
	iz := ZMM()
	VBROADCASTSS(inv, iz)
	Label("sm_scale")
	VMULPS(Mem{Base: x}, iz, t)
	VMOVUPS(t, Mem{Base: x})
	ADDQ(U8(64), x)
	SUBQ(U8(16), n)
	JNZ(LabelRef("sm_scale"))
	VZEROUPPER()
	RET()
}

// genLayerNorm generates
//
//	addLayerNormAVX512(x, y, w, b *float32, n int, eps float32)
//
// x = LayerNorm(x + y)·w + b in place (y nil: no residual), n a positive
// multiple of 16: mean, then the biased variance of the differences (two
// passes, float32 lanes), as layerNorm.
func genLayerNorm() {
	TEXT("addLayerNormAVX512", NOSPLIT, "func(x, y, w, b *float32, n int, eps float32)")
	Pragma("noescape")
	Doc("addLayerNormAVX512 sets x[:n] = layerNorm(x + y) (y nil: x alone) with weight w and bias b; n must be a positive multiple of 16.")
	x := Load(Param("x"), GP64())
	y := Load(Param("y"), GP64())
	n := Load(Param("n"), GP64())
	p, q, cnt := GP64(), GP64(), GP64()
	sum, v := ZMM(), ZMM()
	VXORPS(sum, sum, sum)
	MOVQ(x, p)
	MOVQ(n, cnt)
	TESTQ(y, y)
	JZ(LabelRef("ln_sum"))
	MOVQ(y, q)
	Label("ln_add")
	VMOVUPS(Mem{Base: p}, v)
	VADDPS(Mem{Base: q}, v, v)
	VMOVUPS(v, Mem{Base: p})
	VADDPS(v, sum, sum)
	ADDQ(U8(64), p)
	ADDQ(U8(64), q)
	SUBQ(U8(16), cnt)
	JNZ(LabelRef("ln_add"))
	JMP(LabelRef("ln_mean"))
	Label("ln_sum")
	VADDPS(Mem{Base: p}, sum, sum)
	ADDQ(U8(64), p)
	SUBQ(U8(16), cnt)
	JNZ(LabelRef("ln_sum"))
	Label("ln_mean")
	ss := reduceZ(sum, func(o ...Op) { VADDPS(o...) })
	nf := XMM()
	VCVTSI2SSQ(n, nf, nf)
	VDIVSS(nf, ss, ss) // mean
	mean := ZMM()
	VBROADCASTSS(ss, mean)
	sq := ZMM()
	VXORPS(sq, sq, sq)
	MOVQ(x, p)
	MOVQ(n, cnt)
	Label("ln_var")
	VMOVUPS(Mem{Base: p}, v)
	VSUBPS(mean, v, v)
	VFMADD231PS(v, v, sq)
	ADDQ(U8(64), p)
	SUBQ(U8(16), cnt)
	JNZ(LabelRef("ln_var"))
	vs := reduceZ(sq, func(o ...Op) { VADDPS(o...) })
	VDIVSS(nf, vs, vs)
	eps := Load(Param("eps"), XMM())
	VADDSS(eps, vs, vs)
	VSQRTSS(vs, vs, vs)
	inv := XMM()
	VMOVSS(f32c("ln_one", 1), inv)
	VDIVSS(vs, inv, inv)
	iz := ZMM()
	VBROADCASTSS(inv, iz)
	w := Load(Param("w"), GP64())
	b := Load(Param("b"), GP64())
	Label("ln_norm")
	VMOVUPS(Mem{Base: x}, v)
	VSUBPS(mean, v, v)
	VMULPS(iz, v, v)
	VMOVUPS(Mem{Base: b}, sq)
	VFMADD231PS(Mem{Base: w}, v, sq) // (x-mean)·inv·w + b
	VMOVUPS(sq, Mem{Base: x})
	ADDQ(U8(64), x)
	ADDQ(U8(64), w)
	ADDQ(U8(64), b)
	SUBQ(U8(16), n)
	JNZ(LabelRef("ln_norm"))
	VZEROUPPER()
	RET()
}

// genScores generates
//
//	scoresAVX512(q *float32, kt *float32, ldk int, n int, dh int, out *float32)
//
// out[j] = Σ_i q[i]·kt[i*ldk+j] for j < n (n a positive multiple of 16):
// one query against n keys stored transposed (head size × keys), so the
// sums run along the keys, 16 at a time, with no horizontal reduction.
// Four accumulators split i (i mod 4) to overlap the multiply-adds'
// latency; dh must be a positive multiple of 4.
func genScores() {
	TEXT("scoresAVX512", NOSPLIT, "func(q *float32, kt *float32, ldk int, n int, dh int, out *float32)")
	Pragma("noescape")
	Doc("scoresAVX512 sets out[j] = Σ q[i]·kt[i*ldk+j] over i < dh for j < n; n must be a positive multiple of 16, dh of 4.")
	q := Load(Param("q"), GP64())
	kt := Load(Param("kt"), GP64())
	ldk := Load(Param("ldk"), GP64())
	n := Load(Param("n"), GP64())
	out := Load(Param("out"), GP64())
	SHLQ(U8(2), ldk)
	Label("sc_chunk")
	dh := Load(Param("dh"), GP64())
	qp, kp := GP64(), GP64()
	MOVQ(q, qp)
	MOVQ(kt, kp)
	acc := []VecVirtual{ZMM(), ZMM(), ZMM(), ZMM()}
	for _, a := range acc {
		VXORPS(a, a, a)
	}
	Label("sc_i")
	for r, a := range acc {
		b := ZMM()
		VBROADCASTSS(Mem{Base: qp, Disp: 4 * r}, b)
		VFMADD231PS(Mem{Base: kp}, b, a)
		ADDQ(ldk, kp)
	}
	ADDQ(U8(16), qp)
	SUBQ(U8(4), dh)
	JNZ(LabelRef("sc_i"))
	VADDPS(acc[1], acc[0], acc[0])
	VADDPS(acc[3], acc[2], acc[2])
	VADDPS(acc[2], acc[0], acc[0])
	VMOVUPS(acc[0], Mem{Base: out})
	ADDQ(U8(64), kt)
	ADDQ(U8(64), out)
	SUBQ(U8(16), n)
	JNZ(LabelRef("sc_chunk"))
	VZEROUPPER()
	RET()
}

// genContext generates
//
//	contextAVX512(p *float32, v *float32, ldv int, n int, dh int, out *float32)
//
// out[i] = Σ_s p[s]·v[s*ldv+i] for i < dh (a positive multiple of 16): the
// attention probabilities applied to the values, read in place (rows ldv
// float32 apart), 16 outputs at a time; two accumulators split s (s mod 2).
// n must be at least 1.
func genContext() {
	TEXT("contextAVX512", NOSPLIT, "func(p *float32, v *float32, ldv int, n int, dh int, out *float32)")
	Pragma("noescape")
	Doc("contextAVX512 sets out[i] = Σ p[s]·v[s*ldv+i] over s < n for i < dh; dh must be a positive multiple of 16, n positive.")
	p := Load(Param("p"), GP64())
	v := Load(Param("v"), GP64())
	ldv := Load(Param("ldv"), GP64())
	dh := Load(Param("dh"), GP64())
	out := Load(Param("out"), GP64())
	SHLQ(U8(2), ldv)
	Label("ctx_chunk")
	n := Load(Param("n"), GP64())
	pp, vp := GP64(), GP64()
	MOVQ(p, pp)
	MOVQ(v, vp)
	a0, a1 := ZMM(), ZMM()
	VXORPS(a0, a0, a0)
	VXORPS(a1, a1, a1)
	b := ZMM()
	Label("ctx_pair")
	CMPQ(n, U8(2))
	JL(LabelRef("ctx_last"))
	VBROADCASTSS(Mem{Base: pp}, b)
	VFMADD231PS(Mem{Base: vp}, b, a0)
	ADDQ(ldv, vp)
	VBROADCASTSS(Mem{Base: pp, Disp: 4}, b)
	VFMADD231PS(Mem{Base: vp}, b, a1)
	ADDQ(ldv, vp)
	ADDQ(U8(8), pp)
	SUBQ(U8(2), n)
	JMP(LabelRef("ctx_pair"))
	Label("ctx_last")
	TESTQ(n, n)
	JZ(LabelRef("ctx_store"))
	VBROADCASTSS(Mem{Base: pp}, b)
	VFMADD231PS(Mem{Base: vp}, b, a0)
	Label("ctx_store")
	VADDPS(a1, a0, a0)
	VMOVUPS(a0, Mem{Base: out})
	ADDQ(U8(64), v)
	ADDQ(U8(64), out)
	SUBQ(U8(16), dh)
	JNZ(LabelRef("ctx_chunk"))
	VZEROUPPER()
	RET()
}
