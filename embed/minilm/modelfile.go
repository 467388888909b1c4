package minilm

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"strings"

	"github.com/loci-memory/loci/internal/codec"
)

// Model file layout constants; docs/format/encoder.md writes the format down.
const (
	fileMagic      = "LENC"
	fileVersion    = 2
	fileHeaderSize = 64
	dtypeF32       = 1
	dtypeI8Rows    = 2 // int8 codes, one scale per row (the word embeddings)
	dtypeI8Groups  = 5 // int8 codes, one scale per row and group of 64 columns
	groupSize      = 64
)

// ErrCorrupt marks a model file that is malformed or fails its checksum.
var ErrCorrupt = codec.Sentinel("minilm: corrupt model file")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Config is the shape of a BERT encoder, read from the model file's header.
type Config struct {
	Name         string  // e.g. "all-minilm-l6-v2-w8a8"
	VocabSize    int     // rows of the word embedding
	Hidden       int     // model width (384)
	Layers       int     // transformer layers (6)
	Heads        int     // attention heads (12)
	Intermediate int     // feed-forward width (1536)
	MaxPositions int     // rows of the position embedding (512)
	MaxSeqLen    int     // tokens per text, [CLS] and [SEP] included (256)
	LayerNormEps float32 // 1e-12
}

// matrix is a tensor of rows × cols as the file stores it, row-major:
// float32 (f), or int8 codes (q) with one scale per row (perRow, the word
// embeddings: w[r][c] ≈ q[r*cols+c] * scale[r]) or per row and group of 64
// columns (w[r][c] ≈ q[r*cols+c] * scale[r*cols/64+c/64]). Exactly one of
// f and q is set.
type matrix struct {
	rows, cols int
	f          []float32
	q          []int8
	scale      []float32
	perRow     bool
}

// layer holds the weights of one transformer layer. Matrices are stored as
// PyTorch's Linear does (out × in), so output o is row o · input. Query, key
// and value are stacked into one matrix (qkv, 3H × H) because they share
// their input: one pass over the tokens instead of three.
type layer struct {
	qkv, attnOut, inter, out linearOp
	attnNormW, attnNormB     []float32
	outNormW, outNormB       []float32
}

// Model is a loaded encoder: configuration, vocabulary and weights. It is
// read-only after loading and safe for concurrent use.
type Model struct {
	Config
	Vocab []string

	wordEmb            matrix
	posEmb, typeEmb    matrix
	embNormW, embNormB []float32
	layers             []layer
	head               *classifierHead // nil: a sentence encoder
}

// classifierHead is a cross-encoder's head (BERT for sequence
// classification with one label): the pooler, tanh(P·x + p) of the first
// token's final state, and one output, c·pooled + b, the relevance logit.
type classifierHead struct {
	poolW       matrix // H × H, float32
	poolB, clsW []float32
	clsB        float32
}

