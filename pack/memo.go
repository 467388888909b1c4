package pack

import (
	"hash/crc32"
	"sync"
	"unsafe"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/invindex"
)

// spanMemo remembers one value per span id, checked on every hit against
// the length and CRC-32C of the string the value was computed from, so that
// an id reused for another text (it must not be, but ids come from callers)
// costs a recomputation rather than a wrong value. It is safe for
// concurrent use and holds at most about its capacity: each entry costs
// what its caller says (1 for small fixed-size values, the string's length
// for values that grow with it), and a full shard is cleared. Values must be immutable once stored, as every pack
// that hits an entry shares it.
type spanMemo[V any] struct {
	perShard int // cost a shard may hold
	shards   [memoShards]memoShard[V]
}

const memoShards = 16

type memoShard[V any] struct {
	mu   sync.Mutex
	m    map[uuid.UUID]memoEntry[V]
	cost int // of the entries in m
}

type memoEntry[V any] struct {
	size, cost int
	crc        uint32
	v          V
}

func newSpanMemo[V any](capacity int) *spanMemo[V] {
	m := &spanMemo[V]{perShard: max(capacity/memoShards, 1)}
	for i := range m.shards {
		m.shards[i].m = make(map[uuid.UUID]memoEntry[V])
	}
	return m
}

// castagnoli is the CRC-32C table (hardware-assisted on amd64 and arm64).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// get returns the value of id computed from s, computing it with compute
// and remembering it at the given cost when the memo does not hold it.
func (m *spanMemo[V]) get(id uuid.UUID, s string, cost int, compute func() V) V {
	// The string's bytes, read in place: crc32 neither keeps nor writes
	// them, and []byte(s) would copy every span's text on every look-up.
	crc := crc32.Checksum(unsafe.Slice(unsafe.StringData(s), len(s)), castagnoli)
	sh := &m.shards[id[0]%memoShards]
	sh.mu.Lock()
	e, ok := sh.m[id]
	sh.mu.Unlock()
	if ok && e.size == len(s) && e.crc == crc {
		return e.v
	}
	v := compute()
	sh.mu.Lock()
	if sh.cost+cost > m.perShard {
		clear(sh.m)
		sh.cost = 0
	}
	if old, ok := sh.m[id]; ok {
		sh.cost -= old.cost
	}
	sh.m[id] = memoEntry[V]{size: len(s), crc: crc, cost: cost, v: v}
	sh.cost += cost
	sh.mu.Unlock()
	return v
}

// len returns how many values the memo holds.
func (m *spanMemo[V]) len() int {
	n := 0
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}

// Analyses remembers, across packs, what the packer reads from a span's
// text: its conflict features (featuresAfter), its index terms in order
// (for the adjacency of query terms) and the names a chat turn addresses
// (addressedTerms). All are pure functions of the span (its text, and
// whether it is a chat turn's first span, which a span id never changes),
// so a pack is the same with or without the memo, whatever it holds;
// the memo saves analysing the same spans again in every pack that
// considers them, the largest part of packing after the line counts. A
// server keeps one and shares it between all packs. The zero value is not
// usable, see NewAnalyses.
type Analyses struct {
	feats *spanMemo[*features]
	terms *spanMemo[[]uint64] // wordKey of each index term (invindex.EachTerm), in text order
	names *spanMemo[[]uint64] // addressedTerms
}

// NewAnalyses returns a memo that holds the analyses of about capacity
// bytes of span text (a turn's addressed names count nameMemoCost bytes).
// An analysis takes about 10 times its text in memory (the features of a
// clause are its term and value hashes, the sets keep room to spare), so
// capacity is a tenth of the memory it may take.
func NewAnalyses(capacity int) *Analyses {
	return &Analyses{feats: newSpanMemo[*features](capacity), terms: newSpanMemo[[]uint64](capacity), names: newSpanMemo[[]uint64](capacity)}
}

// Len returns how many analyses the memo holds (features, term lists and
// addressed names count apart).
func (a *Analyses) Len() int { return a.feats.len() + a.terms.len() + a.names.len() }

// features returns c's conflict features, from memo when it is set (nil:
// read for this pack alone), once per pack.
func (c *cand) features(memo *Analyses) *features {
	if c.feat == nil {
		read := func() *features { return featuresAfter(c.Text, c.speakerLabel()) }
		if memo == nil {
			c.feat = read()
		} else {
			c.feat = memo.feats.get(c.SpanID, c.Text, len(c.Text), read)
		}
	}
	return c.feat
}

// addressed returns the term hashes of the names c's content addresses
// (addressedTerms), from memo when it is set; content is c's text after its
// role.
func (c *cand) addressed(memo *Analyses, content string) []uint64 {
	if memo == nil {
		return addressedTerms(content)
	}
	return memo.names.get(c.SpanID, c.Text, nameMemoCost, func() []uint64 { return addressedTerms(content) })
}

// nameMemoCost is what an entry of the addressed names costs the memo, in
// bytes of text: a turn addresses a name or two at most, so the entry's
// key and checksum take about as much as 64 bytes of another memo's text.
const nameMemoCost = 64

// indexTerms returns the wordKeys of c's index terms in order, from memo
// when it is set.
func (c *cand) indexTerms(memo *Analyses) []uint64 {
	if memo == nil {
		return indexTerms(c.Text)
	}
	return memo.terms.get(c.SpanID, c.Text, len(c.Text), func() []uint64 { return indexTerms(c.Text) })
}

// indexTerms returns the wordKeys of text's index terms in order.
func indexTerms(text string) []uint64 {
	var ts []uint64
	invindex.EachTerm(text, func(term []byte) { ts = append(ts, wordKey(term)) })
	return ts
}
