package bench

import (
	"strings"
	"testing"
)

func TestWriteTable(t *testing.T) {
	backlog := 3
	cases := []struct {
		name string
		v    any
		want []string // lines (trimmed of trailing space) the table must hold
	}{
		{"scalars, embedded struct", &IngestHTTPResult{Artifacts: 1000, Batch: 100, Fsync: "always", Seconds: 2.5, ArtifactsPerS: 400,
			Level: Level{Concurrency: 8, P99ms: 12.345}},
			[]string{"  artifacts        1000", "  fsync            always", "  seconds          2.50", "  p99_ms           12.35"}},
		{"list of records", &PackHTTPResult{Spans: 10, Levels: []Level{{Concurrency: 1, Requests: 20, RequestsPerS: 1234.5, P50ms: 0.5}, {Concurrency: 64, Requests: 20}}},
			[]string{"  levels:", "    concurrency  requests  requests_per_s  p50_ms  p90_ms  p99_ms  max_ms", "    1            20        1234            0.5000  0       0       0"}},
		{"records of one type", &SearchResult{LexicalTop10: Latency{P50ms: 1}, Pack2048: Latency{MaxMs: 250}},
			[]string{"                     p50_ms  p99_ms  max_ms", "  lexical_top10      1.00    0       0", "  context_pack_2048  0       0       250.0"}},
		{"map of records", &BEIRResult{Modes: map[string]BEIRModeResult{"lexical": {NDCG10: 0.65}, "hybrid": {NDCG10: 0.7}}},
			[]string{"  modes    ndcg_at_10  recall_at_100  queries_per_s  queries_per_s_top10", "  hybrid   0.7000      0              0              0"}},
		{"maps in records", &LoCoMoResult{Budgets: []LoCoMoBudget{{Budget: 512, RecallByCat: map[string]float64{"2": 0.5, "1": 0.25}}}},
			[]string{"  budgets:"}},
		{"nested section, omitempty", &IngestResult{Artifacts: 5, EmbeddingBacklog: &backlog, Open: &OpenLoopResult{OfferedPerS: 10, Backlog: []BacklogSample{{1, 2}}}},
			[]string{"  embedding_backlog_at_end  3", "  open_loop:", "    offered_per_s          10.00", "    backlog:", "      s     backlog", "      1.00  2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteTable(&b, "title", tc.v); err != nil {
				t.Fatal(err)
			}
			lines := map[string]bool{}
			for _, l := range strings.Split(b.String(), "\n") {
				lines[strings.TrimRight(l, " ")] = true
			}
			if !strings.HasPrefix(b.String(), "title\n") {
				t.Errorf("no title line:\n%s", b.String())
			}
			for _, w := range tc.want {
				if !lines[w] {
					t.Errorf("no line %q in\n%s", w, b.String())
				}
			}
		})
	}
}

func TestWriteTableThinsLongLists(t *testing.T) {
	r := &SoakResult{Samples: make([]SoakSample, 100)}
	for i := range r.Samples {
		r.Samples[i].Packs = int64(i)
	}
	var b strings.Builder
	if err := WriteTable(&b, "", r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "(20 of 100 rows; --json for all)") {
		t.Errorf("long list not thinned:\n%s", b.String())
	}
}
