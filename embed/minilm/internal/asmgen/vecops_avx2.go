package main

import (
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The element-wise and attention steps for CPUs with AVX2 and FMA but not
// AVX-512, 8 float32 (or 4 float64) at a time. Unlike the AVX-512 ones
// (vecops.go), each performs exactly the operations of the pure-Go function
// it mirrors, in the same order per element (a multiply and an add where Go
// multiplies and adds, never a fused multiply-add that Go does not do, sums
// in Go's order), so its results are the Go function's bit for bit: the
// AVX2 encoder gives the same vectors as the pure-Go element-wise steps.
// Lanes hold independent elements; where Go sums along a row (softmax,
// layer norm), the lanes are added one by one in Go's order. Go itself fuses
// x*y+z into one rounding only when built with GOAMD64=v3 or above; these
// kernels match the default build (v1).
//
// These use at most 16 vector registers (VEX encodings cannot name more).

// f64c returns a float64 constant in memory, for broadcasts.
func f64c(name string, v float64) Mem {
	return ConstData(name, U64(math.Float64bits(v)))
}

// genGeluAVX2 generates geluAVX2(x *float32, n int): gelu in place, n a
// positive multiple of 8, as gelu and erf32 compute it.
func genGeluAVX2() {
	TEXT("geluAVX2", NOSPLIT, "func(x *float32, n int)")
	Pragma("noescape")
	Doc("geluAVX2 applies gelu to n float32 in place, bit for bit as gelu; n must be a positive multiple of 8.")
	x := Load(Param("x"), GP64())
	n := Load(Param("n"), GP64())
	// erf32's coefficients, as float32 constants (its code rounds them so).
	num := []float32{-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
		-7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02}
	den := []float32{-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
		-1.42647390514189e-02}
	numc := make([]Mem, len(num))
	for i, c := range num {
		numc[i] = f32c("gelu2_p"+string(rune('0'+i)), c)
	}
	denc := make([]Mem, len(den))
	for i, c := range den {
		denc[i] = f32c("gelu2_q"+string(rune('0'+i)), c)
	}
	sqrt2, half, lo4, hi4, one := f32c("gelu2_sqrt2", float32(math.Sqrt2)), f32c("gelu2_half", 0.5),
		f32c("gelu2_lo4", -4), f32c("gelu2_hi4", 4), f32c("gelu2_one", 1)
	Label("gelu2_loop")
	v, e, e2, p, q, c := YMM(), YMM(), YMM(), YMM(), YMM(), YMM()
	VMOVUPS(Mem{Base: x}, v)
	// e = min(max(v·√2/2, -4), 4): v·float32(√2), then /2 (exactly ·0.5)
	VBROADCASTSS(sqrt2, c)
	VMULPS(c, v, e)
	VBROADCASTSS(half, c)
	VMULPS(c, e, e)
	VBROADCASTSS(lo4, c)
	VMAXPS(c, e, e)
	VBROADCASTSS(hi4, c)
	VMINPS(c, e, e)
	VMULPS(e, e, e2)
	// p = x2·p + c, a multiply then an add, as Go (no fused multiply-add)
	VBROADCASTSS(numc[0], p)
	VMULPS(e2, p, p)
	for i, m := range numc[1:] {
		VBROADCASTSS(m, c)
		VADDPS(c, p, p)
		if i < len(numc)-2 {
			VMULPS(e2, p, p)
		}
	}
	VMULPS(e, p, p)
	VBROADCASTSS(denc[0], q)
	VMULPS(e2, q, q)
	for i, m := range denc[1:] {
		VBROADCASTSS(m, c)
		VADDPS(c, q, q)
		if i < len(denc)-2 {
			VMULPS(e2, q, q)
		}
	}
	VDIVPS(q, p, p) // erf
	VBROADCASTSS(one, c)
	VADDPS(c, p, p) // 1 + erf
	VBROADCASTSS(half, c)
	VMULPS(c, v, v) // 0.5·v
	VMULPS(p, v, v)
	VMOVUPS(v, Mem{Base: x})
	ADDQ(U8(32), x)
	SUBQ(U8(8), n)
	JNZ(LabelRef("gelu2_loop"))
	VZEROUPPER()
	RET()
}

// genVecMatAVX2 generates
//
//	vecMatAVX2(a *float32, m *float32, ld int, rows int, cols int, out *float32)
//
// out[j] = Σ_i a[i]·m[i*ld+j] for j < cols (a positive multiple of 8), i <
// rows (positive), summed over i in order from 0, a multiply and an add per
// term: both of the attention's products, scores (a query against the
// transposed keys) and attnContext (the probabilities against the values),
// bit for bit. A sum is one lane, so the parallelism is across columns: 32
// at a time (4 registers of independent sums), then the rest (8, 16 or 24)
// in one pass rather than 8 at a time, so that their sums' chains of
// dependent additions run side by side.
func genVecMatAVX2() {
	TEXT("vecMatAVX2", NOSPLIT, "func(a *float32, m *float32, ld int, rows int, cols int, out *float32)")
	Pragma("noescape")
	Doc("vecMatAVX2 sets out[j] = Σ a[i]·m[i*ld+j] over i < rows for j < cols, bit for bit as scores and attnContext; cols must be a positive multiple of 8, rows positive.")
	a := Load(Param("a"), GP64())
	m := Load(Param("m"), GP64())
	ld := Load(Param("ld"), GP64())
	cols := Load(Param("cols"), GP64())
	out := Load(Param("out"), GP64())
	SHLQ(U8(2), ld)
	for _, w := range []int{4, 3, 2, 1} {
		lbl := "vm2_" + string(rune('0'+w))
		Label(lbl + "_chunk")
		CMPQ(cols, U8(8*w))
		JL(LabelRef(lbl + "_done"))
		rows := Load(Param("rows"), GP64())
		ap, mp := GP64(), GP64()
		MOVQ(a, ap)
		MOVQ(m, mp)
		acc := make([]VecVirtual, w)
		for j := range acc {
			acc[j] = YMM()
			VXORPS(acc[j], acc[j], acc[j])
		}
		b, t := YMM(), YMM()
		Label(lbl + "_i")
		VBROADCASTSS(Mem{Base: ap}, b)
		for j := range acc {
			VMULPS(Mem{Base: mp, Disp: 32 * j}, b, t)
			VADDPS(t, acc[j], acc[j])
		}
		ADDQ(ld, mp)
		ADDQ(U8(4), ap)
		DECQ(rows)
		JNZ(LabelRef(lbl + "_i"))
		for j := range acc {
			VMOVUPS(acc[j], Mem{Base: out, Disp: 32 * j})
		}
		ADDQ(U8(32*w), m)
		ADDQ(U8(32*w), out)
		SUBQ(U8(8*w), cols)
		JMP(LabelRef(lbl + "_chunk"))
		Label(lbl + "_done")
	}
	VZEROUPPER()
	RET()
}

// reduceY folds the 8 lanes of y with op (VMINPS, VMAXPS or VPADDD) into
// lane 0 of the returned XMM register; y is clobbered. The lanes are
// combined in a tree, so op must not depend on order (min, max, integer
// add).
func reduceY(y VecVirtual, op func(...Op)) VecVirtual {
	x, u := XMM(), XMM()
	VEXTRACTF128(U8(1), y, x)
	op(x, y.AsX(), x)
	VPERMILPS(U8(0x4e), x, u)
	op(u, x, x)
	VPERMILPS(U8(0xb1), x, u)
	op(u, x, x)
	return x
}

// genQuantAVX2 generates
//
//	quantGroupsAVX2(x *float32, scale *float32, groups int, a *int8, tp *int32, tps int)
//
// quantGroupsAVX512 (vecops.go) in AVX2: the same operations, so the codes
// and records are quantizeActs' bit for bit (min and max do not depend on
// the order).
func genQuantAVX2() {
	TEXT("quantGroupsAVX2", NOSPLIT, "func(x *float32, scale *float32, groups int, a *int8, tp *int32, tps int)")
	Pragma("noescape")
	Doc("quantGroupsAVX2 quantizes one token's groups of 64 inputs as quantizeActs does (internal/asmgen/vecops_avx2.go).")
	x := Load(Param("x"), GP64())
	sc := Load(Param("scale"), GP64())
	groups := Load(Param("groups"), GP64())
	a := Load(Param("a"), GP64())
	tp := Load(Param("tp"), GP64())
	tps := Load(Param("tps"), GP64())
	c255, one, minus1, tiny := f32c("q2_c255", 255), f32c("q2_one", 1), f32c("q2_minus1", -1), uint32(math.Float32bits(1e-30))
	m128, p127 := ConstData("q2_m128", U32(0xffffff80)), ConstData("q2_p127", U32(127))
	perm := GLOBL("q2_perm", RODATA|NOPTR)
	for i, v := range []uint32{0, 4, 1, 5, 2, 6, 3, 7} {
		DATA(4*i, U32(v))
	}

	Label("quant2_group")
	v := make([]VecVirtual, 8)
	for i := range v {
		v[i] = YMM()
		VMOVUPS(Mem{Base: x, Disp: 32 * i}, v[i])
		VMULPS(Mem{Base: sc, Disp: 32 * i}, v[i], v[i])
	}
	lo, hi, zero := YMM(), YMM(), YMM()
	VXORPS(zero, zero, zero)
	VMINPS(zero, v[0], lo)
	VMAXPS(zero, v[0], hi)
	for _, w := range v[1:] {
		VMINPS(w, lo, lo)
		VMAXPS(w, hi, hi)
	}
	los := reduceY(lo, func(o ...Op) { VMINPS(o...) })
	his := reduceY(hi, func(o ...Op) { VMAXPS(o...) })
	step := XMM()
	VSUBSS(los, his, step) // hi - lo
	VDIVSS(c255, step, step)
	bits := GP32()
	VMOVD(step, bits)
	CMPL(bits, U32(tiny))
	JL(LabelRef("quant2_zero")) // also catches a negative step; NaN bits are above

	inv := XMM()
	VMOVSS(one, inv)
	VDIVSS(step, inv, inv) // 1 / step
	t := XMM()
	VMULSS(inv, los, t) // lo * inv
	z := GP32()
	VCVTSS2SI(t, z)
	NEGL(z)
	SUBL(U8(128), z)
	invy, zv, sum, lim := YMM(), YMM(), YMM(), YMM()
	VBROADCASTSS(inv, invy)
	zx := XMM()
	VMOVD(z, zx)
	VPBROADCASTD(zx, zv)
	VPXOR(sum, sum, sum)
	for _, w := range v {
		VMULPS(invy, w, w)
		VCVTPS2DQ(w, w)
		VPADDD(zv, w, w)
	}
	VPBROADCASTD(m128, lim)
	for _, w := range v {
		VPMAXSD(lim, w, w)
	}
	VPBROADCASTD(p127, lim)
	for _, w := range v {
		VPMINSD(lim, w, w)
		VPADDD(w, sum, sum)
	}
	// Pack 32 codes per register (in-lane packs, then a dword permutation
	// back to input order).
	pm := YMM()
	VMOVDQU(perm, pm)
	for h := 0; h < 2; h++ {
		w := v[4*h : 4*h+4]
		VPACKSSDW(w[1], w[0], w[0])
		VPACKSSDW(w[3], w[2], w[2])
		VPACKSSWB(w[2], w[0], w[0])
		VPERMD(w[0], pm, w[0])
		VMOVDQU(w[0], Mem{Base: a, Disp: 32 * h})
	}
	ss := reduceY(sum, func(o ...Op) { VPADDD(o...) })
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
	JMP(LabelRef("quant2_next"))

	Label("quant2_zero")
	VMOVDQU(zero, Mem{Base: a})
	VMOVDQU(zero, Mem{Base: a, Disp: 32})
	MOVQ(U32(0), Mem{Base: tp})
	MOVL(U32(0), Mem{Base: tp, Disp: 8})

	Label("quant2_next")
	ADDQ(U32(256), x)
	ADDQ(U32(256), sc)
	ADDQ(U8(64), a)
	ADDQ(tps, tp)
	DECQ(groups)
	JNZ(LabelRef("quant2_group"))
	VZEROUPPER()
	RET()
}

// genWidenAVX2 generates widenAVX2(a *int8, a16 *int16, n int): a16[i] =
// int16(a[i]) for i < n, a positive multiple of 16 (the AVX2 int8 kernels'
// operand).
func genWidenAVX2() {
	TEXT("widenAVX2", NOSPLIT, "func(a *int8, a16 *int16, n int)")
	Pragma("noescape")
	Doc("widenAVX2 sign-extends n int8 to int16; n must be a positive multiple of 16.")
	a := Load(Param("a"), GP64())
	d := Load(Param("a16"), GP64())
	n := Load(Param("n"), GP64())
	w := YMM()
	Label("widen2_loop")
	VPMOVSXBW(Mem{Base: a}, w)
	VMOVDQU(w, Mem{Base: d})
	ADDQ(U8(16), a)
	ADDQ(U8(32), d)
	SUBQ(U8(16), n)
	JNZ(LabelRef("widen2_loop"))
	VZEROUPPER()
	RET()
}

// genRangeAVX2 generates
//
//	rangeAVX2(x *float32, n int) (lo, hi float32, finite bool)
//
// the least and greatest of x[:n] (n a positive multiple of 8) and whether
// all are finite (Σ(x-x) is 0, not NaN): the softmax's checks.
func genRangeAVX2() {
	TEXT("rangeAVX2", NOSPLIT, "func(x *float32, n int) (lo, hi float32, finite bool)")
	Pragma("noescape")
	Doc("rangeAVX2 returns the least and greatest of x[:n] and whether all are finite; n must be a positive multiple of 8.")
	x := Load(Param("x"), GP64())
	n := Load(Param("n"), GP64())
	lo, hi, bad, v := YMM(), YMM(), YMM(), YMM()
	VMOVUPS(Mem{Base: x}, lo)
	VMOVUPS(lo, hi)
	VXORPS(bad, bad, bad)
	Label("range2_loop")
	VMOVUPS(Mem{Base: x}, v)
	VMINPS(v, lo, lo)
	VMAXPS(v, hi, hi)
	VSUBPS(v, v, v) // 0, or NaN for ±Inf and NaN
	VADDPS(v, bad, bad)
	ADDQ(U8(32), x)
	SUBQ(U8(8), n)
	JNZ(LabelRef("range2_loop"))
	los := reduceY(lo, func(o ...Op) { VMINPS(o...) })
	his := reduceY(hi, func(o ...Op) { VMAXPS(o...) })
	bs := reduceY(bad, func(o ...Op) { VADDPS(o...) })
	VZEROUPPER() // before the SSE stores Store emits
	Store(los, ReturnIndex(0))
	Store(his, ReturnIndex(1))
	z := XMM()
	VXORPS(z, z, z)
	VUCOMISS(z, bs)
	ok, np := GP8(), GP8()
	SETEQ(ok) // equal, or unordered
	SETPC(np) // not unordered
	ANDB(np, ok)
	Store(ok, ReturnIndex(2))
	RET()
}

// genExpSumAVX2 generates
//
//	expSumAVX2(x *float32, n int, mx float32) float64
//
// the body of softmax for x[:n] (n a positive multiple of 8): x[i] =
// float32(e) for e = math.Exp(float64(x[i]-mx)), returning the float64 sum
// of the e in order from 0. The exponential is Go's amd64 assembly one
// (math/exp_amd64.s, its fused multiply-add path, which math takes on every
// CPU with FMA), lane by lane, so it gives math.Exp's bits; it is that
// code's normal path only: every x[i]-mx must be finite and at least -708
// (the caller checks), so that 2^k is a normal number and no special case
// applies.
func genExpSumAVX2() {
	TEXT("expSumAVX2", NOSPLIT, "func(x *float32, n int, mx float32) float64")
	Pragma("noescape")
	Doc("expSumAVX2 sets x[i] = float32(math.Exp(float64(x[i]-mx))) for i < n and returns the sum in order of the float64 exponentials; n must be a positive multiple of 8 and every x[i]-mx in [-708, 0].")
	x := Load(Param("x"), GP64())
	n := Load(Param("n"), GP64())
	mxs := Load(Param("mx"), XMM())
	mx := YMM()
	VBROADCASTSS(mxs, mx)
	sum := XMM()
	VXORPD(sum, sum, sum)
	log2e, ln2u, ln2l := f64c("exp2_log2e", 1.4426950408889634073599246810018920),
		f64c("exp2_ln2u", 0.69314718055966295651160180568695068359375),
		f64c("exp2_ln2l", 0.28235290563031577122588448175013436025525412068e-12)
	c := []float64{2.4801587301587301587e-5, 1.9841269841269841270e-4, 1.3888888888888888889e-3,
		8.3333333333333333333e-3, 4.1666666666666666667e-2, 1.6666666666666666667e-1, 0.5, 1.0}
	cm := make([]Mem, len(c))
	for i, v := range c {
		cm[i] = f64c("exp2_c"+string(rune('0'+i)), v)
	}
	sixteenth, two, one := f64c("exp2_sixteenth", 0.0625), f64c("exp2_two", 2), f64c("exp2_one", 1)
	bias := ConstData("exp2_bias", U32(0x3ff))

	Label("exp2_loop")
	v := YMM()
	VMOVUPS(Mem{Base: x}, v)
	VSUBPS(mx, v, v)
	res := make([]VecVirtual, 2)
	for h := range res {
		d, t, k, p, s := YMM(), YMM(), YMM(), YMM(), YMM()
		if h == 0 {
			VCVTPS2PD(v.AsX(), d)
		} else {
			hx := XMM()
			VEXTRACTF128(U8(1), v, hx)
			VCVTPS2PD(hx, d)
		}
		// k = rne(d·log2e); d -= k·ln2u; d -= k·ln2l; d /= 16
		VBROADCASTSD(log2e, t)
		VMULPD(d, t, t)
		ki := XMM()
		VCVTPD2DQY(t, ki)
		VCVTDQ2PD(ki, k)
		VBROADCASTSD(ln2u, t)
		VFNMADD231PD(t, k, d)
		VBROADCASTSD(ln2l, t)
		VFNMADD231PD(t, k, d)
		VBROADCASTSD(sixteenth, t)
		VMULPD(t, d, d)
		// Taylor series, as exp_amd64.s's avxfma path
		VBROADCASTSD(cm[0], p)
		for _, m := range cm[1:] {
			VBROADCASTSD(m, t)
			VFMADD213PD(t, d, p) // p = d·p + c
		}
		VMULPD(p, d, d)
		VBROADCASTSD(two, t)
		for i := 0; i < 3; i++ {
			VADDPD(t, d, p) // p = d + 2
			VMULPD(p, d, d)
		}
		VADDPD(t, d, p)
		VBROADCASTSD(one, t)
		VFMADD213PD(t, p, d) // d = p·d + 1
		// · 2^k
		bx := XMM()
		VPBROADCASTD(bias, bx)
		VPADDD(bx, ki, ki)
		VPMOVZXDQ(ki, s)
		VPSLLQ(U8(52), s, s)
		VMULPD(s, d, d)
		res[h] = d
	}
	// The sum, lane by lane in order.
	for _, r := range res {
		addLanes(r, sum)
	}
	lo, hi := XMM(), XMM()
	VCVTPD2PSY(res[0], lo)
	VCVTPD2PSY(res[1], hi)
	VINSERTF128(U8(1), hi, lo.AsY(), v)
	VMOVUPS(v, Mem{Base: x})
	ADDQ(U8(32), x)
	SUBQ(U8(8), n)
	JNZ(LabelRef("exp2_loop"))
	VZEROUPPER()
	Store(sum, ReturnIndex(0))
	RET()
}

// genScaleAVX2 generates scaleAVX2(x *float32, n int, s float32): x[i] *= s
// for i < n, a positive multiple of 8.
func genScaleAVX2() {
	TEXT("scaleAVX2", NOSPLIT, "func(x *float32, n int, s float32)")
	Pragma("noescape")
	Doc("scaleAVX2 multiplies x[:n] by s; n must be a positive multiple of 8.")
	x := Load(Param("x"), GP64())
	n := Load(Param("n"), GP64())
	ss := Load(Param("s"), XMM())
	s, v := YMM(), YMM()
	VBROADCASTSS(ss, s)
	Label("scale2_loop")
	VMULPS(Mem{Base: x}, s, v)
	VMOVUPS(v, Mem{Base: x})
	ADDQ(U8(32), x)
	SUBQ(U8(8), n)
	JNZ(LabelRef("scale2_loop"))
	VZEROUPPER()
	RET()
}

// addLanes adds the 4 float64 lanes of r to sum one by one, in order.
func addLanes(r VecVirtual, sum VecVirtual) {
	u, hx := XMM(), XMM()
	VADDSD(r.AsX(), sum, sum)
	VPERMILPD(U8(1), r.AsX(), u)
	VADDSD(u, sum, sum)
	VEXTRACTF128(U8(1), r, hx)
	VADDSD(hx, sum, sum)
	VPERMILPD(U8(1), hx, u)
	VADDSD(u, sum, sum)
}

// widenPS converts the 8 float32 of v to float64, lanes 0-3 and 4-7.
func widenPS(v VecVirtual) (lo, hi VecVirtual) {
	lo, hi = YMM(), YMM()
	hx := XMM()
	VCVTPS2PD(v.AsX(), lo)
	VEXTRACTF128(U8(1), v, hx)
	VCVTPS2PD(hx, hi)
	return lo, hi
}

// genLayerNormAVX2 generates
//
//	addLayerNormAVX2(x, y, w, b *float32, n int, eps float32)
//
// addLayerNorm (y nil: no residual) for n a positive multiple of 8, bit
// for bit: x += y in float32, then layerNorm's float64 mean and variance,
// each a sum in order (one lane at a time: this part runs at the speed of
// the additions' latency, as in Go), and the normalisation 8 at a time.
func genLayerNormAVX2() {
	TEXT("addLayerNormAVX2", NOSPLIT, "func(x, y, w, b *float32, n int, eps float32)")
	Pragma("noescape")
	Doc("addLayerNormAVX2 sets x[:n] = layerNorm(x + y) (y nil: x alone) with weight w and bias b, bit for bit as addLayerNorm; n must be a positive multiple of 8.")
	x := Load(Param("x"), GP64())
	y := Load(Param("y"), GP64())
	n := Load(Param("n"), GP64())
	p, cnt := GP64(), GP64()
	sum := XMM()
	VXORPD(sum, sum, sum)
	MOVQ(x, p)
	MOVQ(n, cnt)
	Label("ln2_sum")
	v := YMM()
	VMOVUPS(Mem{Base: p}, v)
	TESTQ(y, y)
	JZ(LabelRef("ln2_noy"))
	VADDPS(Mem{Base: y}, v, v)
	VMOVUPS(v, Mem{Base: p})
	ADDQ(U8(32), y)
	Label("ln2_noy")
	lo, hi := widenPS(v)
	addLanes(lo, sum)
	addLanes(hi, sum)
	ADDQ(U8(32), p)
	SUBQ(U8(8), cnt)
	JNZ(LabelRef("ln2_sum"))

	nf := XMM()
	VCVTSI2SDQ(n, nf, nf)
	VDIVSD(nf, sum, sum) // mean
	mean := YMM()
	VBROADCASTSD(sum, mean)
	ss := XMM()
	VXORPD(ss, ss, ss)
	MOVQ(x, p)
	MOVQ(n, cnt)
	Label("ln2_var")
	VMOVUPS(Mem{Base: p}, v)
	lo, hi = widenPS(v)
	for _, d := range []VecVirtual{lo, hi} {
		VSUBPD(mean, d, d)
		VMULPD(d, d, d)
		addLanes(d, ss)
	}
	ADDQ(U8(32), p)
	SUBQ(U8(8), cnt)
	JNZ(LabelRef("ln2_var"))

	// inv = 1 / sqrt(ss/n + float64(eps))
	VDIVSD(nf, ss, ss)
	eps := Load(Param("eps"), XMM())
	VCVTSS2SD(eps, eps, eps)
	VADDSD(eps, ss, ss)
	VSQRTSD(ss, ss, ss)
	inv := XMM()
	VMOVSD(f64c("ln2_one", 1), inv)
	VDIVSD(ss, inv, inv)
	invy := YMM()
	VBROADCASTSD(inv, invy)
	w := Load(Param("w"), GP64())
	b := Load(Param("b"), GP64())
	Label("ln2_norm")
	VMOVUPS(Mem{Base: x}, v)
	lo, hi = widenPS(v)
	for _, d := range []VecVirtual{lo, hi} {
		VSUBPD(mean, d, d)
		VMULPD(invy, d, d)
	}
	fl, fh := XMM(), XMM()
	VCVTPD2PSY(lo, fl)
	VCVTPD2PSY(hi, fh)
	VINSERTF128(U8(1), fh, fl.AsY(), v)
	VMULPS(Mem{Base: w}, v, v)
	VADDPS(Mem{Base: b}, v, v)
	VMOVUPS(v, Mem{Base: x})
	ADDQ(U8(32), x)
	ADDQ(U8(32), w)
	ADDQ(U8(32), b)
	SUBQ(U8(8), n)
	JNZ(LabelRef("ln2_norm"))
	VZEROUPPER()
	RET()
}
