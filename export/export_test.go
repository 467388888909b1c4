package export

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/internal/enginetest"
)

func open(t *testing.T) *engine.DB {
	t.Helper()
	db := enginetest.Open(t, t.TempDir(), engine.Options{NoEmbedder: true, DisableBackground: true})
	t.Cleanup(func() { db.Close() })
	return db
}

// An export imported into an empty workspace exports again byte for byte,
// more than one import batch of artifacts and feedback included.
func TestRoundTrip(t *testing.T) {
	src := open(t)
	base := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var ins []engine.IngestInput
	for i := 0; i < ImportBatchItems+10; i++ {
		in := engine.IngestInput{Workspace: "w", ActorID: "alice", Type: "note", Timestamp: base.Add(time.Duration(i) * time.Minute),
			Payload:  []byte(fmt.Sprintf(`{"content":"note %d <&>: slot %d"}`, i, i%17)),
			Metadata: map[string]string{"k": fmt.Sprint(i % 3)}}
		if i%5 == 0 {
			in.IdempotencyKey = fmt.Sprint("key-", i)
			in.Permissions = artifact.Permissions{Visibility: "private", AllowedActors: []string{"alice"}}
		}
		ins = append(ins, in)
	}
	res, err := src.IngestBatch("t", ins)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Feedback("t", engine.FeedbackInput{Workspace: "w", ActorID: "alice", Action: "pin", ArtifactID: res[3].ArtifactID}); err != nil {
		t.Fatal(err)
	}
	h := Header{Tenant: "t", Workspace: "w", ExportedAt: "2026-03-02T00:00:00Z", LociVersion: "test"}
	var first bytes.Buffer
	sum, err := Write(&first, src, "t", "w", h)
	if err != nil || sum.Artifacts != len(ins) || sum.Feedback != 1 {
		t.Fatalf("write: %+v %v", sum, err)
	}

	r := NewReader(bytes.NewReader(first.Bytes()))
	got, isHeader, err := r.Header()
	if err != nil || !isHeader || got.Format != Format || got.Version != Version || got.DataVersion != sum.DataVersion {
		t.Fatalf("header: %+v %v %v", got, isHeader, err)
	}
	dst := open(t)
	arts, events, err := r.Import(dst, "t", "w")
	if err != nil || arts != len(ins) || events != 1 {
		t.Fatalf("import: %d %d %v", arts, events, err)
	}
	if err := r.Trailing(); err != nil {
		t.Fatal(err)
	}
	var second bytes.Buffer
	if _, err := Write(&second, dst, "t", "w", h); err != nil {
		t.Fatal(err)
	}
	// The data version is the import's own (cmd/loci sets the exported one
	// on the staging copy); everything after the header is the same.
	a, b := first.Bytes()[bytes.IndexByte(first.Bytes(), '\n'):], second.Bytes()[bytes.IndexByte(second.Bytes(), '\n'):]
	if !bytes.Equal(a, b) {
		t.Fatal("the re-export differs from the export")
	}

	if _, err := Write(io.Discard, src, "t", "nothing", h); err != ErrNoData {
		t.Fatalf("empty workspace: %v", err)
	}
}
