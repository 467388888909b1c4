package text

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Corpus comparisons against the oracle. Large files are sampled (their
// first bytes) so that the test stays within a few seconds: the oracle
// encodes about 5 MB/s.
const (
	bpeRawSample     = 512 << 10 // bytes of each data file, as stored
	bpeDecodedSample = 384 << 10 // bytes of the strings decoded from each JSON file
	bpeSourceSample  = 1 << 20   // bytes of this repository's Go source
)

// bpeSharedFiles are the shared data sets, read in place next to the
// repository; a missing file is skipped.
var bpeSharedFiles = []string{
	"scifact/corpus.jsonl",
	"scifact/queries.jsonl",
	"locomo/locomo-dev.json",
	"hotpotqa/hotpotqa_train.json",
	"hotpotqa/hotpotqa_train_corpus.json",
	"tau-bench/gpt-4o-airline.json",
	"tau-bench/MockRetailDomainEnv-few_shot.jsonl",
	"enron/enron_annotated.json",
}

const bpeSharedDir = "../../shared/data"

// bpeCorpusText is one named text of the corpus.
type bpeCorpusText struct{ name, text string }

// bpeCorpus gathers the texts compared with the oracle: each shared data
// file as stored and the strings decoded from it, and this repository's Go
// source files.
func bpeCorpus(tb testing.TB) []bpeCorpusText {
	var texts []bpeCorpusText
	for _, rel := range bpeSharedFiles {
		data, err := os.ReadFile(filepath.Join(bpeSharedDir, rel))
		if err != nil {
			tb.Logf("skipping %s: %v", rel, err)
			continue
		}
		raw := bpeTruncate(string(data), bpeRawSample)
		texts = append(texts, bpeCorpusText{rel + " (raw)", raw})
		if decoded := bpeTruncate(bpeJSONStrings(data), bpeDecodedSample); decoded != "" {
			texts = append(texts, bpeCorpusText{rel + " (strings)", decoded})
		}
	}
	var sources []string
	filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && path != ".." && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			sources = append(sources, path)
		}
		return nil
	})
	sort.Strings(sources)
	total := 0
	for _, path := range sources {
		data, err := os.ReadFile(path)
		if err != nil || total+len(data) > bpeSourceSample {
			continue
		}
		total += len(data)
		texts = append(texts, bpeCorpusText{path, string(data)})
	}
	return texts
}

// bpeJSONStrings returns the string values of a JSON document or of the
// JSON lines of a file, one paragraph each: prose with its real line breaks
// and characters rather than JSON escapes.
func bpeJSONStrings(data []byte) string {
	var sb strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			sb.WriteString(v)
			sb.WriteString("\n\n")
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(v[k])
			}
		}
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			break
		}
		walk(v)
	}
	return sb.String()
}

func TestBPECorpusMatchesOracle(t *testing.T) {
	texts := bpeCorpus(t)
	size := 0
	for _, c := range texts {
		size += len(c.text)
	}
	t.Logf("corpus: %d texts, %d bytes, per encoding", len(texts), size)
	for _, name := range bpeEncodingNames {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, o := bpeMust(t, name), bpeOracle(t, name)
			tokens := 0
			for _, c := range texts {
				for i, part := range bpeSplitLines(c.text, 64<<10) {
					if !bpeCompare(t, b, o, fmt.Sprintf("%s part %d", c.name, i), part) {
						break
					}
					tokens += b.Count(part)
				}
			}
			t.Logf("%s: %d bytes, %d tokens equal", name, size, tokens)
		})
	}
}

// bpeSyntheticJSON returns about n bytes of deterministic JSON shaped like
// agent tool calls and results: nested objects, arrays, numbers of every
// form, escapes, identifiers, dates and non-ASCII text.
func bpeSyntheticJSON(n int) string {
	rng := rand.New(rand.NewSource(11))
	keys := []string{"id", "user_id", "name", "arguments", "result", "status", "created_at", "items",
		"price", "quantity", "flightNumber", "reservation_id", "payment_methods", "ok", "error", "text"}
	values := []func() any{
		func() any { return rng.Intn(1000000) },
		func() any { return rng.Float64() * 1000 },
		func() any { return -rng.Float64() * 1e-6 },
		func() any { return rng.Intn(2) == 0 },
		func() any { return nil },
		func() any {
			return fmt.Sprintf("2024-%02d-%02dT%02d:%02d:00Z", 1+rng.Intn(12), 1+rng.Intn(28), rng.Intn(24), rng.Intn(60))
		},
		func() any { return fmt.Sprintf("user_%x_%d", rng.Int63(), rng.Intn(100)) },
		func() any { return bpeRandomString(rng, 12) },
		func() any { return "Line one.\nLine \"two\"\twith tab, café, 東京, 👍" },
		func() any { return strings.Repeat("ab", rng.Intn(20)) + "==" },
	}
	var gen func(depth int) any
	gen = func(depth int) any {
		switch k := rng.Intn(6); {
		case depth > 3 || k < 3:
			return values[rng.Intn(len(values))]()
		case k < 5:
			m := map[string]any{}
			for range 1 + rng.Intn(6) {
				m[keys[rng.Intn(len(keys))]] = gen(depth + 1)
			}
			return m
		default:
			a := make([]any, rng.Intn(5))
			for i := range a {
				a[i] = gen(depth + 1)
			}
			return a
		}
	}
	var sb strings.Builder
	for sb.Len() < n {
		v := map[string]any{"name": keys[rng.Intn(len(keys))], "arguments": gen(0)}
		var data []byte
		if rng.Intn(2) == 0 {
			data, _ = json.MarshalIndent(v, "", "  ")
		} else {
			data, _ = json.Marshal(v)
		}
		sb.Write(data)
		sb.WriteByte('\n')
	}
	return sb.String()
}
