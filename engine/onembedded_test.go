package engine

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestOnEmbedded: the hook hears of every artifact once its vectors record
// is applied (its vectors are readable then), once per artifact, with its
// tenant; nil removes it.
func TestOnEmbedded(t *testing.T) {
	g := newGatedEmbedder()
	db := openTest(t, t.TempDir(), Options{DisableBackground: true, Embedder: g, EmbedInBackground: true, Logger: quietLogger()})
	defer db.Close()
	var mu sync.Mutex
	heard := map[uuid.UUID]int{}
	states := map[uuid.UUID]string{}
	db.OnEmbedded(func(tenant string, id uuid.UUID) {
		// The DB's lock is released: reading the state is safe here.
		s, err := db.EmbeddingState(tenant, id)
		if err != nil {
			s = err.Error()
		}
		mu.Lock()
		heard[id]++
		states[id] = tenant + "/" + s
		mu.Unlock()
	})
	var ids []uuid.UUID
	for i := range 20 {
		r, err := db.Ingest("t", chat(fmt.Sprintf("ws-%d", i%3), fmt.Sprintf("turn %d about the deploy window", i)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ArtifactID)
	}
	mu.Lock()
	if len(heard) != 0 {
		t.Errorf("heard of %d artifacts before the embedder ran", len(heard))
	}
	mu.Unlock()
	g.open()
	waitEmbedded(t, db, "t", ids...)
	// The hook runs just after the state changes: give the last call time.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		mu.Lock()
		n := len(heard)
		mu.Unlock()
		if n == len(ids) {
			break
		}
	}
	mu.Lock()
	for _, id := range ids {
		if heard[id] != 1 || states[id] != "t/"+EmbeddingEmbedded {
			t.Errorf("artifact %s: heard %d times, state in the hook %q", id, heard[id], states[id])
		}
	}
	if len(heard) != len(ids) {
		t.Errorf("heard of %d artifacts, ingested %d", len(heard), len(ids))
	}
	mu.Unlock()

	db.OnEmbedded(nil)
	r, err := db.Ingest("t", chat("ws-0", "after the hook was removed"))
	if err != nil {
		t.Fatal(err)
	}
	waitEmbedded(t, db, "t", r.ArtifactID)
	time.Sleep(20 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if heard[r.ArtifactID] != 0 {
		t.Error("a removed hook was called")
	}
}
