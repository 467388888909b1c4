package pack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/loci-memory/loci/text"
)

// lineSplitTexts returns span-like texts: adversarial starts and ends, and
// the string values of the shared data sets (read in place), cut into
// paragraphs.
func lineSplitTexts(t *testing.T) []string {
	texts := []string{"", " ", "  ", "x", "'s it", "'S", " leading space", "\tTab", "]bracket", "[cite:2] nested",
		"123 go", "1234567", "...", ". end.", "end/", "/path/to", "ends with punctuation!", "ends with space ",
		"\u00a0nbsp", "é accent", "\u0301combining", "日本語のテキスト", "Привет, мир", "emoji 🙂 end 🙂",
		"x\u2028y", "a\r\nb\nc", "trailing newline\n", "\n\nleading breaks", "tabs\t\t", "'re 've 'll 'd 'm 't"}
	files := []string{"locomo/locomo-dev.json", "scifact/corpus.jsonl", "enron/enron_annotated.json",
		"tau-bench/gpt-4o-airline.json", "hotpotqa/hotpotqa_train_corpus.json"}
	for _, rel := range files {
		data, err := os.ReadFile(filepath.Join("..", "..", "shared", "data", rel))
		if err != nil {
			t.Logf("skipping %s: %v", rel, err)
			continue
		}
		if len(data) > 2<<20 {
			data = data[:2<<20]
		}
		n := 0
		for _, s := range jsonStrings(data) {
			for _, p := range strings.Split(s, "\n\n") {
				if n < 1500 {
					texts = append(texts, p)
					n++
				}
			}
		}
	}
	return texts
}

// jsonStrings returns the string values of a JSON document or JSON lines
// (a cut-off last value is ignored).
func jsonStrings(data []byte) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			out = append(out, v)
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			break
		}
		walk(v)
	}
	return out
}

// TestEvidenceLineSplits: for the counters LineCounts serves, an evidence
// line counts as its tag plus the rest, for every text and cite number.
func TestEvidenceLineSplits(t *testing.T) {
	counters := map[string]text.TokenCounter{"o200k_base": text.O200kBase(), "cl100k_base": text.CL100kBase(), "estimate": est}
	texts := lineSplitTexts(t)
	if len(texts) < 1000 && os.Getenv("CI") != "" {
		t.Fatalf("only %d texts: the shared data sets are missing", len(texts))
	}
	for name, tok := range counters {
		if !splitsAfterTag(tok) {
			t.Fatalf("%s: not served by LineCounts", name)
		}
		for i, s := range texts {
			// Every other text with an evidence head, as packs lay them out.
			r := flatten(s)
			if i%2 == 1 {
				r = renderedLine(&Candidate{SourceType: "note", CreatorID: "alice", Timestamp: int64(i) * 3_600_000_001, Text: s})
			}
			for _, n := range []int{1, 9, 10, 42, 100, 999, 1000, 123456} {
				whole := tok.Count(evidenceLine(n, r))
				if split := tok.Count(citeTag(n)) + tok.Count(" "+r+"\n"); whole != split {
					t.Fatalf("%s: line %q cited %d counts %d whole, %d split", name, r, n, whole, split)
				}
			}
		}
	}
}

