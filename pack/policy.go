package pack

import (
	"fmt"
	"slices"
)

// strict reports whether a privacy level is strict. Only "" and "default"
// are the default level; any other value is treated as strict, so that an
// unexpected value narrows access rather than widening it.
func strict(level string) bool { return level != "" && level != PrivacyDefault }

// policyDenial returns why the request's policy or the artifact's
// permissions keep c away from actor, or "" when they allow it. The checks
// run in this order and the first failing one is reported:
//
//  1. denied_sources holds the artifact type;
//  2. allowed_sources is non-empty and lacks it;
//  3. allowed_actors is non-empty and lacks the artifact's creator;
//  4. rbac_required names a tag the artifact lacks (the first such tag,
//     in request order; tags compare exactly);
//  5. the artifact's denied_actors holds the actor;
//  6. visibility: public (or empty) is visible to all; private only to its
//     creator, and to nobody under privacy_level strict; restricted only to
//     its allowed_actors; an anonymous request sees public artifacts only;
//     an unknown visibility is visible to nobody.
func policyDenial(c *Candidate, actor string, p Policy) string {
	perm := &c.Permissions
	switch {
	case slices.Contains(p.DeniedSources, c.SourceType):
		return fmt.Sprintf("source type %q is in denied_sources", c.SourceType)
	case len(p.AllowedSources) > 0 && !slices.Contains(p.AllowedSources, c.SourceType):
		return fmt.Sprintf("source type %q is not in allowed_sources", c.SourceType)
	case len(p.AllowedActors) > 0 && !slices.Contains(p.AllowedActors, c.CreatorID):
		return fmt.Sprintf("creator %q is not in allowed_actors", c.CreatorID)
	}
	for _, tag := range p.RBACRequired {
		if !slices.Contains(perm.RBACTags, tag) {
			return fmt.Sprintf("missing required RBAC tag %q", tag)
		}
	}
	if actor != "" && slices.Contains(perm.DeniedActors, actor) {
		return fmt.Sprintf("actor %q is in the artifact's denied_actors", actor)
	}
	switch perm.Visibility {
	case "", "public":
		return ""
	case "private", "restricted":
	default:
		return fmt.Sprintf("artifact visibility %q is unknown", perm.Visibility)
	}
	if actor == "" {
		return fmt.Sprintf("artifact is %s and the request has no actor_id", perm.Visibility)
	}
	if perm.Visibility == "private" {
		if strict(p.PrivacyLevel) {
			return "artifact is private and privacy_level is strict"
		}
		if actor != c.CreatorID {
			return fmt.Sprintf("artifact is private to its creator %q", c.CreatorID)
		}
		return ""
	}
	if !slices.Contains(perm.AllowedActors, actor) {
		return fmt.Sprintf("artifact is restricted and actor %q is not in its allowed_actors", actor)
	}
	return ""
}

// feedbackDenial returns the exclusion reason and detail of c's feedback
// marks for actor, or "" when they do not exclude it. PRIVATE is checked
// first, then MARKED_WRONG, then OUTDATED.
func feedbackDenial(m *Marks, actor string, p Policy) (reason, detail string) {
	switch {
	case m.Private && strict(p.PrivacyLevel):
		return ReasonPrivate, "marked private by feedback; privacy_level strict excludes private spans for every actor"
	case m.Private && (actor == "" || !slices.Contains(m.PrivateFor, actor)):
		return ReasonPrivate, "marked private by feedback; visible only to the actors who marked it"
	case m.MarkedWrong:
		return ReasonMarkedWrong, "marked wrong by feedback"
	case m.Outdated && m.OutdatedBy != "":
		return ReasonOutdated, fmt.Sprintf("marked outdated by feedback (%s)", m.OutdatedBy)
	case m.Outdated:
		return ReasonOutdated, "marked outdated by feedback"
	}
	return "", ""
}

// normalise returns p as the receipt's policy summary: nil lists as empty
// ones and the privacy level spelled out.
func (p Policy) normalise() Policy {
	orEmpty := func(s []string) []string {
		if s == nil {
			return []string{}
		}
		return slices.Clone(s)
	}
	level := PrivacyDefault
	if strict(p.PrivacyLevel) {
		level = PrivacyStrict
	}
	return Policy{
		AllowedSources: orEmpty(p.AllowedSources),
		DeniedSources:  orEmpty(p.DeniedSources),
		AllowedActors:  orEmpty(p.AllowedActors),
		RBACRequired:   orEmpty(p.RBACRequired),
		PrivacyLevel:   level,
	}
}
