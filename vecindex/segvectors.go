package vecindex

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"
	"unsafe"
)

// SegVectors is an immutable Part read in place from a vector section: the
// rows and keys alias the section's bytes (typically a read-only memory map),
// which must stay valid and unmodified while the SegVectors is used.
type SegVectors struct {
	model  string
	dim    int
	rows   []int8
	scales []float32
	keys   [][16]byte
	sketch *lazySketch // shared with WithKeys copies
	lists  *ivfLists   // version 2 sections' IVF lists, else nil
	// listSketch is the sketch in the lists' order, for IVF (shared with
	// WithKeys copies; nil without lists).
	listSketch *lazyListSketch
}

// OpenSegVectors validates the structure of a vector section and returns a
// Part over it without copying the vectors. Corrupt bytes give an error
// wrapping ErrCorrupt, never a panic: bad magic, version or reserved field,
// a dim outside 1..MaxDim, a stride that is not Stride(dim), a model name
// that is not UTF-8, a length that is not exactly what the header implies,
// non-zero padding before the rows, or a negative or non-finite scale. Row
// padding is not read: the query's padding is zero, so it cannot change a
// score (the segment's checksum covers it).
//
// The scales are used in place when the host is little endian and they are
// 4-byte aligned in memory (always, for sections of a memory-mapped
// segment); otherwise they are decoded into a copy.
func OpenSegVectors(b []byte) (*SegVectors, error) {
	le := binary.LittleEndian
	if len(b) < secHeaderSize {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the header", ErrCorrupt, len(b))
	}
	if string(b[:4]) != sectionMagic {
		return nil, fmt.Errorf("%w: bad magic %q", ErrCorrupt, b[:4])
	}
	version := le.Uint16(b[secVersion:])
	if version != SectionVersion && version != SectionVersionIVF {
		return nil, fmt.Errorf("%w: version %d, want %d or %d", ErrCorrupt, version, SectionVersion, SectionVersionIVF)
	}
	if r := le.Uint32(b[secReserved:]); r != 0 {
		return nil, fmt.Errorf("%w: reserved field %#x, want 0", ErrCorrupt, r)
	}
	modelLen := int(le.Uint16(b[secModelLen:]))
	dim := le.Uint32(b[secDim:])
	stride := le.Uint32(b[secStride:])
	count := uint64(le.Uint32(b[secCount:]))
	if dim < 1 || dim > MaxDim {
		return nil, fmt.Errorf("%w: dim %d outside 1..%d", ErrCorrupt, dim, MaxDim)
	}
	if int(stride) != Stride(int(dim)) {
		return nil, fmt.Errorf("%w: stride %d for dim %d, want %d", ErrCorrupt, stride, dim, Stride(int(dim)))
	}
	if modelLen > MaxModelLen {
		return nil, fmt.Errorf("%w: model name of %d bytes, at most %d", ErrCorrupt, modelLen, MaxModelLen)
	}
	l := layoutOf(modelLen, int(stride), count)
	nlists := 0
	if version == SectionVersionIVF {
		if uint64(len(b)) < l.lists+listsHeaderSize {
			return nil, fmt.Errorf("%w: %d bytes, too short for IVF lists", ErrCorrupt, len(b))
		}
		nlists = int(le.Uint32(b[l.lists+8:]))
		if nlists < 1 || nlists > MaxLists || le.Uint32(b[l.lists+12:]) != 0 {
			return nil, fmt.Errorf("%w: IVF lists header: %d lists, reserved %#x", ErrCorrupt, nlists, le.Uint32(b[l.lists+12:]))
		}
		l = l.withLists(nlists, count)
	}
	if uint64(len(b)) != l.end {
		return nil, fmt.Errorf("%w: %d bytes, header implies %d", ErrCorrupt, len(b), l.end)
	}
	model := b[secHeaderSize : secHeaderSize+modelLen]
	if !utf8.Valid(model) {
		return nil, fmt.Errorf("%w: model name is not UTF-8", ErrCorrupt)
	}
	if !allZero(b[secHeaderSize+modelLen:l.keys]) || !allZero(b[l.scales+4*count:l.rows]) {
		return nil, fmt.Errorf("%w: non-zero padding", ErrCorrupt)
	}
	s := &SegVectors{model: string(model), dim: int(dim), sketch: new(lazySketch)}
	if nlists > 0 {
		lists, err := readLists(b[l.lists:], nlists, count)
		if err != nil {
			return nil, err
		}
		s.lists = lists
		s.listSketch = new(lazyListSketch)
	}
	if count == 0 {
		return s, nil
	}
	s.keys = unsafe.Slice((*[16]byte)(unsafe.Pointer(&b[l.keys])), count)
	s.rows = unsafe.Slice((*int8)(unsafe.Pointer(&b[l.rows])), count*uint64(stride))
	sb := b[l.scales : l.scales+4*count]
	if nativeLittleEndian && uintptr(unsafe.Pointer(&sb[0]))%4 == 0 {
		s.scales = unsafe.Slice((*float32)(unsafe.Pointer(&sb[0])), count)
	} else {
		s.scales = make([]float32, count)
		for i := range s.scales {
			s.scales[i] = math.Float32frombits(le.Uint32(sb[4*i:]))
		}
	}
	for i, x := range s.scales {
		if !validScale(x) {
			return nil, fmt.Errorf("%w: document %d has invalid scale %v", ErrCorrupt, i, x)
		}
	}
	return s, nil
}

