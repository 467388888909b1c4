package record

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/internal/codec"
	"github.com/loci-memory/loci/internal/varint"
	"github.com/loci-memory/loci/wal"
)

// SpanVectors are the quantized embeddings of an artifact's spans in one
// model's space: span i's vector is Data[i*Dim:(i+1)*Dim] with scale
// Scales[i] (0: no vector). They are stored in the WAL record because a
// remote embedder cannot be asked again at replay.
type SpanVectors struct {
	Model  string
	Dim    int
	Data   []int8
	Scales []float32
}

// FencedArtifactVersion is the leading byte of an artifact record that
// carries an erasure fence: version 2 | uvarint fence | the version 1 body.
const FencedArtifactVersion byte = 2

// MaxVectorDim bounds the dimension a record (or the MANIFEST) may claim.
const MaxVectorDim = 1 << 14

// maxSpans bounds the span count a vectors record may claim: an artifact
// record holding more spans would not fit in a WAL record, as each span's
// encoding carries at least its 16-byte artifact id.
const maxSpans = wal.MaxPayload / 16

// AppendArtifact appends an artifact record: version | artifact encoding |
// uvarint span count | span encodings | vectors flag byte (0 none, 1
// present) | when present, the vector block: string model, uvarint dim,
// then per span f32 scale bits (u32 LE) and dim int8. A fence (see
// engine.IngestInput.Fence) other than 0 writes a version 2 record:
// FencedArtifactVersion | uvarint fence | the same body. Artifact.Seq is
// not trusted from the payload: the record's WAL seq is the truth.
func AppendArtifact(dst []byte, fence uint64, a *artifact.Artifact, spans []artifact.Span, vecs *SpanVectors) []byte {
	// One allocation of the right size, not a growth by doubling.
	size := 1 + binary.MaxVarintLen64 + artifact.MaxArtifactSize(a) + binary.MaxVarintLen64 + 1
	for i := range spans {
		size += artifact.MaxSpanSize(&spans[i])
	}
	if vecs != nil {
		size += len(vecs.Model) + 2*binary.MaxVarintLen64 + len(spans)*(4+vecs.Dim)
	}
	dst = slices.Grow(dst, size)
	if fence != 0 {
		dst = append(dst, FencedArtifactVersion)
		dst = binary.AppendUvarint(dst, fence)
	} else {
		dst = append(dst, Version)
	}
	dst = artifact.AppendArtifact(dst, a)
	dst = binary.AppendUvarint(dst, uint64(len(spans)))
	for i := range spans {
		dst = artifact.AppendSpan(dst, &spans[i])
	}
	if vecs == nil || len(spans) == 0 {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	return appendVectorBlock(dst, vecs, len(spans))
}

// appendVectorBlock: string model, uvarint dim, then per span its f32 scale
// bits (u32 LE) and dim int8 values.
func appendVectorBlock(dst []byte, vecs *SpanVectors, spans int) []byte {
	dst = codec.AppendString(dst, vecs.Model)
	dst = binary.AppendUvarint(dst, uint64(vecs.Dim))
	for i := 0; i < spans; i++ {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(vecs.Scales[i]))
		for _, v := range vecs.Data[i*vecs.Dim : (i+1)*vecs.Dim] {
			dst = append(dst, byte(v))
		}
	}
	return dst
}

func decodeVectorBlock(b []byte, spans int) (*SpanVectors, error) {
	d := codec.Decoder{B: b}
	v := &SpanVectors{Model: d.Str("")}
	dim := d.Uvarint("")
	if d.Err != nil {
		return nil, d.Err
	}
	if dim == 0 || dim > MaxVectorDim || v.Model == "" {
		return nil, codec.Errorf("bad vector block: model %q, dim %d", v.Model, dim)
	}
	v.Dim = int(dim)
	if uint64(d.Remaining()) != uint64(spans)*(4+dim) {
		return nil, codec.Errorf("vector block holds %d bytes, want %d for %d spans of dim %d", d.Remaining(), uint64(spans)*(4+dim), spans, dim)
	}
	v.Data = make([]int8, spans*v.Dim)
	v.Scales = make([]float32, spans)
	rest := d.Rest()
	for i := 0; i < spans; i++ {
		v.Scales[i] = math.Float32frombits(binary.LittleEndian.Uint32(rest))
		for j := 0; j < v.Dim; j++ {
			v.Data[i*v.Dim+j] = int8(rest[4+j])
		}
		rest = rest[4+v.Dim:]
	}
	return v, nil
}

