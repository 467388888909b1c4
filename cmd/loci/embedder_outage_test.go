package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loci-memory/loci/internal/proctest"
)

// fakeEmbeddings speaks the OpenAI embeddings protocol on loopback (the one
// part of this test that cannot be real here). While down it answers 500;
// a text containing "REJECT" gets the 400 a provider gives for input its
// model cannot take; otherwise each text gets a vector derived from its
// bytes.
type fakeEmbeddings struct {
	down  atomic.Bool
	calls atomic.Int64
}

const fakeDim = 8

func (f *fakeEmbeddings) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	var req struct {
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, 400)
		return
	}
	if f.down.Load() {
		http.Error(w, `{"error":{"message":"overloaded"}}`, 500)
		return
	}
	type item struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	var out struct {
		Data  []item `json:"data"`
		Model string `json:"model"`
	}
	for i, text := range req.Input {
		if strings.Contains(text, "REJECT") {
			http.Error(w, `{"error":{"message":"This model's maximum context length is exceeded"}}`, 400)
			return
		}
		v := make([]float32, fakeDim)
		h := fnv.New64a()
		io.WriteString(h, text)
		x := h.Sum64()
		var norm float64
		for j := range v {
			v[j] = float32(int64(x>>(8*j)&0xff) - 127)
			if v[j] == 0 {
				v[j] = 1
			}
			norm += float64(v[j]) * float64(v[j])
		}
		for j := range v {
			v[j] /= float32(math.Sqrt(norm))
		}
		out.Data = append(out.Data, item{i, v})
	}
	out.Model = "fake"
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// TestServeEmbedderOutage runs `loci serve` with an OpenAI-compatible
// embedder that rejects one artifact's text and then goes down:
//   - the rejected artifact (two spans) settles as failed, and the WAL record
//     saying so reads back: `loci verify` passes and, after kill -9, the
//     server starts (it used to refuse: "vectors record: bad span count");
//   - while the embedder is down artifacts stay pending and are retried (they
//     used to settle as failed after four attempts);
//   - once the unflushed data reaches its limit, writes are refused at once
//     with 503, Retry-After and a detail naming the embedder, and /health is
//     503 degraded with the backlog (writes used to wait without bound);
//   - when the embedder answers again, the backlog drains by itself and
//     writes are accepted.
func TestServeEmbedderOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	fake := &fakeEmbeddings{}
	provider := httptest.NewServer(fake)
	defer provider.Close()
	bin := proctest.Loci(t)
	data := t.TempDir()
	opts := serveOptions{
		env:  []string{"EMBEDDINGS_URL=" + provider.URL + "/v1", "EMBEDDINGS_MODEL=fake", fmt.Sprintf("EMBEDDINGS_DIM=%d", fakeDim)},
		args: []string{"--embedder", "openai", "--flush-threshold-mb", "1", "--fsync", "always"},
	}
	p := startServeWith(t, bin, data, opts)
	base := "http://" + p.addr

	ingest := func(content string) (int, http.Header, map[string]any) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"workspace_id": "ws", "actor_id": "ops", "artifact_type": "note", "raw_payload": map[string]any{"content": content}})
		req, _ := http.NewRequest("POST", base+"/v1/ingest", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		client := &http.Client{Timeout: 60 * time.Second}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("ingest: %v\n%s", err, p.logs())
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, resp.Header, out
	}
	status := func(id string) map[string]any {
		t.Helper()
		resp, err := http.Get(base + "/v1/artifacts/" + id + "/status")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return out
	}
	waitState := func(id, want string) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if status(id)["embedding"] == want {
				return
			}
		}
		t.Fatalf("artifact %s: embedding %v, want %s\n%s", id, status(id)["embedding"], want, p.logs())
	}
	health := func() (int, map[string]any) {
		resp, err := http.Get(base + "/health")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}

	// An artifact whose text the model rejects, in two or more spans.
	long := strings.Repeat("The REJECT runbook says to rotate the credentials of the database every quarter. ", 300)
	code, _, out := ingest(long)
	if code != 201 {
		t.Fatalf("ingest: %d %v", code, out)
	}
	rejected := out["artifact_id"].(string)
	waitState(rejected, "failed")
	if n := status(rejected)["span_count"].(float64); n < 2 {
		t.Fatalf("the rejected artifact has %v spans; the test needs two or more", n)
	}

	// The embedder goes down: a new artifact stays pending while the
	// embedder is asked again and again.
	fake.down.Store(true)
	code, _, out = ingest("the deploy moved to Friday")
	if code != 201 {
		t.Fatalf("ingest: %d %v", code, out)
	}
	pending := out["artifact_id"].(string)
	calls := fake.calls.Load()
	for deadline := time.Now().Add(20 * time.Second); fake.calls.Load() < calls+8 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if fake.calls.Load() < calls+8 {
		t.Fatalf("the embedder was asked %d more times in 20 s; want retries", fake.calls.Load()-calls)
	}
	if s := status(pending)["embedding"]; s != "pending" {
		t.Fatalf("while the embedder is down: embedding %v, want pending (retried, not given up)", s)
	}
	if _, h := health(); h["storage"].(map[string]any)["embedder_error"] == nil {
		t.Fatalf("/health does not show the embedder's error: %v", h)
	}

	// Fill the unflushed data past its limit (4 x 1 MB): writes are then
	// refused, not held.
	chunk := strings.Repeat("filler text about nothing in particular. ", 12000) // ~480 KB
	var refused http.Header
	var refusal map[string]any
	for i := 0; i < 40 && refused == nil; i++ {
		code, hdr, out := ingest(fmt.Sprintf("%d %s", i, chunk))
		switch code {
		case 201:
		case 503:
			refused, refusal = hdr, out
		default:
			t.Fatalf("ingest %d: %d %v", i, code, out)
		}
	}
	if refused == nil {
		t.Fatal("20 MB of writes with the embedder down were all accepted; want back-pressure")
	}
	if refused.Get("Retry-After") == "" || !strings.Contains(fmt.Sprint(refusal["detail"]), "embedder") {
		t.Fatalf("refusal: Retry-After %q, body %v", refused.Get("Retry-After"), refusal)
	}
	code, h := health()
	if code != 503 || h["status"] != "degraded" {
		t.Fatalf("/health while writes are refused: %d %v", code, h)
	}
	st := h["storage"].(map[string]any)
	if st["embedding_backlog"].(float64) < 2 || st["ingest_refused"] == nil {
		t.Fatalf("/health storage does not show the backlog and the refusal: %v", st)
	}

	// kill -9: the WAL, with the rejected artifact's "no vectors" record,
	// must verify and replay.
	p.cmd.Process.Kill()
	<-p.exited
	if out, err := exec.Command(bin, "verify", "--data", data).CombinedOutput(); err != nil {
		t.Fatalf("verify after kill -9: %v\n%s", err, out)
	}
	p = startServeWith(t, bin, data, opts)
	base = "http://" + p.addr
	if s := status(rejected)["embedding"]; s != "failed" {
		t.Fatalf("rejected artifact after restart: embedding %v, want failed", s)
	}

	// The embedder answers again: the backlog drains by itself.
	fake.down.Store(false)
	waitState(pending, "embedded")
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		code, _, out = ingest("the launch is pushed to December 4")
		if code == 201 {
			break
		}
		if code != 503 || time.Now().After(deadline) {
			t.Fatalf("ingest after the embedder came back: %d %v\n%s", code, out, p.logs())
		}
	}
	if code, h := health(); code != 200 {
		t.Fatalf("/health after the backlog drained: %d %v", code, h)
	}
	p.stop(t)
}
