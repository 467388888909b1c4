package vecindex

// dotInt8Generic is the pure-Go int8 dot product, the reference every SIMD
// kernel must match bit for bit. len(b) must be >= len(a).
func dotInt8Generic(a, b []int8) int32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 int32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += int32(a[i]) * int32(b[i])
		s1 += int32(a[i+1]) * int32(b[i+1])
		s2 += int32(a[i+2]) * int32(b[i+2])
		s3 += int32(a[i+3]) * int32(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += int32(a[i]) * int32(b[i])
	}
	// int32 addition wraps and is associative, so any grouping gives the
	// same result.
	return s0 + s1 + s2 + s3
}

// dotBatchGeneric is DotBatch with dotInt8Generic.
func dotBatchGeneric(q, data []int8, dim int, out []int32) {
	for i := range out {
		out[i] = dotInt8Generic(q, data[i*dim:(i+1)*dim])
	}
}

// dotGatherGeneric is dotBatchGeneric over the vectors idx lists.
func dotGatherGeneric(q, data []int8, dim int, idx, out []int32) {
	for i := range out {
		r := int(idx[i]) * dim
		out[i] = dotInt8Generic(q, data[r:r+dim])
	}
}

// axpyInt8Generic sets y[i] += c*float32(x[i]) for i < len(x). The explicit
// float32 conversion rounds the product before the add, which forbids the
// compiler to fuse them (Go spec), so every platform and the SIMD kernel give
// the same bits.
func axpyInt8Generic(c float32, x []int8, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += float32(c * float32(v))
	}
}

// sketchDotGeneric returns the stage-one product of the two-stage scan:
// the sum of q[j]*u[j] over the 4-bit codes u (0..15) of a sketch row, laid
// out as sketchElems describes; len(q) == 2*len(row), len(row) a multiple
// of 64.
func sketchDotGeneric(q []int8, row []byte) int32 {
	const half = sketchElems / 2
	var s0, s1 int32
	for b := 0; b+half <= len(row); b += half {
		blk := row[b : b+half]
		lo := q[2*b : 2*b+half]
		hi := q[2*b+half : 2*b+2*half]
		for i, v := range blk {
			s0 += int32(lo[i]) * int32(v&0x0f)
			s1 += int32(hi[i]) * int32(v>>4)
		}
	}
	return s0 + s1
}

// sketchBatchGeneric sets out[i] = sketchDotGeneric(q, data[i*rowBytes:(i+1)*rowBytes]).
func sketchBatchGeneric(q []int8, data []byte, rowBytes int, out []int32) {
	for i := range out {
		out[i] = sketchDotGeneric(q, data[i*rowBytes:(i+1)*rowBytes])
	}
}
