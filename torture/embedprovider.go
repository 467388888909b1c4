package torture

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// flakyProvider is an OpenAI-compatible embeddings endpoint on loopback
// (Config.FlakyEmbedder) that fails the way remote providers do while the
// load runs: a quarter of its requests answer 500, a tenth answer only
// after the server's per-request bound (providerTimeout) has passed, the
// rest answer. Between rounds, while the harness checks, it answers every
// request, so that packs (whose query is embedded too) are comparable.
// Vectors are a function of the text alone, so packs stay deterministic.
type flakyProvider struct {
	srv   *http.Server
	url   string
	flaky atomic.Bool

	mu  sync.Mutex
	rng *rand.Rand

	failed, slow, answered atomic.Int64
}

const (
	providerDim = 32
	// providerTimeout is the server's EMBEDDINGS_TIMEOUT; a slow answer
	// comes after providerSlow, well past it.
	providerTimeout = 300 * time.Millisecond
	providerSlow    = 1200 * time.Millisecond
)

func startFlakyProvider(seed int64) (*flakyProvider, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &flakyProvider{url: "http://" + ln.Addr().String() + "/v1", rng: rand.New(rand.NewSource(seed))}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 5 * time.Second}
	go p.srv.Serve(ln)
	return p, nil
}

// env is the server's environment for embedding with the provider.
func (p *flakyProvider) env() []string {
	return []string{"EMBEDDINGS_URL=" + p.url, "EMBEDDINGS_MODEL=torture-flaky", fmt.Sprintf("EMBEDDINGS_DIM=%d", providerDim),
		"EMBEDDINGS_TIMEOUT=" + providerTimeout.String()}
}

func (p *flakyProvider) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	p.srv.Shutdown(ctx)
}

func (p *flakyProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Input) == 0 {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	if p.flaky.Load() {
		p.mu.Lock()
		n := p.rng.Intn(100)
		p.mu.Unlock()
		switch {
		case n < 25:
			p.failed.Add(1)
			http.Error(w, `{"error":{"message":"the provider is overloaded"}}`, http.StatusInternalServerError)
			return
		case n < 35:
			p.slow.Add(1)
			select {
			case <-r.Context().Done():
				return
			case <-time.After(providerSlow):
			}
		}
	}
	p.answered.Add(1)
	type item struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	out := struct {
		Object string `json:"object"`
		Data   []item `json:"data"`
		Model  string `json:"model"`
	}{Object: "list", Model: "torture-flaky"}
	for i, text := range req.Input {
		out.Data = append(out.Data, item{i, textVector(text)})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// textVector is a unit vector drawn from the text's hash: identical texts
// get identical vectors, different ones nearly orthogonal.
func textVector(text string) []float32 {
	h := fnv.New64a()
	h.Write([]byte(text))
	rng := rand.New(rand.NewSource(int64(h.Sum64())))
	v := make([]float32, providerDim)
	var norm float64
	for i := range v {
		v[i] = float32(rng.NormFloat64())
		norm += float64(v[i]) * float64(v[i])
	}
	for i := range v {
		v[i] /= float32(math.Sqrt(norm))
	}
	return v
}

// checkEmbedded waits, with the provider answering again, until no
// acknowledged artifact waits for the embedder, and fails for any that
// settled as failed: the provider's outages and slow answers must be
// retried, never given up on (none of the load's texts is one a model
// rejects).
func (t *run) checkEmbedded() {
	c := newClient(t.addr)
	defer c.close()
	ctx := context.Background()
	t.led.mu.Lock()
	var ids []string
	for _, a := range t.led.artifacts {
		if !a.erased && !a.erasing {
			ids = append(ids, a.id)
		}
	}
	t.led.mu.Unlock()
	deadline := time.Now().Add(3 * time.Minute)
	for _, id := range ids {
		for {
			r, err := c.do(ctx, "GET", "/v1/artifacts/"+id+"/status", t.admin, nil)
			if err != nil {
				t.fail(fmt.Sprintf("embedding: status of %s: %v", id, err))
				return
			}
			var st struct {
				Embedding string `json:"embedding"`
			}
			json.Unmarshal(r.body, &st)
			if r.status == http.StatusNotFound {
				break // erased meanwhile (retention): the other checks judge that
			}
			if r.status != http.StatusOK {
				t.fail(fmt.Sprintf("embedding: status of %s answered %d: %s", id, r.status, truncate(r.body)))
				return
			}
			if st.Embedding == "embedded" {
				t.sum.FlakyEmbedder.Embedded++
				break
			}
			if st.Embedding != "pending" {
				t.fail(fmt.Sprintf("EMBEDDING GIVEN UP: artifact %s is %q after the provider's outages; only input the model rejects may fail", id, st.Embedding))
				break
			}
			if time.Now().After(deadline) {
				t.fail(fmt.Sprintf("embedding: artifact %s still pending 3 minutes after the provider answers again", id))
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
