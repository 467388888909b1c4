package pack

import "github.com/loci-memory/loci/text"

// result assembles the Result of a filled pack; cs are all the candidates,
// in relevance order; counts are the token counts of the context text, the
// prefix and the working set.
func (f *filler) result(req Request, w Weights, cs []*cand, contextText, prefix, ws string, counts [3]int) *Result {
	tokens := counts[0]
	r := &Result{
		ContextText:    contextText,
		PrefixText:     prefix,
		WorkingSetText: ws,
		TotalTokens:    tokens,
		Citations:      make([]Citation, len(f.included)),
		Conflicts:      f.conflicts,
		Exclusions:     make([]Exclusion, 0, len(cs)-len(f.included)),
		Assumptions:    []string{},
		PolicySummary:  req.Policy.normalise(),
	}
	if r.Conflicts == nil {
		r.Conflicts = []Conflict{}
	}
	evidence := 0
	for i, c := range f.included {
		r.Citations[i] = Citation{
			Index:          c.cite,
			ArtifactID:     c.ArtifactID,
			SpanID:         c.SpanID,
			StartOffset:    c.Start,
			EndOffset:      c.End,
			ContentHash:    c.contentHash(),
			SourceType:     c.SourceType,
			Timestamp:      FormatTime(c.Timestamp),
			ActorID:        optional(c.CreatorID),
			SessionID:      optional(c.SessionID),
			RelevanceScore: c.rel,
			ContentPreview: preview(c.Text),
			Pinned:         i < f.npinned,
			Text:           c.Text,
		}
		if c.Tokens > 0 {
			evidence += c.Tokens
		} else {
			evidence += f.tok.Count(c.Text)
		}
	}

	// Exclusions in candidate order.
	var budgetCut, visible []*cand
	for _, c := range cs {
		switch c.reason {
		case "", ReasonLowRelevance, ReasonRedundancy, ReasonBudget:
			visible = append(visible, c)
		}
		if c.reason == "" {
			continue
		}
		r.Exclusions = append(r.Exclusions, Exclusion{
			SpanID:         c.SpanID,
			ArtifactID:     c.ArtifactID,
			Reason:         c.reason,
			Detail:         c.detail,
			RelevanceScore: c.rel,
		})
		if c.reason == ReasonBudget {
			budgetCut = append(budgetCut, c)
		}
	}

	r.Confidence = confidence(f.included, budgetCut, visible, f.query, evidence)
	switch {
	case len(f.included) == 0 || evidence < f.tun.MinEvidenceTokens:
		r.Abstain, r.AbstainReason = true, AbstainFewTokens
	case r.Confidence < f.tun.MinConfidence:
		r.Abstain, r.AbstainReason = true, AbstainLowConfidence
	}

	r.ChannelContributions = contributions(cs, w)
	if !req.SemanticAvailable {
		r.Assumptions = append(r.Assumptions, AssumeNoSemantic)
	}
	if len(req.Windows) > 0 {
		r.Assumptions = append(r.Assumptions, windowAssumption(req.Windows, req.AsOf))
		r.Windows = req.Windows
	}
	r.TokenAccounting = TokenAccounting{
		Budget:           f.budget,
		PrefixTokens:     counts[1],
		WorkingSetTokens: counts[2],
		TotalUsed:        tokens,
		Remaining:        f.budget - tokens,
	}
	r.PackHash = PackHash(r.ContextText, r.Citations)
	return r
}

// contributions counts, per channel, the considered candidates it scored
// and how many of them were cited. The temporal channel scores every
// candidate.
func contributions(cs []*cand, w Weights) []ChannelContribution {
	out := []ChannelContribution{
		{Channel: ChannelLexical, Weight: round6(w.Lexical)},
		{Channel: ChannelSemantic, Weight: round6(w.Semantic)},
		{Channel: ChannelTemporal, Weight: round6(w.Temporal)},
	}
	for _, c := range cs {
		for i, in := range []bool{c.InLexical, c.InSemantic, true} {
			if in {
				out[i].CandidateCount++
				if c.included {
					out[i].SelectedCount++
				}
			}
		}
	}
	return out
}

// preview returns the first PreviewLength code points of s.
func preview(s string) string {
	n := 0
	for i := range s {
		if n == PreviewLength {
			return s[:i]
		}
		n++
	}
	return s
}

// countOrZero counts s, or returns 0 for the empty string without asking.
func countOrZero(tok text.TokenCounter, s string) int {
	if s == "" {
		return 0
	}
	return tok.Count(s)
}
