package retrieval

import (
	"math"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/loci-memory/loci/engine"
)

// searchDocs returns, for each part of v, the only documents the channels
// may return: those of artifacts matching req's metadata filter and within
// its since/until window; nil when neither restricts (every document).
//
// The window is applied here, where candidates are retrieved, and not to
// the gathered pools: BM25 and the vector scan then rank only spans of the
// window, so each channel's pool is filled with in-window spans however few
// of the workspace's they are. Cutting the pools afterwards would leave a
// narrow window with a handful of candidates, or none, whenever its spans
// are not among the workspace's best. The documents of a window are cheap
// to find: a part's artifacts sorted by time (engine.View.TimeDocs), one
// binary search and a range per artifact in the window.
func searchDocs(v *engine.View, req PackRequest) ([]*roaring.Bitmap, error) {
	docs, err := v.MetadataDocs(req.Metadata)
	if err != nil || (req.Since == nil && req.Until == nil) {
		return docs, err
	}
	since, until := int64(math.MinInt64), int64(math.MaxInt64)
	if req.Since != nil {
		since = *req.Since
	}
	if req.Until != nil {
		until = *req.Until
	}
	inWindow, err := v.TimeDocs(since, until)
	if err != nil || docs == nil {
		return inWindow, err
	}
	for i := range docs {
		docs[i].And(inWindow[i])
	}
	return docs, nil
}
