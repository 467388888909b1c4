package vecindex

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// testDocs is a random set of documents for one part.
type testDocs struct {
	keys   [][16]byte
	vecs   [][]int8
	scales []float32
}

func randDocs(r *rand.Rand, n, dim int) testDocs {
	var d testDocs
	for i := range n {
		var k [16]byte
		binary.BigEndian.PutUint64(k[:], r.Uint64())
		binary.BigEndian.PutUint64(k[8:], uint64(i))
		v := make([]int8, dim)
		s := Quantize(randUnit(r, dim), v)
		if r.IntN(10) == 0 {
			clear(v)
			s = 0
		}
		d.keys, d.vecs, d.scales = append(d.keys, k), append(d.vecs, v), append(d.scales, s)
	}
	return d
}

func (d testDocs) mem(model string, dim int) *MemVectors {
	m := NewMemVectors(model, dim)
	for i := range d.keys {
		if doc := m.Add(d.keys[i], d.vecs[i], d.scales[i]); doc != uint32(i) {
			panic("unexpected doc number")
		}
	}
	return m
}

func samePart(t *testing.T, got, want Part) {
	t.Helper()
	if got.Model() != want.Model() || got.Dim() != want.Dim() || got.NumDocs() != want.NumDocs() {
		t.Fatalf("got %q/%d/%d, want %q/%d/%d", got.Model(), got.Dim(), got.NumDocs(), want.Model(), want.Dim(), want.NumDocs())
	}
	if !slices.Equal(got.Rows(), want.Rows()) || !slices.Equal(got.Scales(), want.Scales()) || !slices.Equal(got.Keys(), want.Keys()) {
		t.Fatal("rows, scales or keys differ")
	}
}

func TestSectionRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, tc := range []struct {
		model  string
		dim, n int
	}{
		{"", 1, 0},
		{"glove-6b-100d-sif", 100, 0},
		{"glove-6b-100d-sif", 100, 1},
		{"glove-6b-100d-sif", 100, 37},
		{"x", 16, 5},
		{"openai:text-embedding-3-small:1536", 1536, 9},
		{"m", MaxDim, 2},
	} {
		d := randDocs(r, tc.n, tc.dim)
		m := d.mem(tc.model, tc.dim)
		built, err := BuildSection(tc.dim, tc.model, d.keys, d.vecs, d.scales)
		if err != nil {
			t.Fatal(err)
		}
		sec := m.Section()
		if !bytes.Equal(built, sec) {
			t.Fatalf("%s/%d/%d: BuildSection and MemVectors.Section differ", tc.model, tc.dim, tc.n)
		}
		if len(sec)%16 != 0 && tc.n > 0 {
			t.Fatalf("section of %d bytes does not end on a row boundary", len(sec))
		}
		s, err := OpenSegVectors(sec)
		if err != nil {
			t.Fatal(err)
		}
		samePart(t, s, m)
		// Misaligned copy: scales are decoded instead of aliased.
		buf := make([]byte, len(sec)+1)
		copy(buf[1:], sec)
		s2, err := OpenSegVectors(buf[1:])
		if err != nil {
			t.Fatal(err)
		}
		samePart(t, s2, m)
	}
}

func TestSectionLayout(t *testing.T) {
	// A hand-checked example of docs/format/vecindex.md.
	key := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	v := make([]int8, 3)
	v[0], v[1], v[2] = -1, 127, -128
	b, err := BuildSection(3, "abc", [][16]byte{key}, [][]int8{v}, []float32{0.5})
	if err != nil {
		t.Fatal(err)
	}
	want := []byte("LVEC")
	want = append(want, 1, 0, 3, 0, 3, 0, 0, 0, 16, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0) // version, model len, dim, stride, count, reserved
	want = append(want, 'a', 'b', 'c', 0, 0, 0, 0, 0)                                // model, padded to 8
	want = append(want, key[:]...)                                                   // key at 32
	want = append(want, 0, 0, 0, 0x3f)                                               // scale 0.5 at 48
	want = append(want, make([]byte, 12)...)                                         // pad to 64
	want = append(want, 0xff, 0x7f, 0x80)                                            // row at 64
	want = append(want, make([]byte, 13)...)                                         // row padding to stride 16
	if !bytes.Equal(b, want) {
		t.Fatalf("got\n% x\nwant\n% x", b, want)
	}
}

