package vecindex

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/loci-memory/loci/internal/codec"
)

// A vector section holds one Part's documents: model name, dim, keys, scales
// and padded int8 rows, laid out so that a reader uses the bytes in place.
// The layout is specified byte by byte in docs/format/vecindex.md:
//
//	header  "LVEC", version u16, model length u16, dim u32, stride u32,
//	        count u32, reserved u32                          24 bytes
//	model   name bytes, zero-padded to a multiple of 8
//	keys    count × 16 bytes
//	scales  count × float32, little endian
//	pad     zeros up to a multiple of 16 from the section start
//	rows    count × stride int8, each dim values then stride-dim zeros
//	lists   (version 2 only) IVF lists: centroids id 8 bytes, lists u32,
//	        reserved u32, offsets (lists+1) × u32, docs count × u32
//
// Version 2 is written for models with built-in centroids (CentroidsFor),
// version 1 otherwise; both are read.
// The section carries no checksum: it is stored inside a segment section,
// whose CRC-32C covers it.
const (
	sectionMagic   = "LVEC"
	SectionVersion = 1
	// SectionVersionIVF is the version of sections that end with IVF lists.
	SectionVersionIVF = 2
	// MaxModelLen is the longest model name a section can record, in bytes.
	MaxModelLen = 255

	secHeaderSize = 24
	secVersion    = 4  // u16
	secModelLen   = 6  // u16
	secDim        = 8  // u32
	secStride     = 12 // u32
	secCount      = 16 // u32
	secReserved   = 20 // u32
)

// ErrCorrupt marks a vector section that fails validation.
var ErrCorrupt = codec.Sentinel("vecindex: corrupt vector section")

// sectionLayout holds the offsets of a section's parts, relative to its
// start, for count documents.
type sectionLayout struct {
	keys, scales, rows, end uint64
	// lists starts the IVF lists (version 2), at the rows' end.
	lists uint64
}

// listsHeaderSize is the fixed part of a version 2 section's lists: the
// centroids' id, the list count and a reserved u32.
const listsHeaderSize = 16

func layoutOf(modelLen, stride int, count uint64) sectionLayout {
	var l sectionLayout
	l.keys = secHeaderSize + roundUp(uint64(modelLen), 8)
	l.scales = l.keys + 16*count
	l.rows = roundUp(l.scales+4*count, 16)
	l.end = l.rows + uint64(stride)*count
	l.lists = l.end
	return l
}

// withLists extends l by the IVF lists of lists lists.
func (l sectionLayout) withLists(lists int, count uint64) sectionLayout {
	l.end = l.lists + listsHeaderSize + 4*uint64(lists+1) + 4*count
	return l
}

func roundUp(x, m uint64) uint64 { return (x + m - 1) / m * m }

func checkModelDim(model string, dim int) error {
	if dim < 1 || dim > MaxDim {
		return fmt.Errorf("dim %d outside 1..%d", dim, MaxDim)
	}
	if len(model) > MaxModelLen || !utf8.ValidString(model) {
		return fmt.Errorf("model name must be valid UTF-8 of at most %d bytes", MaxModelLen)
	}
	return nil
}

// BuildSection encodes documents as a vector section: keys[i], its int8
// vector vecs[i] (dim values, as Quantize produced them) and scales[i]. The
// bytes equal those of MemVectors.Section after the same Adds. It returns an
// error on mismatched lengths, a dim outside 1..MaxDim, a model name that is
// not UTF-8 of at most MaxModelLen bytes, or a negative or non-finite scale.
func BuildSection(dim int, model string, keys [][16]byte, vecs [][]int8, scales []float32) ([]byte, error) {
	return BuildSectionLists(dim, model, keys, vecs, scales, nil)
}

