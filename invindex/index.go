package invindex

import (
	"encoding/binary"
	"slices"
)

// blockSize is the number of postings per block. Each block carries its last
// doc id, its largest tf and its smallest document length, from which Search
// bounds the score of any document in it.
const blockSize = 128

// blockMetaSize is the size of one block's metadata: last doc, max tf and min
// document length, each a little-endian u32. MemIndex keeps its block table in
// exactly the byte layout SegIndex reads from a segment.
const blockMetaSize = 12

var le = binary.LittleEndian

// Term is one query term with its weight. Anserini's bag-of-words query boosts
// a term by the number of times it occurs in the query.
type Term struct {
	Text   string
	Weight float64
}

// QueryTerms turns analyzed query terms into unique Terms sorted by text, each
// weighted by its count.
func QueryTerms(terms []string) []Term {
	sorted := slices.Clone(terms)
	slices.Sort(sorted)
	var out []Term
	for i := 0; i < len(sorted); {
		j := i + 1
		for j < len(sorted) && sorted[j] == sorted[i] {
			j++
		}
		out = append(out, Term{Text: sorted[i], Weight: float64(j - i)})
		i = j
	}
	return out
}

// Part is one searchable piece of a workspace's index: the in-memory head
// (MemIndex) or one segment (SegIndex). Doc ids are part-local ordinals
// 0..NumDocs()-1. MemIndex and SegIndex are the only implementations.
type Part interface {
	NumDocs() int
	// TotalLen is the sum of the exact lengths of the part's docs.
	TotalLen() int64
	DocFreq(term string) int
	// DocLen is the exact length of doc in terms.
	DocLen(doc uint32) uint32
	// Key is the doc's stable key, which breaks score ties (then the
	// position: part, then doc). The engine's keys derive from the spans'
	// content (artifact.TieKey); equal keys are fine.
	Key(doc uint32) [16]byte

	// postings returns the posting list of term (df 0 when absent).
	postings(term string) plist
	// lengths returns the doc lengths, a little-endian u32 per doc.
	lengths() []byte
}

// plist is one term's posting list in one part, in whichever of the two
// representations the part holds. Its block table has the same layout in both.
type plist struct {
	df     int
	blocks []byte // ceil(df/blockSize) × {lastDoc, maxTf, minDl u32}

	// MemIndex: doc ids and tfs, in doc-id order.
	docs, tfs []uint32

	// SegIndex: the roaring bitmap of doc ids and the tfs, width bytes each.
	seg        bool
	bitmap     []byte
	containers int
	tfb        []byte
	width      int
}

func (pl *plist) numBlocks() int { return (pl.df + blockSize - 1) / blockSize }

// Stats returns the collection statistics of parts taken together: the number
// of docs and the sum of their lengths.
func Stats(parts []Part) (docs, totalLen int64) {
	for _, p := range parts {
		docs += int64(p.NumDocs())
		totalLen += p.TotalLen()
	}
	return docs, totalLen
}
