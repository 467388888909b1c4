package text

import (
	"encoding/json"
	"math/rand"
	"strings"
	"testing"
)

// prose returns about n bytes of deterministic English-like prose in
// paragraphs, with numbers, abbreviations, quotes and a little CJK and emoji,
// as found in documents and chat logs.
func prose(n int) string {
	rng := rand.New(rand.NewSource(7))
	words := strings.Fields(`the a of to and in is that for it on with as was at by this be from
		memory agent store retrieval index chunk token sentence payload artifact tenant workspace
		latency throughput segment compaction embedding vector query result ranking permission
		however because although meanwhile therefore internationalization configuration
		Alice Bob Loci Paris Monday API JSON HTTP user assistant meeting calendar email`)
	extras := []string{"e.g.", "i.e.", "Dr. Smith", "3.14", "2024-05-01", "42%", "$1,200", "v1.2.3",
		"\"quoted\"", "(aside)", "don't", "it's", "東京", "👍", "https://example.com/docs"}
	var b strings.Builder
	for b.Len() < n {
		sentences := 2 + rng.Intn(6)
		for s := range sentences {
			if s > 0 {
				b.WriteByte(' ')
			}
			length := 4 + rng.Intn(20)
			for w := range length {
				word := words[rng.Intn(len(words))]
				if rng.Intn(12) == 0 {
					word = extras[rng.Intn(len(extras))]
				}
				if w == 0 {
					word = strings.ToUpper(word[:1]) + word[1:]
				} else {
					b.WriteByte(' ')
				}
				b.WriteString(word)
				if w < length-1 && rng.Intn(10) == 0 {
					b.WriteByte(',')
				}
			}
			b.WriteString([]string{".", ".", ".", "?", "!"}[rng.Intn(5)])
		}
		b.WriteString("\n\n")
	}
	return b.String()
}

func benchmarkPayload(b *testing.B, typ string, payload []byte) {
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		s, err := Extract(typ, "", payload)
		if err != nil {
			b.Fatal(err)
		}
		Chunks(s, Estimate{}, DefaultTarget, DefaultMax)
	}
}

// BenchmarkExtractChunk measures the whole text pipeline on a ~100 KB document.
func BenchmarkExtractChunk(b *testing.B) {
	payload, _ := json.Marshal(map[string]string{"title": "Design notes", "content": prose(100_000)})
	benchmarkPayload(b, "document", payload)
}

// BenchmarkExtractChunkChatTurn measures the pipeline on a typical chat turn;
// ns/op is the cost per artifact.
func BenchmarkExtractChunkChatTurn(b *testing.B) {
	payload, _ := json.Marshal(map[string]any{"role": "user", "content": prose(600)[:600],
		"metadata": map[string]any{"client": "cli", "turn": 12}})
	benchmarkPayload(b, "chat_turn", payload)
}

// BenchmarkExtractChunkToolCall measures the pipeline on a small tool call
// whose arguments are flattened.
func BenchmarkExtractChunkToolCall(b *testing.B) {
	payload := []byte(`{"tool":"search","arguments":{"query":"quarterly revenue by region","limit":10,` +
		`"filters":{"from":"2024-01-01","to":"2024-03-31","tags":["finance","q1"]}}}`)
	benchmarkPayload(b, "tool_call", payload)
}

func BenchmarkExtract(b *testing.B) {
	payload, _ := json.Marshal(map[string]string{"title": "Design notes", "content": prose(100_000)})
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Extract("document", "", payload); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkChunks(b *testing.B) {
	text := prose(100_000)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		Chunks(text, Estimate{}, DefaultTarget, DefaultMax)
	}
}

func BenchmarkEstimateCount(b *testing.B) {
	text := prose(100_000)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		Estimate{}.Count(text)
	}
}
