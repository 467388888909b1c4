package text

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"
)

// bpeMust returns the encoding of that name or stops the test.
func bpeMust(tb testing.TB, name string) *BPE {
	tb.Helper()
	b, err := BPEByName(name)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestBPEByName(t *testing.T) {
	for _, tc := range []struct {
		name    string
		want    *BPE
		wantErr string
	}{
		{"o200k_base", O200kBase(), ""},
		{"cl100k_base", CL100kBase(), ""},
		{"", nil, `unknown BPE encoding "" (allowed: o200k_base, cl100k_base)`},
		{"O200K_BASE", nil, `unknown BPE encoding "O200K_BASE" (allowed: o200k_base, cl100k_base)`},
		{"p50k_base", nil, `unknown BPE encoding "p50k_base" (allowed: o200k_base, cl100k_base)`},
		{"gpt-4o", nil, `unknown BPE encoding "gpt-4o" (allowed: o200k_base, cl100k_base)`},
	} {
		b, err := BPEByName(tc.name)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || b != nil {
				t.Errorf("BPEByName(%q) = %v, %v; want error %q", tc.name, b, err, tc.wantErr)
			}
		case err != nil || b != tc.want:
			t.Errorf("BPEByName(%q) = %p, %v; want %p", tc.name, b, err, tc.want)
		case b.Name() != tc.name:
			t.Errorf("BPEByName(%q).Name() = %q", tc.name, b.Name())
		}
	}
}

func TestBPEDataFiles(t *testing.T) {
	for _, tc := range []struct {
		spec   *bpeSpec
		tokens int
	}{
		{o200kBase, 199998},
		{cl100kBase, 100256},
	} {
		sum := sha256.Sum256(tc.spec.file)
		if got := hex.EncodeToString(sum[:]); got != tc.spec.sum {
			t.Errorf("%s: SHA-256 %s, want %s", tc.spec.name, got, tc.spec.sum)
		}
		start := time.Now()
		tab, err := loadRankTable(tc.spec.name, tc.spec.file, tc.spec.sum)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes embedded, loaded in %v", tc.spec.name, len(tc.spec.file), time.Since(start))
		n := 0
		for _, e := range tab.slots {
			if e != 0 {
				n++
			}
		}
		if n != tc.tokens {
			t.Errorf("%s: %d tokens, want %d", tc.spec.name, n, tc.tokens)
		}
	}
}

