package pack

import "math"

// microsPerHour converts Unix microsecond differences to hours.
const microsPerHour = 3600e6

// score computes the channel scores and the fused relevance of every
// candidate:
//
//	lexical  = Lexical / max Lexical over cs   (0 when that max is not positive)
//	semantic = Semantic clamped to [0,1]
//	temporal = 2^(-age / half-life), age = max(0, asOf - Timestamp) in hours
//	relevance = w.Lexical*lexical + w.Semantic*semantic + w.Temporal*temporal
//
// with the effective weights w (summing to 1). Non-finite channel scores
// count as 0. The relevance is rounded by round6.
func score(cs []*cand, w Weights, asOf int64, halfLifeHours float64) {
	maxLex := 0.0
	for _, c := range cs {
		maxLex = max(maxLex, finite(c.Lexical))
	}
	for _, c := range cs {
		if maxLex > 0 {
			c.lex = clamp01(finite(c.Lexical) / maxLex)
		}
		c.sem = clamp01(finite(c.Semantic))
		age := 0.0
		if c.Timestamp < asOf {
			age = float64(asOf-c.Timestamp) / microsPerHour
		}
		c.temp = clamp01(math.Exp2(-age / halfLifeHours))
		// Explicit conversions keep the compiler from fusing multiply-adds,
		// which some architectures would round differently.
		rel := float64(w.Lexical*c.lex) + float64(w.Semantic*c.sem)
		rel += float64(w.Temporal * c.temp)
		c.rel = round6(clamp01(rel))
	}
}

// round6 rounds x to 6 decimal places. Scores are reported and compared
// rounded, so that they print short and differ between machines only when a
// last-bit difference in math.Exp2 crosses a rounding boundary.
func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// finite returns x, or 0 when x is NaN or infinite.
func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}

// clamp01 clamps x to [0,1]; NaN becomes 0.
func clamp01(x float64) float64 {
	if !(x > 0) {
		return 0
	}
	return min(x, 1)
}
