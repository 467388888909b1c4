package pack

import "testing"

// TestConflictRuleEdges adds to TestDetectConflict the phrase and
// negation forms it leaves out (superseded, supersede, "can not", "never")
// and the value rule's subject test (heads, see sameSubject). Terms are
// chosen so the stemmer leaves them alone: each side's term set is spelled
// out in the comment.
func TestConflictRuleEdges(t *testing.T) {
	tests := []struct {
		name, a, b string
		kind, desc string // kind "" for no conflict
	}{
		// Heads {kiwi mango} and {kiwi mango papaya}: one holds the other.
		{"numerical, one head within the other", "Kiwi mango: 30 days.", "Kiwi mango papaya: 45 days.",
			ConflictNumerical, `numerical: "30 days" vs "45 days"`},
		// Heads {kiwi mango papaya} and {kiwi mango guava}: each names its own thing.
		{"numerical, heads of their own", "Kiwi mango papaya: 30 days.", "Kiwi mango guava: 45 days.", "", ""},
		// Heads {kiwi} and {mango guava}: nothing shared.
		{"numerical, no shared head", "Kiwi: 30 days.", "Mango guava: 45 days.", "", ""},
		{"superseded", "The travel policy was superseded last spring.", "The travel policy allows business class.",
			ConflictSupersession, `supersession: the first says "superseded"`},
		{"supersede, second", "The travel policy allows business class.", "These rules supersede the travel policy.",
			ConflictSupersession, `supersession: the second says "supersede"`},
		{"no longer without overlap", "Kiwi mango papaya no longer ship.", "Guava lychee banana melon grow.", "", ""},
		{"can not", "Contractors can not access the staging cluster.", "Contractors can access the staging cluster.",
			ConflictNegation, `negation: "cannot" vs "can"`},
		{"never approved", "The budget request was never approved.", "The budget request was approved.",
			ConflictNegation, `negation: "rejected" vs "approved"`},
		{"not enabled", "SSO is enabled for the admin console.", "SSO is not enabled for the admin console.",
			ConflictNegation, `negation: "enabled" vs "disabled"`},
		{"negation clauses without overlap", "The budget request was approved. Kiwi mango papaya guava.", "Kiwi mango papaya guava were rejected.", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, desc := detectConflict(featuresOf(tt.a), featuresOf(tt.b), 0)
			if kind != tt.kind || desc != tt.desc {
				t.Errorf("got %q %q, want %q %q", kind, desc, tt.kind, tt.desc)
			}
			// Through Pack, in both input orders: the same verdict.
			for _, order := range [][2]string{{tt.a, tt.b}, {tt.b, tt.a}} {
				ca, cb := cnd(1, 1, order[0], 9), cnd(2, 2, order[1], 8)
				r := Pack(req(tt.a+" "+tt.b, 4000), nil, []Candidate{cb, ca}, est)
				if len(r.Citations) != 2 {
					t.Fatalf("%d citations", len(r.Citations))
				}
				if tt.kind == "" && len(r.Conflicts) != 0 || tt.kind != "" && (len(r.Conflicts) != 1 || r.Conflicts[0].Kind != tt.kind) {
					t.Errorf("Pack with %q first: conflicts %+v", order[0], r.Conflicts)
				}
			}
		})
	}
}
