package engine

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loci-memory/loci/artifact"
)

func TestIdempotencyDiff(t *testing.T) {
	base := func() IngestInput {
		in := chat("ws", "the original")
		in.IdempotencyKey, in.SessionID = "k", "s"
		in.Permissions = artifact.Permissions{RBACTags: []string{"eng"}}
		return in
	}
	orig := base()
	a := &artifact.Artifact{Type: orig.Type, ActorID: orig.ActorID, SessionID: orig.SessionID, Permissions: orig.Permissions,
		ContentHash: artifact.ContentHash(orig.Payload)}
	for _, c := range []struct {
		name   string
		change func(*IngestInput)
		want   []string
	}{
		{"same", func(*IngestInput) {}, nil},
		{"other timestamp", func(in *IngestInput) { in.Timestamp = time.Time{} }, nil},
		{"explicit public", func(in *IngestInput) { in.Permissions.Visibility = "public" }, nil},
		{"empty list", func(in *IngestInput) { in.Permissions.DeniedActors = []string{} }, nil},
		{"payload", func(in *IngestInput) { in.Payload = []byte(`{"role":"user","content":"other"}`) }, []string{"Payload"}},
		{"payload spacing", func(in *IngestInput) { in.Payload = []byte(`{"role": "user","content":"the original"}`) }, []string{"Payload"}},
		{"no payload", func(in *IngestInput) { in.Payload = nil }, []string{"Payload"}},
		{"type and actor", func(in *IngestInput) { in.Type, in.ActorID = "note", "bob" }, []string{"Type", "ActorID"}},
		{"session and thread", func(in *IngestInput) { in.SessionID, in.ThreadID = "", "t" }, []string{"SessionID", "ThreadID"}},
		{"visibility", func(in *IngestInput) { in.Permissions.Visibility = "private" }, []string{"Permissions"}},
		{"tags", func(in *IngestInput) { in.Permissions.RBACTags = nil }, []string{"Permissions"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := base()
			c.change(&in)
			if got := IdempotencyDiff(a, &in); !slices.Equal(got, c.want) {
				t.Fatalf("IdempotencyDiff = %v, want %v", got, c.want)
			}
		})
	}
	// A JSON string payload is compared by its decoded text, as it is hashed.
	s := &artifact.Artifact{Type: "note", ActorID: "alice", ContentHash: artifact.ContentHash([]byte(`"caf\u00e9"`))}
	if d := IdempotencyDiff(s, &IngestInput{Type: "note", ActorID: "alice", Payload: []byte(`"café"`)}); d != nil {
		t.Fatalf("string payload escaped differently: %v", d)
	}
}

// TestIdempotencyConflictStoresNothing: a key reused with another artifact
// is an *IdempotencyConflictError naming the batch item and the stored
// artifact, and nothing of the batch is stored; two items of one batch with
// one key and different artifacts are an *IdempotencyRepeatError naming
// both. (The service's tests check the API's wording of both.)
func TestIdempotencyConflictStoresNothing(t *testing.T) {
	db := openTest(t, t.TempDir(), Options{DisableBackground: true})
	defer db.Close()
	first := chat("ws", "the original")
	first.IdempotencyKey = "k"
	res, err := db.Ingest("t", first)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := db.Ingest("t", first); err != nil || !again.Replayed || again.ArtifactID != res.ArtifactID {
		t.Fatalf("retry: %+v %v", again, err)
	}
	other := chat("ws", "another artifact")
	other.IdempotencyKey = "k"

	_, err = db.Ingest("t", other)
	var conflict *IdempotencyConflictError
	if !errors.As(err, &conflict) || conflict.Item != 0 || conflict.Key != "k" || conflict.Workspace != "ws" || conflict.ArtifactID != res.ArtifactID ||
		!slices.Equal(conflict.Differs, []string{"Payload"}) || !strings.Contains(err.Error(), res.ArtifactID.String()) {
		t.Fatalf("Ingest with a reused key: %v", err)
	}
	_, err = db.IngestBatch("t", []IngestInput{chat("ws", "a new one"), other})
	if !errors.As(err, &conflict) || conflict.Item != 1 {
		t.Fatalf("IngestBatch with a reused key: %v", err)
	}
	x, y := chat("ws", "twin one"), chat("ws", "twin two")
	x.IdempotencyKey, y.IdempotencyKey = "twin", "twin"
	_, err = db.IngestBatch("t", []IngestInput{x, y})
	var repeat *IdempotencyRepeatError
	if !errors.As(err, &repeat) || repeat.Item != 1 || repeat.Earlier != 0 || repeat.Key != "twin" || !slices.Equal(repeat.Differs, []string{"Payload"}) {
		t.Fatalf("IngestBatch with one key for two artifacts: %v", err)
	}
	arts, _, err := db.WorkspaceContent("t", "ws")
	if err != nil || len(arts) != 1 {
		t.Fatalf("workspace holds %d artifacts (%v), want 1", len(arts), err)
	}
	// The keys of the refused batches stay free.
	y.IdempotencyKey = "fresh"
	if r, err := db.IngestBatch("t", []IngestInput{x, x, y}); err != nil || r[0].ArtifactID != r[1].ArtifactID || !r[1].Replayed {
		t.Fatalf("batch after refusals: %+v %v", r, err)
	}
}

// TestFeedbackWithoutActor: actor_id is optional; private without an actor
// is private for nobody.
func TestFeedbackWithoutActor(t *testing.T) {
	db := openTest(t, t.TempDir(), Options{DisableBackground: true})
	defer db.Close()
	res, err := db.Ingest("t", chat("ws", "a private matter"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Feedback("t", FeedbackInput{Workspace: "ws", Action: ActionPrivate, ArtifactID: res.ArtifactID}); err != nil {
		t.Fatal(err)
	}
	marks, _ := db.Marks("t", "ws")
	m := marks[res.SpanIDs[0]]
	if !m.Private || len(m.PrivateFor) != 0 {
		t.Fatalf("marks %+v", m)
	}
}
