package pack

import (
	"bytes"
	"cmp"

	"github.com/loci-memory/loci/artifact"
)

// Ties. Whenever two spans are equal on what is being ranked (a channel
// score, the fused relevance, a discounted relevance), the order between them
// comes from their content, never from their ids, which are random per data
// directory: so the same writes, in the same order, into a fresh directory
// give the same pack. The order of equals is
//
//  1. artifact.TieKey: the CRC-32C of the span text, then the artifact
//     time, newer first (bytes ascending);
//  2. ingest position: the artifact's Seq (the order in which the
//     workspace received its artifacts), then the span's offsets;
//  3. the span id, which only ever decides between two entries of the same
//     span.
//
// The engine's retrieval channels cut their top k with the same key and then
// the same position (doc order, which is ingest order in every layout), so
// which equal spans enter the candidate pool does not depend on ids either.

// tieKey returns artifact.TieKey(c.Text, c.Timestamp): the candidate's
// TieKey when set, else computed once.
func (c *cand) tieKey() *[16]byte {
	if c.TieKey == ([16]byte{}) {
		c.TieKey = artifact.TieKey(c.Text, c.Timestamp)
	}
	return &c.TieKey
}

// compareTies orders two candidates that are equal on score (see Ties).
func compareTies(a, b *cand) int {
	if a == b {
		return 0
	}
	if c := bytes.Compare(a.tieKey()[:], b.tieKey()[:]); c != 0 {
		return c
	}
	return cmp.Or(
		cmp.Compare(a.Seq, b.Seq),
		cmp.Compare(a.Start, b.Start),
		cmp.Compare(a.End, b.End),
		compareID(a.SpanID, b.SpanID),
	)
}
