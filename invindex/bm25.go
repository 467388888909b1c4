package invindex

import "math"

// BM25 holds the ranking parameters. See the package documentation for the
// formula.
type BM25 struct {
	K1, B float64 // term-frequency saturation and length normalisation
	// LossyNorms scores each document with the length Lucene would store for
	// it (SmallFloat.intToByte4, then byte4ToInt) instead of its exact length,
	// for parity runs against Lucene and Anserini.
	LossyNorms bool
}

// DefaultBM25 is Anserini's default parameter set.
var DefaultBM25 = BM25{K1: 0.9, B: 0.4}

// pruneSafe reports whether the parameters keep a term's score non-decreasing
// in tf and non-increasing in document length, which the block bounds of
// Search rely on. Other parameters are scored exhaustively.
func (p BM25) pruneSafe() bool {
	return p.K1 >= 0 && !math.IsInf(p.K1, 1) && p.B >= 0 && p.B <= 1
}

// idf is Lucene's BM25 idf: ln(1 + (n - df + 0.5)/(df + 0.5)), positive for
// every 0 < df <= n.
func idf(n, df int64) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}

// scorer holds the per-query constants of the length normalisation
// K(dl) = k1·(1 - b + b·dl/avgdl), computed as c0 + c1·dl.
//
// Every score Search and SearchExhaustive produce goes through k and contrib,
// so a document's score is the same float64 operations whichever path and
// part layout computed it. The explicit float64 conversions stop the compiler
// from fusing a multiply and an add into one FMA in some call sites and not
// in others.
type scorer struct {
	c0, c1 float64
	lossy  bool
	kNorm  [256]float64 // K of each Lucene norm byte, when lossy
}

func newScorer(p BM25, avgdl float64) scorer {
	s := scorer{c0: float64(p.K1 * (1 - p.B)), lossy: p.LossyNorms}
	if avgdl > 0 {
		s.c1 = float64(p.K1 * p.B / avgdl)
	}
	if s.lossy {
		for i := range s.kNorm {
			s.kNorm[i] = s.c0 + float64(s.c1*float64(byte4ToInt(byte(i))))
		}
	}
	return s
}

// k returns K for a document of dl terms.
func (s *scorer) k(dl uint32) float64 {
	if s.lossy {
		return s.kNorm[intToByte4(dl)]
	}
	return s.c0 + float64(s.c1*float64(dl))
}

// contrib is one term's share of a document's score: w·tf/(tf + K), where w
// is the query-term weight times its idf.
func contrib(w float64, tf uint32, k float64) float64 {
	f := float64(tf)
	return float64(w * float64(f/(f+k)))
}
