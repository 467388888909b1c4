package retrieval

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/embed"
	"github.com/loci-memory/loci/embed/glove"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/pack"
)

// steppedEmbedder is GloVe that answers one Embed call per step the test
// gives, so a test can take packs between any two vectors records. Query
// embeddings (one text) pass at once.
type steppedEmbedder struct {
	embed.Embedder
	step chan struct{}
}

func (s *steppedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) > 1 || texts[0] != "what did the team decide about the deploy" {
		select {
		case <-s.step:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.Embedder.Embed(ctx, texts)
}

// Packs taken while the background embedder catches up: every receipt id
// names one body. The receipt id is derived from the data version, so a
// pack that read other vectors than another pack of the same request must
// have seen another data version.
func TestPacksWhileEmbeddingInFlight(t *testing.T) {
	emb := &steppedEmbedder{Embedder: glove.New(), step: make(chan struct{})}
	db := openTest(t, t.TempDir(), engine.Options{DisableBackground: true, Embedder: emb, EmbedInBackground: true})
	defer db.Close()
	p := New(db)
	for i := 0; i < 12; i++ {
		if _, err := db.Ingest("t", chat("ws", fmt.Sprintf("note %d: the team decided the deploy moves to Friday %d. %s", i, i, strings.Repeat(fmt.Sprintf("filler words number %d about releases and reviews. ", i), i%7)))); err != nil {
			t.Fatal(err)
		}
	}
	req := PackRequest{Workspace: "ws", Query: "what did the team decide about the deploy", MaxTokens: 200}
	bodies := map[string]string{}
	versions := map[uint64]bool{}
	for round := 0; ; round++ {
		for k := 0; k < 2; k++ { // two identical packs at the same point
			pr, err := p.ContextPack(context.Background(), "t", req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(struct {
				Text string
				C    any
				Conf float64
			}{pr.Result.ContextText, pr.Result.Citations, pr.Result.Confidence})
			id := pr.ReceiptID.String()
			if prev, ok := bodies[id]; ok && prev != string(b) {
				t.Fatalf("round %d: receipt %s (data version %d) names two bodies:\n%s\n---\n%s", round, id, pr.DataVersion, prev, b)
			}
			bodies[id] = string(b)
			versions[pr.DataVersion] = true
		}
		if db.EmbeddingBacklog() == 0 {
			break
		}
		emb.step <- struct{}{}
	}
	if len(versions) < 2 {
		t.Fatalf("packs saw %d data versions; the test must take packs while embedding is in flight", len(versions))
	}
}

// A receipt id names one body: packs of one request at one data version
// that differ in anything a client reads get different ids.
func TestReceiptIDCoversThePack(t *testing.T) {
	req := PackRequest{Workspace: "ws", Query: "q", MaxTokens: 100}
	base := pack.Result{PackHash: "sha256:aa", Confidence: 0.5, TotalTokens: 40}
	id := receiptID("t", req, 7, &base, "balanced")
	if again := base; receiptID("t", req, 7, &again, "balanced") != id {
		t.Fatal("the same pack got another id")
	}
	for name, change := range map[string]func(r *pack.Result) string{
		"pack hash":  func(r *pack.Result) string { r.PackHash = "sha256:bb"; return "balanced" },
		"confidence": func(r *pack.Result) string { r.Confidence = 0.51; return "balanced" },
		"abstention": func(r *pack.Result) string { r.Abstain, r.AbstainReason = true, "no evidence"; return "balanced" },
		"tokens":     func(r *pack.Result) string { r.TotalTokens = 41; return "balanced" },
		"exclusions": func(r *pack.Result) string { r.Exclusions = make([]pack.Exclusion, 1); return "balanced" },
		"conflicts":  func(r *pack.Result) string { r.Conflicts = []pack.Conflict{{ID: uuid.New()}}; return "balanced" },
		"profile":    func(r *pack.Result) string { return "high_recall" },
	} {
		r := base
		served := change(&r)
		if receiptID("t", req, 7, &r, served) == id {
			t.Errorf("a pack differing in its %s kept the receipt id", name)
		}
	}
}
