package engine

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
)

func openTest(t *testing.T, dir string, opts Options) *DB {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	db, err := testOpen(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return db
}

func chat(ws, content string) IngestInput {
	return IngestInput{Workspace: ws, ActorID: "alice", Type: "chat_turn",
		Payload:   []byte(fmt.Sprintf(`{"role":"user","content":%q}`, content)),
		Timestamp: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func mustIngest(t *testing.T, db *DB, tenant string, in IngestInput) IngestResult {
	t.Helper()
	r, err := db.Ingest(tenant, in)
	if err != nil {
		t.Fatalf("ingest: %v", err)
	}
	if len(r.SpanIDs) == 0 {
		t.Fatalf("ingest of %s: no spans", in.Payload)
	}
	return r
}

func TestIngestAndRead(t *testing.T) {
	db := openTest(t, t.TempDir(), Options{DisableBackground: true})
	defer db.Close()
	in := chat("ws-1", "The deploy window moved to Friday. Budget is 4000 dollars.")
	res, err := db.Ingest("t1", in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Replayed || !res.Indexed || len(res.SpanIDs) == 0 {
		t.Fatalf("unexpected result %+v", res)
	}
	a, err := db.Artifact("t1", res.ArtifactID)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Payload, in.Payload) || a.ContentHash != artifact.ContentHash(in.Payload) || a.ContentHash != res.ContentHash {
		t.Fatalf("payload or hash differ: %s", a.Payload)
	}
	if a.Timestamp != in.Timestamp.UnixMicro() || a.ActorID != "alice" || a.Workspace != "ws-1" || a.Tenant != "t1" {
		t.Fatalf("metadata differs: %+v", a)
	}
	spans, err := db.ArtifactSpans("t1", res.ArtifactID)
	if err != nil || len(spans) != len(res.SpanIDs) || spans[0].ID != res.SpanIDs[0] {
		t.Fatalf("spans %v %v", spans, err)
	}
	if !strings.Contains(spans[0].Text, "deploy window") {
		t.Fatalf("span text %q", spans[0].Text)
	}
	// Another tenant sees nothing, not even that the id exists.
	if _, err := db.Artifact("t2", res.ArtifactID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("other tenant: %v", err)
	}
	if _, err := db.Artifact("t1", uuid.New()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
}

func TestStringPayloadHash(t *testing.T) {
	db := openTest(t, t.TempDir(), Options{DisableBackground: true})
	defer db.Close()
	res, err := db.Ingest("t", IngestInput{Workspace: "w", ActorID: "a", Type: "note", Payload: []byte(`"caf\u00e9 notes"`)})
	if err != nil {
		t.Fatal(err)
	}
	if want := artifact.ContentHash([]byte(`"café notes"`)); res.ContentHash != want {
		t.Fatal("hash of a JSON string payload must be of its decoded text")
	}
}

// TestValidation: the engine refuses an input that breaks its invariants
// (naming IngestInput's field; the API's validation is the service's).
func TestValidation(t *testing.T) {
	db := openTest(t, t.TempDir(), Options{DisableBackground: true})
	defer db.Close()
	ok := chat("ws", "hello")
	cases := []struct {
		name  string
		edit  func(*IngestInput)
		field string
	}{
		{"no workspace", func(in *IngestInput) { in.Workspace = "" }, "Workspace"},
		{"no actor", func(in *IngestInput) { in.ActorID = "" }, "ActorID"},
		{"no type", func(in *IngestInput) { in.Type = "" }, "Type"},
		{"bad type", func(in *IngestInput) { in.Type = "tweet" }, "Type"},
		{"bad json", func(in *IngestInput) { in.Payload = []byte(`{"a":`) }, "Payload"},
		{"number payload", func(in *IngestInput) { in.Payload = []byte(`42`) }, "Payload"},
		{"bad visibility", func(in *IngestInput) { in.Permissions.Visibility = "secret" }, "Permissions.Visibility"},
		{"long key", func(in *IngestInput) { in.IdempotencyKey = strings.Repeat("k", MaxIDLength+1) }, "IdempotencyKey"},
		{"control char", func(in *IngestInput) { in.Workspace = "a\nb" }, "Workspace"},
		{"empty tag", func(in *IngestInput) { in.Permissions.RBACTags = []string{""} }, "Permissions.RBACTags[0]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := ok
			c.edit(&in)
			_, err := db.Ingest("t", in)
			var ie *InvalidError
			if !errors.As(err, &ie) || ie.Field != c.field {
				t.Fatalf("got %v, want InvalidError on %s", err, c.field)
			}
		})
	}
	// A bad item in a batch names its index and stores nothing.
	bad := ok
	bad.Type = "nope"
	_, err := db.IngestBatch("t", []IngestInput{ok, bad})
	var ie *InvalidError
	if !errors.As(err, &ie) || ie.Field != "Type" || !strings.Contains(err.Error(), "item 1") {
		t.Fatalf("batch: %v", err)
	}
	if arts, _, _ := db.WorkspaceContent("t", "ws"); len(arts) != 0 {
		t.Fatalf("a rejected batch stored %d artifacts", len(arts))
	}
}

func TestIdempotency(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, Options{DisableBackground: true})
	in := chat("ws", "remember the milk")
	in.IdempotencyKey = "k1"
	first, err := db.Ingest("t", in)
	if err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		again, err := db.Ingest("t", in)
		if err != nil {
			t.Fatal(err)
		}
		if !again.Replayed || again.ArtifactID != first.ArtifactID || len(again.SpanIDs) != len(first.SpanIDs) {
			t.Fatalf("%s: replay %+v, first %+v", when, again, first)
		}
	}
	check("head")
	// Same key in another workspace or tenant is a different artifact.
	other := in
	other.Workspace = "ws2"
	if r, _ := db.Ingest("t", other); r.Replayed {
		t.Fatal("key leaked across workspaces")
	}
	if r, _ := db.Ingest("t2", in); r.Replayed {
		t.Fatal("key leaked across tenants")
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	check("segment")
	db.Close()
	db = openTest(t, dir, Options{DisableBackground: true})
	defer db.Close()
	check("after restart")
	// A batch repeating a key stores it once.
	b := chat("ws3", "x")
	b.IdempotencyKey = "dup"
	res, err := db.IngestBatch("t", []IngestInput{b, b})
	if err != nil || res[0].ArtifactID != res[1].ArtifactID || res[0].Replayed || !res[1].Replayed {
		t.Fatalf("batch dup: %+v %v", res, err)
	}
}

func TestConcurrentIdempotency(t *testing.T) {
	db := openTest(t, t.TempDir(), Options{DisableBackground: true})
	defer db.Close()
	in := chat("ws", "same thing, many times")
	in.IdempotencyKey = "racy"
	ids := make([]uuid.UUID, 32)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := db.Ingest("t", in)
			if err != nil {
				t.Error(err)
			}
			ids[i] = r.ArtifactID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("concurrent ingests with one key created two artifacts: %s %s", ids[0], id)
		}
	}
	if arts, _, _ := db.WorkspaceContent("t", "ws"); len(arts) != 1 {
		t.Fatalf("%d artifacts stored", len(arts))
	}
}

