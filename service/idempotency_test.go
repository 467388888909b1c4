package service

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine"
)

// TestKeyError: the engine's idempotency errors are worded with the API's
// names, the v1 form without the artifacts[i]. prefix, the batch form with
// it, and the differing fields by the API's names in the engine's order.
func TestKeyError(t *testing.T) {
	id := uuid.MustParse("0b6f3c1e-0000-4000-8000-000000000001")
	all := []string{"Type", "Payload", "ActorID", "SessionID", "ThreadID", "Permissions", "Metadata"}
	conflict := &engine.IdempotencyConflictError{Item: 2, Key: "k", Workspace: "w", ArtifactID: id, Differs: all}
	repeat := &engine.IdempotencyRepeatError{Item: 3, Earlier: 1, Key: "twin", Differs: []string{"Payload", "Metadata"}}
	const differs = "artifact_type, raw_payload, actor_id, session_id, thread_id, permissions, metadata"
	for _, c := range []struct {
		err   error
		batch bool
		kind  Kind
		want  string
	}{
		{&engine.IdempotencyConflictError{Key: "k", Workspace: "w", ArtifactID: id, Differs: []string{"Payload"}}, false, KindConflict,
			`idempotency_key: "k" is already the key of artifact ` + id.String() + ` in workspace "w", which differs from this request in raw_payload; ` +
				"resend the original artifact to get it back, or use a new key for a new artifact"},
		{fmt.Errorf("wrapped: %w", conflict), true, KindConflict,
			`artifacts[2].idempotency_key: "k" is already the key of artifact ` + id.String() + ` in workspace "w", which differs from this request in ` + differs + "; " +
				"resend the original artifact to get it back, or use a new key for a new artifact"},
		{repeat, true, KindInvalid,
			`artifacts[3].idempotency_key: "twin" is also the key of artifacts[1], which differs from this item in raw_payload, metadata; one key names one artifact`},
	} {
		got := Classify(keyError(c.err, c.batch))
		if got.Kind != c.kind || got.Detail != c.want {
			t.Errorf("keyError(%v, %v): %v %q, want %v %q", c.err, c.batch, got.Kind, got.Detail, c.kind, c.want)
		}
	}
	other := errors.New("disk on fire")
	if keyError(other, true) != other || keyError(nil, false) != nil {
		t.Error("keyError changed an error that is not the engine's idempotency error")
	}
}
