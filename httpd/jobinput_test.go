package httpd

import (
	"bytes"
	"testing"
	"time"

	"github.com/loci-memory/loci/engine"
)

// TestJobInputKeepsPayloadBytes: an asynchronous job must store raw_payload
// exactly as sent (spacing, key order, escapes), or the artifact indexed
// later is not the one acknowledged (found by loci torture).
func TestJobInputKeepsPayloadBytes(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, payload := range []string{
		`{"content": "hello  world" }`,
		"{\n  \"title\": \"t\",\n  \"content\": \"a \\u00e9 \\\"q\\\"\"\n}",
		`"just a string"`,
		`[1, 2,3]`,
		``,
	} {
		in := engine.IngestInput{Workspace: "ws", ActorID: "a", Type: "note", Payload: []byte(payload), Timestamp: now, IdempotencyKey: "k"}
		got, _, err := decodeJobInput(encodeJobInput(in, now))
		if err != nil {
			t.Fatalf("payload %q: %v", payload, err)
		}
		if !bytes.Equal(got.Payload, in.Payload) {
			t.Errorf("payload %q came back as %q", payload, got.Payload)
		}
		if got.Workspace != "ws" || got.IdempotencyKey != "k" || !got.Timestamp.Equal(now) {
			t.Errorf("payload %q: other fields changed: %+v", payload, got)
		}
	}
}