// TestPackMemos: packs with shared memos of line counts and span analyses
// (large, and so small that they are cleared all the time) are
// byte-identical to packs without them, for every counter, whatever the
// memos already hold. A line count memo serves one counter, as a server
// keeps one per counter.
func TestPackMemos(t *testing.T) {
	counters := []text.TokenCounter{est, text.O200kBase(), superAdditive{}}
	memos := make([][]*LineCounts, len(counters))
	for i := range memos {
		memos[i] = []*LineCounts{NewLineCounts(1 << 16), NewLineCounts(1)}
	}
	// The span analyses' memo rides along: a large one and one that is
	// cleared at every second entry.
	analyses := []*Analyses{NewAnalyses(1 << 16), NewAnalyses(1)}
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 300
	props := gopter.NewProperties(params)
	props.Property("same pack with and without a memo", prop.ForAll(func(seed uint64) string {
		s := randomScenario(seed)
		for ci, tok := range counters {
			s.tok = tok
			want, err := json.Marshal(s.pack())
			if err != nil {
				return err.Error()
			}
			for i, m := range memos[ci] {
				for pass := range 2 { // the second pass hits the memo
					s.req.Lines, s.req.Analyses = m, analyses[i]
					got, _ := json.Marshal(s.pack())
					s.req.Lines, s.req.Analyses = nil, nil
					if !bytes.Equal(got, want) {
						return fmt.Sprintf("%T memo %d pass %d differs:\n%s\n%s", tok, i, pass, got, want)
					}
				}
			}
		}
		return ""
	}, gen.UInt64()))
	props.TestingRun(t)
	for ci := range 2 { // superAdditive is not split, so its memo stays empty
		if memos[ci][0].Len() == 0 {
			t.Fatalf("%T: the memo was never used", counters[ci])
		}
	}
	if analyses[0].Len() == 0 {
		t.Fatal("the analyses' memo was never used")
	}
	if n := memos[2][0].Len(); n != 0 {
		t.Fatalf("superAdditive does not split after the tag, yet its memo holds %d counts", n)
	}
}

// TestContextTextSplits: for the counters LineCounts serves, a context text
// counts as the sum of its lines (headers, evidence lines, conflict lines,
// footer), so a pack with a memo need not count the whole text again.
func TestContextTextSplits(t *testing.T) {
	counters := map[string]text.TokenCounter{"o200k_base": text.O200kBase(), "cl100k_base": text.CL100kBase(), "estimate": est}
	texts := lineSplitTexts(t)
	for name, tok := range counters {
		for i := 0; i < len(texts); i += 7 {
			head := func(s string) string {
				return renderedLine(&Candidate{SourceType: "chat_turn", CreatorID: "u1", Timestamp: int64(i) * 60_000_000, Text: s})
			}
			lines := []string{headerPinned, evidenceLine(1, head(texts[i])), headerEvidence}
			for k := 1; k <= 6 && i+k < len(texts); k++ {
				lines = append(lines, evidenceLine(k+1, head(texts[i+k])))
			}
			lines = append(lines, headerConflicts,
				conflictLine(&Conflict{CiteA: 2, CiteB: 3, Description: flatten(texts[(i+3)%len(texts)])}), footer)
			sum := 0
			for _, l := range lines {
				sum += tok.Count(l)
			}
			if whole := tok.Count(strings.Join(lines, "")); whole != sum {
				t.Fatalf("%s: context text counts %d whole, %d line by line:\n%s", name, whole, sum, strings.Join(lines, ""))
			}
		}
	}
}

// TestLineCountsKeyedByLine: the memo checks the whole rendered line, head
// included: a span id seen again with another time or speaker (ids must
// not be reused, but come from callers) is recounted, not served the count
// of its old line.
func TestLineCountsKeyedByLine(t *testing.T) {
	l, tok := NewLineCounts(1<<10), text.CL100kBase()
	c := cnd(1, 1, "The sync moved.", 1)
	first := l.body(c.SpanID, renderedLine(&c), tok)
	for _, change := range []func(*Candidate){
		func(c *Candidate) { c.CreatorID = "a.l.c" }, // as long as "alice", more tokens
		func(c *Candidate) { c.Timestamp += 3_600_000_000 * 24 * 400 },
		func(c *Candidate) { c.SourceType, c.CreatorID = "document", "" },
	} {
		d := c
		change(&d)
		line := renderedLine(&d)
		if got, want := l.body(d.SpanID, line, tok), tok.Count(" "+line+"\n"); got != want {
			t.Errorf("%q: memo gave %d, the line counts %d", line, got, want)
		}
	}
	if got := l.body(c.SpanID, renderedLine(&c), tok); got != first {
		t.Errorf("the original line: %d, then %d", first, got)
	}
}
