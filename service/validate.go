package service

import (
	"encoding/json"
	"fmt"

	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/text"
)

// prepareInput is the one validation of an artifact to ingest, after its
// conversion (IngestRequest.input): errors name the API's fields, in the
// order the API documents, the engine's invariants (engine.IngestInput)
// among them. It extracts the payload's text once and hands it to the
// engine with the input (IngestInput.Text), so that the engine indexes it
// without parsing the payload again; text.Extract's parser accepts exactly
// what encoding/json does (text.FuzzParseJSON), so its parse is the
// validity check too.
func prepareInput(in *engine.IngestInput) error {
	if err := engine.CheckID("workspace_id", in.Workspace, true); err != nil {
		return err
	}
	if err := engine.CheckID("actor_id", in.ActorID, true); err != nil {
		return err
	}
	if in.Type == "" {
		return &InvalidError{Field: "artifact_type", Reason: "is required"}
	}
	if !artifact.ValidType(in.Type) {
		return &InvalidError{Field: "artifact_type", Reason: fmt.Sprintf("unknown value %q; allowed: %v", in.Type, artifact.Types)}
	}
	for _, f := range []struct{ name, v string }{{"idempotency_key", in.IdempotencyKey}, {"session_id", in.SessionID}, {"thread_id", in.ThreadID}} {
		if err := engine.CheckID(f.name, f.v, false); err != nil {
			return err
		}
	}
	in.Text, in.Extracted = "", true
	if len(in.Payload) > 0 {
		s, err := text.Extract(in.Type, in.ActorID, in.Payload)
		switch {
		case err != nil && !json.Valid(in.Payload):
			return &InvalidError{Field: "raw_payload", Reason: "is not valid JSON"}
		case !engine.JSONContainer(in.Payload):
			return &InvalidError{Field: "raw_payload", Reason: "must be a JSON object, string or array"}
		case err != nil:
			return &InvalidError{Field: "raw_payload", Reason: err.Error()}
		}
		in.Text = s
	}
	if !engine.ValidVisibility(in.Permissions.Visibility) {
		return &InvalidError{Field: "permissions.visibility", Reason: fmt.Sprintf("unknown value %q; allowed: public, private, restricted", in.Permissions.Visibility)}
	}
	for _, l := range []struct {
		name string
		v    []string
	}{{"permissions.allowed_actors", in.Permissions.AllowedActors}, {"permissions.denied_actors", in.Permissions.DeniedActors}, {"permissions.rbac_tags", in.Permissions.RBACTags}} {
		for i, s := range l.v {
			if err := engine.CheckID(fmt.Sprintf("%s[%d]", l.name, i), s, true); err != nil {
				return err
			}
		}
	}
	if err := engine.CheckMetadata("metadata", in.Metadata); err != nil {
		return err
	}
	return nil
}

// checkWorkspace is engine.CheckWorkspaceID for the routes that read or
// erase a workspace (context packs, feedback, receipts, erasure). An id
// outside the rule is refused like at ingest, unless tenant already holds
// data under it, written before the rule: such a workspace stays readable
// and erasable, so no data is stranded, but nothing new can be ingested
// into it.
func checkWorkspace(db *engine.DB, tenant, ws string) error {
	err := engine.CheckWorkspaceID(ws)
	if err == nil {
		return nil
	}
	if engine.CheckID("workspace_id", ws, true) == nil && db.DataVersion(tenant, ws) != 0 {
		return nil
	}
	return err
}
