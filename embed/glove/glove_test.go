package glove

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/loci-memory/loci/embed"
)

func TestGloVeFileHash(t *testing.T) {
	sum := sha256.Sum256(gloveData)
	if got := hex.EncodeToString(sum[:]); got != gloveSHA256 {
		t.Fatalf("model/glove100d.bin SHA-256 %s, gloveSHA256 %s", got, gloveSHA256)
	}
	if _, err := loadGloVe(); err != nil {
		t.Fatal(err)
	}
	// A damaged copy fails the hash check with a clear error.
	bad := slices.Clone(gloveData)
	bad[len(bad)/2] ^= 1
	if _, err := parseGloVe(bad, gloveSHA256); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Fatalf("damaged table: err = %v", err)
	}
}

// TestParseGloVeHeader: headers that do not add up are errors, not panics,
// even when the hash matches.
func TestParseGloVeHeader(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func([]byte) []byte
	}{
		{"short", func(b []byte) []byte { return b[:40] }},
		{"magic", func(b []byte) []byte { b[0] = 'X'; return b }},
		{"version", func(b []byte) []byte { b[8] = 2; return b }},
		{"count", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[12:], 99_999); return b }},
		{"dim", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[16:], 50); return b }},
		{"slots not a power of 2", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[24:], 3); return b }},
		{"truncated", func(b []byte) []byte { return b[:len(b)-1] }},
		{"table entry", func(b []byte) []byte {
			off := gloveHeaderSize + 4*100_000 + 4*100_001
			binary.LittleEndian.PutUint32(b[off:], 200_000)
			return b
		}},
	} {
		b := tc.mutate(slices.Clone(gloveData))
		sum := sha256.Sum256(b)
		if _, err := parseGloVe(b, hex.EncodeToString(sum[:])); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func TestGloVeTable(t *testing.T) {
	tab, err := loadGloVe()
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.ranks) != 100_000 || tab.dim != Dim {
		t.Fatalf("%d words of dim %d", len(tab.ranks), tab.dim)
	}
	for i := range tab.ranks {
		w := tab.words[tab.offsets[i]:tab.offsets[i+1]]
		if i > 0 && tab.ranks[i] <= tab.ranks[i-1] {
			t.Fatalf("row %d: rank %d after %d", i, tab.ranks[i], tab.ranks[i-1])
		}
		for _, c := range w {
			if wordByte[c] != c {
				t.Fatalf("row %d: word %q is not a-z0-9", i, w)
			}
		}
		if r := tab.lookup(w); r != i {
			t.Fatalf("lookup(%q) = %d, want %d", w, r, i)
		}
		if !(tab.scales[i] > 0) || !(tab.coef[i] > 0) {
			t.Fatalf("row %d: scale %v coef %v", i, tab.scales[i], tab.coef[i])
		}
	}
	for _, tc := range []struct {
		word string
		rank int // -1: not in the table
	}{
		{"the", 0}, {"of", 3}, {"king", 654}, {"queen", 1948},
		{"xqzzyv", -1}, {"The", -1}, {"", -1}, {"well-known", -1}, {strings.Repeat("a", 30), -1},
	} {
		r := tab.lookup([]byte(tc.word))
		got := -1
		if r >= 0 {
			got = int(tab.ranks[r])
		}
		if got != tc.rank {
			t.Errorf("%q: rank %d, want %d", tc.word, got, tc.rank)
		}
	}
	// SIF: frequent words weigh less than rare ones.
	the, king := tab.lookup([]byte("the")), tab.lookup([]byte("king"))
	if w0, w1 := tab.coef[the]/tab.scales[the], tab.coef[king]/tab.scales[king]; !(w0 < 0.1 && w1 > 0.8) {
		t.Errorf("SIF weights: the %v, king %v", w0, w1)
	}
}

func embed1(t *testing.T, s string) []float32 {
	t.Helper()
	v, err := New().Embed(context.Background(), []string{s})
	if err != nil {
		t.Fatal(err)
	}
	return v[0]
}

func cosine(a, b []float32) float64 {
	var d float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
	}
	return d
}

func norm(v []float32) float64 { return math.Sqrt(cosine(v, v)) }

