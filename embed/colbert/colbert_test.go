package colbert

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// TestSameBits: a passage's vectors do not depend on how many goroutines
// share its pass, nor on what was encoded before.
func TestSameBits(t *testing.T) {
	e, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("Melanie: we camp by the lake every summer and paint the sunsets. ", 12)
	one, err := e.Passage(text, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Passage("something else first", 1); err != nil {
		t.Fatal(err)
	}
	for _, par := range []int{2, 3, 8} {
		got, err := e.Passage(text, par)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, one) {
			t.Fatalf("par %d: vectors differ from one goroutine's", par)
		}
	}
	if one.Rows() != len(e.PassageIDs(text)) || one.Rows() > MaxPassageTokens {
		t.Fatalf("%d rows for %d ids", one.Rows(), len(e.PassageIDs(text)))
	}
	for r := range one.Rows() {
		var n float64
		for _, v := range one[r*Dims : (r+1)*Dims] {
			n += float64(v) * float64(v)
		}
		if math.Abs(n-1) > 1e-5 {
			t.Fatalf("row %d has squared norm %v", r, n)
		}
	}
}

// TestMaxSim: MaxSim and MaxSimStored sum, over the query's rows, the best
// dot product with a passage row.
func TestMaxSim(t *testing.T) {
	row := func(i int, v float32) []float32 {
		r := make([]float32, Dims)
		r[i] = v
		return r
	}
	q := Matrix(slices.Concat(row(0, 1), row(1, 1)))
	p := Matrix(slices.Concat(row(0, 0.5), row(1, 0.25), row(0, 0.75)))
	srow := func(scale float32, vals ...int8) Stored {
		v := make([]int8, StoredDims)
		copy(v, vals)
		return Stored{Scales: []float32{scale}, Vals: v}
	}
	cat := func(rs ...Stored) (s Stored) {
		for _, r := range rs {
			s.Scales, s.Vals = append(s.Scales, r.Scales...), append(s.Vals, r.Vals...)
		}
		return s
	}
	sq := cat(srow(0.5, 2), srow(0.25, 0, 4))
	sp := cat(srow(0.5, 1), srow(1, 0, 1), srow(0.5, 3))
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"best of each query token, summed", MaxSim(q, p), 0.75 + 0.25},
		{"no passage tokens", MaxSim(q, nil), 0},
		{"no query tokens", MaxSim(nil, p), 0},
		// query row 0 best with passage row 2: 0.5·0.5·6 = 1.5; row 1
		// with passage row 1: 0.25·1·4 = 1.
		{"stored: best of each query row, summed", MaxSimStored(sq, sp), 1.5 + 1},
		{"stored: no passage rows", MaxSimStored(sq, Stored{}), 0},
		{"stored: no query rows", MaxSimStored(Stored{}, sp), 0},
		{"stored: extremes stay exact", MaxSimStored(srow(1, -127, -127, 127), srow(1, -127, 127, 127)), 127 * 127}, // 127² − 127² + 127²
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
}

// TestAnswerRanksFirst: the model reads who did what, not only the words,
// by MaxSim and by MaxSimStored (checkStored).
func TestAnswerRanksFirst(t *testing.T) {
	e, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	q, err := e.Query("Where does Caroline's sister live?")
	if err != nil {
		t.Fatal(err)
	}
	var scores, stored []float64
	for _, p := range []string{
		"Caroline: My sister lives in Lisbon and works as a nurse.",
		"Caroline: I ran a charity race last Sunday.",
		"Melanie: We adopted a puppy named Oscar last month.",
	} {
		m, err := e.Passage(p, 1)
		if err != nil {
			t.Fatal(err)
		}
		scores = append(scores, MaxSim(q, m))
		stored = append(stored, checkStored(t, q, m))
	}
	for _, s := range [][]float64{scores, stored} {
		if !(s[0] > s[1] && s[0] > s[2]) {
			t.Fatalf("scores %v (stored %v): the answer is not first", scores, stored)
		}
	}
}
