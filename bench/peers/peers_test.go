package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/export"
)

// The harness's own logic, checked without the peers (no venv, no server):
// `cd bench/peers && go test .`. The main module's tests never see it.

func TestInterleavedAlternatesOrder(t *testing.T) {
	for _, tc := range []struct {
		i    int
		want string
	}{{0, "ab"}, {1, "ba"}, {2, "ab"}, {7, "ba"}} {
		got := ""
		err := interleaved(tc.i, func() error { got += "a"; return nil }, func() error { got += "b"; return nil })
		if err != nil || got != tc.want {
			t.Errorf("interleaved(%d): ran %q, err %v; want %q", tc.i, got, err, tc.want)
		}
	}
}

func TestOverlapOfComparesByText(t *testing.T) {
	a, b, c, d := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	ids := map[uuid.UUID]int{a: 0, b: 1, c: 2, d: 3}
	keys := []uint64{10, 10, 20, 30} // spans 0 and 1 hold the same text
	for _, tc := range []struct {
		name string
		hits []uuid.UUID
		peer []int
		want float64
	}{
		{"same spans", []uuid.UUID{a, c}, []int{0, 2}, 1},
		{"the other copy of a tie", []uuid.UUID{a, c}, []int{1, 2}, 1},
		{"one of two", []uuid.UUID{a, c}, []int{3, 2}, 0.5},
		{"one copy matches one copy", []uuid.UUID{a, b}, []int{1, 3}, 0.5},
		{"none", []uuid.UUID{a, c}, []int{3}, 0},
	} {
		hits := make([]engine.SearchHit, len(tc.hits))
		for i, id := range tc.hits {
			hits[i].SpanID = id
		}
		if got, _ := overlapOf(hits, ids, keys, tc.peer); got != tc.want {
			t.Errorf("%s: overlap %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestDeriveKeepsRealVectorsAndMakesUnitOnes(t *testing.T) {
	real := [][]float32{{1, 0, 0, 0}, {0, 0.6, 0.8, 0}}
	got := derive(real, 7, 1)
	if len(got) != 7 {
		t.Fatalf("%d vectors, want 7", len(got))
	}
	for i, v := range got {
		if i < len(real) && !slices.Equal(v, real[i]) {
			t.Errorf("vector %d = %v, want the real one %v", i, v, real[i])
		}
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if math.Abs(n-1) > 1e-5 {
			t.Errorf("vector %d has squared norm %v, want 1", i, n)
		}
		if i >= len(real) && (slices.Equal(v, real[i%len(real)]) || dot(v, real[i%len(real)]) < 0.5) {
			t.Errorf("derived vector %d = %v: not a distinct neighbour of %v", i, v, real[i%len(real)])
		}
	}
	if again := derive(real, 7, 1); !slices.EqualFunc(got, again, slices.Equal) {
		t.Error("derive is not a function of its seed")
	}
}

func TestReadVectorCorpus(t *testing.T) {
	path := filepath.Join(t.TempDir(), "corpus.bin")
	texts := [][]float32{{1, 0}, {0, 1}, {0.6, 0.8}}
	queries := [][]float32{{0.8, 0.6}}
	err := writeFile(path, func(w *bufio.Writer) error {
		le := binary.LittleEndian
		binary.Write(w, le, uint16(len("m")))
		w.WriteString("m")
		binary.Write(w, le, [3]uint32{2, uint32(len(texts)), uint32(len(queries))})
		for _, v := range append(slices.Clone(texts), queries...) {
			binary.Write(w, le, v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := readVectorCorpus(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.model != "m" || !slices.EqualFunc(c.texts, texts, slices.Equal) || !slices.EqualFunc(c.queries, queries, slices.Equal) {
		t.Errorf("read %+v, want model m, texts %v, queries %v", c, texts, queries)
	}
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, b[:len(b)-1], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readVectorCorpus(path); err == nil {
		t.Error("a truncated file was read without an error")
	}
}

func TestTableEmbedder(t *testing.T) {
	e := &tableEmbedder{model: "m", vecs: [][]float32{{1, 0}, {0, 1}}}
	got, err := e.Embed(context.Background(), []string{"user: vector 1", "vector 0"})
	if err != nil || !slices.Equal(got[0], e.vecs[1]) || !slices.Equal(got[1], e.vecs[0]) {
		t.Errorf("Embed = %v, %v; want vectors 1 and 0", got, err)
	}
	for _, bad := range []string{"vector 2", "vector -1", "hello"} {
		if _, err := e.Embed(context.Background(), []string{bad}); err == nil {
			t.Errorf("Embed(%q) gave no error", bad)
		}
	}
}

func TestExactKth(t *testing.T) {
	vecs := [][]float32{{1, 0}, {0, 1}, {0.6, 0.8}, {0.8, 0.6}}
	got := exactKth(vecs, [][]float32{{1, 0}, {0, 1}}, 2)
	if want := []float32{0.8, 0.8}; !slices.Equal(got, want) {
		t.Errorf("exactKth = %v, want %v", got, want)
	}
}

func TestReadExportVectors(t *testing.T) {
	enc := func(v ...float32) string { return export.EncodeVector(v) }
	lines := []string{
		`{"kind":"header","embedder":"m","embedder_dim":2}`,
		`{"kind":"artifact","vectors":["` + enc(1, 0) + `","` + enc(0, 1) + `"]}`,
		`{"kind":"artifact"}`,
		`{"kind":"artifact","vectors":["` + enc(0.6, 0.8) + `"]}`,
	}
	path := filepath.Join(t.TempDir(), "e.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readExportVectors(path, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float32{{1, 0}, {0, 1}, {0.6, 0.8}}
	if len(got) != 3 || !slices.Equal(got[0], want[0]) || !slices.Equal(got[1], want[1]) || !slices.Equal(got[2], want[2]) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if _, err := readExportVectors(path, 4, 2); err == nil {
		t.Fatal("asked for more vectors than the file holds: no error")
	}
	if _, err := readExportVectors(path, 1, 3); err == nil {
		t.Fatal("vectors of the wrong dimension: no error")
	}
}
