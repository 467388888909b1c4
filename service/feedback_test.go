package service

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/retrieval"
)

// TestResolveConflictByID: a resolve_conflict naming only the conflict finds
// its spans in the workspace's receipts (from the head and from a segment)
// and makes the other claim outdated; an unknown conflict is not found, and
// the event's own fields are checked before the lookup.
func TestResolveConflictByID(t *testing.T) {
	h := newData(t, Config{})
	ctx := context.Background()
	for _, s := range []string{"The refund window is 30 days.", "The refund window is 45 days."} {
		raw, _ := json.Marshal(s)
		_, err := h.svc.Ingest(ctx, open, IngestRequest{WorkspaceID: "ws", ActorID: "u1", ArtifactType: "note", RawPayload: raw})
		if err != nil {
			t.Fatal(err)
		}
	}
	req := retrieval.PackRequest{Workspace: "ws", Query: "refund window days", MaxTokens: 2000}
	res, err := h.svc.Packer().ContextPack(ctx, open.TenantID, req)
	if err != nil || len(res.Result.Conflicts) != 1 {
		t.Fatalf("pack: %v, %+v", err, res)
	}
	cf := res.Result.Conflicts[0]
	for _, c := range []struct {
		name string
		r    FeedbackRequest
		want func(error) bool
	}{
		{"unknown conflict", FeedbackRequest{WorkspaceID: "ws", ActorID: "u", Action: engine.ActionResolveConflict, ConflictID: "0b6f3c1e-0000-4000-8000-000000000000"},
			func(err error) bool { return errors.Is(err, ErrNotFound) }},
		{"not a uuid", FeedbackRequest{WorkspaceID: "ws", ActorID: "u", Action: engine.ActionResolveConflict, ConflictID: "c1"},
			func(err error) bool { return errors.Is(err, ErrNotFound) }},
		{"bad actor before the lookup", FeedbackRequest{WorkspaceID: "ws", ActorID: "a\x01b", Action: engine.ActionResolveConflict, ConflictID: "c1"},
			func(err error) bool {
				var ie *engine.InvalidError
				return errors.As(err, &ie) && ie.Field == "actor_id"
			}},
		{"preferred span outside the conflict", FeedbackRequest{WorkspaceID: "ws", ActorID: "u", Action: engine.ActionResolveConflict, ConflictID: cf.ID.String(),
			ArtifactID: cf.ClaimA.ArtifactID.String(), PreferredSpanID: "0b6f3c1e-0000-4000-8000-000000000000"},
			func(err error) bool {
				return err != nil && err.Error() == "preferred_span_id: is not one of the conflict's two spans"
			}},
		// The artifact is looked up first (the request's, as no claim is kept).
		{"preferred span outside, no artifact", FeedbackRequest{WorkspaceID: "ws", ActorID: "u", Action: engine.ActionResolveConflict, ConflictID: cf.ID.String(),
			PreferredSpanID: "0b6f3c1e-0000-4000-8000-000000000000"},
			func(err error) bool { return errors.Is(err, ErrNotFound) }},
		{"no conflict id, no artifact", FeedbackRequest{WorkspaceID: "ws", ActorID: "u", Action: engine.ActionResolveConflict},
			func(err error) bool { return errors.Is(err, ErrNotFound) }},
	} {
		if _, err := h.svc.Feedback(open, c.r); !c.want(err) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if err := h.db.Flush(); err != nil {
		t.Fatal(err)
	}
	fb, err := h.svc.Feedback(open, FeedbackRequest{WorkspaceID: "ws", ActorID: "u", Action: engine.ActionResolveConflict,
		ConflictID: cf.ID.String(), PreferredSpanID: cf.ClaimB.SpanID.String()})
	if err != nil || fb.Applied != 1 {
		t.Fatalf("resolve: %+v %v", fb, err)
	}
	res, err = h.svc.Packer().ContextPack(ctx, open.TenantID, req)
	if err != nil || len(res.Result.Conflicts) != 0 {
		t.Fatalf("pack after resolving: %v, %d conflicts", err, len(res.Result.Conflicts))
	}
	for _, c := range res.Result.Citations {
		if c.SpanID == cf.ClaimA.SpanID {
			t.Fatalf("the other claim (%s) is still cited", c.SpanID)
		}
	}
}