// TestOpenNeedsAnEmbedderChoice: the engine has no default embedder; Open
// with neither Embedder nor NoEmbedder is refused and creates nothing.
func TestOpenNeedsAnEmbedderChoice(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if _, err := Open(dir, Options{Logger: quietLogger()}); !errors.Is(err, errNoEmbedderChosen) {
		t.Fatalf("Open without an embedder choice: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("refused Open left %s behind: %v", dir, err)
	}
	db, err := Open(dir, Options{NoEmbedder: true, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
}

func TestSecondOpenFails(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, Options{DisableBackground: true})
	defer db.Close()
	_, err := testOpen(dir, Options{Logger: quietLogger()})
	if err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second Open: %v", err)
	}
}

func TestClosed(t *testing.T) {
	db := openTest(t, t.TempDir(), Options{DisableBackground: true})
	db.Close()
	if _, err := db.Ingest("t", chat("w", "x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("ingest after close: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

func TestEraseWorkspace(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, Options{DisableBackground: true})
	var ids []uuid.UUID
	for i := 0; i < 5; i++ {
		r, err := db.Ingest("t", chat("doomed", fmt.Sprintf("secret number %d", i)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ArtifactID)
		if i == 2 {
			db.Flush() // some in a segment, some in the head
		}
	}
	kept, _ := db.Ingest("t", chat("kept", "stays"))
	same, _ := db.Ingest("t2", chat("doomed", "other tenant, same name"))
	res, err := db.EraseWorkspace("t", "doomed")
	if err != nil || res.Artifacts != 5 || res.Spans < 5 {
		t.Fatalf("erase: %+v %v", res, err)
	}
	gone := func(when string, left int) {
		t.Helper()
		for _, id := range ids {
			if _, err := db.Artifact("t", id); !errors.Is(err, ErrNotFound) {
				t.Fatalf("%s: erased artifact readable: %v", when, err)
			}
		}
		if arts, _, _ := db.WorkspaceContent("t", "doomed"); len(arts) != left {
			t.Fatalf("%s: %d artifacts left", when, len(arts))
		}
		if _, err := db.Artifact("t", kept.ArtifactID); err != nil {
			t.Fatalf("%s: other workspace lost: %v", when, err)
		}
		if _, err := db.Artifact("t2", same.ArtifactID); err != nil {
			t.Fatalf("%s: other tenant lost: %v", when, err)
		}
	}
	gone("at once", 0)
	// The workspace can be used again.
	again, err := db.Ingest("t", chat("doomed", "fresh start"))
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	db = openTest(t, dir, Options{DisableBackground: true})
	gone("after restart", 1)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	gone("after compaction", 1)
	if _, err := db.Artifact("t", again.ArtifactID); err != nil {
		t.Fatalf("post-erase artifact lost: %v", err)
	}
	if st := db.Stats(); st.Tombstones != 1 { // the fence of jobs accepted before the erasure (fence.go)
		t.Fatalf("tombstone dropped after compaction purged the data: %+v", st)
	}
	db.Close()
	// Physically gone: no file in the directory holds the erased text.
	assertNotOnDisk(t, dir, "secret number")
	db = openTest(t, dir, Options{DisableBackground: true})
	defer db.Close()
	gone("reopened after compaction", 1)
}
