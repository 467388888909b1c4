package vecindex

import (
	"fmt"
	"math"
	"slices"
)

// MemVectors is the head's mutable, append-only Part: Add appends a document
// and returns its number. It is not safe for concurrent use: the engine calls
// Add under its write lock and searches under its read lock.
type MemVectors struct {
	model  string
	dim    int
	stride int
	rows   []int8
	scales []float32
	keys   [][16]byte
	sketch sketch // of every row, kept up to date by Add and Set

	// IVF: the model's centroids (nil: none) and each document's list,
	// kept up to date by Add and Set; scratch holds Assign's dot products.
	cents   *Centroids
	assign  []uint32
	scratch []int32
}

// NewMemVectors returns an empty MemVectors for vectors of the given model
// and dim. It panics if dim is outside 1..MaxDim or the model name is longer
// than MaxModelLen bytes: both are fixed by the embedder, so either is a bug.
//
// The part keeps its documents' IVF lists under the model's built-in
// centroids (CentroidsFor), if it has any of this dim.
func NewMemVectors(model string, dim int) *MemVectors {
	return NewMemVectorsWith(model, dim, CentroidsFor(model))
}

// NewMemVectorsWith is NewMemVectors with the given centroids (nil: none),
// for measuring other centroids than the built-in ones. Centroids of
// another dim are ignored.
func NewMemVectorsWith(model string, dim int, c *Centroids) *MemVectors {
	if err := checkModelDim(model, dim); err != nil {
		panic("BUG: vecindex.NewMemVectors: " + err.Error())
	}
	if c != nil && c.Dim() != dim {
		c = nil
	}
	return &MemVectors{model: model, dim: dim, stride: Stride(dim), sketch: sketch{rowBytes: sketchRowBytes(dim)}, cents: c}
}

// Add appends the document key with quantized vector v (Dim() values, as
// Quantize produced them) and its scale, and returns its document number.
// It panics if len(v) != Dim(), the scale is negative or not finite, or the
// part already holds 2^32-1 documents.
func (m *MemVectors) Add(key [16]byte, v []int8, scale float32) uint32 {
	return m.add(key, v, scale, NoList)
}

// AddFrom appends document doc of p (its key, vector and scale, which
// must be of this part's dim) and returns its number. Its IVF list is
// copied when p keeps lists under the same centroids, so rebuilding a part
// (an erasure) assigns no row again.
func (m *MemVectors) AddFrom(p Part, doc uint32) uint32 {
	stride := Stride(p.Dim())
	row := p.Rows()[int(doc)*stride : int(doc)*stride+p.Dim()]
	list := NoList
	if m.cents != nil {
		if l, ok := listOf(p, int(doc), m.cents); ok {
			list = l
		}
	}
	return m.add(p.Keys()[doc], row, p.Scales()[doc], list)
}

// add is Add with the document's list when known (else NoList).
func (m *MemVectors) add(key [16]byte, v []int8, scale float32, list uint32) uint32 {
	if len(v) != m.dim {
		panic(fmt.Sprintf("BUG: vecindex.MemVectors.Add: vector of %d values, want %d", len(v), m.dim))
	}
	if !validScale(scale) {
		panic(fmt.Sprintf("BUG: vecindex.MemVectors.Add: invalid scale %v", scale))
	}
	if uint64(len(m.keys)) >= math.MaxUint32 {
		panic("BUG: vecindex.MemVectors.Add: part full")
	}
	doc := uint32(len(m.keys))
	n := len(m.rows)
	m.rows = slices.Grow(m.rows, m.stride)[:n+m.stride]
	copy(m.rows[n:], v)
	clear(m.rows[n+m.dim:])
	m.scales = append(m.scales, scale)
	m.keys = append(m.keys, key)
	rb := m.sketch.rowBytes
	m.sketch.packed = slices.Grow(m.sketch.packed, rb)[:len(m.sketch.packed)+rb]
	m.sketch.ab = append(m.sketch.ab, 0, 0)
	m.sketch.build(m.rows, m.scales, m.dim, m.stride, int(doc), int(doc)+1)
	if m.cents != nil {
		if list == NoList {
			list = m.cents.assign(m.rows[n:n+m.stride], &m.scratch)
		}
		m.assign = append(m.assign, list)
	}
	return doc
}

// Set replaces the vector and scale of document doc, for vectors computed
// after the document was added (the engine embeds in the background and
// adds zero vectors until then). It panics on a bad doc, length or scale.
func (m *MemVectors) Set(doc uint32, v []int8, scale float32) {
	if int(doc) >= len(m.keys) {
		panic(fmt.Sprintf("BUG: vecindex.MemVectors.Set: doc %d of %d", doc, len(m.keys)))
	}
	if len(v) != m.dim {
		panic(fmt.Sprintf("BUG: vecindex.MemVectors.Set: vector of %d values, want %d", len(v), m.dim))
	}
	if !validScale(scale) {
		panic(fmt.Sprintf("BUG: vecindex.MemVectors.Set: invalid scale %v", scale))
	}
	n := int(doc) * m.stride
	copy(m.rows[n:n+m.dim], v)
	m.scales[doc] = scale
	m.sketch.build(m.rows, m.scales, m.dim, m.stride, int(doc), int(doc)+1)
	if m.cents != nil {
		m.assign[doc] = m.cents.assign(m.rows[n:n+m.stride], &m.scratch)
	}
}

// ivfFor implements ivfPart: the documents' lists, when kept for c.
func (m *MemVectors) ivfFor(c *Centroids) (*ivfLists, []uint32) {
	if m.cents == nil || m.cents.id != c.id {
		return nil, nil
	}
	return nil, m.assign
}

// Model implements Part.
func (m *MemVectors) Model() string { return m.model }

// Dim implements Part.
func (m *MemVectors) Dim() int { return m.dim }

// Len implements Part.
func (m *MemVectors) NumDocs() int { return len(m.keys) }

// Rows implements Part.
func (m *MemVectors) Rows() []int8 { return m.rows }

// Scales implements Part.
func (m *MemVectors) Scales() []float32 { return m.scales }

// Keys implements Part.
func (m *MemVectors) Keys() [][16]byte { return m.keys }

// sketchFor implements sketcher.
func (m *MemVectors) sketchFor(int, int) *sketch { return &m.sketch }

// Key returns the key doc was added with.
func (m *MemVectors) Key(doc uint32) [16]byte { return m.keys[doc] }

// MemoryBytes is the heap memory held by the vectors, scales, keys and
// sketch (their capacities), for the engine's flush threshold and
// resident-memory reports.
func (m *MemVectors) MemoryBytes() int64 {
	return int64(cap(m.rows)) + 4*int64(cap(m.scales)) + 16*int64(cap(m.keys)) +
		int64(cap(m.sketch.packed)) + 4*int64(cap(m.sketch.ab)) + 4*int64(cap(m.assign))
}

// Section encodes the part as a vector section (docs/format/vecindex.md),
// byte-identical to BuildSection over the same documents: version 2, with
// the documents' IVF lists, when the part keeps them.
func (m *MemVectors) Section() []byte {
	var lists *ivfLists
	if m.cents != nil {
		lists = buildLists(m.cents.ID(), m.cents.Lists(), m.assign)
	}
	return encodeSection(m.model, m.dim, m.keys, m.scales, lists, func(i int) []int8 {
		return m.rows[i*m.stride : i*m.stride+m.dim]
	})
}
