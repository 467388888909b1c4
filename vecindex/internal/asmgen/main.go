// Command asmgen generates vecindex/dot_amd64.s and its Go stubs
// vecindex/dot_amd64.go with avo (github.com/mmcloughlin/avo).
//
// It is its own module so that avo stays out of the product's go.mod. Run it
// through go generate in vecindex (see vecindex/gen.go):
//
//	go run -C internal/asmgen . -out ../../dot_amd64.s -stubs ../../dot_amd64.go -pkg vecindex
//
// Every kernel is exact for all int8 inputs, -128*-128 included: bytes are
// sign-extended to int16 (VPMOVSXBW), multiplied and pair-summed into int32
// (VPMADDWD: |a0*b0 + a1*b1| <= 2*16384, no saturation) and accumulated with
// wrapping int32 adds (VPADDD). Wrapping addition is associative, so the
// result equals the sequential int32 sum of the pure-Go kernel bit for bit,
// whatever the lane order.
//
// Kernels, all taking lengths that are multiples of 16 (callers guarantee it):
//
//	dotAVX2(a, b []int8) int32                        len(a) % 16 == 0, len(b) >= len(a)
//	dotAVX512(a, b []int8) int32                      same; needs AVX512F and AVX512BW
//	dotBatchAVX2(q, data []int8, dim int, out []int32)  out[i] = q[:dim] · data[i*dim:(i+1)*dim]
//	dotBatchAVX512(q, data []int8, dim int, out []int32)
//	dotGatherAVX2(q, data []int8, dim int, idx, out []int32)  out[i] = q[:dim] · data[idx[i]*dim:(idx[i]+1)*dim]
//	dotGatherAVX512(q, data []int8, dim int, idx, out []int32)
//	axpyInt8AVX2(c float32, x []int8, y []float32)     y[i] += c*float32(x[i]), len(x) % 8 == 0
//	sketchBatchAVX2(q []int8, data []byte, rowBytes int, out []int32)   the two-stage scan's first stage
//	sketchBatchAVX512(q []int8, data []byte, rowBytes int, out []int32)
//
// The sketch kernels multiply unsigned 4-bit codes (0..15) by signed query
// bytes with VPMADDUBSW: a pair sum is at most 2*15*128 = 3840 in magnitude,
// the sum of the low- and high-nibble pairs 7680, so the int16 lanes never
// saturate; VPMADDWD by ones widens them to int32. Exact for all inputs.
//
// The batch kernels score four vectors per pass so that each sign-extended
// query chunk is loaded once for four data chunks, then one vector at a time
// for the remainder.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("amd64")
	genDot(false)
	genDot(true)
	genBatch(false, false)
	genBatch(true, false)
	genBatch(false, true)
	genBatch(true, true)
	genAxpy()
	genSketch(false)
	genSketch(true)
	Generate()
}

// width describes one vector width: AVX2 works on 16 bytes (16 int16 in a
// YMM register) per chunk, AVX-512 on 32 bytes (32 int16 in a ZMM register).
type width struct {
	name  string
	chunk int // data bytes per chunk
	vec   func() VecVirtual
}

func widthOf(avx512 bool) width {
	if avx512 {
		return width{name: "AVX512", chunk: 32, vec: ZMM}
	}
	return width{name: "AVX2", chunk: 16, vec: YMM}
}

// zero clears a vector register. VPXOR on the YMM alias clears the whole ZMM
// register too (VEX writes zero the upper bits).
func zero(v VecVirtual) {
	y := v.AsY()
	VPXOR(y, y, y)
}

// madd adds the pairwise int16 products of the sign-extended chunks at qm and
// dm into acc. With half set, it works on 16 bytes in the YMM aliases (the
// 16-byte tail of an AVX-512 loop); VEX writes zero the upper half of the ZMM
// registers, so the ZMM add that follows adds zeros there.
func madd(w width, qm, dm Mem, acc VecVirtual, half bool) {
	q, d := w.vec(), w.vec()
	if half || w.chunk == 16 {
		VPMOVSXBW(qm, q.AsY())
		VPMOVSXBW(dm, d.AsY())
		VPMADDWD(d.AsY(), q.AsY(), q.AsY())
	} else {
		VPMOVSXBW(qm, q)
		VPMOVSXBW(dm, d)
		VPMADDWD(d, q, q)
	}
	VPADDD(q, acc, acc)
}

