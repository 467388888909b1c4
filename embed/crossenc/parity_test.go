package crossenc

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"
)

type parityFile struct {
	Pairs []struct {
		Query, Passage string
		IDs            []int32 `json:"ids"`
		Split          int     `json:"split"`
		Logit          float64 `json:"logit"`
		LogitFloat     float64 `json:"logit_float"`
	} `json:"pairs"`
}

// TestParity compares the Go reranker with ONNX Runtime on the export the
// model file was converted from (testdata/parity.json, written by
// internal/scripts/reference.py): the same pair ids and split; logits
// within 0.3 of the float64 forward pass over the export's weights and
// within 1 of ONNX Runtime's (on a scale from about -11 to 9: the Go
// kernels quantize activations per token and group of 64, ONNX Runtime per
// tensor, which moves it up to 0.65 from the float model on these pairs);
// and every pair that the reference ranks apart by more than 1 for the same
// query ranked the same.
func TestParity(t *testing.T) {
	raw, err := os.ReadFile("testdata/parity.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref parityFile
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Pairs) < 20 {
		t.Fatalf("%d reference pairs", len(ref.Pairs))
	}
	r, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float64, len(ref.Pairs))
	var maxDiff, maxFloat float64
	for i, p := range ref.Pairs {
		ids, split := r.PairIDs(nil, p.Query, p.Passage)
		if !slices.Equal(ids, p.IDs) || split != p.Split {
			t.Errorf("pair %d (%q, %q): ids %v split %d, reference %v split %d", i, p.Query, p.Passage, ids, split, p.IDs, p.Split)
			continue
		}
		s, err := r.Score(p.Query, p.Passage)
		if err != nil {
			t.Fatal(err)
		}
		got[i] = float64(s)
		d, df := math.Abs(got[i]-p.Logit), math.Abs(got[i]-p.LogitFloat)
		maxDiff, maxFloat = max(maxDiff, d), max(maxFloat, df)
		if d > 1 || df > 0.3 {
			t.Errorf("pair %d (%q, %q): logit %.3f, ONNX Runtime %.3f, float %.3f", i, p.Query, p.Passage, got[i], p.Logit, p.LogitFloat)
		}
	}
	t.Logf("max |logit - ONNX Runtime| %.4f, max |logit - float| %.4f over %d pairs", maxDiff, maxFloat, len(ref.Pairs))
	for i, a := range ref.Pairs {
		for j, b := range ref.Pairs {
			if a.Query == b.Query && a.Logit > b.Logit+1 && !(got[i] > got[j]) {
				t.Errorf("%q: reference ranks %q (%.2f) above %q (%.2f), Go gives %.2f and %.2f",
					a.Query, a.Passage, a.Logit, b.Passage, b.Logit, got[i], got[j])
			}
		}
	}
}
