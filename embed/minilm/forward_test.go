package minilm

import (
	"context"
	"errors"
	"math"
	"testing"
)

func TestErf32(t *testing.T) {
	var worst float64
	for x := -6.0; x <= 6; x += 1e-3 {
		f := float32(x)
		worst = max(worst, math.Abs(float64(erf32(f))-math.Erf(float64(f))))
	}
	if worst > 5e-7 {
		t.Errorf("erf32: max abs error %g > 5e-7", worst)
	}
}

func TestLayerNormSoftmax(t *testing.T) {
	x := []float32{1, 2, 3, 4}
	layerNorm(x, []float32{1, 1, 1, 2}, []float32{0, 0, 0, 1}, 0)
	// mean 2.5, variance 1.25
	s := float32(1 / math.Sqrt(1.25))
	for i, want := range []float32{-1.5 * s, -0.5 * s, 0.5 * s, 2*1.5*s + 1} {
		if math.Abs(float64(x[i]-want)) > 1e-6 {
			t.Errorf("layerNorm[%d] = %v, want %v", i, x[i], want)
		}
	}
	p := []float32{0, math.Ln2, 1000}
	softmax(p)
	if p[2] != 1 || p[0] != 0 {
		t.Errorf("softmax with a dominant logit: %v", p)
	}
	q := []float32{0, math.Ln2}
	softmax(q)
	if math.Abs(float64(q[0])-1.0/3) > 1e-6 || math.Abs(float64(q[1])-2.0/3) > 1e-6 {
		t.Errorf("softmax(0, ln 2) = %v, want 1/3, 2/3", q)
	}
}

// TestEmbed checks Embed against EmbedOne (order kept across goroutines),
// unit length, a sensible similarity ordering, and errors.
func TestEmbed(t *testing.T) {
	e := defaultEmbedder(t)
	texts := []string{"The cat sat on the mat.", "A cat was sitting on a rug.", "Quarterly revenue grew by 12 percent.", "", "中文"}
	got, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		one := make([]float32, e.Dim())
		if err := e.EmbedOne(text, one); err != nil {
			t.Fatal(err)
		}
		if c := cosine(one, got[i]); c < 0.999999 {
			t.Errorf("text %d: Embed and EmbedOne differ (cosine %v)", i, c)
		}
		var n float64
		for _, v := range got[i] {
			n += float64(v) * float64(v)
		}
		if math.Abs(n-1) > 1e-5 {
			t.Errorf("text %d: squared norm %v", i, n)
		}
	}
	if near, far := cosine(got[0], got[1]), cosine(got[0], got[2]); near < far+0.3 {
		t.Errorf("paraphrase cosine %.3f not well above unrelated %.3f", near, far)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Embed(ctx, texts); !errors.Is(err, context.Canceled) {
		t.Errorf("Embed with a cancelled context: %v", err)
	}
	if err := e.enc.EncodeIDs([]int32{101, 99999, 102}, make([]float32, e.Dim())); err == nil {
		t.Error("EncodeIDs with an id outside the vocabulary: no error")
	}
	if e.Model() != "all-minilm-l6-v2-w8a8" || e.Dim() != 384 {
		t.Errorf("Model() %q, Dim() %d", e.Model(), e.Dim())
	}
}

// TestTokenStates: the states TokenStatesOn returns are the ones EncodeIDs
// pools (their mean, normalised, is its embedding, bit for bit), the same
// whatever the pass is split among; bad input is refused.
func TestTokenStates(t *testing.T) {
	e, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	ids := e.Tokenizer().Encode("Melanie: we camp by the lake every summer and paint the sunsets there.")
	H := e.Dim()
	one := make([]float32, len(ids)*H)
	if err := e.enc.TokenStatesOn(ids, one, 1); err != nil {
		t.Fatal(err)
	}
	two := make([]float32, len(ids)*H)
	if err := e.enc.TokenStatesOn(ids, two, 2); err != nil {
		t.Fatal(err)
	}
	for i := range one {
		if math.Float32bits(one[i]) != math.Float32bits(two[i]) {
			t.Fatalf("value %d: %v on one goroutine, %v on two", i, one[i], two[i])
		}
	}
	pooled := make([]float32, H)
	for tok := range ids {
		for i, v := range one[tok*H : (tok+1)*H] {
			pooled[i] += v
		}
	}
	var norm float64
	for i := range pooled {
		pooled[i] /= float32(len(ids))
		norm += float64(pooled[i]) * float64(pooled[i])
	}
	inv := float32(1 / math.Sqrt(norm))
	want := make([]float32, H)
	if err := e.enc.EncodeIDs(ids, want); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got := pooled[i] * inv; math.Float32bits(got) != math.Float32bits(want[i]) {
			t.Fatalf("dimension %d: pooled states give %v, EncodeIDs %v", i, got, want[i])
		}
	}
	if err := e.enc.TokenStatesOn(ids, one[:H], 1); err == nil {
		t.Error("a dst of the wrong size was accepted")
	}
	if err := e.enc.TokenStatesOn(nil, nil, 1); err == nil {
		t.Error("no ids were accepted")
	}
}
