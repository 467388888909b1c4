package pack

import (
	"strings"
	"testing"
)

// TestSupersededNewestFirst: when included spans state different values
// for one subject, the newest is cited first whatever its relevance, the
// older is marked superseded by it, and spans not in the conflict keep
// their places; with equal times nothing is superseded or moved.
func TestSupersededNewestFirst(t *testing.T) {
	const day = int64(24 * 3600 * 1_000_000)
	tests := []struct {
		name      string
		newer     int // which of old (0) and changed (1) is newer; -1 equal times
		wantFirst int
	}{
		{"changed value is newer", 1, 1},
		{"old value is newer", 0, 0},
		{"equal times", -1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := cnd(1, 1, "The offsite budget is $12,000.", 9)
			other := cnd(2, 2, "The offsite agenda is owned by Nora.", 7)
			changed := cnd(3, 3, "The offsite budget was raised to $15,500.", 8)
			switch tt.newer {
			case 1:
				changed.Timestamp += day
			case 0:
				old.Timestamp += day
			}
			r := Pack(req("offsite budget", 1000), nil, []Candidate{changed, other, old}, est)
			if len(r.Citations) != 3 || len(r.Conflicts) != 1 {
				t.Fatalf("citations %d conflicts %+v\n%s", len(r.Citations), r.Conflicts, r.ContextText)
			}
			// By relevance (equal times): old, changed, other. The pair
			// keeps positions 1 and 2, newest first; other keeps 3.
			first := []Candidate{old, changed}[tt.wantFirst]
			second := []Candidate{old, changed}[1-tt.wantFirst]
			if r.Citations[0].SpanID != first.SpanID || r.Citations[1].SpanID != second.SpanID || r.Citations[2].SpanID != other.SpanID {
				t.Errorf("cite order:\n%s", r.ContextText)
			}
			cf := r.Conflicts[0]
			if cf.ClaimA.SpanID != first.SpanID || cf.CiteA != 1 || cf.CiteB != 2 {
				t.Errorf("conflict claims %+v", cf)
			}
			if !strings.Contains(r.ContextText, "Conflict [cite:1] vs [cite:2]: ") || !strings.Contains(r.ContextText, "[cite:1] "+renderedLine(&first)+"\n") {
				t.Errorf("context text %q", r.ContextText)
			}
			if tt.newer < 0 {
				if cf.SupersededSpanID != nil || cf.SupersededBy != nil {
					t.Errorf("equal times: superseded %v by %v", cf.SupersededSpanID, cf.SupersededBy)
				}
				return
			}
			if cf.SupersededSpanID == nil || *cf.SupersededSpanID != second.SpanID || cf.SupersededBy == nil || *cf.SupersededBy != first.SpanID {
				t.Errorf("superseded %v by %v, want %v by %v", cf.SupersededSpanID, cf.SupersededBy, second.SpanID, first.SpanID)
			}
		})
	}
}
