package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/loci-memory/loci/cluster/natstest"
	"github.com/loci-memory/loci/engine"
)

// TestNoQuorumNeverAcknowledges: with two of three NATS servers stopped
// (SIGSTOP), a write through a node is refused with ErrUnavailable within
// the publish timeout, never acknowledged, while reads go on; once they
// resume, the client's retry (same idempotency key, through the other node)
// is acknowledged, and both nodes hold exactly one artifact for the key.
func TestNoQuorumNeverAcknowledges(t *testing.T) {
	nc := natstest.Start(t, 3)
	nodes := openNodes(t, nc, 2, 2, func(c *Config) { c.PublishTimeout = 2 * time.Second })
	in := func(key string) engine.IngestInput {
		return engine.IngestInput{Workspace: "w", ActorID: "a", Type: "note", IdempotencyKey: key,
			Payload: []byte(fmt.Sprintf(`{"text":"write %s"}`, key))}
	}
	first, err := mustEngine(t, nodes[0], "t", "w").Ingest("t", in("before"))
	if err != nil {
		t.Fatal(err)
	}
	if err := nodes[1].WaitDataVersion(context.Background(), nodes[0].DataVersion()); err != nil {
		t.Fatal(err)
	}
	nc.Pause(1)
	nc.Pause(2)
	start := time.Now()
	res, err := mustEngine(t, nodes[0], "t", "w").Ingest("t", in("during"))
	if !errors.Is(err, engine.ErrUnavailable) {
		t.Fatalf("write without a quorum: %+v, %v; want engine.ErrUnavailable", res, err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the refusal took %s", took)
	}
	if _, err := mustEngine(t, nodes[1], "t", "w").Artifact("t", first.ArtifactID); err != nil {
		t.Fatalf("a read without a quorum: %v", err)
	}
	nc.Resume(1)
	nc.Resume(2)

	var retried engine.IngestResult
	deadline := time.Now().Add(30 * time.Second)
	for {
		retried, err = mustEngine(t, nodes[1], "t", "w").Ingest("t", in("during"))
		if err == nil || !errors.Is(err, engine.ErrUnavailable) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("the retry after the servers resumed: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, n := range nodes {
		if err := n.WaitDataVersion(ctx, nodes[1].DataVersion()); err != nil {
			t.Fatal(err)
		}
	}
	var lists [2]string
	for i, n := range nodes {
		id, ok, err := mustEngine(t, n, "t", "w").ArtifactByIdempotencyKey("t", "w", "during")
		if err != nil || !ok || id != retried.ArtifactID {
			t.Fatalf("node %d: key during -> %s %v %v, want %s", i, id, ok, err, retried.ArtifactID)
		}
		page, err := mustEngine(t, n, "t", "w").ListArtifacts("t", "w", engine.ListQuery{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(page)
		lists[i] = string(b)
		if len(page.Artifacts) != 2 {
			t.Errorf("node %d holds %d artifacts, want 2 (one per key)", i, len(page.Artifacts))
		}
	}
	if lists[0] != lists[1] {
		t.Fatalf("the nodes differ:\n%s\n%s", lists[0], lists[1])
	}
}

// TestServerKilledWritesResume: with one of three NATS servers killed, writes
// through both nodes are acknowledged again once JetStream has re-elected
// leaders, and the restarted server catches up.
func TestServerKilledWritesResume(t *testing.T) {
	nc := natstest.Start(t, 3)
	nodes := openNodes(t, nc, 2, 2)
	nc.Kill(0)
	start := time.Now()
	for i := 0; i < 6; i++ {
		ws := fmt.Sprint("w", i)
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, err := mustEngine(t, nodes[i%2], "t", ws).Ingest("t", engine.IngestInput{Workspace: ws, ActorID: "a", Type: "note",
				IdempotencyKey: ws, Payload: []byte(`{"text":"after the kill"}`)})
			if err == nil {
				break
			}
			if !errors.Is(err, engine.ErrUnavailable) || time.Now().After(deadline) {
				t.Fatalf("write %d after a server was killed: %v", i, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	t.Logf("six writes acknowledged %s after the kill", time.Since(start).Round(time.Millisecond))
	nc.Restart(0)
}