// foldY folds the int32 lanes of a ZMM accumulator into its YMM alias.
func foldY(w width, acc VecVirtual) {
	if w.chunk != 32 {
		return
	}
	hi := YMM()
	VEXTRACTI64X4(U8(1), acc, hi)
	VPADDD(hi, acc.AsY(), acc.AsY())
}

// reduce1 returns the sum of the int32 lanes of acc in a 32-bit register.
func reduce1(w width, acc VecVirtual) Register {
	foldY(w, acc)
	x, t := XMM(), XMM()
	VEXTRACTI128(U8(1), acc.AsY(), x)
	VPADDD(acc.AsX(), x, x)
	VPSHUFD(U8(0x4e), x, t)
	VPADDD(t, x, x)
	VPSHUFD(U8(0xb1), x, t)
	VPADDD(t, x, x)
	r := GP32()
	VMOVD(x, r)
	return r
}

// reduce4 stores the lane sums of four accumulators as four int32 at dst.
func reduce4(w width, acc [4]VecVirtual, dst Mem) {
	for _, a := range acc {
		foldY(w, a)
	}
	// Per 128-bit lane: t0 = [a0+a1, a2+a3, b0+b1, b2+b3], t1 likewise for
	// c and d, then t0 = [a, b, c, d] partial sums of that lane.
	t0, t1 := YMM(), YMM()
	VPHADDD(acc[1].AsY(), acc[0].AsY(), t0)
	VPHADDD(acc[3].AsY(), acc[2].AsY(), t1)
	VPHADDD(t1, t0, t0)
	x := XMM()
	VEXTRACTI128(U8(1), t0, x)
	VPADDD(t0.AsX(), x, x)
	VMOVDQU(x, dst)
}