// ParseModel decodes a model file (docs/format/encoder.md). Int8 codes alias
// data, which must stay unchanged while the model is in use (go:embed data
// does); float32 values are copied.
func ParseModel(data []byte) (*Model, error) {
	if len(data) < fileHeaderSize+4 {
		return nil, fmt.Errorf("%w: %d bytes, shorter than header and checksum", ErrCorrupt, len(data))
	}
	body := data[:len(data)-4]
	stored := binary.LittleEndian.Uint32(data[len(data)-4:])
	if got := crc32.Checksum(body, castagnoli); got != stored {
		return nil, fmt.Errorf("%w: crc32c stored %08x, computed %08x", ErrCorrupt, stored, got)
	}
	if string(body[:4]) != fileMagic {
		return nil, fmt.Errorf("%w: magic %q, want %q", ErrCorrupt, body[:4], fileMagic)
	}
	le := binary.LittleEndian
	if v := le.Uint16(body[4:]); v != fileVersion {
		return nil, fmt.Errorf("minilm: model file version %d, this build reads %d", v, fileVersion)
	}
	u32 := func(off int) int { return int(le.Uint32(body[off:])) }
	m := &Model{Config: Config{
		VocabSize:    u32(8),
		Hidden:       u32(12),
		Layers:       u32(16),
		Heads:        u32(20),
		Intermediate: u32(24),
		MaxPositions: u32(28),
		MaxSeqLen:    u32(32),
		LayerNormEps: math.Float32frombits(le.Uint32(body[36:])),
	}}
	nameLen, vocabLen, ntensors := u32(40), u32(44), u32(48)
	c := m.Config
	if c.Hidden <= 0 || c.Heads <= 0 || c.Hidden%c.Heads != 0 || c.Layers <= 0 || c.Layers > 64 ||
		c.Intermediate <= 0 || c.MaxSeqLen < 2 || c.MaxSeqLen > c.MaxPositions || c.VocabSize <= 0 {
		return nil, fmt.Errorf("%w: implausible shape %+v", ErrCorrupt, c)
	}
	r := reader{buf: body, off: fileHeaderSize}
	name, err := r.bytes(nameLen, "name")
	if err != nil {
		return nil, err
	}
	m.Name = string(name)
	vocab, err := r.bytes(vocabLen, "vocabulary")
	if err != nil {
		return nil, err
	}
	m.Vocab = strings.Split(string(vocab), "\n")
	if len(m.Vocab) != c.VocabSize {
		return nil, fmt.Errorf("%w: vocabulary has %d tokens, header says %d", ErrCorrupt, len(m.Vocab), c.VocabSize)
	}
	tensors := make(map[string]matrix, ntensors)
	for i := 0; i < ntensors; i++ {
		name, t, err := r.tensor()
		if err != nil {
			return nil, fmt.Errorf("tensor %d: %w", i, err)
		}
		if _, dup := tensors[name]; dup {
			return nil, fmt.Errorf("%w: tensor %q repeated", ErrCorrupt, name)
		}
		tensors[name] = t
	}
	if r.off != len(body) {
		return nil, fmt.Errorf("%w: %d bytes after the last tensor", ErrCorrupt, len(body)-r.off)
	}
	if err := m.bind(tensors); err != nil {
		return nil, err
	}
	for i := range m.layers {
		l := &m.layers[i]
		for _, op := range []*linearOp{&l.qkv, &l.attnOut, &l.inter, &l.out} {
			op.prepare(&active)
		}
	}
	return m, nil
}

// bind takes the tensors the forward pass needs from ts, checking shapes.
func (m *Model) bind(ts map[string]matrix) error {
	h, in := m.Hidden, m.Intermediate
	var err error
	mat := func(name string, rows, cols int) matrix {
		t, ok := ts[name]
		if !ok {
			if err == nil {
				err = fmt.Errorf("%w: no tensor %q", ErrCorrupt, name)
			}
			return matrix{}
		}
		if t.rows != rows || t.cols != cols {
			if err == nil {
				err = fmt.Errorf("%w: tensor %q is %d×%d, want %d×%d", ErrCorrupt, name, t.rows, t.cols, rows, cols)
			}
		}
		return t
	}
	vec := func(name string, n int) []float32 {
		t := mat(name, 1, n)
		if t.f == nil && err == nil {
			err = fmt.Errorf("%w: tensor %q must be float32", ErrCorrupt, name)
		}
		return t.f
	}
	f32mat := func(name string, rows, cols int) matrix {
		t := mat(name, rows, cols)
		if t.f == nil && err == nil {
			err = fmt.Errorf("%w: tensor %q must be float32", ErrCorrupt, name)
		}
		return t
	}
	m.wordEmb = mat("embeddings.word_embeddings.weight", m.VocabSize, h)
	// Only the first MaxSeqLen positions are stored: no more are used.
	m.posEmb = f32mat("embeddings.position_embeddings.weight", m.MaxSeqLen, h)
	m.typeEmb = f32mat("embeddings.token_type_embeddings.weight", 2, h)
	m.embNormW = vec("embeddings.LayerNorm.weight", h)
	m.embNormB = vec("embeddings.LayerNorm.bias", h)
	// A linear layer: its matrix (int8 groups or float32), bias, and the
	// input scale its inputs are multiplied by before quantization.
	lin := func(p string, rows, cols int, inScale string) linearOp {
		w := mat(p+".weight", rows, cols)
		if w.perRow && err == nil {
			err = fmt.Errorf("%w: tensor %q: int8 rows are for the word embeddings only", ErrCorrupt, p+".weight")
		}
		return linearOp{w: w, bias: vec(p+".bias", rows), inScale: vec(inScale, cols)}
	}
	m.layers = make([]layer, m.Layers)
	for i := range m.layers {
		p := fmt.Sprintf("encoder.layer.%d.", i)
		att := p + "attention.self."
		q := lin(att+"query", h, h, att+"input_scale")
		k := lin(att+"key", h, h, att+"input_scale")
		v := lin(att+"value", h, h, att+"input_scale")
		if err != nil {
			return err
		}
		qkv, e := stackLinear(q, k, v)
		if e != nil {
			return fmt.Errorf("%w: layer %d: %v", ErrCorrupt, i, e)
		}
		m.layers[i] = layer{
			qkv:       qkv,
			attnOut:   lin(p+"attention.output.dense", h, h, p+"attention.output.dense.input_scale"),
			attnNormW: vec(p+"attention.output.LayerNorm.weight", h),
			attnNormB: vec(p+"attention.output.LayerNorm.bias", h),
			inter:     lin(p+"intermediate.dense", in, h, p+"intermediate.dense.input_scale"),
			out:       lin(p+"output.dense", h, in, p+"output.dense.input_scale"),
			outNormW:  vec(p+"output.LayerNorm.weight", h),
			outNormB:  vec(p+"output.LayerNorm.bias", h),
		}
	}
	if _, ok := ts["pooler.dense.weight"]; ok {
		hd := &classifierHead{
			poolW: f32mat("pooler.dense.weight", h, h),
			poolB: vec("pooler.dense.bias", h),
			clsW:  vec("classifier.weight", h),
		}
		if b := vec("classifier.bias", 1); len(b) == 1 {
			hd.clsB = b[0]
		}
		m.head = hd
	}
	if err != nil {
		return err
	}
	if m.wordEmb.q != nil && !m.wordEmb.perRow {
		return fmt.Errorf("%w: word embeddings must be float32 or int8 rows", ErrCorrupt)
	}
	return nil
}