// BuildSectionLists is BuildSection where known, when not nil, gives each
// document's IVF list as ListOf returned it for its source part, or
// NoList for one to assign: copying documents between sections (a
// compaction) then assigns no row again. A list out of range is an error.
func BuildSectionLists(dim int, model string, keys [][16]byte, vecs [][]int8, scales []float32, known []uint32) ([]byte, error) {
	if err := checkModelDim(model, dim); err != nil {
		return nil, fmt.Errorf("vecindex.BuildSection: %w", err)
	}
	if len(vecs) != len(keys) || len(scales) != len(keys) {
		return nil, fmt.Errorf("vecindex.BuildSection: %d keys, %d vectors, %d scales", len(keys), len(vecs), len(scales))
	}
	if known != nil && len(known) != len(keys) {
		return nil, fmt.Errorf("vecindex.BuildSection: %d keys, %d lists", len(keys), len(known))
	}
	if uint64(len(keys)) > math.MaxUint32 {
		return nil, fmt.Errorf("vecindex.BuildSection: %d documents, at most %d", len(keys), uint32(math.MaxUint32))
	}
	for i, v := range vecs {
		if len(v) != dim {
			return nil, fmt.Errorf("vecindex.BuildSection: vector %d has %d values, want %d", i, len(v), dim)
		}
		if !validScale(scales[i]) {
			return nil, fmt.Errorf("vecindex.BuildSection: vector %d has invalid scale %v", i, scales[i])
		}
	}
	var lists *ivfLists
	if c := CentroidsFor(model); c != nil && c.Dim() == dim {
		assign := make([]uint32, len(vecs))
		buf := make([]int32, c.Lists())
		row := make([]int8, Stride(dim))
		for i, v := range vecs {
			if known != nil && known[i] != NoList {
				if int(known[i]) >= c.Lists() {
					return nil, fmt.Errorf("vecindex.BuildSection: document %d in list %d of %d", i, known[i], c.Lists())
				}
				assign[i] = known[i]
				continue
			}
			copy(row, v)
			assign[i] = c.assign(row, &buf)
		}
		lists = buildLists(c.ID(), c.Lists(), assign)
	}
	return encodeSection(model, dim, keys, scales, lists, func(i int) []int8 { return vecs[i] }), nil
}

// encodeSection writes the section of already validated documents; row(i)
// returns the dim values of document i. With lists it writes version 2.
func encodeSection(model string, dim int, keys [][16]byte, scales []float32, lists *ivfLists, row func(i int) []int8) []byte {
	stride := Stride(dim)
	l := layoutOf(len(model), stride, uint64(len(keys)))
	version := uint16(SectionVersion)
	if lists != nil {
		l = l.withLists(len(lists.offsets)-1, uint64(len(keys)))
		version = SectionVersionIVF
	}
	b := make([]byte, l.end)
	copy(b, sectionMagic)
	le := binary.LittleEndian
	le.PutUint16(b[secVersion:], version)
	le.PutUint16(b[secModelLen:], uint16(len(model)))
	le.PutUint32(b[secDim:], uint32(dim))
	le.PutUint32(b[secStride:], uint32(stride))
	le.PutUint32(b[secCount:], uint32(len(keys)))
	copy(b[secHeaderSize:], model)
	for i, k := range keys {
		copy(b[l.keys+16*uint64(i):], k[:])
		le.PutUint32(b[l.scales+4*uint64(i):], math.Float32bits(scales[i]))
		r := row(i)
		dst := b[l.rows+uint64(stride)*uint64(i):]
		for j, x := range r {
			dst[j] = byte(x)
		}
	}
	if lists != nil {
		at := l.lists
		copy(b[at:], lists.id[:])
		le.PutUint32(b[at+8:], uint32(len(lists.offsets)-1))
		at += listsHeaderSize
		for _, x := range lists.offsets {
			le.PutUint32(b[at:], x)
			at += 4
		}
		for _, x := range lists.docs {
			le.PutUint32(b[at:], x)
			at += 4
		}
	}
	return b
}
