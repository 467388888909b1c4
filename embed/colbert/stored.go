package colbert

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"unsafe"

	"github.com/loci-memory/loci/vecindex"
)

// StoredDims is the length of a stored token vector: the first StoredDims
// of a token's Dims, made unit length again. In the pack, int8 rows of 128
// ranked as the float vectors do, and rows of 64 lost 1-3 points of recall
// at 512 tokens (docs/benchmarks.md § Late interaction: stored rows).
const StoredDims = 128

// StoredRowBytes is the size of one encoded token row: its float32 scale,
// then StoredDims int8 values (see Stored.Append).
const StoredRowBytes = 4 + StoredDims

// Stored is a text's token vectors as Loci keeps them: per token, StoredDims
// int8 values in [-127, 127] (the vector scan's code range) and a scale,
// the value of dimension i being Scale × Vals[i], of a vector of unit
// length. A dot product of two rows is an exact integer
// times the two scales, so a MaxSim over stored rows has the same bits on
// every machine, whatever kernel computes it.
type Stored struct {
	Scales []float32
	Vals   []int8 // len(Scales) × StoredDims
}

// Rows is the number of token rows.
func (s Stored) Rows() int { return len(s.Scales) }

// Store quantises the token vectors of m: each row's first StoredDims
// values, scaled to unit length, then to int8 with the row's largest
// magnitude at 127.
func Store(m Matrix) Stored {
	n := m.Rows()
	s := Stored{Scales: make([]float32, n), Vals: make([]int8, n*StoredDims)}
	for t := range n {
		src := m[t*Dims : t*Dims+StoredDims]
		var norm, peak float64
		for _, v := range src {
			norm += float64(v) * float64(v)
			peak = max(peak, math.Abs(float64(v)))
		}
		if norm == 0 || peak == 0 {
			continue // a zero row: scale 0, values 0
		}
		// v / |v| maps to int8 by 127 / (peak / |v|) = 127 |v| / peak.
		root := math.Sqrt(norm)
		step := peak / root / 127
		dst := s.Vals[t*StoredDims : (t+1)*StoredDims]
		for i, v := range src {
			dst[i] = int8(math.Round(float64(v) / root / step))
		}
		s.Scales[t] = float32(step)
	}
	return s
}

// Append appends the encoding of s to b: per row, its scale as a
// little-endian float32 and its StoredDims values.
func (s Stored) Append(b []byte) []byte {
	for t, sc := range s.Scales {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(sc))
		for _, v := range s.Vals[t*StoredDims : (t+1)*StoredDims] {
			b = append(b, byte(v))
		}
	}
	return b
}

var (
	errStoredLength = errors.New("colbert: stored token rows: length is not a multiple of the row size")
	errStoredValue  = errors.New("colbert: stored token rows: a value of -128")
)

// DecodeStored reads rows that Append wrote. The values are copied.
func DecodeStored(b []byte) (Stored, error) {
	if len(b)%StoredRowBytes != 0 {
		return Stored{}, errStoredLength
	}
	n := len(b) / StoredRowBytes
	s := Stored{Scales: make([]float32, n), Vals: make([]int8, n*StoredDims)}
	// int8 and byte share their layout: the values are copied a row at a
	// time, and -128 is looked for with the vectorised byte search.
	vals := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s.Vals))), len(s.Vals))
	for t := range n {
		row := b[t*StoredRowBytes : (t+1)*StoredRowBytes]
		if bytes.IndexByte(row[4:], 0x80) >= 0 {
			return Stored{}, errStoredValue
		}
		s.Scales[t] = math.Float32frombits(binary.LittleEndian.Uint32(row))
		copy(vals[t*StoredDims:(t+1)*StoredDims], row[4:])
	}
	return s, nil
}

// MaxSimStored is MaxSim over stored rows: for each query row, the largest
// dot product with any passage row, summed in row order as float64. Each
// dot is an exact int32 sum (vecindex.DotBatch, the vector scan's SIMD
// kernel) times the two scales. A passage given in parts (a speaker's rows
// and a content's, Scorer) scores as their rows put one after another
// would, with the same bits (the largest of the same products), without
// copying them together.
func MaxSimStored(q Stored, parts ...Stored) float64 {
	var dots scratch
	return maxSimStored(q, &dots, parts...)
}

// scratch holds a part's dot products between calls, so that scoring a
// pool allocates it once: an array on the stack escapes to the heap,
// since vecindex.DotBatch's kernel is chosen at run time.
type scratch []int32

// get returns s's first n entries, growing it when shorter.
func (s *scratch) get(n int) []int32 {
	if cap(*s) < n {
		*s = make([]int32, max(n, MaxPassageTokens))
	}
	return (*s)[:n]
}

// maxSimStored is MaxSimStored with scratch for the dot products.
func maxSimStored(q Stored, dots *scratch, parts ...Stored) float64 {
	rows := 0
	for _, p := range parts {
		rows = max(rows, p.Rows())
	}
	if rows == 0 {
		return 0
	}
	var total float64
	for i, qs := range q.Scales {
		qv := q.Vals[i*StoredDims : (i+1)*StoredDims]
		best := math.Inf(-1)
		for _, p := range parts {
			// rowBest's loop, inlined: the call cost 3% here
			// (BenchmarkMaxSimStored).
			if p.Rows() == 0 {
				continue
			}
			d := dots.get(p.Rows())
			vecindex.DotBatch(qv, p.Vals, StoredDims, d)
			for j, ps := range p.Scales {
				best = max(best, float64(qs)*float64(ps)*float64(d[j]))
			}
		}
		total += best
	}
	return total
}

// rowBest is the largest product of the query row qv (scale qs) with a row
// of p, -Inf when p has none, as MaxSimStored computes it; dots is scratch
// of at least p.Rows().
func rowBest(qv []int8, qs float32, p Stored, dots []int32) float64 {
	best := math.Inf(-1)
	if p.Rows() == 0 {
		return best
	}
	d := dots[:p.Rows()]
	vecindex.DotBatch(qv, p.Vals, StoredDims, d)
	for j, ps := range p.Scales {
		best = max(best, float64(qs)*float64(ps)*float64(d[j]))
	}
	return best
}

// maxSimSplit returns MaxSimStored(q, speaker, content), with its bits,
// and, from the same dot products, the MaxSim of content alone for the
// rows of q that keep marks, summed in row order as MaxSimStored sums
// (the bits of MaxSimStored over those rows and content).
func maxSimSplit(q Stored, keep []bool, speaker, content Stored, scratch *scratch) (full, contentOnly float64) {
	if speaker.Rows() == 0 && content.Rows() == 0 {
		return 0, 0
	}
	dots := scratch.get(max(speaker.Rows(), content.Rows()))
	for i, qs := range q.Scales {
		qv := q.Vals[i*StoredDims : (i+1)*StoredDims]
		c := rowBest(qv, qs, content, dots)
		full += max(rowBest(qv, qs, speaker, dots), c)
		if keep[i] && content.Rows() > 0 {
			contentOnly += c
		}
	}
	return full, contentOnly
}
