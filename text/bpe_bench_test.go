package text

import (
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// Benchmarks of Count against the oracle on the same texts, one goroutine
// each, in MB/s of input:
//
//	go test ./text -run '^$' -bench 'BPE' -benchtime 2s

const bpeBenchSize = 1 << 20

var (
	bpeBenchOnce  sync.Once
	bpeBenchTexts []bpeCorpusText
)

// bpeBenchCorpus returns about 1 MB each of English prose (SciFact
// abstracts), JSON (τ-bench tool calls and results), Go source (this
// repository), CJK text, and all four mixed. Without the shared data sets,
// prose and JSON are generated.
func bpeBenchCorpus() []bpeCorpusText {
	bpeBenchOnce.Do(func() {
		read := func(rel string) string {
			data, err := os.ReadFile(filepath.Join(bpeSharedDir, rel))
			if err != nil {
				return ""
			}
			return string(data)
		}
		prose := bpeJSONStrings([]byte(read("scifact/corpus.jsonl")))
		if prose == "" {
			prose = bpeGenerateProse(bpeBenchSize)
		}
		json := read("tau-bench/gpt-4o-airline.json")
		if json == "" {
			json = bpeSyntheticJSON(bpeBenchSize)
		}
		var code strings.Builder
		var paths []string
		filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.Contains(path, "/.") {
				paths = append(paths, path)
			}
			return nil
		})
		sort.Strings(paths)
		for _, p := range paths {
			if data, err := os.ReadFile(p); err == nil && code.Len() < bpeBenchSize {
				code.Write(data)
			}
		}
		texts := []bpeCorpusText{
			{"prose", bpeTruncate(prose, bpeBenchSize)},
			{"json", bpeTruncate(json, bpeBenchSize)},
			{"code", bpeTruncate(code.String(), bpeBenchSize)},
			{"cjk", bpeGenerateCJK(bpeBenchSize)},
		}
		var mixed strings.Builder
		for _, t := range texts {
			mixed.WriteString(t.text[:len(t.text)/4])
		}
		bpeBenchTexts = append(texts, bpeCorpusText{"mixed", mixed.String()})
	})
	return bpeBenchTexts
}

// bpeGenerateProse returns about n bytes of English-like prose.
func bpeGenerateProse(n int) string {
	rng := rand.New(rand.NewSource(3))
	words := strings.Fields(`the of and to in a is that for it as was with be by on not he I this are or his
		from at which but have an they you were her she there been one all we their has would when if
		memory retrieval agent however because although information experiment results significantly
		proteins expression patients treatment observed increased analysis performance configuration`)
	var sb strings.Builder
	for sb.Len() < n {
		for w := range 8 + rng.Intn(20) {
			if w > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(words[rng.Intn(len(words))])
		}
		sb.WriteString([]string{". ", ", and ", "; ", ".\n\n", " (p < 0.05). "}[rng.Intn(5)])
	}
	return sb.String()
}

// bpeGenerateCJK returns about n bytes of Chinese, Japanese and Korean
// sentences in a random order.
func bpeGenerateCJK(n int) string {
	sentences := []string{
		"人工智能正在改变我们的工作方式和生活方式。",
		"这个系统可以存储和检索代理的长期记忆，",
		"并根据查询返回最相关的上下文。",
		"東京タワーは日本の首都にある有名な観光地です。",
		"私たちは新しいデータベースの設計について話し合いました。",
		"会議は午後三時に始まり、五時に終わりました。",
		"한국어 텍스트도 함께 처리해야 합니다. ",
		"검색 결과는 관련성 순서로 정렬됩니다. ",
		"「記憶」と「検索」は重要な機能です！",
		"数据集包含１２３４条记录（２０２４年）。\n",
	}
	rng := rand.New(rand.NewSource(8))
	var sb strings.Builder
	for sb.Len() < n {
		sb.WriteString(sentences[rng.Intn(len(sentences))])
	}
	return sb.String()
}

func BenchmarkBPECount(b *testing.B) {
	for _, name := range bpeEncodingNames {
		enc := bpeMust(b, name)
		for _, c := range bpeBenchCorpus() {
			b.Run(name+"/"+c.name, func(b *testing.B) {
				b.SetBytes(int64(len(c.text)))
				b.ReportAllocs()
				for b.Loop() {
					enc.Count(c.text)
				}
			})
		}
	}
}

func BenchmarkBPEOracle(b *testing.B) {
	for _, name := range bpeEncodingNames {
		o := bpeOracle(b, name)
		for _, c := range bpeBenchCorpus() {
			b.Run(name+"/"+c.name, func(b *testing.B) {
				b.SetBytes(int64(len(c.text)))
				for b.Loop() {
					o.EncodeOrdinary(c.text)
				}
			})
		}
	}
}

// BenchmarkBPECountShort measures Count on short texts, as when chunking
// sentence by sentence.
func BenchmarkBPECountShort(b *testing.B) {
	enc := O200kBase()
	s := "The quick brown fox jumps over the lazy dog, doesn't it?"
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		enc.Count(s)
	}
}

func BenchmarkBPELoad(b *testing.B) {
	for _, sp := range bpeSpecs {
		b.Run(sp.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := loadRankTable(sp.name, sp.file, sp.sum); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