// reader walks the body of a model file; every read checks bounds and
// names the offset of what it could not read.
type reader struct {
	buf []byte
	off int
}

// bytes returns the next n bytes and skips the padding to 4 bytes after them.
func (r *reader) bytes(n int, what string) ([]byte, error) {
	if n < 0 || n > len(r.buf)-r.off {
		return nil, fmt.Errorf("%w: %s of %d bytes at offset %d runs past the end (%d)", ErrCorrupt, what, n, r.off, len(r.buf))
	}
	b := r.buf[r.off : r.off+n]
	r.off += (n + 3) &^ 3
	if r.off > len(r.buf) {
		return nil, fmt.Errorf("%w: padding of %s at offset %d runs past the end", ErrCorrupt, what, r.off)
	}
	return b, nil
}

// tensor reads one tensor record: u16 name length, u8 dtype, u8 reserved,
// u32 rows, u32 cols, name (padded to 4), data (padded to 4).
func (r *reader) tensor() (string, matrix, error) {
	at := r.off
	hdr, err := r.bytes(12, "tensor header")
	if err != nil {
		return "", matrix{}, err
	}
	le := binary.LittleEndian
	nameLen, dtype := int(le.Uint16(hdr)), hdr[2]
	rows, cols := int(le.Uint32(hdr[4:])), int(le.Uint32(hdr[8:]))
	name, err := r.bytes(nameLen, "tensor name")
	if err != nil {
		return "", matrix{}, err
	}
	if rows <= 0 || cols <= 0 || rows > 1<<24 || cols > 1<<16 {
		return "", matrix{}, fmt.Errorf("%w: tensor %q at offset %d: shape %d×%d", ErrCorrupt, name, at, rows, cols)
	}
	t := matrix{rows: rows, cols: cols}
	switch dtype {
	case dtypeF32:
		b, err := r.bytes(4*rows*cols, "float32 data")
		if err != nil {
			return "", matrix{}, err
		}
		t.f = decodeF32(b)
	case dtypeI8Groups:
		if cols%groupSize != 0 {
			return "", matrix{}, fmt.Errorf("%w: tensor %q at offset %d: %d columns, not a multiple of %d", ErrCorrupt, name, at, cols, groupSize)
		}
		s, err := r.bytes(4*rows*(cols/groupSize), "group scales")
		if err != nil {
			return "", matrix{}, err
		}
		q, err := r.bytes(rows*cols, "int8 codes")
		if err != nil {
			return "", matrix{}, err
		}
		t.scale = decodeF32(s)
		t.q = bytesToInt8(q)
	case dtypeI8Rows:
		s, err := r.bytes(4*rows, "row scales")
		if err != nil {
			return "", matrix{}, err
		}
		q, err := r.bytes(rows*cols, "int8 codes")
		if err != nil {
			return "", matrix{}, err
		}
		t.scale = decodeF32(s)
		t.q = bytesToInt8(q)
		t.perRow = true
	default:
		return "", matrix{}, fmt.Errorf("%w: tensor %q at offset %d: dtype %d", ErrCorrupt, name, at, dtype)
	}
	return string(name), t, nil
}

func decodeF32(b []byte) []float32 {
	f := make([]float32, len(b)/4)
	for i := range f {
		f[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return f
}
