package pack

import (
	"github.com/google/uuid"
	"github.com/loci-memory/loci/text"
)

// LineCounts remembers, across packs, the token count of each span's
// evidence line without its cite tag: Count(" " + rendered + "\n"), rendered
// being the line's head (date, time, speaker) and the span text. Counting
// the lines of the spans a pack places is the largest part of packing (a
// BPE count per placed or nearly placed span), and the same spans keep
// being packed, so a server keeps one LineCounts per token counter and
// shares it between all packs.
//
// An evidence line is citeTag(n) + " " + rendered + "\n". The BPE counters'
// pre-tokenizers split between the tag's closing "]" and the space (no
// alternative of their patterns runs from punctuation into whitespace, and
// none looks behind), so the line's count is the tag's count plus the rest's
// (TestEvidenceLineSplits checks it on the shared data sets). Only the
// counters known to split there (text.BPE, text.Estimate) use the memo; any
// other counter counts whole lines. A memo entry is a pure function of the
// span's text, and span ids name immutable texts, so a pack is the same
// with or without it, whatever it holds.
//
// It is safe for concurrent use and holds at most about its capacity of
// entries (a full shard is cleared); the zero value is not usable, see
// NewLineCounts.
type LineCounts struct {
	m *spanMemo[int]
}

// NewLineCounts returns a memo holding about capacity spans' counts (at
// least memoShards).
func NewLineCounts(capacity int) *LineCounts {
	return &LineCounts{m: newSpanMemo[int](capacity)}
}

// splitsAfterTag reports whether tok's count of an evidence line is always
// the tag's count plus the rest's.
func splitsAfterTag(tok text.TokenCounter) bool {
	switch tok.(type) {
	case *text.BPE, text.Estimate:
		return true
	}
	return false
}

// body returns Count(" " + rendered + "\n") for span id, from the memo or
// counted and remembered. The memo checks the rendered line (head and
// text), so a span seen with another date or speaker is recounted.
func (l *LineCounts) body(id uuid.UUID, rendered string, tok text.TokenCounter) int {
	return l.m.get(id, rendered, 1, func() int { return tok.Count(" " + rendered + "\n") })
}

// Len returns how many counts the memo holds.
func (l *LineCounts) Len() int { return l.m.len() }
