package minilm

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"
)

// benchQueries are short queries (at most 32 tokens each) like those an
// agent asks before a model call.
var benchQueries = []string{
	"What did Caroline say about the adoption agency?",
	"when is the flight to Seattle",
	"Which restaurant did we pick for Friday's dinner?",
	"user's preferred payment method",
	"How long does the migration take, 30 or 45 minutes?",
	"Melanie's kids' names",
	"What is the refund policy for cancelled reservations in basic economy?",
	"last error from the deploy job",
	"Did the patient report dizziness after the dose change?",
	"project deadline",
	"Where did we put the API keys for the staging environment?",
	"book recommendations about the history of mathematics",
	"What time does the pharmacy close on Sundays?",
	"summary of yesterday's standup",
	"Which protein is associated with neurodegeneration in the abstract?",
	"Who is the manager of the trading desk in Houston?",
}

// BenchmarkQuery measures embedding one short query on one goroutine (one
// core), and reports the p50 and p99 latency of the iterations as metrics.
func BenchmarkQuery(b *testing.B) {
	e := defaultEmbedder(b)
	v := make([]float32, e.Dim())
	maxTok := 0
	for _, q := range benchQueries {
		maxTok = max(maxTok, len(e.Tokenizer().Encode(q)))
	}
	if maxTok > 32 {
		b.Fatalf("a benchmark query has %d tokens, more than 32", maxTok)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if err := e.EmbedOne(benchQueries[i%len(benchQueries)], v); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(maxTok), "max-tokens")
	b.Logf("kernel %s", KernelName())
}

// BenchmarkQueryKernels is BenchmarkQuery's mean time per kernel set (the
// slower ones stand for CPUs without AVX-512 VNNI or AVX2).
func BenchmarkQueryKernels(b *testing.B) {
	e := defaultEmbedder(b)
	v := make([]float32, e.Dim())
	saved := active
	defer func() { active = saved }()
	for _, ks := range supportedKernels() {
		b.Run(ks.name, func(b *testing.B) {
			active = *ks
			for i := 0; i < b.N; i++ {
				if err := e.EmbedOne(benchQueries[i%len(benchQueries)], v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBatch measures throughput of Embed on a batch of 256 chat turns
// (LoCoMo from the shared data if present, else the queries repeated), with
// as many goroutines as GOMAXPROCS (-cpu 1,2).
func BenchmarkBatch(b *testing.B) {
	e := defaultEmbedder(b)
	texts := benchTurns(b, 256)
	tokens := 0
	for _, t := range texts {
		tokens += len(e.Tokenizer().Encode(t))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.Embed(context.Background(), texts); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(len(texts)*b.N)/sec, "texts/s")
	b.ReportMetric(float64(tokens*b.N)/sec, "tokens/s")
}

func benchTurns(b *testing.B, n int) []string {
	var conv []struct {
		Conversation map[string]json.RawMessage `json:"conversation"`
	}
	raw, err := os.ReadFile(sharedDataDir + "/locomo/locomo-dev.json")
	if err == nil && json.Unmarshal(raw, &conv) == nil && len(conv) > 0 {
		var out []string
		for s := 1; len(out) < n; s++ {
			msg, ok := conv[0].Conversation["session_"+itoa(s)]
			if !ok {
				break
			}
			var turns []struct{ Text string }
			if json.Unmarshal(msg, &turns) != nil {
				break
			}
			for _, t := range turns {
				out = append(out, t.Text)
			}
		}
		if len(out) >= n {
			return out[:n]
		}
	}
	b.Logf("LoCoMo not found at %s: batch of repeated queries", sharedDataDir)
	out := make([]string, n)
	for i := range out {
		out[i] = benchQueries[i%len(benchQueries)]
	}
	return out
}

func itoa(i int) string { return string(appendInt(nil, i)) }

func appendInt(b []byte, i int) []byte {
	if i >= 10 {
		b = appendInt(b, i/10)
	}
	return append(b, byte('0'+i%10))
}

// BenchmarkLinear measures the hot loop alone, per kernel set: the
// feed-forward input matrix (1536 × 384, int8) on 16 tokens, activation
// quantization included.
func BenchmarkLinear(b *testing.B) {
	e := defaultEmbedder(b)
	op := &e.enc.m.layers[0].inter
	const T = 16
	x := make([]float32, T*op.w.cols)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	dst := make([]float32, T*op.w.rows)
	var s qscratch
	for _, ks := range supportedKernels() {
		b.Run(ks.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				linearWith(ks, dst, x, T, op, &s)
			}
			b.ReportMetric(float64(T*op.w.rows*op.w.cols*b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
}
