package engine

import (
	"fmt"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
)

// metaDocs indexes a part's documents by artifact metadata: for each
// "key\x00value" pair, the documents (spans) of the artifacts holding it. A
// pack with a metadata filter searches only the documents in every pair's
// bitmap, so its candidate pools hold matching spans only, however rare
// they are in the workspace (a filter applied after the pools would leave
// a pack empty whenever the best spans belong to other artifacts).
//
// Heads keep theirs up to date as artifacts are added (head.add) and
// rebuild it with the rest of a workspace's indexes when artifacts are
// dropped; a segment part builds its own once, on the first filtered pack,
// from its ARTIFACT_META rows and span table (segments are immutable).
type metaDocs map[string]*roaring.Bitmap

// metaPair is the index key of one metadata pair.
func metaPair(k, v string) string { return k + "\x00" + v }

// addArtifact indexes the docs [first, first+n) of an artifact.
func (m metaDocs) addArtifact(md map[string]string, first uint32, n int) {
	if n == 0 {
		return
	}
	for k, v := range md {
		p := metaPair(k, v)
		b := m[p]
		if b == nil {
			b = roaring.New()
			m[p] = b
		}
		b.AddRange(uint64(first), uint64(first)+uint64(n))
	}
}

// match returns the docs that hold every pair of filter (not empty): a new
// bitmap the caller owns.
func (m metaDocs) match(filter map[string]string) *roaring.Bitmap {
	pairs := make([]string, 0, len(filter))
	for k, v := range filter {
		pairs = append(pairs, metaPair(k, v))
	}
	slices.Sort(pairs) // the same work whatever the map order
	var out *roaring.Bitmap
	for _, p := range pairs {
		b := m[p]
		if b == nil {
			return roaring.New()
		}
		if out == nil {
			out = b.Clone()
		} else {
			out.And(b)
		}
	}
	if out == nil {
		out = roaring.New()
	}
	return out
}

// metaIndex returns workspace wi's metadata index, built on first use.
// Callers hold DB.mu (shared at least), so the segment stays open.
func (s *liveSegment) metaIndex(wi int) (metaDocs, error) {
	s.metaMu.Lock()
	m, ok := s.metaIdx[wi]
	s.metaMu.Unlock()
	if ok {
		return m, nil
	}
	tagged := map[uuid.UUID]map[string]string{}
	err := segmentMeta(s, wi, func(a *artifact.Artifact) error {
		if len(a.Metadata) > 0 {
			tagged[a.ID] = a.Metadata
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	m = metaDocs{}
	if len(tagged) > 0 {
		err := s.artifactDocs(wi, func(art uuid.UUID, first, n int) error {
			if md := tagged[art]; md != nil {
				m.addArtifact(md, uint32(first), n)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for _, b := range m {
		b.RunOptimize()
	}
	s.metaMu.Lock()
	if s.metaIdx == nil {
		s.metaIdx = map[int]metaDocs{}
	}
	s.metaIdx[wi] = m
	s.metaMu.Unlock()
	return m, nil
}

// artifactDocs calls fn with each artifact of workspace wi and its
// documents [first, first+n): an artifact's spans are contiguous docs.
func (s *liveSegment) artifactDocs(wi int, fn func(art uuid.UUID, first, n int) error) error {
	n := s.SpanCount(wi)
	for doc := 0; doc < n; {
		_, art, ok := s.SpanIDs(wi, doc)
		if !ok {
			return fmt.Errorf("segment %s: workspace %d has no span %d", s.Path(), wi, doc)
		}
		end := doc + 1
		for ; end < n; end++ {
			if _, next, ok := s.SpanIDs(wi, end); !ok || next != art {
				break
			}
		}
		if err := fn(art, doc, end-doc); err != nil {
			return err
		}
		doc = end
	}
	return nil
}

// MetadataDocs returns, for each part in LexicalParts' order, the documents
// whose artifacts hold every pair of filter; nil when filter is empty (no
// restriction). Hand them to invindex.SearchFiltered and the vector scan.
func (v *View) MetadataDocs(filter map[string]string) ([]*roaring.Bitmap, error) {
	if len(filter) == 0 {
		return nil, nil
	}
	out := make([]*roaring.Bitmap, len(v.srcs))
	for i, src := range v.srcs {
		if src.hw != nil {
			out[i] = src.hw.meta.match(filter)
			continue
		}
		m, err := src.seg.metaIndex(src.ws)
		if err != nil {
			return nil, fmt.Errorf("engine: view: %w", err)
		}
		out[i] = src.inView(m.match(filter))
	}
	return out, nil
}

// inView maps a segment part's documents to the part's: the same, unless
// the part is read through its view, whose docs skip erased spans.
func (p partSource) inView(docs *roaring.Bitmap) *roaring.Bitmap {
	if p.view == nil {
		return docs
	}
	inView := roaring.New()
	it := docs.Iterator()
	for it.HasNext() {
		d := it.Next()
		if j, found := slices.BinarySearch(p.view.docs, d); found {
			inView.Add(uint32(j))
		}
	}
	return inView
}
