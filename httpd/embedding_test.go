package httpd

import (
	"strings"
	"testing"

	"github.com/loci-memory/loci/embed/glove"
	"github.com/loci-memory/loci/engine"
)

// With background embedding, v2 ingest with wait_for_embedding answers once
// the batch is embedded; the status endpoint reports the embedding state.
func TestWaitForEmbedding(t *testing.T) {
	h := &harness{t: t, dir: t.TempDir(), opts: engine.Options{Embedder: glove.New(), EmbedInBackground: true}}
	h.start()
	t.Cleanup(h.stop)
	arts := []map[string]any{
		{"artifact_type": "note", "raw_payload": "the deploy moved to Friday"},
		{"artifact_type": "note", "raw_payload": "lunch is at noon"},
		{"artifact_type": "note", "raw_payload": ""}, // no spans: nothing to embed
	}
	m := h.do("POST", "/v2/ingest", "", map[string]any{"workspace_id": "ws", "actor_id": "a", "wait_for_embedding": true,
		"artifacts": arts}).must(t, 201)
	items := m["ingested"].([]any)
	for i, it := range items {
		if e := it.(map[string]any)["embedding"]; e != engine.EmbeddingEmbedded {
			t.Fatalf("item %d: embedding %v after wait_for_embedding", i, e)
		}
	}
	id := items[0].(map[string]any)["artifact_id"].(string)
	st := h.do("GET", "/v1/artifacts/"+id+"/status", "", nil).must(t, 200)
	if st["embedding"] != engine.EmbeddingEmbedded {
		t.Fatalf("status %v", st)
	}
	// Both flags at once is a contradiction: 400 naming the field, nothing stored.
	r := h.do("POST", "/v2/ingest", "", map[string]any{"workspace_id": "ws2", "actor_id": "a", "wait_for_embedding": true,
		"async_index": true, "artifacts": arts})
	if r.status != 400 || !strings.Contains(string(r.body), "wait_for_embedding") {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

// Without an embedder the state is none.
func TestEmbeddingStateNone(t *testing.T) {
	h := newHarness(t, Config{})
	m := h.do("POST", "/v2/ingest", "", map[string]any{"workspace_id": "ws", "actor_id": "a", "wait_for_embedding": true,
		"artifacts": []map[string]any{{"artifact_type": "note", "raw_payload": "hello"}}}).must(t, 201)
	if e := m["ingested"].([]any)[0].(map[string]any)["embedding"]; e != engine.EmbeddingNone {
		t.Fatalf("embedding %v", e)
	}
}
