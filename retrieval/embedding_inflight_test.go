package retrieval

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/loci-memory/loci/embed"
	"github.com/loci-memory/loci/embed/glove"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/internal/enginetest"
	"github.com/loci-memory/loci/pack"
)

// steppedEmbedder is GloVe that answers one call of the background
// embedder per step the test gives, so a test can take packs between any
// two vectors records. Query embeddings (the texts in queries) pass at once.
type steppedEmbedder struct {
	embed.Embedder
	step    chan struct{}
	queries map[string]bool
}

func (s *steppedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) > 1 || !s.queries[texts[0]] {
		select {
		case <-s.step:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.Embedder.Embed(ctx, texts)
}

// packBody is what a client reads of a pack, receipt id aside.
func packBody(r *pack.Result) string {
	b, _ := json.Marshal(struct {
		Text       string
		Citations  any
		Confidence float64
		Abstain    bool
		Exclusions any
		Conflicts  any
		Tokens     int
	}{r.ContextText, r.Citations, r.Confidence, r.Abstain, r.Exclusions, r.Conflicts, r.TotalTokens})
	return string(b)
}

// TestPacksWhileEmbeddingInFlightProperty: random artifacts ingested with
// the background embedder, packs of random requests taken between every two
// of its calls (while vectors arrive): the same request at the same data
// version gives the same body, and a receipt id never names two bodies.
// (Issue 21: identical packs right after an ingest differed under one
// receipt id.)
func TestPacksWhileEmbeddingInFlightProperty(t *testing.T) {
	versionsSeen := 0
	props := gopter.NewProperties(ppParams(12))
	props.Property("packs while embedding: one body per data version and per receipt id", prop.ForAll(func(docs []rdDoc, seed uint64) string {
		if len(docs) == 0 {
			return ""
		}
		r := rand.New(rand.NewPCG(seed, 11))
		var reqs []PackRequest
		queries := map[string]bool{}
		for range 3 {
			q := ppQuery(r)
			queries[q] = true
			reqs = append(reqs, PackRequest{Workspace: "ws", Query: q, MaxTokens: []int{20, 60, 300, 4096}[r.IntN(4)],
				Profile: []string{"", pack.ProfileLowLatency, pack.ProfileBalanced, pack.ProfileHighRecall}[r.IntN(4)]})
		}
		emb := &steppedEmbedder{Embedder: glove.New(), step: make(chan struct{}), queries: queries}
		db := enginetest.Open(t, t.TempDir(), engine.Options{DisableBackground: true, Embedder: emb, EmbedInBackground: true})
		defer db.Close()
		p := New(db)
		byVersion := map[string]string{} // request index and data version -> body
		byReceipt := map[string]string{} // receipt id -> body
		versions := map[uint64]bool{}
		take := func() string {
			for i, req := range reqs {
				for range 2 {
					pr, err := p.ContextPack(context.Background(), "t", req)
					if err != nil {
						return err.Error()
					}
					body := packBody(pr.Result)
					k := fmt.Sprintf("%d@%d", i, pr.DataVersion)
					if prev, ok := byVersion[k]; ok && prev != body {
						return fmt.Sprintf("request %+v at data version %d gave two bodies:\n%s\n%s", req, pr.DataVersion, prev, body)
					}
					id := pr.ReceiptID.String()
					if prev, ok := byReceipt[id]; ok && prev != body {
						return fmt.Sprintf("receipt %s names two bodies:\n%s\n%s", id, prev, body)
					}
					byVersion[k], byReceipt[id] = body, body
					versions[pr.DataVersion] = true
				}
			}
			return ""
		}
		for i, d := range docs {
			if _, err := db.Ingest("t", d.input()); err != nil {
				return err.Error()
			}
			if i%3 == 2 {
				if msg := take(); msg != "" {
					return msg
				}
			}
		}
		for {
			if msg := take(); msg != "" {
				return msg
			}
			if db.EmbeddingBacklog() == 0 {
				break
			}
			select {
			case emb.step <- struct{}{}:
			case <-time.After(10 * time.Millisecond):
				// The worker is applying what it embedded, not asking.
			}
		}
		versionsSeen += len(versions)
		return ""
	}, gen.SliceOf(gen.Struct(reflect.TypeOf(rdDoc{}), map[string]gopter.Gen{
		"Text":   gen.IntRange(0, len(rdTexts)-1),
		"Type":   gen.IntRange(0, len(ppTypes)-1),
		"Actor":  gen.IntRange(0, len(ppActors)-1),
		"Minute": gen.IntRange(0, 3),
	})), gen.UInt64()))
	props.TestingRun(t)
	if versionsSeen < 24 {
		t.Fatalf("packs saw %d data versions in all; the property must take packs while vectors arrive", versionsSeen)
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
