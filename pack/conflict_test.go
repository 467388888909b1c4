package pack

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
)

func TestQuantities(t *testing.T) {
	tests := []struct {
		in   string
		want string // "value unit text" per quantity, joined by "; "
	}{
		{"", ""},
		{"no numbers here", ""},
		{"version 2 and Q3 and v1.5", ""},
		{"The window is 30 days.", `30 day "30 days"`},
		{"a 30-day window", `30 day "30-day"`},
		{"uptime 99.9% or 99.9 percent", `99.9 % "99.9%"; 99.9 % "99.9 percent"`},
		{"costs $1,200 per seat", `1200 $ "$1,200"`},
		{"costs 1,200 dollars", `1200 $ "1,200 dollars"`},
		{"raised $5 million", `5e+06 $ "$5 million"`},
		{"5 million users", `5e+06 user "5 million users"`},
		{"2k users", `2000 user "2k users"`},
		{"disk 512GB, p99 200ms", `512 gb "512GB"; 200 ms "200ms"`},
		{"between 10-20 days", `20 day "20 days"`},
		{"a drop of -5%", `-5 % "-5%"`},
		{"€30 or £40 or ¥50", `30 € "€30"; 40 £ "£40"; 50 ¥ "¥50"`},
		{"3x faster", `3 x "3x"`},
		{"5m away, 7b params, 2024Q3", ""},
		{"in 30\ndays", ""},
		{"1.5 hours then 2 hrs", `1.5 h "1.5 hours"; 2 h "2 hrs"`},
		{"1,2345 days", `2345 day "2345 days"`},
	}
	for _, tt := range tests {
		var got []string
		for _, q := range quantities(tt.in) {
			got = append(got, fmt.Sprintf("%v %s %q", q.value, q.unit, q.text))
		}
		if s := strings.Join(got, "; "); s != tt.want {
			t.Errorf("quantities(%q) = %s, want %s", tt.in, s, tt.want)
		}
	}
}

