// Package invindex is Loci's lexical index: BM25 over per-workspace inverted
// indexes, searched exactly with block-max pruning.
//
// A workspace's spans are indexed in parts: one MemIndex (the engine's
// mutable head, docs appended in order) and one SegIndex per segment, read
// without copying from the TERM_DICT, POSTINGS and DOC_LENGTHS sections that
// MemIndex.Sections or BuildSections produce (layout: docs/format/invindex.md).
// A doc id is a part-local ordinal; each doc also has a stable 16-byte key
// (its span id) that breaks score ties.
//
// # Scoring
//
// Search ranks docs by Lucene's BM25 (Lucene 8 and later, as Anserini uses
// it), with the statistics of all parts together:
//
//	N        number of docs in all parts
//	avgdl    total length of all docs / N
//	df(t)    number of docs holding t, summed over the parts
//	idf(t)   = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
//	K(dl)    = k1 · (1 - b + b · dl/avgdl)
//	score(d) = Σ over query terms t in d, in query order:
//	           weight(t) · idf(t) · tf(t,d) / (tf(t,d) + K(dl(d)))
//
// dl is the doc's exact length in terms, or with BM25.LossyNorms the length
// Lucene's one-byte norm encoding keeps (see smallfloat.go). The weight is the
// term's count in the query (QueryTerms), as in Anserini's bag-of-words
// query. Scores are float64. Every score, whichever function computes it, is
// the same sequence of float operations (K as k1(1-b) + (k1·b/avgdl)·dl, then
// w·(tf/(tf+K)), summed in query-term order from 0), so Search and
// SearchExhaustive agree bit for bit and a doc's score never depends on the
// part layout: all in the head, spread over segments, or compacted.
//
// Ties break by key ascending, so results are fully deterministic.
//
// # Pruning
//
// Postings are grouped in blocks of 128; each block records its last doc id,
// its largest tf and its smallest doc length. Since a term's contribution
// grows with tf and shrinks with length, w·maxTf/(maxTf + K(minDl)) bounds it
// for every doc of the block under any collection statistics, so the bounds
// are computed per query and stay valid as the workspace grows. Search uses
// them in windowed block-max MaxScore (see Search), with a small relative
// slack on every pruning test so that rounding can never drop a doc that
// exhaustive scoring would return. Pruning pays off when some query terms
// are much more frequent than others (their postings are mostly skipped);
// when it cannot, a window is scored in full, which costs about what
// exhaustive scoring does.
//
// # Storage
//
// MemIndex keeps, per term, growable slices of doc ids and tfs and the block
// table, appended as docs arrive (about 11 bytes per posting with slice
// slack). Frozen sections store each term's doc ids as a portable roaring
// bitmap (readable by any roaring implementation, e.g. for filters), its tfs
// in 1, 2 or 4 bytes each, and its block table; SegIndex decodes them block by
// block straight from the mapped bytes.
package invindex
