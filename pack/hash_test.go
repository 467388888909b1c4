package pack

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestPackHashEncoding: PackHash is SHA-256 over the documented netstring
// encoding, built here independently.
func TestPackHashEncoding(t *testing.T) {
	pin := cnd(10, 10, "Refunds always need a ticket number.", 0)
	a := cnd(1, 1, "The refund window is 30 days.", 9)
	r := Pack(req("refund window", 1000), []Candidate{pin}, []Candidate{a}, est)
	ns := func(s string) string { return fmt.Sprintf("%d:%s,", len(s), s) }
	var b strings.Builder
	b.WriteString(ns("loci-pack-v1") + ns(r.ContextText) + ns(fmt.Sprint(len(r.Citations))))
	for _, c := range r.Citations {
		for _, f := range []string{
			fmt.Sprint(c.Index), c.ArtifactID.String(), c.SpanID.String(), fmt.Sprint(c.StartOffset), fmt.Sprint(c.EndOffset),
			c.ContentHash, c.SourceType, fmt.Sprintf("%.6f", c.RelevanceScore), c.ContentPreview, fmt.Sprint(c.Pinned),
		} {
			b.WriteString(ns(f))
		}
	}
	sum := sha256.Sum256([]byte(b.String()))
	if want := "sha256:" + hex.EncodeToString(sum[:]); r.PackHash != want {
		t.Errorf("pack hash %s, want %s", r.PackHash, want)
	}
}

// TestPackHashGolden pins the hash of a small pack: a change of layout,
// scoring or encoding changes it, and must be deliberate (packs are
// compared by hash across versions).
func TestPackHashGolden(t *testing.T) {
	pin := cnd(10, 10, "Refunds always need a ticket number.", 0)
	a := cnd(1, 1, "The refund window is 30 days.\nAsk support for exceptions.", 9)
	b := cnd(2, 2, "The refund window is 45 days.", 8)
	r := Pack(req("refund window", 1000), []Candidate{pin}, []Candidate{a, b}, est)
	const want = "sha256:246ada090858f82a66d4ca913549e676ef08ad9385072e283d212fc3760b3743" // evidence lines with date and speaker (issue 24)
	if r.PackHash != want {
		t.Errorf("pack hash %s, want %s", r.PackHash, want)
	}
	// Anything in the text or the citations changes it.
	b.Text = "The refund window is 46 days."
	if Pack(req("refund window", 1000), []Candidate{pin}, []Candidate{a, b}, est).PackHash == r.PackHash {
		t.Error("the hash ignores a text change")
	}
	c := a
	c.End++
	if Pack(req("refund window", 1000), []Candidate{pin}, []Candidate{c, b}, est).PackHash == r.PackHash {
		t.Error("the hash ignores an offset change")
	}
}

func TestResultJSON(t *testing.T) {
	a := cnd(1, 1, "Refunds: 30 days.", 10)
	for _, abstain := range []bool{false, true} {
		rq := req("refund", 1000)
		rq.Tuning.MinEvidenceTokens = 0
		if abstain {
			rq.Tuning.MinEvidenceTokens = 100 // more than the span holds
		}
		b, err := json.Marshal(Pack(rq, nil, []Candidate{a}, est))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"context_text", "prefix_text", "working_set_text", "total_tokens", "citations", "confidence",
			"abstain_flag", "abstain_reason", "conflicts", "exclusions", "channel_contributions", "token_accounting",
			"assumptions", "policy_summary", "pack_hash"} {
			if _, ok := m[k]; !ok {
				t.Errorf("no %q in %s", k, b)
			}
		}
		if reason := m["abstain_reason"]; abstain && reason != AbstainFewTokens || !abstain && reason != nil {
			t.Errorf("abstain %v: abstain_reason %v", abstain, reason)
		}
		if strings.Count(string(b), `"abstain_reason"`) != 1 {
			t.Errorf("abstain_reason twice: %s", b)
		}
		cit := m["citations"].([]any)[0].(map[string]any)
		for _, k := range []string{"index", "artifact_id", "span_id", "start_offset", "end_offset", "content_hash", "source_type", "relevance_score", "content_preview", "pinned"} {
			if _, ok := cit[k]; !ok {
				t.Errorf("citation has no %q", k)
			}
		}
		if _, ok := cit["Text"]; ok {
			t.Error("citation text marshalled")
		}
	}
}

func TestPreview(t *testing.T) {
	long := strings.Repeat("é", 200)
	if got := preview(long); got != strings.Repeat("é", 160) {
		t.Errorf("preview has %d runes", len([]rune(got)))
	}
	if got := preview("short"); got != "short" {
		t.Errorf("preview %q", got)
	}
	exact := strings.Repeat("a", 160)
	if got := preview(exact); got != exact {
		t.Errorf("preview of 160 %q", got)
	}
}
