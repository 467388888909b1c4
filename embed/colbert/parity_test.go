package colbert

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"
)

type parityFile struct {
	Queries []struct {
		Text string
		IDs  []int32 `json:"ids"`
	} `json:"queries"`
	Passages []struct {
		Text string
		IDs  []int32 `json:"ids"`
	} `json:"passages"`
	Pairs []struct {
		Query, Passage int
		MaxSim         float64 `json:"maxsim"`
		MaxSimFloat    float64 `json:"maxsim_float"`
	} `json:"pairs"`
	Vectors []struct {
		Kind  string      `json:"kind"`
		Index int         `json:"index"`
		Rows  [][]float64 `json:"rows"`
	} `json:"vectors"`
}

// TestParity compares the Go encoder with ONNX Runtime on the export the
// model file was converted from (testdata/parity.json, written by
// internal/scripts/reference.py): the same ids; every token vector at
// cosine >= 0.999 with the float64 model's; MaxSim scores (sums of up to 32
// cosines) within 0.05 of the float64 model's and 0.25 of ONNX Runtime's:
// the Go kernels quantize activations per token and group of 64, ONNX
// Runtime per tensor, which moves it up to 0.17 from the float model on
// these pairs; and every pair that ONNX Runtime ranks apart by more than
// 0.2 for the same query ranked the same.
func TestParity(t *testing.T) {
	raw, err := os.ReadFile("testdata/parity.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref parityFile
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Pairs) < 100 || len(ref.Vectors) < 4 {
		t.Fatalf("%d reference pairs, %d vector sets", len(ref.Pairs), len(ref.Vectors))
	}
	e, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	qs := make([]Matrix, len(ref.Queries))
	for i, q := range ref.Queries {
		if ids := e.QueryIDs(q.Text); !slices.Equal(ids, q.IDs) {
			t.Errorf("query %q: ids %v, reference %v", q.Text, ids, q.IDs)
		}
		if qs[i], err = e.Query(q.Text); err != nil {
			t.Fatal(err)
		}
	}
	ps := make([]Matrix, len(ref.Passages))
	for i, p := range ref.Passages {
		if ids := e.PassageIDs(p.Text); !slices.Equal(ids, p.IDs) {
			t.Errorf("passage %q: ids %v, reference %v", p.Text, ids, p.IDs)
		}
		if ps[i], err = e.Passage(p.Text, 1); err != nil {
			t.Fatal(err)
		}
	}
	minCos := 1.0
	for _, v := range ref.Vectors {
		var m Matrix
		switch v.Kind {
		case "query":
			m = qs[v.Index]
		case "passage":
			m = ps[v.Index]
		default:
			t.Fatalf("vectors of kind %q", v.Kind)
		}
		if m.Rows() != len(v.Rows) {
			t.Fatalf("%s %d: %d rows, reference %d", v.Kind, v.Index, m.Rows(), len(v.Rows))
		}
		for r, want := range v.Rows {
			var c float64
			for i, x := range want {
				c += x * float64(m[r*Dims+i])
			}
			minCos = min(minCos, c)
			if c < 0.999 {
				t.Errorf("%s %d token %d: cosine %.4f with the float model", v.Kind, v.Index, r, c)
			}
		}
	}
	got := make([]float64, len(ref.Pairs))
	var maxDiff, maxFloat float64
	for i, p := range ref.Pairs {
		got[i] = MaxSim(qs[p.Query], ps[p.Passage])
		d, df := math.Abs(got[i]-p.MaxSim), math.Abs(got[i]-p.MaxSimFloat)
		maxDiff, maxFloat = max(maxDiff, d), max(maxFloat, df)
		if d > 0.25 || df > 0.05 {
			t.Errorf("pair %d (%q, %q): MaxSim %.4f, ONNX Runtime %.4f, float %.4f", i,
				ref.Queries[p.Query].Text, ref.Passages[p.Passage].Text, got[i], p.MaxSim, p.MaxSimFloat)
		}
	}
	t.Logf("min token cosine %.4f; max |MaxSim - ONNX Runtime| %.4f, max |MaxSim - float| %.4f over %d pairs", minCos, maxDiff, maxFloat, len(ref.Pairs))
	for i, a := range ref.Pairs {
		for j, b := range ref.Pairs {
			if a.Query == b.Query && a.MaxSim > b.MaxSim+0.2 && !(got[i] > got[j]) {
				t.Errorf("%q: reference ranks passage %d (%.2f) above %d (%.2f), Go gives %.2f and %.2f",
					ref.Queries[a.Query].Text, a.Passage, a.MaxSim, b.Passage, b.MaxSim, got[i], got[j])
			}
		}
	}
}