func TestDetectConflict(t *testing.T) {
	tests := []struct {
		name, a, b string
		kind, desc string // kind "" for no conflict
	}{
		// numerical
		{"numbers differ", "The refund window is 30 days.", "The refund window is 45 days.",
			ConflictNumerical, `numerical: "30 days" vs "45 days"`},
		{"numbers agree", "The refund window is 30 days.", "Refund window: 30 days.", "", ""},
		{"one shared value", "The refund window is 30 days or 45 days.", "The refund window is 30 days.", "", ""},
		{"different units", "The refund window is 30 days.", "The refund window is 45 hours.", "", ""},
		// A bare number after a term numbers it ("platform 7", "window ... 30").
		{"unitless numbers", "The refund window is 30.", "The refund window is 45.", ConflictNumerical, `numerical: "30" vs "45"`},
		{"unitless numbers of other things", "The refund window is 30.", "The shipping window is 45.", "", ""},
		{"low overlap", "The refund window is 30 days.", "Shipping from the warehouse to Oslo takes 45 days by sea freight.", "", ""},
		{"currency", "The enterprise seat costs $1,200 per year.", "The enterprise seat costs $1,500 per year.",
			ConflictNumerical, `numerical: "$1,200 per year" vs "$1,500 per year"`},
		{"a rate and an amount", "The offsite budget is $15,500.", "The offsite facilitator charges $95 per hour.", "", ""},
		{"a time and a count", "The design sync is at 10:00.", "The design sync has 10 people.", "", ""},
		{"percent", "Target uptime for the API is 99.9%.", "Target uptime for the API is 99.95 percent.",
			ConflictNumerical, `numerical: "99.9%" vs "99.95 percent"`},
		{"scaled values equal", "The company raised $5 million in seed funding.", "The company raised $5,000,000 in seed funding.", "", ""},
		// A document's title line is a clause of its own (a blank line
		// ends it), not part of the first sentence's subject.
		{"after a title line", "Title: Refund policy\n\nRefunds are issued within 30 days of purchase.",
			"Update from finance: refunds are issued within 45 days of purchase since March.",
			ConflictNumerical, `numerical: "30 days" vs "45 days"`},
		// supersession
		{"revised to", "The refund window is thirty days for annual plans.", "The refund window for annual plans was revised to sixty days.",
			ConflictSupersession, `supersession: the second says "revised"`},
		{"no longer, first", "Annual plans no longer include phone support.", "Annual plans include phone support.",
			ConflictSupersession, `supersession: the first says "no longer"`},
		{"supersedes", "This memo supersedes the travel policy.", "The travel policy allows business class.",
			ConflictSupersession, `supersession: the first says "supersedes"`},
		{"replaced by", "The legacy dashboard was replaced by Grafana.", "Use the legacy dashboard for alerts.",
			ConflictSupersession, `supersession: the first says "replaced"`},
		{"updated to", "The wiki was updated to describe onboarding.", "Onboarding is described in the wiki.",
			ConflictSupersession, `supersession: the first says "updated"`},
		{"phrase without overlap", "The parking rules were revised to allow bikes.", "Quarterly revenue grew in Europe.", "", ""},
		{"cue about another subject", "The parking policy was revised. To be clear, refunds apply.", "Who owns the travel agenda?", "", ""},
		{"a confirmation", "Correction: the design sync is no longer 10:00, it is 14:30.", "Confirmed: design sync at 14:30.", "", ""},
		{"moved, not asked", "Heads up: the design sync is no longer 10:00, it moved to 14:30.", "Who should own the offsite agenda?", "", ""},
		{"moved address", "My home address is 12 Elm Street.", "I moved! My new home address is 48 Birch Lane.",
			ConflictSupersession, `supersession: the second says "new"`},
		{"pushed date", "The launch is planned for November 20.", "The launch is pushed to December 4.",
			ConflictNumerical, `numerical: "November 20" vs "December 4"`},
		// negation
		{"will / will not", "The launch will happen in March.", "The launch will not happen in March.",
			ConflictNegation, `negation: "will" vs "will not"`},
		{"won't", "The vendor won't renew the contract.", "The vendor will renew the contract.",
			ConflictNegation, `negation: "will not" vs "will"`},
		{"can / cannot", "Contractors can access the staging cluster.", "Contractors cannot access the staging cluster.",
			ConflictNegation, `negation: "can" vs "cannot"`},
		{"can't", "Guests can't use the VPN.", "Guests can use the VPN.",
			ConflictNegation, `negation: "cannot" vs "can"`},
		{"approved / rejected", "The budget request was approved.", "The budget request was rejected.",
			ConflictNegation, `negation: "approved" vs "rejected"`},
		{"not approved", "The budget request was not approved.", "The budget request was approved.",
			ConflictNegation, `negation: "rejected" vs "approved"`},
		{"allowed / prohibited", "Pets are allowed in the office.", "Pets are prohibited in the office.",
			ConflictNegation, `negation: "allowed" vs "prohibited"`},
		{"not allowed", "Pets are not allowed in the office.", "Pets are allowed in the office.",
			ConflictNegation, `negation: "prohibited" vs "allowed"`},
		{"enabled / disabled", "SSO is enabled for the admin console.", "SSO is disabled for the admin console.",
			ConflictNegation, `negation: "enabled" vs "disabled"`},
		{"both forms on one side", "Pets are allowed, dogs are prohibited in the office.", "Pets are allowed in the office.", "", ""},
		{"same polarity", "The budget was approved.", "The budget request was approved by finance.", "", ""},
		{"negation in another sentence", "The launch will not happen in March. We will publish notes.", "We will publish notes weekly.", "", ""},
		{"negation in the same sentence of a longer span", "We publish notes weekly. The launch will not happen in March.", "The launch will happen in March, as planned.",
			ConflictNegation, `negation: "will not" vs "will"`},
		{"negation without overlap", "The budget was approved.", "Parking is prohibited on the lawn.", "", ""},
		// "not be 45 days" denies 45 days: no current value clashes.
		{"a denied value", "The refund window will be 30 days.", "The refund window will not be 45 days.",
			ConflictNegation, `negation: "will" vs "will not"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, desc := detectConflict(featuresOf(tt.a), featuresOf(tt.b), 0, false)
			if kind != tt.kind || desc != tt.desc {
				t.Errorf("got %q %q, want %q %q", kind, desc, tt.kind, tt.desc)
			}
		})
	}
}

func TestConflictID(t *testing.T) {
	a := uuid.MustParse("11111111-1111-4111-8111-111111111111")
	b := uuid.MustParse("22222222-2222-4222-8222-222222222222")
	id := ConflictID(a, b)
	if id != ConflictID(b, a) {
		t.Error("ConflictID depends on argument order")
	}
	if id.Version() != 8 || id.Variant() != uuid.RFC4122 {
		t.Errorf("version %d variant %v", id.Version(), id.Variant())
	}
	if id == ConflictID(a, a) {
		t.Error("different pairs share an id")
	}
	// Golden, checked with Python's hashlib: the id is part of the
	// contract (resolve_conflict feedback names it).
	if got, want := id.String(), "b804a7cb-c53d-8715-8cfb-2ae9c037ec00"; got != want {
		t.Errorf("ConflictID = %s, want %s", got, want)
	}
}

// TestConflictsInPack: conflicts are found among included spans only,
// listed in the CONFLICTS section by cite numbers, and claim A is the span
// cited first.
func TestConflictsInPack(t *testing.T) {
	a := cnd(1, 1, "The refund window is 30 days.", 9)
	b := cnd(2, 2, "The refund window is 45 days.", 8)
	c := cnd(3, 3, "The refund window is 60 days.", 7)
	c.Marks.MarkedWrong = true
	r := Pack(req("refund window", 1000), nil, []Candidate{c, b, a}, est)
	if len(r.Conflicts) != 1 {
		t.Fatalf("conflicts %+v", r.Conflicts)
	}
	cf := r.Conflicts[0]
	if cf.ClaimA.SpanID != a.SpanID || cf.ClaimB.SpanID != b.SpanID || cf.CiteA != 1 || cf.CiteB != 2 ||
		cf.ID != ConflictID(a.SpanID, b.SpanID) || cf.ClaimA.ContentHash != artifact.SpanHash(a.Text) || cf.Resolution != nil {
		t.Errorf("conflict %+v", cf)
	}
	if want := "=== CONFLICTS ===\nConflict [cite:1] vs [cite:2]: numerical: \"30 days\" vs \"45 days\"\n=== END CONTEXT ===\n"; !strings.HasSuffix(r.ContextText, want) {
		t.Errorf("context text %q", r.ContextText)
	}
	// Resolved by feedback: the engine marks the other span outdated, and
	// the conflict is gone.
	b.Marks = Marks{Outdated: true, OutdatedBy: "resolve_conflict " + cf.ID.String()}
	r = Pack(req("refund window", 1000), nil, []Candidate{c, b, a}, est)
	if len(r.Conflicts) != 0 || strings.Contains(r.ContextText, "CONFLICTS") || outcome(r, b.SpanID) != ReasonOutdated {
		t.Errorf("after resolution: conflicts %+v, outcome %q", r.Conflicts, outcome(r, b.SpanID))
	}
}

// TestFeatureQuantities: featuresOf reads the same quantities as
// quantities, in the same pass as the words.
func TestFeatureQuantities(t *testing.T) {
	texts := []string{"v1.5 costs $1,200.50 or 3 million users; 10-20 days, -5% and 5GB", "Q3 2024: 30-day 99.9% uptime"}
	for seed := range uint64(200) {
		s := randomScenario(seed)
		for _, c := range s.candidates {
			texts = append(texts, c.Text)
		}
	}
	for _, s := range texts {
		got, want := featuresOf(s).quants, quantities(s)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%q: featuresOf %v, quantities %v", s, got, want)
		}
	}
}

// TestConflictsPerSpan: a span records conflicts with at most
// MaxConflictsPerSpan included spans, the first cited ones.
func TestConflictsPerSpan(t *testing.T) {
	var cs []Candidate
	for i := range 5 {
		cs = append(cs, cnd(i+1, i+1, fmt.Sprintf("The refund window for plan %c is 30 days.", 'a'+i), float64(20-i)))
	}
	late := cnd(9, 9, "The refund window for plans a b c d e is 90 days.", 10)
	r := Pack(req("refund window", 10000), nil, append(cs, late), est)
	var with []int
	for _, cf := range r.Conflicts {
		if cf.ClaimB.SpanID == late.SpanID {
			with = append(with, cf.CiteA)
		}
	}
	if fmt.Sprint(with) != "[1 2 3]" {
		t.Errorf("the late span conflicts with cites %v, want [1 2 3]; all: %d", with, len(r.Conflicts))
	}
}

// TestDetectCorrection: a short correction conflicts with the statement it
// corrects, though they share too few terms for the numerical rule's
// Jaccard bound; unrelated numbers do not conflict.
func TestDetectCorrection(t *testing.T) {
	const meeting = "The weekly planning meeting with the design team is 30 minutes."
	tests := []struct {
		name, a, b string
		desc       string // "" for no conflict
	}{
		// positives
		{"not N after", meeting, "It is 45 minutes, not 30.", `numerical: "30 minutes" vs "45 minutes" (a correction)`},
		{"not N first", "It is 45 minutes, not 30.", meeting, `numerical: "45 minutes" vs "30 minutes" (a correction)`},
		{"not N with its unit", "The standup takes 30 minutes every morning in the small room.", "The standup: 45 minutes, not 30 minutes.",
			`numerical: "30 minutes" vs "45 minutes" (a correction)`},
		{"never N", "Our retention period for audit logs in the EU region is 90 days by default.", "Retention is 30 days, never 90.",
			`numerical: "90 days" vs "30 days" (a correction)`},
		{"correction:", "Customers on annual or monthly plans get their money back by card: the refund window is 30 days from purchase, handled by support.", "Correction: the refund window is 45 days.",
			`numerical: "30 days" vs "45 days" (a correction)`},
		{"actually", "Actually the campaign budget is $5,000.", "Finance approved the marketing budget for the spring campaign in Europe and Asia, $4,000 this year, after a long review.",
			`numerical: "$5,000" vs "$4,000" (a correction)`},
		{"the issue's example", "The meeting is 30 minutes.", "it is 45 minutes, not 30", `numerical: "30 minutes" vs "45 minutes" (a correction)`},
		// negatives
		{"another subject", "The deploy takes 30 minutes.", "Lunch is 45 minutes, not 30.", ""},
		{"another unit", "The flight takes 3 hours.", "It is 45 minutes, not 30.", ""},
		{"denied value not stated", "The review meeting is 45 minutes.", "It is 45 minutes, not 30.", ""},
		{"unrelated unit, same number", "The report is due in 30 days.", "Sam is 45 years old, not 30.", ""},
		{"a bare number denied", "The office has 30 desks on the second floor.", "It is not 30, it is 45.", ""},
		{"denial without a new value", meeting, "The meeting is not 30 minutes late.", ""},
		{"actually, another subject", meeting, "Actually the train to Leeds takes 40 minutes.", ""},
		{"actually, same value", meeting, "Actually the planning meeting is 30 minutes.", ""},
		{"correction without numbers", meeting, "Correction: the planning meeting moved to Tuesday.", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, desc := detectConflict(featuresOf(tt.a), featuresOf(tt.b), 0, false)
			want := ""
			if tt.desc != "" {
				want = ConflictNumerical
			}
			if kind != want || desc != tt.desc {
				t.Errorf("got %q %q, want %q %q", kind, desc, want, tt.desc)
			}
		})
	}
}

// TestCorrectionInPack: a short correction is reported in the pack's
// conflicts with the statement it corrects.
func TestCorrectionInPack(t *testing.T) {
	a := cnd(1, 1, "The weekly planning meeting with the design team is 30 minutes.", 9)
	b := cnd(2, 2, "It is 45 minutes, not 30.", 8)
	r := Pack(req("how long is the weekly planning meeting", 1000), nil, []Candidate{a, b}, est)
	if len(r.Conflicts) != 1 || r.Conflicts[0].ClaimA.SpanID != a.SpanID || r.Conflicts[0].ClaimB.SpanID != b.SpanID {
		t.Fatalf("conflicts %+v", r.Conflicts)
	}
	want := "=== CONFLICTS ===\nConflict [cite:1] vs [cite:2]: numerical: \"30 minutes\" vs \"45 minutes\" (a correction)\n=== END CONTEXT ===\n"
	if !strings.HasSuffix(r.ContextText, want) {
		t.Errorf("context text %q", r.ContextText)
	}
}