func TestGloVeEmbed(t *testing.T) {
	g := New()
	if g.Model() != "glove-6b-100d-sif" || g.Dim() != 100 {
		t.Fatalf("model %q dim %d", g.Model(), g.Dim())
	}
	var _ embed.Embedder = g
	sentence := "The quarterly budget meeting was moved to Friday afternoon."
	v := embed1(t, sentence)
	if n := norm(v); math.Abs(n-1) > 1e-6 {
		t.Fatalf("norm %v", n)
	}
	if w := embed1(t, sentence); !slices.Equal(v, w) {
		t.Fatal("not deterministic")
	}
	// Case and punctuation do not matter.
	if w := embed1(t, "the QUARTERLY budget -- meeting: was moved to friday afternoon"); !slices.Equal(v, w) {
		t.Fatal("case or punctuation changed the embedding")
	}
	for _, s := range []string{"", "   ", "!!! ???", "xqzzyv blorptang", "東京 café"} {
		if w := embed1(t, s); len(w) != 100 || norm(w) != 0 {
			t.Errorf("%q: want the zero vector, got norm %v", s, norm(w))
		}
	}
	vs, err := g.Embed(context.Background(), []string{"a b", "", "king"})
	if err != nil || len(vs) != 3 || norm(vs[1]) != 0 || math.Abs(norm(vs[2])-1) > 1e-6 {
		t.Fatalf("batch: %v %v", len(vs), err)
	}
	if vs, err := g.Embed(context.Background(), nil); err != nil || len(vs) != 0 {
		t.Fatalf("no texts: %v %v", vs, err)
	}
}

// TestGloVeGolden pins the bits of one embedding, so that a change of
// tokenizer, table, weights or summation order, or a platform whose float
// arithmetic differs, is noticed: stored vectors would no longer match new
// queries bit for bit.
func TestGloVeGolden(t *testing.T) {
	h := sha256.New()
	for _, x := range embed1(t, benchProse) {
		h.Write(binary.LittleEndian.AppendUint32(nil, math.Float32bits(x)))
	}
	const want = "571989fd30467464d53ea9664737cf06bf1340e56f4f88dc2d02f0a8e195757f"
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		t.Fatalf("embedding of benchProse hashes to %s, want %s", got, want)
	}
}

func TestGloVeSemantics(t *testing.T) {
	for _, tc := range []struct{ a, near, far string }{
		{"king queen", "monarch royal", "banana bread"},
		{"the database crashed and lost data", "storage failure corrupted the disk", "we baked a chocolate cake"},
		{"meeting scheduled for Monday morning", "the appointment is on Tuesday", "the river flooded the valley"},
		{"doctor prescribed medicine", "the patient went to the hospital", "the striker scored a goal"},
	} {
		a, near, far := embed1(t, tc.a), embed1(t, tc.near), embed1(t, tc.far)
		if cn, cf := cosine(a, near), cosine(a, far); !(cn > cf) {
			t.Errorf("cos(%q, %q) = %.3f, not above cos(%q) = %.3f", tc.a, tc.near, cn, tc.far, cf)
		}
	}
}

func TestGloVeEmbedInto(t *testing.T) {
	g := New()
	dst := make([]float32, 100)
	known, err := g.EmbedInto(dst, "King Arthur's knights, and an unknownwordxyz")
	if err != nil || known != 5 { // king arthur knights and an
		t.Fatalf("known %d, err %v", known, err)
	}
	if !slices.Equal(dst, embed1(t, "king arthur knights and an")) {
		t.Fatal("EmbedInto differs from Embed")
	}
	text := strings.Repeat("Every meeting about the budget ends with a decision. ", 20)
	if a := testing.AllocsPerRun(20, func() { g.EmbedInto(dst, text) }); a != 0 {
		t.Fatalf("%v allocations", a)
	}
}

func TestGloVeEmbedCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New().Embed(ctx, []string{"x"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

// TestGloVeCoverage logs how much of ordinary English prose the table
// covers with this tokenizer, and requires most of it.
func TestGloVeCoverage(t *testing.T) {
	tab, err := loadGloVe()
	if err != nil {
		t.Fatal(err)
	}
	var z tokenizer
	z.reset(benchProse)
	total, known := 0, 0
	var missing []string
	for {
		w, ok := z.next()
		if !ok {
			break
		}
		total++
		if tab.lookup(w) >= 0 {
			known++
		} else {
			missing = append(missing, string(w))
		}
	}
	t.Logf("%d of %d words known (%.1f%%); missing: %q", known, total, 100*float64(known)/float64(total), missing)
	if known < total*95/100 {
		t.Fatalf("coverage %d/%d", known, total)
	}
}