// readLists reads and checks a version 2 section's IVF lists (b from the
// lists' start to the section's end): offsets from 0 to count, never
// decreasing, and every document exactly once, ascending within its list.
func readLists(b []byte, nlists int, count uint64) (*ivfLists, error) {
	l := &ivfLists{offsets: u32s(b[listsHeaderSize:], nlists+1)}
	copy(l.id[:], b[:8])
	l.docs = u32s(b[listsHeaderSize+4*(nlists+1):], int(count))
	if l.offsets[0] != 0 || uint64(l.offsets[nlists]) != count {
		return nil, fmt.Errorf("%w: IVF offsets run from %d to %d, want 0 to %d", ErrCorrupt, l.offsets[0], l.offsets[nlists], count)
	}
	seen := make([]bool, count)
	for i := range nlists {
		lo, hi := l.offsets[i], l.offsets[i+1]
		if hi < lo {
			return nil, fmt.Errorf("%w: IVF offsets decrease at list %d", ErrCorrupt, i)
		}
		for j := lo; j < hi; j++ {
			d := l.docs[j]
			if uint64(d) >= count || seen[d] || (j > lo && d <= l.docs[j-1]) {
				return nil, fmt.Errorf("%w: IVF list %d: document %d out of range, repeated or out of order", ErrCorrupt, i, d)
			}
			seen[d] = true
		}
	}
	return l, nil
}

// u32s returns n little-endian u32s at the start of b: in place when the
// host is little endian and b is 4-byte aligned, else decoded into a copy.
func u32s(b []byte, n int) []uint32 {
	if n == 0 {
		return nil
	}
	if nativeLittleEndian && uintptr(unsafe.Pointer(&b[0]))%4 == 0 {
		return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), n)
	}
	out := make([]uint32, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out
}

// ivfFor implements ivfPart: the stored lists, when made with c.
func (s *SegVectors) ivfFor(c *Centroids) (*ivfLists, []uint32) {
	if s.lists == nil || s.lists.id != c.id {
		return nil, nil
	}
	return s.lists, nil
}

var nativeLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// Model implements Part.
func (s *SegVectors) Model() string { return s.model }

// Dim implements Part.
func (s *SegVectors) Dim() int { return s.dim }

// Len implements Part.
func (s *SegVectors) NumDocs() int { return len(s.keys) }

// Rows implements Part.
func (s *SegVectors) Rows() []int8 { return s.rows }

// Scales implements Part.
func (s *SegVectors) Scales() []float32 { return s.scales }

// Keys implements Part.
func (s *SegVectors) Keys() [][16]byte { return s.keys }

// sketchFor implements sketcher: the sketch is built on first use, granule
// by granule, and kept for the part's life (heap memory of about half the
// rows' size).
func (s *SegVectors) sketchFor(start, end int) *sketch { return s.sketch.sketchFor(s, start, end) }

// Key returns the key doc was added with.
func (s *SegVectors) Key(doc uint32) [16]byte { return s.keys[doc] }

// listSketchFor implements listSketcher: the sketch of the stored lists'
// documents in list order, built whole on first use, when the lists were
// made with c.
func (s *SegVectors) listSketchFor(c *Centroids) (*sketch, *ivfLists) {
	if s.lists == nil || s.lists.id != c.id {
		return nil, nil
	}
	return s.listSketch.get(s, s.lists), s.lists
}

// WithKeys returns a SegVectors over the same rows and scales with other
// keys, one per document (a caller bug panics otherwise). The engine uses it
// for sections written when keys meant something else (span ids).
func (s *SegVectors) WithKeys(keys [][16]byte) *SegVectors {
	if len(keys) != len(s.keys) {
		panic(fmt.Sprintf("BUG: vecindex.SegVectors.WithKeys: %d keys for %d documents", len(keys), len(s.keys)))
	}
	c := *s
	c.keys = keys
	return &c
}