func TestBuildSectionErrors(t *testing.T) {
	k := [][16]byte{{1}}
	v := [][]int8{{1, 2}}
	s := []float32{1}
	for _, tc := range []struct {
		name   string
		dim    int
		model  string
		keys   [][16]byte
		vecs   [][]int8
		scales []float32
	}{
		{"dim 0", 0, "m", nil, nil, nil},
		{"dim too large", MaxDim + 1, "m", nil, nil, nil},
		{"model too long", 2, string(make([]byte, MaxModelLen+1)), k, v, s},
		{"model not UTF-8", 2, "\xff", k, v, s},
		{"missing vector", 2, "m", k, nil, s},
		{"missing scale", 2, "m", k, v, nil},
		{"short vector", 2, "m", k, [][]int8{{1}}, s},
		{"negative scale", 2, "m", k, v, []float32{-1}},
		{"NaN scale", 2, "m", k, v, []float32{float32(math.NaN())}},
		{"Inf scale", 2, "m", k, v, []float32{float32(math.Inf(1))}},
	} {
		if _, err := BuildSection(tc.dim, tc.model, tc.keys, tc.vecs, tc.scales); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func TestOpenSegVectorsCorrupt(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	d := randDocs(r, 3, 20)
	good, err := BuildSection(20, "model", d.keys, d.vecs, d.scales)
	if err != nil {
		t.Fatal(err)
	}
	// Offsets: header 24, model 8, keys 48 at 32, scales 12 at 80, pad to
	// 96, rows 3*32 at 96.
	put32 := func(off int, v uint32) func([]byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint32(b[off:], v); return b }
	}
	for _, tc := range []struct {
		name   string
		mutate func([]byte) []byte
	}{
		{"empty", func([]byte) []byte { return nil }},
		{"short header", func(b []byte) []byte { return b[:23] }},
		{"magic", func(b []byte) []byte { b[0] = 'X'; return b }},
		{"version", func(b []byte) []byte { b[4] = 2; return b }},
		{"model length", func(b []byte) []byte { b[6] = 9; return b }},
		{"model length huge", func(b []byte) []byte { b[7] = 1; return b }},
		{"model not UTF-8", func(b []byte) []byte { b[24] = 0xff; return b }},
		{"model padding", func(b []byte) []byte { b[31] = 1; return b }},
		{"dim 0", put32(8, 0)},
		{"dim huge", put32(8, MaxDim+1)},
		{"dim changes stride", put32(8, 40)},
		{"stride", put32(12, 48)},
		{"count up", put32(16, 4)},
		{"count down", put32(16, 2)},
		{"count huge", put32(16, math.MaxUint32)},
		{"reserved", put32(20, 1)},
		{"NaN scale", put32(84, math.Float32bits(float32(math.NaN())))},
		{"negative scale", put32(84, math.Float32bits(-1))},
		{"Inf scale", put32(84, math.Float32bits(float32(math.Inf(1))))},
		{"padding before rows", func(b []byte) []byte { b[95] = 1; return b }},
		{"truncated", func(b []byte) []byte { return b[:len(b)-1] }},
		{"extended", func(b []byte) []byte { return append(b, 0) }},
	} {
		b := tc.mutate(slices.Clone(good))
		if _, err := OpenSegVectors(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err = %v, want ErrCorrupt", tc.name, err)
		}
	}
}

// TestOpenSegVectorsNeverPanics: every truncation and many random byte
// changes either fail validation or give a part that searches without
// panicking.
func TestOpenSegVectorsNeverPanics(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	d := randDocs(r, 5, 33)
	good, err := BuildSection(33, "model", d.keys, d.vecs, d.scales)
	if err != nil {
		t.Fatal(err)
	}
	q := make([]int8, 33)
	qs := Quantize(randUnit(r, 33), q)
	try := func(b []byte) {
		s, err := OpenSegVectors(b)
		if err != nil || s.Dim() != len(q) {
			return
		}
		Search([]Part{s}, q, qs, 3)
	}
	for n := range len(good) {
		try(good[:n])
	}
	for range 20000 {
		b := slices.Clone(good)
		for range 1 + r.IntN(3) {
			b[r.IntN(len(b))] = byte(r.Uint32())
		}
		try(b)
	}
}

func TestMemVectorsPanics(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"dim 0", func() { NewMemVectors("m", 0) }},
		{"dim too large", func() { NewMemVectors("m", MaxDim+1) }},
		{"long model", func() { NewMemVectors(string(make([]byte, 256)), 4) }},
		{"wrong length", func() { NewMemVectors("m", 4).Add([16]byte{}, make([]int8, 5), 1) }},
		{"negative scale", func() { NewMemVectors("m", 4).Add([16]byte{}, make([]int8, 4), -1) }},
		{"NaN scale", func() { NewMemVectors("m", 4).Add([16]byte{}, make([]int8, 4), float32(math.NaN())) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			tc.f()
		})
	}
}

func TestMemVectorsMemoryBytes(t *testing.T) {
	m := NewMemVectors("m", 100)
	if m.MemoryBytes() != 0 {
		t.Fatalf("empty: %d bytes", m.MemoryBytes())
	}
	m.Add([16]byte{1}, make([]int8, 100), 1)
	if m.MemoryBytes() < 112+4+16 || m.Key(0) != [16]byte{1} {
		t.Fatalf("one doc: %d bytes, key %v", m.MemoryBytes(), m.Key(0))
	}
}

func FuzzOpenSegVectors(f *testing.F) {
	r := rand.New(rand.NewPCG(17, 18))
	for _, dim := range []int{1, 20, 100} {
		d := randDocs(r, 3, dim)
		b, err := BuildSection(dim, "m", d.keys, d.vecs, d.scales)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := OpenSegVectors(b)
		if err != nil {
			return
		}
		q := make([]int8, s.Dim())
		for i := range q {
			q[i] = int8(i)
		}
		Search([]Part{s}, q, 1, 5)
		// A valid section re-encodes to itself, apart from row padding,
		// which readers ignore.
		vecs := make([][]int8, s.NumDocs())
		st := Stride(s.Dim())
		for i := range vecs {
			vecs[i] = s.Rows()[i*st : i*st+s.Dim()]
		}
		again, err := BuildSection(s.Dim(), s.Model(), s.Keys(), vecs, s.Scales())
		if err != nil || len(again) != len(b) {
			t.Fatalf("re-encoding: %v, %d bytes, want %d", err, len(again), len(b))
		}
	})
}
