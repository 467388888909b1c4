package engine

import (
	"fmt"

	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/invindex"
	"github.com/loci-memory/loci/segment"
	"github.com/loci-memory/loci/vecindex"
)

// In every part of a workspace (the head's or a segment's), document i of
// the lexical index, row i of the vectors and span i of the span table are
// the same span, so a hit resolves to its span by position.

// segParts are the search structures of one workspace of a segment.
type segParts struct {
	lex *invindex.SegIndex
	vec *vecindex.SegVectors // nil: the workspace was written without vectors
}

// openSegmentParts opens the index sections of every workspace of s. They
// point into s's mapping and live as long as it.
func openSegmentParts(s *segment.Segment) ([]segParts, error) {
	out := make([]segParts, len(s.Workspaces()))
	// On every core: a segment of many small workspaces (one per end user)
	// sets up as many dictionaries at open.
	err := eachOnCores(len(out), func(wi int) error {
		td, ok1 := s.Section(wi, segment.KindTermDict)
		po, ok2 := s.Section(wi, segment.KindPostings)
		dl, ok3 := s.Section(wi, segment.KindDocLengths)
		if !ok1 || !ok2 || !ok3 {
			return fmt.Errorf("segment %s: workspace %d has no BM25 index sections", s.Path(), wi)
		}
		lex, err := invindex.OpenSegIndex(invindex.Sections{TermDict: td, Postings: po, DocLengths: dl},
			func(doc uint32) [16]byte { return segmentTieKey(s, wi, doc) })
		if err != nil {
			return fmt.Errorf("segment %s: workspace %d: %w", s.Path(), wi, err)
		}
		if lex.NumDocs() != s.SpanCount(wi) {
			return fmt.Errorf("segment %s: workspace %d: index has %d docs for %d spans", s.Path(), wi, lex.NumDocs(), s.SpanCount(wi))
		}
		out[wi].lex = lex
		if vb, ok := s.Section(wi, segment.KindVectors); ok {
			vec, err := vecindex.OpenSegVectors(vb)
			if err != nil {
				return fmt.Errorf("segment %s: workspace %d: %w", s.Path(), wi, err)
			}
			if vec.NumDocs() != s.SpanCount(wi) {
				return fmt.Errorf("segment %s: workspace %d: %d vectors for %d spans", s.Path(), wi, vec.NumDocs(), s.SpanCount(wi))
			}
			out[wi].vec = withTieKeys(vec, s, wi)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Search breaks score ties by artifact.TieKey of each span (its text's CRC-32C,
// then its time), then by position, never by span id: ids are random per
// data directory, and the same writes must give the same packs in a fresh
// one. So the keys of the lexical and vector parts are tie keys: the head's
// are computed at apply, a segment's lexical keys are read from its span
// rows, and its VECTORS section stores them.

// spanTieKey is the search key of a span.
func spanTieKey(sp *artifact.Span) [16]byte { return artifact.TieKey(sp.Text, sp.Timestamp) }

// segmentTieKey is the search key of span doc of workspace ws of s, from the
// checksum its row stores (the same as spanTieKey, without reading the text).
func segmentTieKey(s *segment.Segment, ws int, doc uint32) [16]byte {
	crc, ts, _ := s.SpanTextCRC(ws, int(doc))
	return artifact.TieKeyCRC(crc, ts)
}

// withTieKeys returns vec with tie keys. Segments written before keys were
// tie keys hold span ids in their VECTORS sections; for those the keys are
// computed from the span rows once, at open, so that ties break the same
// way in every part.
func withTieKeys(vec *vecindex.SegVectors, s *segment.Segment, ws int) *vecindex.SegVectors {
	keys := vec.Keys()
	if len(keys) == 0 || keys[0] == segmentTieKey(s, ws, 0) {
		return vec // one writer wrote all keys of a section: the first tells
	}
	tie := make([][16]byte, len(keys))
	for i := range tie {
		tie[i] = segmentTieKey(s, ws, uint32(i))
	}
	return vec.WithKeys(tie)
}

// countSpans returns the counted index terms of each span's text.
func countSpans(spans []artifact.Span) []invindex.DocTerms {
	out := make([]invindex.DocTerms, len(spans))
	for i := range spans {
		out[i] = invindex.CountTerms(invindex.Analyze(spans[i].Text, nil))
	}
	return out
}

// vectorRows collects one int8 vector (dim values) and scale per span for
// building a VECTORS section.
type vectorRows struct {
	model  string
	dim    int
	rows   [][]int8
	scales []float32
	lists  []uint32 // each row's IVF list when copied from a part that keeps it, else vecindex.NoList
	zero   []int8
}

func newVectorRows(model string, dim int) *vectorRows {
	if model == "" {
		return nil
	}
	return &vectorRows{model: model, dim: dim, zero: make([]int8, dim)}
}

// add appends a vector, or a zero vector (no semantic signal) when v is nil.
func (r *vectorRows) add(v []int8, scale float32) {
	if r == nil {
		return
	}
	if v == nil {
		v, scale = r.zero, 0
	}
	r.rows = append(r.rows, v)
	r.scales = append(r.scales, scale)
	r.lists = append(r.lists, vecindex.NoList)
}

// addFrom appends document doc of part p, with its IVF list when p keeps
// it (so the section assigns no row again).
func (r *vectorRows) addFrom(p vecindex.Part, doc int) {
	if r == nil {
		return
	}
	r.add(memRow(p, doc))
	if doc >= p.NumDocs() {
		return // a zero row (memRow)
	}
	if l, ok := vecindex.ListOf(p, doc); ok {
		r.lists[len(r.lists)-1] = l
	}
}

// indexSections builds a workspace's extension sections for the given spans
// (in segment order), their terms and, when rows is non-nil, their vectors.
func indexSections(spans []artifact.Span, terms [][]string, rows *vectorRows) ([]segment.Section, error) {
	keys := make([][16]byte, len(spans))
	for i := range spans {
		keys[i] = spanTieKey(&spans[i])
	}
	lex, err := invindex.BuildSections(keys, terms)
	if err != nil {
		return nil, err
	}
	return withVectorSection(lexicalSections(lex), spans, rows)
}

// withVectorSection appends the VECTORS section of spans built from rows
// (nothing when rows is nil).
func withVectorSection(secs []segment.Section, spans []artifact.Span, rows *vectorRows) ([]segment.Section, error) {
	if rows == nil {
		return secs, nil
	}
	keys := make([][16]byte, len(spans))
	for i := range spans {
		keys[i] = spanTieKey(&spans[i])
	}
	vb, err := vecindex.BuildSectionLists(rows.dim, rows.model, keys, rows.rows, rows.scales, rows.lists)
	if err != nil {
		return nil, err
	}
	return append(secs, segment.Section{Kind: segment.KindVectors, Data: vb}), nil
}

// headSections returns the sections of a head workspace whose spans are all
// being written, straight from its in-memory indexes.
func headSections(w *headWorkspace) ([]segment.Section, error) {
	lex, err := w.lex.Sections()
	if err != nil {
		return nil, err
	}
	secs := lexicalSections(lex)
	if w.vec != nil {
		secs = append(secs, segment.Section{Kind: segment.KindVectors, Data: w.vec.Section()})
	}
	return secs, nil
}

// lexicalSections names the BM25 index's sections for a segment.
func lexicalSections(lex invindex.Sections) []segment.Section {
	return []segment.Section{
		{Kind: segment.KindTermDict, Data: lex.TermDict},
		{Kind: segment.KindPostings, Data: lex.Postings},
		{Kind: segment.KindDocLengths, Data: lex.DocLengths},
	}
}

// memRow returns row i of a vector part as dim values (nil if i is out of range).
func memRow(p vecindex.Part, i int) ([]int8, float32) {
	stride := vecindex.Stride(p.Dim())
	if i < 0 || i >= p.NumDocs() {
		return nil, 0
	}
	return p.Rows()[i*stride : i*stride+p.Dim()], p.Scales()[i]
}
