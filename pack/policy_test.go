package pack

import (
	"testing"
)

func TestPolicyDenial(t *testing.T) {
	base := cnd(1, 1, "The quarterly budget is approved.", 5)
	base.SourceType = "document"
	base.CreatorID = "alice"
	base.Permissions = perm("", nil, nil, []string{"finance", "eng"})
	tests := []struct {
		name   string
		edit   func(c *Candidate)
		actor  string
		policy Policy
		want   string // "" when allowed
	}{
		{"no policy", nil, "bob", Policy{}, ""},
		{"denied source", nil, "bob", Policy{DeniedSources: []string{"email", "document"}},
			`source type "document" is in denied_sources`},
		{"allowed source", nil, "bob", Policy{AllowedSources: []string{"document"}}, ""},
		{"source not allowed", nil, "bob", Policy{AllowedSources: []string{"email", "note"}},
			`source type "document" is not in allowed_sources`},
		{"denied wins over allowed", nil, "bob", Policy{AllowedSources: []string{"document"}, DeniedSources: []string{"document"}},
			`source type "document" is in denied_sources`},
		{"allowed actor", nil, "bob", Policy{AllowedActors: []string{"alice"}}, ""},
		{"creator not allowed", nil, "bob", Policy{AllowedActors: []string{"bob", "carol"}},
			`creator "alice" is not in allowed_actors`},
		{"rbac present", nil, "bob", Policy{RBACRequired: []string{"eng", "finance"}}, ""},
		{"rbac first missing tag", nil, "bob", Policy{RBACRequired: []string{"eng", "hr", "legal"}},
			`missing required RBAC tag "hr"`},
		{"rbac case-sensitive", nil, "bob", Policy{RBACRequired: []string{"Finance"}},
			`missing required RBAC tag "Finance"`},
		{"rbac on untagged artifact", func(c *Candidate) { c.Permissions.RBACTags = nil }, "bob",
			Policy{RBACRequired: []string{"finance"}}, `missing required RBAC tag "finance"`},
		{"public explicit", func(c *Candidate) { c.Permissions.Visibility = "public" }, "bob", Policy{}, ""},
		{"public to anonymous", nil, "", Policy{}, ""},
		{"private to creator", func(c *Candidate) { c.Permissions.Visibility = "private" }, "alice", Policy{}, ""},
		{"private to other", func(c *Candidate) { c.Permissions.Visibility = "private" }, "bob", Policy{},
			`artifact is private to its creator "alice"`},
		{"private to anonymous", func(c *Candidate) { c.Permissions.Visibility = "private" }, "", Policy{},
			"artifact is private and the request has no actor_id"},
		{"private under strict", func(c *Candidate) { c.Permissions.Visibility = "private" }, "alice",
			Policy{PrivacyLevel: PrivacyStrict}, "artifact is private and privacy_level is strict"},
		{"unknown privacy level is strict", func(c *Candidate) { c.Permissions.Visibility = "private" }, "alice",
			Policy{PrivacyLevel: "lenient"}, "artifact is private and privacy_level is strict"},
		{"restricted allowed", func(c *Candidate) { c.Permissions = perm("restricted", []string{"bob"}, nil, nil) }, "bob", Policy{}, ""},
		{"restricted not allowed", func(c *Candidate) { c.Permissions = perm("restricted", []string{"bob"}, nil, nil) }, "carol", Policy{},
			`artifact is restricted and actor "carol" is not in its allowed_actors`},
		{"restricted excludes its creator unless listed", func(c *Candidate) { c.Permissions = perm("restricted", []string{"bob"}, nil, nil) }, "alice", Policy{},
			`artifact is restricted and actor "alice" is not in its allowed_actors`},
		{"restricted to anonymous", func(c *Candidate) { c.Permissions = perm("restricted", []string{"bob"}, nil, nil) }, "", Policy{},
			"artifact is restricted and the request has no actor_id"},
		{"denied actor on public", func(c *Candidate) { c.Permissions = perm("public", nil, []string{"bob"}, nil) }, "bob", Policy{},
			`actor "bob" is in the artifact's denied_actors`},
		{"denied actor beats allowed", func(c *Candidate) { c.Permissions = perm("restricted", []string{"bob"}, []string{"bob"}, nil) }, "bob", Policy{},
			`actor "bob" is in the artifact's denied_actors`},
		{"denied actor beats creator", func(c *Candidate) { c.Permissions = perm("private", nil, []string{"alice"}, nil) }, "alice", Policy{},
			`actor "alice" is in the artifact's denied_actors`},
		{"unknown visibility", func(c *Candidate) { c.Permissions.Visibility = "team" }, "alice", Policy{},
			`artifact visibility "team" is unknown`},
		{"policy before visibility", func(c *Candidate) { c.Permissions.Visibility = "private" }, "bob",
			Policy{DeniedSources: []string{"document"}}, `source type "document" is in denied_sources`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			if tt.edit != nil {
				tt.edit(&c)
			}
			if got := policyDenial(&c, tt.actor, tt.policy); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			// Through Pack: the span is excluded for POLICY with that detail.
			rq := req("quarterly budget", 1000)
			rq.ActorID, rq.Policy = tt.actor, tt.policy
			r := Pack(rq, nil, []Candidate{c}, est)
			if tt.want == "" {
				if outcome(r, c.SpanID) != "cite:1" {
					t.Errorf("Pack: outcome %q, want cite:1", outcome(r, c.SpanID))
				}
				return
			}
			if e := exclusionOf(t, r, c.SpanID); e.Reason != ReasonPolicy || e.Detail != tt.want {
				t.Errorf("Pack: exclusion %s %q", e.Reason, e.Detail)
			}
		})
	}
}

