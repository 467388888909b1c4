package pack

import (
	"cmp"
	"slices"
)

// supersede puts the current value first. For each conflict between two
// spans of different times it marks the older span superseded by the
// newer (Conflict.SupersededSpanID, SupersededBy); and within the working
// set, the spans joined by conflicts take the cite positions they hold
// between them newest first, so a reader meets the current value before
// the ones it replaced. Every other span keeps its position, and pinned
// spans keep theirs (the prefix is the pinned order). Cite numbers,
// claims and descriptions follow the new order, and the running count
// takes the conflict lines' new costs; when that no longer fits, final
// counts the whole text and takes spans out as usual.
func (f *filler) supersede() {
	if len(f.conflicts) == 0 {
		return
	}
	// Groups of working set spans joined by conflicts (union-find over
	// positions in f.included).
	parent := make([]int, len(f.included))
	for i := range parent {
		parent[i] = i
	}
	find := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	for _, cf := range f.conflicts {
		a, b := cf.CiteA-1, cf.CiteB-1
		if a >= f.npinned && b >= f.npinned {
			parent[find(a)] = find(b)
		}
	}
	order := slices.Clone(f.included)
	moved := false
	groups := map[int][]int{} // root -> positions, ascending
	for i := f.npinned; i < len(order); i++ {
		r := find(i)
		groups[r] = append(groups[r], i)
	}
	for i := f.npinned; i < len(order); i++ {
		pos := groups[find(i)]
		if len(pos) < 2 || pos[0] != i {
			continue // handled at the group's first position
		}
		members := make([]*cand, len(pos))
		for k, p := range pos {
			members[k] = f.included[p]
		}
		slices.SortStableFunc(members, func(x, y *cand) int {
			return cmp.Or(-cmp.Compare(x.Timestamp, y.Timestamp), -cmp.Compare(x.Seq, y.Seq))
		})
		for k, p := range pos {
			if order[p] != members[k] {
				order[p], moved = members[k], true
			}
		}
	}
	if moved {
		for _, cf := range f.conflicts {
			f.used -= f.tok.Count(conflictLine(&cf))
		}
		f.included = order
		for i, c := range f.included {
			c.cite = i + 1
		}
	}
	for i := range f.conflicts {
		cf := &f.conflicts[i]
		a, b := f.spanOfCite(cf.CiteA), f.spanOfCite(cf.CiteB)
		if moved {
			a, b = f.bySpan(cf.ClaimA.SpanID), f.bySpan(cf.ClaimB.SpanID)
			if a.cite > b.cite {
				a, b = b, a
			}
			cf.ClaimA, cf.ClaimB, cf.CiteA, cf.CiteB = claim(a), claim(b), a.cite, b.cite
			if kind, desc := detectConflict(a.feat, b.feat, newerOf(a.Timestamp, a.Seq, b.Timestamp, b.Seq), bothChat(a, b)); kind != "" {
				cf.Kind, cf.Description = kind, desc
			}
			f.used += f.tok.Count(conflictLine(cf))
		}
		switch newerOf(a.Timestamp, a.Seq, b.Timestamp, b.Seq) {
		case -1:
			cf.SupersededSpanID, cf.SupersededBy = &b.SpanID, &a.SpanID
		case 1:
			cf.SupersededSpanID, cf.SupersededBy = &a.SpanID, &b.SpanID
		}
	}
}

// spanOfCite returns the included span cited as n.
func (f *filler) spanOfCite(n int) *cand { return f.included[n-1] }

// bySpan returns the included span with the given id.
func (f *filler) bySpan(id [16]byte) *cand {
	for _, c := range f.included {
		if c.SpanID == id {
			return c
		}
	}
	return nil
}