// DecodeArtifact decodes an artifact record of either version and returns
// its erasure fence (0: none).
func DecodeArtifact(b []byte) (*artifact.Artifact, []artifact.Span, *SpanVectors, uint64, error) {
	var fence uint64
	switch {
	case len(b) > 0 && b[0] == Version:
		b = b[1:]
	case len(b) > 0 && b[0] == FencedArtifactVersion:
		f, n, err := varint.Uvarint(b[1:])
		if err != nil || f == 0 {
			return nil, nil, nil, 0, codec.Errorf("artifact record: bad erasure fence")
		}
		fence, b = f, b[1+n:]
	default:
		return nil, nil, nil, 0, codec.Errorf("artifact record: unsupported version")
	}
	a, spans, vecs, err := decodeArtifactBody(b)
	return a, spans, vecs, fence, err
}

// decodeArtifactBody decodes what follows the version (and fence) of an
// artifact record.
func decodeArtifactBody(b []byte) (*artifact.Artifact, []artifact.Span, *SpanVectors, error) {
	a, n, err := artifact.DecodeArtifact(b)
	if err != nil {
		return nil, nil, nil, codec.Errorf("artifact record: %w", err)
	}
	b = b[n:]
	cnt, n, err := varint.Uvarint(b)
	if err != nil || cnt > uint64(len(b)) {
		return nil, nil, nil, codec.Errorf("artifact record: bad span count")
	}
	b = b[n:]
	spans := make([]artifact.Span, 0, cnt)
	for i := uint64(0); i < cnt; i++ {
		s, n, err := artifact.DecodeSpan(b)
		if err != nil {
			return nil, nil, nil, codec.Errorf("artifact record: span %d: %w", i, err)
		}
		if s.ArtifactID != a.ID {
			return nil, nil, nil, codec.Errorf("artifact record: span %d belongs to artifact %s, not %s", i, s.ArtifactID, a.ID)
		}
		spans = append(spans, s)
		b = b[n:]
	}
	var vecs *SpanVectors
	switch {
	case len(b) == 0:
		return nil, nil, nil, codec.Errorf("artifact record: missing vectors flag")
	case b[0] == 0 && len(b) == 1:
	case b[0] == 1 && len(spans) > 0:
		if vecs, err = decodeVectorBlock(b[1:], len(spans)); err != nil {
			return nil, nil, nil, codec.Errorf("artifact record: %w", err)
		}
	default:
		return nil, nil, nil, codec.Errorf("artifact record: bad vectors flag %d or %d trailing bytes", b[0], len(b)-1)
	}
	return &a, spans, vecs, nil
}

// Vectors is a vectors record (TypeVectors). Vecs nil: the embedder gave
// up on the artifact (it stays without vectors, and is settled).
type Vectors struct {
	Tenant, Workspace string
	ArtifactID        uuid.UUID
	Spans             int
	Vecs              *SpanVectors
}

// AppendVectors appends a vectors record: version | string tenant | string
// workspace | 16-byte artifact id | uvarint span count | flag byte (0
// failed, 1 a vector block as in the artifact record follows).
func AppendVectors(dst []byte, r *Vectors) []byte {
	dst = append(dst, Version)
	dst = codec.AppendString(dst, r.Tenant)
	dst = codec.AppendString(dst, r.Workspace)
	dst = append(dst, r.ArtifactID[:]...)
	dst = binary.AppendUvarint(dst, uint64(r.Spans))
	if r.Vecs == nil {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	return appendVectorBlock(dst, r.Vecs, r.Spans)
}

// DecodeVectors decodes a vectors record.
func DecodeVectors(b []byte) (*Vectors, error) {
	if len(b) == 0 || b[0] != Version {
		return nil, codec.Errorf("vectors record: unsupported version")
	}
	d := codec.Decoder{B: b[1:]}
	r := &Vectors{Tenant: d.Str(""), Workspace: d.Str("")}
	if d.Err == nil && d.Remaining() < 16 {
		d.Failf("", d.Off, "short artifact id")
	}
	if d.Err == nil {
		copy(r.ArtifactID[:], d.Rest())
		d.Off += 16
	}
	n := d.Uvarint("")
	// A span count is bounded by the vector block it announces (at least 5
	// bytes a span); a record without vectors carries only the count, so
	// its bound is the largest count an artifact record can hold.
	if d.Err == nil && d.Remaining() == 0 {
		d.Failf("", d.Off, "missing vectors flag")
	}
	if d.Err == nil && (n == 0 || n > maxSpans || (d.Rest()[0] != 0 && n > uint64(d.Remaining()))) {
		d.Failf("", d.Off, "bad span count %d", n)
	}
	if d.Err != nil {
		return nil, codec.Errorf("vectors record: %w", d.Err)
	}
	r.Spans = int(n)
	switch {
	case d.Rest()[0] == 0 && d.Remaining() == 1:
	case d.Rest()[0] == 1:
		v, err := decodeVectorBlock(d.Rest()[1:], r.Spans)
		if err != nil {
			return nil, codec.Errorf("vectors record: %w", err)
		}
		r.Vecs = v
	default:
		return nil, codec.Errorf("vectors record: bad vectors flag %d or %d trailing bytes", d.Rest()[0], d.Remaining()-1)
	}
	return r, nil
}
