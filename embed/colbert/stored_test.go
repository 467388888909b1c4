package colbert

import (
	"math"
	"slices"
	"testing"
)

// truncated is the float reading of what Store keeps: each row's first
// StoredDims values at unit length.
func truncated(m Matrix) [][]float64 {
	rows := make([][]float64, m.Rows())
	for t := range rows {
		src := m[t*Dims : t*Dims+StoredDims]
		var n float64
		for _, v := range src {
			n += float64(v) * float64(v)
		}
		for _, v := range src {
			rows[t] = append(rows[t], float64(v)/math.Sqrt(n))
		}
	}
	return rows
}

// checkStored checks the stored rows of passage m against its float
// vectors (the truncated unit vectors to int8 precision), their encoding,
// and MaxSimStored against the float MaxSim of the truncated vectors of
// query q and m (to within the rounding), and returns MaxSimStored.
func checkStored(t *testing.T, q, m Matrix) float64 {
	t.Helper()
	s, f := Store(m), truncated(m)
	if s.Rows() != m.Rows() || len(s.Vals) != m.Rows()*StoredDims {
		t.Fatalf("%d rows, %d values for %d token vectors", s.Rows(), len(s.Vals), m.Rows())
	}
	for r := range s.Rows() {
		var c, n float64
		for i, v := range s.Vals[r*StoredDims : (r+1)*StoredDims] {
			x := float64(s.Scales[r]) * float64(v)
			c += x * f[r][i]
			n += x * x
		}
		// The least seen on the test's texts: 0.99857.
		if c < 0.995 || math.Abs(n-1) > 0.01 {
			t.Fatalf("row %d: cosine %.5f with the truncated vector, squared norm %.5f", r, c, n)
		}
	}
	enc := s.Append(nil)
	if len(enc) != s.Rows()*StoredRowBytes {
		t.Fatalf("encoding of %d bytes for %d rows", len(enc), s.Rows())
	}
	back, err := DecodeStored(enc)
	if err != nil || !slices.Equal(back.Scales, s.Scales) || !slices.Equal(back.Vals, s.Vals) {
		t.Fatalf("decoded rows differ (%v)", err)
	}
	if _, err := DecodeStored(enc[:len(enc)-1]); err == nil {
		t.Fatal("a cut encoding decoded")
	}
	if s.Rows() > 0 {
		for _, at := range []int{4, len(enc) - 1} { // the first value, the last
			bad := slices.Clone(enc)
			bad[at] = 0x80
			if _, err := DecodeStored(bad); err == nil {
				t.Fatalf("a value of -128 at byte %d decoded", at)
			}
		}
		scaleOnly := slices.Clone(enc) // a scale's byte may be 0x80
		scaleOnly[0] = 0x80
		if _, err := DecodeStored(scaleOnly); err != nil {
			t.Fatalf("a scale with a byte 0x80: %v", err)
		}
	}
	var want float64
	for _, qr := range truncated(q) {
		best := math.Inf(-1)
		for _, pr := range f {
			var d float64
			for i := range qr {
				d += qr[i] * pr[i]
			}
			best = max(best, d)
		}
		want += best
	}
	got := MaxSimStored(Store(q), s)
	if math.Abs(got-want) > 0.01*float64(q.Rows()) {
		t.Fatalf("MaxSimStored %.4f, float MaxSim of the truncated vectors %.4f", got, want)
	}
	return got
}
