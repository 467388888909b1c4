package service

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine"
)

// IdempotencyConflictError is an ingest whose idempotency key is already
// the key of another artifact (stored, or accepted in a pending job) that
// differs from it: the API answers 409 (KindConflict), and nothing of the
// request is stored. Its fields are the API's names.
type IdempotencyConflictError struct {
	Field      string // the request's field: idempotency_key, or artifacts[i].idempotency_key
	Key        string
	Workspace  string
	ArtifactID uuid.UUID // the artifact stored under Key
	Differs    []string  // the fields that differ, by the API's names (artifact_type, raw_payload, ...)
}

func (e *IdempotencyConflictError) Error() string {
	return fmt.Sprintf("%s: %q is already the key of artifact %s in workspace %q, which differs from this request in %s; "+
		"resend the original artifact to get it back, or use a new key for a new artifact",
		e.Field, e.Key, e.ArtifactID, e.Workspace, strings.Join(e.Differs, ", "))
}

// keyError words the engine's idempotency errors with the API's names: an
// *engine.IdempotencyConflictError becomes an *IdempotencyConflictError, an
// *engine.IdempotencyRepeatError (two items of a batch with one key) an
// *InvalidError. The key's field is idempotency_key for a single ingest
// (v1) and artifacts[i].idempotency_key in a batch. Any other error is
// returned as it is.
func keyError(err error, batch bool) error {
	field := func(i int) string {
		if batch {
			return fmt.Sprintf("artifacts[%d].idempotency_key", i)
		}
		return "idempotency_key"
	}
	var conflict *engine.IdempotencyConflictError
	var repeat *engine.IdempotencyRepeatError
	switch {
	case errors.As(err, &conflict):
		return &IdempotencyConflictError{Field: field(conflict.Item), Key: conflict.Key, Workspace: conflict.Workspace,
			ArtifactID: conflict.ArtifactID, Differs: apiFields(conflict.Differs)}
	case errors.As(err, &repeat):
		return &InvalidError{Field: field(repeat.Item), Reason: fmt.Sprintf("%q is also the key of artifacts[%d], which differs from this item in %s; one key names one artifact",
			repeat.Key, repeat.Earlier, strings.Join(apiFields(repeat.Differs), ", "))}
	}
	return err
}

// apiFieldNames maps engine.IdempotencyDiff's field names to the API's.
var apiFieldNames = map[string]string{
	"Type": "artifact_type", "Payload": "raw_payload", "ActorID": "actor_id", "SessionID": "session_id",
	"ThreadID": "thread_id", "Permissions": "permissions", "Metadata": "metadata",
}

// apiFields names fields of engine.IngestInput (engine.IdempotencyDiff's)
// by the API's names, in the same order.
func apiFields(fields []string) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		if out[i] = apiFieldNames[f]; out[i] == "" {
			out[i] = f
		}
	}
	return out
}
