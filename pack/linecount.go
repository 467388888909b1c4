package pack

import (
	"hash/crc32"
	"math"
	"sync"

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
	perShard int
	shards   [lineShards]lineShard
}

const lineShards = 16

type lineShard struct {
	mu sync.Mutex
	m  map[uuid.UUID]lineCount
}

// lineCount is a memo entry. size and crc (the rendered line's length and
// CRC-32C) are checked on every hit, so that a span id reused for another
// text, time or speaker (it must not be, but ids come from callers) costs a
// recount rather than a wrong count.
type lineCount struct {
	size   int32
	crc    uint32
	tokens int32
}

// NewLineCounts returns a memo holding about capacity spans' counts (at
// least lineShards).
func NewLineCounts(capacity int) *LineCounts {
	l := &LineCounts{perShard: max(capacity/lineShards, 1)}
	for i := range l.shards {
		l.shards[i].m = make(map[uuid.UUID]lineCount)
	}
	return l
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

// castagnoli is the CRC-32C table (hardware-assisted on amd64 and arm64).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// body returns Count(" " + rendered + "\n") for span id, from the memo or
// counted and remembered.
func (l *LineCounts) body(id uuid.UUID, rendered string, tok text.TokenCounter) int {
	crc := crc32.Checksum([]byte(rendered), castagnoli)
	s := &l.shards[id[0]%lineShards]
	s.mu.Lock()
	e, ok := s.m[id]
	s.mu.Unlock()
	if ok && int(e.size) == len(rendered) && e.crc == crc {
		return int(e.tokens)
	}
	n := tok.Count(" " + rendered + "\n")
	if len(rendered) > math.MaxInt32 || n > math.MaxInt32 {
		return n
	}
	s.mu.Lock()
	if len(s.m) >= l.perShard {
		clear(s.m)
	}
	s.m[id] = lineCount{size: int32(len(rendered)), crc: crc, tokens: int32(n)}
	s.mu.Unlock()
	return n
}

// Len returns how many counts the memo holds.
func (l *LineCounts) Len() int {
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}