func genDot(avx512 bool) {
	w := widthOf(avx512)
	name := "dot" + w.name
	TEXT(name, NOSPLIT, "func(a, b []int8) int32")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s returns a·b over len(a) bytes; len(a) must be a multiple of 16 and len(b) >= len(a).", name))
	a := Load(Param("a").Base(), GP64())
	b := Load(Param("b").Base(), GP64())
	n := Load(Param("a").Len(), GP64())
	acc := [2]VecVirtual{w.vec(), w.vec()}
	zero(acc[0])
	zero(acc[1])

	// Four chunks per iteration into two accumulators.
	block := 4 * w.chunk
	Label(name + "_block")
	CMPQ(n, U32(block))
	JL(LabelRef(name + "_chunk"))
	for i := 0; i < 4; i++ {
		madd(w, Mem{Base: a, Disp: i * w.chunk}, Mem{Base: b, Disp: i * w.chunk}, acc[i%2], false)
	}
	ADDQ(U32(block), a)
	ADDQ(U32(block), b)
	SUBQ(U32(block), n)
	JMP(LabelRef(name + "_block"))

	Label(name + "_chunk")
	CMPQ(n, U32(w.chunk))
	JL(LabelRef(name + "_tail"))
	madd(w, Mem{Base: a}, Mem{Base: b}, acc[0], false)
	ADDQ(U32(w.chunk), a)
	ADDQ(U32(w.chunk), b)
	SUBQ(U32(w.chunk), n)
	JMP(LabelRef(name + "_chunk"))

	Label(name + "_tail")
	if w.chunk == 32 {
		// At most 16 bytes remain.
		TESTQ(n, n)
		JZ(LabelRef(name + "_done"))
		madd(w, Mem{Base: a}, Mem{Base: b}, acc[1], true)
	}
	Label(name + "_done")
	VPADDD(acc[1], acc[0], acc[0])
	r := reduce1(w, acc[0])
	Store(r, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// genBatch writes dotBatchAVX2/AVX512 or, with gather, dotGatherAVX2/AVX512,
// which scores the vectors listed in idx instead of consecutive ones: the
// two-stage scan's rescoring of scattered rows, four in flight at a time.
func genBatch(avx512, gather bool) {
	w := widthOf(avx512)
	name := "dotBatch" + w.name
	var data, idxp Register
	if gather {
		name = "dotGather" + w.name
		TEXT(name, NOSPLIT, "func(q, data []int8, dim int, idx []int32, out []int32)")
		Pragma("noescape")
		Doc(fmt.Sprintf("%s sets out[i] = q[:dim]·data[idx[i]*dim:(idx[i]+1)*dim] for every i < len(out); dim must be a positive multiple of 16, len(q) >= dim, len(idx) >= len(out) and every idx[i] >= 0 with (idx[i]+1)*dim <= len(data).", name))
	} else {
		TEXT(name, NOSPLIT, "func(q, data []int8, dim int, out []int32)")
		Pragma("noescape")
		Doc(fmt.Sprintf("%s sets out[i] = q[:dim]·data[i*dim:(i+1)*dim] for every i < len(out); dim must be a positive multiple of 16, len(q) >= dim and len(data) >= len(out)*dim.", name))
	}
	q := Load(Param("q").Base(), GP64())
	p0 := Load(Param("data").Base(), GP64())
	dim := Load(Param("dim"), GP64())
	outp := Load(Param("out").Base(), GP64())
	n := Load(Param("out").Len(), GP64())
	if gather {
		data = p0
		p0 = GP64()
		idxp = Load(Param("idx").Base(), GP64())
	}
	// rowPtr sets p to data + idx[i]*dim for the gather kernels.
	rowPtr := func(p Register, i int) {
		MOVLQSX(Mem{Base: idxp, Disp: 4 * i}, p)
		IMULQ(dim, p)
		ADDQ(data, p)
	}

	// full is dim rounded down to whole chunks; with AVX-512 a 16-byte tail
	// may remain.
	full := GP64()
	MOVQ(dim, full)
	if w.chunk == 32 {
		ANDQ(I32(-32), full)
	}
	p1, p2, p3 := GP64(), GP64(), GP64()
	step := GP64()
	if !gather {
		MOVQ(p0, p1)
		ADDQ(dim, p1)
		MOVQ(p1, p2)
		ADDQ(dim, p2)
		MOVQ(p2, p3)
		ADDQ(dim, p3)
		MOVQ(dim, step)
		SHLQ(U8(2), step)
	}
	off := GP64()
	ptrs := [4]Register{p0, p1, p2, p3}

	// Four vectors per pass.
	Label(name + "_block")
	CMPQ(n, U32(4))
	JL(LabelRef(name + "_single"))
	if gather {
		for j, p := range ptrs {
			rowPtr(p, j)
		}
	}
	var acc [4]VecVirtual
	for j := range acc {
		acc[j] = w.vec()
		zero(acc[j])
	}
	XORQ(off, off)
	Label(name + "_block_inner")
	CMPQ(off, full)
	JGE(LabelRef(name + "_block_tail"))
	qv := w.vec()
	VPMOVSXBW(Mem{Base: q, Index: off, Scale: 1}, qv)
	for j := range acc {
		d := w.vec()
		VPMOVSXBW(Mem{Base: ptrs[j], Index: off, Scale: 1}, d)
		VPMADDWD(qv, d, d)
		VPADDD(d, acc[j], acc[j])
	}
	ADDQ(U32(w.chunk), off)
	JMP(LabelRef(name + "_block_inner"))
	Label(name + "_block_tail")
	if w.chunk == 32 {
		CMPQ(off, dim)
		JGE(LabelRef(name + "_block_store"))
		qy := YMM()
		VPMOVSXBW(Mem{Base: q, Index: off, Scale: 1}, qy)
		for j := range acc {
			d := w.vec()
			VPMOVSXBW(Mem{Base: ptrs[j], Index: off, Scale: 1}, d.AsY())
			VPMADDWD(qy, d.AsY(), d.AsY())
			VPADDD(d, acc[j], acc[j])
		}
	}
	Label(name + "_block_store")
	reduce4(w, acc, Mem{Base: outp})
	if gather {
		ADDQ(U32(16), idxp)
	} else {
		for _, p := range ptrs {
			ADDQ(step, p)
		}
	}
	ADDQ(U32(16), outp)
	SUBQ(U32(4), n)
	JMP(LabelRef(name + "_block"))

	// The remaining 0..3 vectors one at a time.
	Label(name + "_single")
	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
	if gather {
		rowPtr(p0, 0)
	}
	a := w.vec()
	zero(a)
	XORQ(off, off)
	Label(name + "_single_inner")
	CMPQ(off, full)
	JGE(LabelRef(name + "_single_tail"))
	madd(w, Mem{Base: q, Index: off, Scale: 1}, Mem{Base: p0, Index: off, Scale: 1}, a, false)
	ADDQ(U32(w.chunk), off)
	JMP(LabelRef(name + "_single_inner"))
	Label(name + "_single_tail")
	if w.chunk == 32 {
		CMPQ(off, dim)
		JGE(LabelRef(name + "_single_store"))
		madd(w, Mem{Base: q, Index: off, Scale: 1}, Mem{Base: p0, Index: off, Scale: 1}, a, true)
	}
	Label(name + "_single_store")
	r := reduce1(w, a)
	MOVL(r, Mem{Base: outp})
	if gather {
		ADDQ(U32(4), idxp)
	} else {
		ADDQ(dim, p0)
	}
	ADDQ(U32(4), outp)
	DECQ(n)
	JMP(LabelRef(name + "_single"))

	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// genAxpy writes axpyInt8AVX2, the inner loop of the GloVe embedder: add a
// scaled int8 row to a float32 accumulator. Each lane does what the Go code
// does, float32(x) exactly, then one rounded multiply (VMULPS) and one
// rounded add (VADDPS), never fused, so the results are bit-identical.
func genAxpy() {
	name := "axpyInt8AVX2"
	TEXT(name, NOSPLIT, "func(c float32, x []int8, y []float32)")
	Pragma("noescape")
	Doc(name + " sets y[i] += c*float32(x[i]) for i < len(x), rounding the product to float32 before the add; len(x) must be a multiple of 8 and len(y) >= len(x).")
	cv := YMM()
	VBROADCASTSS(NewParamAddr("c", 0), cv)
	x := Load(Param("x").Base(), GP64())
	y := Load(Param("y").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	Label(name + "_loop")
	CMPQ(n, U32(8))
	JL(LabelRef(name + "_done"))
	v := YMM()
	VPMOVSXBD(Mem{Base: x}, v)
	VCVTDQ2PS(v, v)
	VMULPS(cv, v, v)
	VADDPS(Mem{Base: y}, v, v)
	VMOVUPS(v, Mem{Base: y})
	ADDQ(U32(8), x)
	ADDQ(U32(32), y)
	SUBQ(U32(8), n)
	JMP(LabelRef(name + "_loop"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// sketchStep is one load of packed codes within a 64-byte sketch block: the
// block's byte offset of the load and the query offsets of its low and high
// nibbles (the block holds element i in the low nibble of byte i and element
// 64+i in the high nibble, so the query advances twice as fast as the row).
type sketchStep struct{ row, qLo, qHi int }

// genSketch writes sketchBatchAVX2 or sketchBatchAVX512: out[i] = the sum of
// q[j]*u[j] over the codes u of sketch row i (see vecindex/sketch.go), four
// rows per pass sharing the query loads, then one at a time.
func genSketch(avx512 bool) {
	w := widthOf(avx512)
	name := "sketchBatch" + w.name
	TEXT(name, NOSPLIT, "func(q []int8, data []byte, rowBytes int, out []int32)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets out[i] to the sum of q[j]*u[j] over the 4-bit codes u of sketch row data[i*rowBytes:(i+1)*rowBytes]; rowBytes must be a positive multiple of 64, len(q) >= 2*rowBytes and len(data) >= len(out)*rowBytes.", name))
	steps := []sketchStep{{0, 0, 64}}
	if !avx512 {
		steps = []sketchStep{{0, 0, 64}, {32, 32, 96}}
	}
	q := Load(Param("q").Base(), GP64())
	p0 := Load(Param("data").Base(), GP64())
	rb := Load(Param("rowBytes"), GP64())
	outp := Load(Param("out").Base(), GP64())
	n := Load(Param("out").Len(), GP64())

	mask, ones := w.vec(), w.vec()
	c := GP32()
	MOVL(U32(0x0f0f0f0f), c)
	broadcast(w, c, mask)
	MOVL(U32(0x00010001), c)
	broadcast(w, c, ones)

	p1, p2, p3 := GP64(), GP64(), GP64()
	MOVQ(p0, p1)
	ADDQ(rb, p1)
	MOVQ(p1, p2)
	ADDQ(rb, p2)
	MOVQ(p2, p3)
	ADDQ(rb, p3)
	step := GP64()
	MOVQ(rb, step)
	SHLQ(U8(2), step)
	off := GP64()
	ptrs := [4]Register{p0, p1, p2, p3}

	// madd adds row ptr's products for one step at off into acc.
	madd := func(ptr Register, s sketchStep, qlo, qhi VecVirtual, acc VecVirtual) {
		v, h := w.vec(), w.vec()
		loadVec(w, Mem{Base: ptr, Index: off, Scale: 1, Disp: s.row}, v)
		VPSRLW(U8(4), v, h)
		and(w, mask, v, v)
		and(w, mask, h, h)
		VPMADDUBSW(qlo, v, v)
		VPMADDUBSW(qhi, h, h)
		VPADDW(h, v, v)
		VPMADDWD(ones, v, v)
		VPADDD(v, acc, acc)
	}
	loadQ := func(s sketchStep) (VecVirtual, VecVirtual) {
		qlo, qhi := w.vec(), w.vec()
		loadVec(w, Mem{Base: q, Index: off, Scale: 2, Disp: s.qLo}, qlo)
		loadVec(w, Mem{Base: q, Index: off, Scale: 2, Disp: s.qHi}, qhi)
		return qlo, qhi
	}

	Label(name + "_block")
	CMPQ(n, U32(4))
	JL(LabelRef(name + "_single"))
	var acc [4]VecVirtual
	for j := range acc {
		acc[j] = w.vec()
		zero(acc[j])
	}
	XORQ(off, off)
	Label(name + "_block_inner")
	for _, s := range steps {
		qlo, qhi := loadQ(s)
		for j := range acc {
			madd(ptrs[j], s, qlo, qhi, acc[j])
		}
	}
	ADDQ(U32(64), off)
	CMPQ(off, rb)
	JL(LabelRef(name + "_block_inner"))
	reduce4(w, acc, Mem{Base: outp})
	for _, p := range ptrs {
		ADDQ(step, p)
	}
	ADDQ(U32(16), outp)
	SUBQ(U32(4), n)
	JMP(LabelRef(name + "_block"))

	Label(name + "_single")
	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
	a := w.vec()
	zero(a)
	XORQ(off, off)
	Label(name + "_single_inner")
	for _, s := range steps {
		qlo, qhi := loadQ(s)
		madd(p0, s, qlo, qhi, a)
	}
	ADDQ(U32(64), off)
	CMPQ(off, rb)
	JL(LabelRef(name + "_single_inner"))
	r := reduce1(w, a)
	MOVL(r, Mem{Base: outp})
	ADDQ(rb, p0)
	ADDQ(U32(4), outp)
	DECQ(n)
	JMP(LabelRef(name + "_single"))

	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// broadcast fills every 32-bit lane of v with the value of r.
func broadcast(w width, r Register, v VecVirtual) {
	if w.chunk == 32 {
		VPBROADCASTD(r, v)
		return
	}
	x := XMM()
	VMOVD(r, x)
	VPBROADCASTD(x, v)
}

// loadVec loads a full vector: VMOVDQU64 for ZMM (AVX-512 has no VEX
// VMOVDQU on ZMM), VMOVDQU for YMM.
func loadVec(w width, m Mem, v VecVirtual) {
	if w.chunk == 32 {
		VMOVDQU64(m, v)
		return
	}
	VMOVDQU(m, v)
}

// and sets dst = a & b: VPANDD on ZMM, VPAND on YMM.
func and(w width, a, b, dst VecVirtual) {
	if w.chunk == 32 {
		VPANDD(a, b, dst)
		return
	}
	VPAND(a, b, dst)
}