func TestFeedbackDenial(t *testing.T) {
	tests := []struct {
		name   string
		marks  Marks
		actor  string
		level  string
		reason string
	}{
		{"no marks", Marks{}, "bob", "", ""},
		{"pinned only", Marks{Pinned: true}, "bob", "", ""},
		{"private to marker", Marks{Private: true, PrivateFor: []string{"bob"}}, "bob", "", ""},
		{"private to other", Marks{Private: true, PrivateFor: []string{"bob"}}, "carol", "", ReasonPrivate},
		{"private to anonymous", Marks{Private: true, PrivateFor: []string{"bob"}}, "", "", ReasonPrivate},
		{"private strict even for marker", Marks{Private: true, PrivateFor: []string{"bob"}}, "bob", PrivacyStrict, ReasonPrivate},
		{"marked wrong", Marks{MarkedWrong: true}, "bob", "", ReasonMarkedWrong},
		{"outdated", Marks{Outdated: true, OutdatedBy: "resolve_conflict 123"}, "bob", "", ReasonOutdated},
		{"private before wrong", Marks{Private: true, MarkedWrong: true}, "bob", "", ReasonPrivate},
		{"wrong before outdated", Marks{MarkedWrong: true, Outdated: true}, "bob", "", ReasonMarkedWrong},
		{"strict without private", Marks{}, "bob", PrivacyStrict, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, _ := feedbackDenial(&tt.marks, tt.actor, Policy{PrivacyLevel: tt.level})
			if reason != tt.reason {
				t.Errorf("feedbackDenial: %q, want %q", reason, tt.reason)
			}
			c := cnd(1, 1, "The office closes at six on Fridays during the summer.", 3)
			c.Marks = tt.marks
			rq := req("office closes", 1000)
			rq.ActorID, rq.Policy.PrivacyLevel = tt.actor, tt.level
			r := Pack(rq, nil, []Candidate{c}, est)
			got := outcome(r, c.SpanID)
			if tt.reason == "" && got != "cite:1" || tt.reason != "" && got != tt.reason {
				t.Errorf("Pack: outcome %q, want %q", got, tt.reason)
			}
		})
	}
	// The outdated detail carries what made it outdated.
	c := cnd(1, 1, "text", 1)
	c.Marks = Marks{Outdated: true, OutdatedBy: "resolve_conflict 42"}
	r := Pack(req("text", 100), nil, []Candidate{c}, est)
	if e := exclusionOf(t, r, c.SpanID); e.Detail != "marked outdated by feedback (resolve_conflict 42)" {
		t.Errorf("outdated detail %q", e.Detail)
	}
}

// TestPolicyPinned: pinned spans pass the same policy and feedback filters.
func TestPolicyPinned(t *testing.T) {
	pub := cnd(1, 1, "Pinned: all refunds need a ticket number.", 0)
	secret := cnd(2, 2, "Pinned: the finance bonus pool is large.", 0)
	secret.Permissions = perm("", nil, nil, []string{"hr"})
	wrong := cnd(3, 3, "Pinned: wrong fact about refunds.", 0)
	wrong.Marks.MarkedWrong = true
	rq := req("unrelated question", 1000)
	rq.Policy.RBACRequired = []string{"hr"}
	r := Pack(rq, []Candidate{pub, secret, wrong}, nil, est)
	if got := outcome(r, pub.SpanID); got != ReasonPolicy {
		t.Errorf("untagged pinned span: %q, want POLICY", got)
	}
	if got := outcome(r, secret.SpanID); got != "cite:1" {
		t.Errorf("tagged pinned span: %q, want cite:1", got)
	}
	if got := outcome(r, wrong.SpanID); got != ReasonPolicy {
		t.Errorf("wrong pinned span: %q, want POLICY (policy comes first)", got)
	}
	if !r.Citations[0].Pinned || r.PrefixText == "" {
		t.Errorf("pinned citation not in the prefix: %+v", r.Citations[0])
	}
}

func TestPolicySummary(t *testing.T) {
	r := Pack(req("x", 100), nil, nil, est)
	want := Policy{AllowedSources: []string{}, DeniedSources: []string{}, AllowedActors: []string{}, RBACRequired: []string{}, PrivacyLevel: "default"}
	if got := r.PolicySummary; got.PrivacyLevel != want.PrivacyLevel || got.RBACRequired == nil || got.AllowedSources == nil {
		t.Errorf("summary %+v", got)
	}
	rq := req("x", 100)
	rq.Policy = Policy{RBACRequired: []string{"finance"}, PrivacyLevel: "strict"}
	r = Pack(rq, nil, nil, est)
	if got := r.PolicySummary; len(got.RBACRequired) != 1 || got.RBACRequired[0] != "finance" || got.PrivacyLevel != "strict" {
		t.Errorf("summary %+v", got)
	}
}