func TestBPEDamagedData(t *testing.T) {
	file := append([]byte(nil), o200kBase.file...)
	file[len(file)/2] ^= 1
	if _, err := loadRankTable("o200k_base", file, o200kBaseSHA256); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("damaged file: err = %v", err)
	}
	// A file whose sum is right but which does not hold the named encoding.
	if _, err := loadRankTable("cl100k_base", o200kBase.file, o200kBaseSHA256); err == nil {
		t.Error("o200k_base data loaded as cl100k_base")
	}
	for _, tc := range []struct{ name, payload string }{
		{"bad magic", "LOCI-BPX\x01\x00\x00\x00\x01x\x00\x00\x00\x00"},
		{"bad version", "LOCI-BPE\x02\x00\x00\x00\x01x\x00\x00\x00\x00"},
		{"truncated", "LOCI-BPE\x01\x00\x00\x00\x01x\x02\x00\x00\x00\x01a"},
		{"trailing bytes", "LOCI-BPE\x01\x00\x00\x00\x01x\x01\x00\x00\x00\x01az"},
		{"missing bytes", "LOCI-BPE\x01\x00\x00\x00\x01x\x01\x00\x00\x00\x01a"},
	} {
		if _, err := parseVocabulary("x", tc.payload); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func TestBPEKnownCounts(t *testing.T) {
	// Counts and ids as given by OpenAI's tiktoken.
	for _, tc := range []struct {
		enc, text string
		want      []int
	}{
		{"cl100k_base", "hello world", []int{15339, 1917}},
		{"o200k_base", "hello world", []int{24912, 2375}},
		{"cl100k_base", "<|endoftext|>", []int{27, 91, 8862, 728, 428, 91, 29}},
		{"o200k_base", "", nil},
	} {
		b := bpeMust(t, tc.enc)
		got := b.Encode(tc.text, nil)
		if len(got) != len(tc.want) || b.Count(tc.text) != len(tc.want) {
			t.Errorf("%s %q: %v (count %d), want %v", tc.enc, tc.text, got, b.Count(tc.text), tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s %q: %v, want %v", tc.enc, tc.text, got, tc.want)
				break
			}
		}
	}
}

// TestBPEMergeImplementations checks that the two merge implementations
// agree, on random pieces up to the small limit.
func TestBPEMergeImplementations(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	sc := new(mergeScratch)
	var buf [smallMerge]uint32
	for _, name := range bpeEncodingNames {
		tab := bpeMust(t, name).table
		for i := range 20000 {
			s := bpeRandomString(rng, 8)
			if len(s) < 2 || len(s) > smallMerge {
				continue
			}
			small := tab.mergeSmall(s, &buf)
			large := tab.mergeLarge(s, sc)
			if len(small) != len(large) {
				t.Fatalf("%s case %d %q: small %v, large %v", name, i, s, small, large)
			}
			for j := range small {
				if small[j] != large[j] {
					t.Fatalf("%s case %d %q: small %v, large %v", name, i, s, small, large)
				}
			}
		}
	}
}

// TestBPELongPieces checks that long pieces are merged in near-linear time.
func TestBPELongPieces(t *testing.T) {
	b := O200kBase()
	for _, s := range []string{strings.Repeat("a", 200000), bpeBase64(200000), strings.Repeat("人工智能", 20000)} {
		start := time.Now()
		n := b.Count(s)
		if d := time.Since(start); d > 2*time.Second || n == 0 {
			t.Errorf("%d bytes of %q: %d tokens in %v", len(s), s[:12], n, d)
		}
	}
}

func TestBPEConcurrent(t *testing.T) {
	texts := []string{bpeSyntheticJSON(64 << 10), strings.Repeat("人工智能正在改变世界。", 2000), bpeBase64(30000)}
	for _, c := range bpeSyntheticCases {
		texts = append(texts, c.text)
	}
	for _, name := range bpeEncodingNames {
		b := bpeMust(t, name)
		want := make([]int, len(texts))
		for i, s := range texts {
			want[i] = b.Count(s)
		}
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for k := range 3 * len(texts) {
					i := (k + g) % len(texts)
					if got := b.Count(texts[i]); got != want[i] {
						t.Errorf("%s goroutine %d text %d: %d, want %d", name, g, i, got, want[i])
					}
				}
			})
		}
		wg.Wait()
	}
}

func TestBPECountAllocs(t *testing.T) {
	texts := []string{bpeSyntheticCases[1].text, strings.Repeat("人工智能正在改变世界", 40), bpeBase64(5000)}
	for _, name := range bpeEncodingNames {
		b := bpeMust(t, name)
		for _, s := range texts {
			b.Count(s)
			if n := testing.AllocsPerRun(20, func() { b.Count(s) }); n != 0 {
				t.Errorf("%s: Count(%.20q) allocates %v times", name, s, n)
			}
		}
		dst := make([]int, 0, 1<<16)
		if n := testing.AllocsPerRun(20, func() { dst = b.Encode(texts[1], dst[:0]) }); n != 0 {
			t.Errorf("%s: Encode allocates %v times", name, n)
		}
	}
}

// TestBPEInvalidUTF8 checks that invalid bytes count as U+FFFD each.
func TestBPEInvalidUTF8(t *testing.T) {
	for _, name := range bpeEncodingNames {
		b := bpeMust(t, name)
		for _, tc := range []struct{ in, same string }{
			{"a\xffb", "a\ufffdb"},
			{"\xe2\x82", "\ufffd\ufffd"},
			{"\xed\xa0\x80x", "\ufffd\ufffd\ufffdx"},
			{"caf\xe9 ok", "caf\ufffd ok"},
		} {
			got, want := b.Encode(tc.in, nil), b.Encode(tc.same, nil)
			if len(got) != len(want) || b.Count(tc.in) != len(want) {
				t.Errorf("%s %q: %v, want %v as for %q", name, tc.in, got, want, tc.same)
				continue
			}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("%s %q: %v, want %v as for %q", name, tc.in, got, want, tc.same)
					break
				}
			}
		}
	}
}

func TestBPEIsTokenCounter(t *testing.T) {
	var c TokenCounter = O200kBase()
	if n := c.Count("Hello, world!"); n != 4 {
		t.Errorf("Count = %d, want 4", n)
	}
}
