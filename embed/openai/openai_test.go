package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loci-memory/loci/embed"
)

// openaiTestKey is the API key every test uses; checkNoKey makes sure no
// error ever contains it.
const openaiTestKey = "sk-test-S3CRET-0123456789abcdef"

const openaiTestModel = "test-model"

// checkNoKey fails the test if err's message contains the API key. Every
// error a test sees goes through it.
func checkNoKey(t *testing.T, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), openaiTestKey) {
		t.Errorf("error contains the API key: %v", err)
	}
}

// fakeProvider is a loopback server speaking the OpenAI embeddings protocol.
// Each text's embedding is a deterministic, deliberately non-unit vector
// (fakeEmbedding), so tests can check order and normalisation.
type fakeProvider struct {
	t       *testing.T
	srv     *httptest.Server
	dim     int
	shuffle bool // return data in a scrambled order
	// respond, when set, may answer request n (counted from 1) itself,
	// returning true if it did.
	respond func(n int, w http.ResponseWriter, r *http.Request) bool

	mu  sync.Mutex
	rec providerLog
}

// providerLog is what the provider saw, one entry per request.
type providerLog struct {
	requests int
	batches  [][]string
	auth     []string // Authorization headers
	models   []string
	formats  []string // encoding_format values
	paths    []string
	queries  []string
}

// seen returns what the provider has seen so far.
func (p *fakeProvider) seen() providerLog {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.rec
	r.batches = append([][]string(nil), r.batches...)
	r.auth = append([]string(nil), r.auth...)
	r.models = append([]string(nil), r.models...)
	r.formats = append([]string(nil), r.formats...)
	r.paths = append([]string(nil), r.paths...)
	r.queries = append([]string(nil), r.queries...)
	return r
}

func newFakeProvider(t *testing.T, dim int) *fakeProvider {
	p := &fakeProvider{t: t, dim: dim}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

// host is the server's host:port, which errors must name.
func (p *fakeProvider) host() string {
	u, err := url.Parse(p.srv.URL)
	if err != nil {
		p.t.Fatal(err)
	}
	return u.Host
}

func (p *fakeProvider) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.rec.requests++
	n := p.rec.requests
	p.rec.auth = append(p.rec.auth, r.Header.Get("Authorization"))
	p.rec.paths = append(p.rec.paths, r.URL.Path)
	p.rec.queries = append(p.rec.queries, r.URL.RawQuery)
	respond := p.respond
	p.mu.Unlock()

	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
		p.t.Errorf("request %d: %s with Content-Type %q, want POST of application/json", n, r.Method, r.Header.Get("Content-Type"))
	}
	var req struct {
		Model          string   `json:"model"`
		Input          []string `json:"input"`
		EncodingFormat string   `json:"encoding_format"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		p.t.Errorf("request %d: decoding body: %v", n, err)
		writeAPIError(w, http.StatusBadRequest, "bad request body")
		return
	}
	p.mu.Lock()
	p.rec.batches = append(p.rec.batches, req.Input)
	p.rec.models = append(p.rec.models, req.Model)
	p.rec.formats = append(p.rec.formats, req.EncodingFormat)
	p.mu.Unlock()

	if respond != nil && respond(n, w, r) {
		return
	}
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	}
	data := make([]item, len(req.Input))
	for i, text := range req.Input {
		data[i] = item{Object: "embedding", Index: i, Embedding: fakeEmbedding(text, p.dim)}
	}
	if p.shuffle {
		rng := rand.New(rand.NewPCG(uint64(n), 7))
		rng.Shuffle(len(data), func(i, j int) { data[i], data[j] = data[j], data[i] })
		if len(data) > 1 && data[0].Index == 0 {
			data[0], data[1] = data[1], data[0] // never in order by accident
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"object": "list",
		"data":   data,
		"model":  req.Model,
		"usage":  map[string]int{"prompt_tokens": len(req.Input), "total_tokens": len(req.Input)},
	})
}

// writeAPIError answers with an OpenAI-style error body.
func writeAPIError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{
		"error": map[string]any{"message": msg, "type": "test_error", "code": nil},
	})
}

// fakeEmbedding is the provider's embedding of text: deterministic, never
// zero, and far from unit length.
func fakeEmbedding(text string, dim int) []float64 {
	v := make([]float64, dim)
	for k := range v {
		h := fnv.New64a()
		fmt.Fprintf(h, "%d:%s", k, text)
		v[k] = float64(h.Sum64()%2001) - 1000 + 0.5
	}
	return v
}

// wantEmbedding is fakeEmbedding normalised, computed independently of the
// code under test.
func wantEmbedding(text string, dim int) []float64 {
	v := fakeEmbedding(text, dim)
	var sum float64
	for _, x := range v {
		sum += x * x
	}
	for i := range v {
		v[i] /= math.Sqrt(sum)
	}
	return v
}

// openaiTestConfig is a config for p with the test key and tiny backoffs,
// so that retries cost milliseconds.
func openaiTestConfig(p *fakeProvider) Config {
	return Config{
		URL:         p.srv.URL + "/v1",
		Model:       openaiTestModel,
		APIKey:      openaiTestKey,
		backoffBase: time.Millisecond,
		backoffCap:  5 * time.Millisecond,
	}
}

func newTestOpenAI(t *testing.T, cfg Config) *Embedder {
	t.Helper()
	e, err := New(context.Background(), cfg)
	checkNoKey(t, err)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

func TestOpenAIEmbed(t *testing.T) {
	const dim = 8
	tests := []struct {
		name         string
		texts        int
		batchSize    int
		wantRequests int
	}{
		{"no texts", 0, 4, 0},
		{"one text", 1, 4, 1},
		{"exactly one batch", 4, 4, 1},
		{"one batch and one text", 5, 4, 2},
		{"batch size one", 3, 1, 3},
		{"default batch size", 130, 0, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newFakeProvider(t, dim)
			p.shuffle = true
			cfg := openaiTestConfig(p)
			cfg.Dim = dim
			cfg.BatchSize = tt.batchSize
			e := newTestOpenAI(t, cfg)

			texts := make([]string, tt.texts)
			for i := range texts {
				texts[i] = fmt.Sprintf("text number %d", i)
			}
			got, err := e.Embed(context.Background(), texts)
			checkNoKey(t, err)
			if err != nil {
				t.Fatalf("Embed: %v", err)
			}
			seen := p.seen()
			if seen.requests != tt.wantRequests {
				t.Errorf("server got %d requests, want %d", seen.requests, tt.wantRequests)
			}
			limit := tt.batchSize
			if limit == 0 {
				limit = defaultOpenAIBatchSize
			}
			var sent []string
			for i, b := range seen.batches {
				if len(b) == 0 || len(b) > limit {
					t.Errorf("request %d carried %d inputs, want 1 to %d", i+1, len(b), limit)
				}
				sent = append(sent, b...)
			}
			if len(texts) > 0 && !reflect.DeepEqual(sent, texts) {
				t.Errorf("server saw inputs %q, want %q", sent, texts)
			}
			for i := range seen.auth {
				if want := "Bearer " + openaiTestKey; seen.auth[i] != want {
					t.Errorf("request %d: Authorization %q, want %q", i+1, seen.auth[i], want)
				}
				if seen.models[i] != openaiTestModel || seen.formats[i] != "float" {
					t.Errorf("request %d: model %q, encoding_format %q; want %q, float", i+1, seen.models[i], seen.formats[i], openaiTestModel)
				}
				if seen.paths[i] != "/v1/embeddings" {
					t.Errorf("request %d: path %q, want /v1/embeddings", i+1, seen.paths[i])
				}
			}
			if len(got) != len(texts) {
				t.Fatalf("got %d vectors for %d texts", len(got), len(texts))
			}
			for i, v := range got {
				want := wantEmbedding(texts[i], dim)
				var norm float64
				for k := range v {
					norm += float64(v[k]) * float64(v[k])
					if math.Abs(float64(v[k])-want[k]) > 1e-6 {
						t.Fatalf("vector %d = %v, want %v (out of order or not normalised)", i, v, want)
					}
				}
				if math.Abs(norm-1) > 1e-5 {
					t.Errorf("vector %d has squared norm %v, want 1", i, norm)
				}
			}
		})
	}
}

func TestOpenAIEmptyTextSentAsSpace(t *testing.T) {
	p := newFakeProvider(t, 4)
	cfg := openaiTestConfig(p)
	cfg.Dim = 4
	e := newTestOpenAI(t, cfg)
	got, err := e.Embed(context.Background(), []string{"a", "", "b"})
	checkNoKey(t, err)
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	if len(got) != 3 {
		t.Fatalf("got %d vectors, want 3", len(got))
	}
	seen := p.seen()
	if want := [][]string{{"a", " ", "b"}}; !reflect.DeepEqual(seen.batches, want) {
		t.Errorf("server saw %q, want %q", seen.batches, want)
	}
}

func TestOpenAINoKeyNoAuthorization(t *testing.T) {
	p := newFakeProvider(t, 4)
	cfg := openaiTestConfig(p)
	cfg.APIKey = ""
	cfg.Dim = 4
	e := newTestOpenAI(t, cfg)
	_, err := e.Embed(context.Background(), []string{"a"})
	checkNoKey(t, err)
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	seen := p.seen()
	if len(seen.auth) != 1 || seen.auth[0] != "" {
		t.Errorf("Authorization headers %q, want one empty", seen.auth)
	}
}

func TestOpenAIDimension(t *testing.T) {
	tests := []struct {
		name         string
		cfgDim       int
		serverDim    int
		wantRequests int // made by New
	}{
		{"probed", 0, 12, 1},
		{"configured", 12, 12, 0},
		// A configured Dim is trusted until the first Embed.
		{"configured, wrong", 16, 12, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newFakeProvider(t, tt.serverDim)
			cfg := openaiTestConfig(p)
			cfg.Dim = tt.cfgDim
			e := newTestOpenAI(t, cfg)
			seen := p.seen()
			if seen.requests != tt.wantRequests {
				t.Errorf("New made %d requests, want %d", seen.requests, tt.wantRequests)
			}
			wantDim := tt.cfgDim
			if wantDim == 0 {
				wantDim = tt.serverDim
				if want := [][]string{{probeText}}; !reflect.DeepEqual(seen.batches, want) {
					t.Errorf("probe sent %q, want %q", seen.batches, want)
				}
			}
			if e.Dim() != wantDim {
				t.Errorf("Dim() = %d, want %d", e.Dim(), wantDim)
			}
			if want := fmt.Sprintf("openai:%s:%d", openaiTestModel, wantDim); e.Model() != want {
				t.Errorf("Model() = %q, want %q", e.Model(), want)
			}
			_, err := e.Embed(context.Background(), []string{"x", "y"})
			checkNoKey(t, err)
			if tt.cfgDim != 0 && tt.cfgDim != tt.serverDim {
				want := fmt.Sprintf("has %d dimensions, want %d", tt.serverDim, tt.cfgDim)
				if !errors.Is(err, embed.ErrUnavailable) || !strings.Contains(err.Error(), want) {
					t.Errorf("Embed error = %v, want ErrUnavailable saying %q", err, want)
				}
			} else if err != nil {
				t.Errorf("Embed: %v", err)
			}
		})
	}
}

func TestOpenAIEndpointURL(t *testing.T) {
	tests := []struct {
		suffix    string // appended to the server URL
		wantPath  string
		wantQuery string
	}{
		{"", "/embeddings", ""},
		{"/", "/embeddings", ""},
		{"/v1", "/v1/embeddings", ""},
		{"/v1/", "/v1/embeddings", ""},
		{"/v1/embeddings", "/v1/embeddings", ""},
		{"/v1/embeddings/", "/v1/embeddings", ""},
		{"/openai/deployments/x?api-version=2024-02-01", "/openai/deployments/x/embeddings", "api-version=2024-02-01"},
	}
	for _, tt := range tests {
		t.Run(tt.suffix, func(t *testing.T) {
			p := newFakeProvider(t, 4)
			cfg := openaiTestConfig(p)
			cfg.URL = p.srv.URL + tt.suffix
			newTestOpenAI(t, cfg) // probes
			seen := p.seen()
			if len(seen.paths) != 1 || seen.paths[0] != tt.wantPath || seen.queries[0] != tt.wantQuery {
				t.Errorf("server saw paths %q queries %q, want %q?%q", seen.paths, seen.queries, tt.wantPath, tt.wantQuery)
			}
		})
	}
}

func TestOpenAIInvalidConfig(t *testing.T) {
	good := Config{URL: "http://127.0.0.1:1/v1", Model: openaiTestModel, APIKey: openaiTestKey, Dim: 4}
	tests := []struct {
		name   string
		modify func(*Config)
		want   string
	}{
		{"no URL", func(c *Config) { c.URL = " " }, "no URL"},
		{"bad scheme", func(c *Config) { c.URL = "ftp://example.com/v1" }, `scheme is "ftp"`},
		{"no scheme", func(c *Config) { c.URL = "example.com/v1" }, `scheme is ""`},
		{"no host", func(c *Config) { c.URL = "http:///v1" }, "no host"},
		{"unparsable", func(c *Config) { c.URL = "http://user:" + openaiTestKey + "@bad host/" }, "does not parse"},
		{"no model", func(c *Config) { c.Model = "" }, "no model"},
		{"negative dim", func(c *Config) { c.Dim = -1 }, "Dim is -1"},
		{"negative batch size", func(c *Config) { c.BatchSize = -1 }, "BatchSize is -1"},
		{"negative timeout", func(c *Config) { c.Timeout = -time.Second }, "Timeout is -1s"},
		{"key with newline", func(c *Config) { c.APIKey = openaiTestKey + "\n" }, "API key contains whitespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			tt.modify(&cfg)
			e, err := New(context.Background(), cfg)
			checkNoKey(t, err)
			if err == nil || e != nil {
				t.Fatalf("New = %v, %v; want an error", e, err)
			}
			if errors.Is(err, embed.ErrUnavailable) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q: want a plain error containing %q", err, tt.want)
			}
		})
	}
}

func TestOpenAIRetries(t *testing.T) {
	always := func(code int) []int {
		s := make([]int, 20)
		for i := range s {
			s[i] = code
		}
		return s
	}
	httpDate := time.Now().Add(time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name            string
		fail            []int // statuses of the first requests; then success
		retryAfter      string
		maxRetries      int
		wantRequests    int
		wantErr         bool
		wantUnavailable bool
		wantMsg         []string // substrings of the error
	}{
		{name: "500 twice", fail: []int{500, 500}, wantRequests: 3},
		{name: "503 thrice, Retry-After 0", fail: []int{503, 503, 503}, retryAfter: "0", wantRequests: 4},
		{name: "429, Retry-After 1", fail: []int{429}, retryAfter: "1", wantRequests: 2},
		{name: "502, Retry-After date", fail: []int{502}, retryAfter: httpDate, wantRequests: 2},
		{name: "408", fail: []int{408}, wantRequests: 2},
		{name: "always 503", fail: always(503), maxRetries: 2, wantRequests: 3,
			wantErr: true, wantUnavailable: true, wantMsg: []string{"HTTP 503 Service Unavailable", "after 3 attempts", "overloaded"}},
		{name: "always 429, default retries", fail: always(429), retryAfter: "1", wantRequests: 4,
			wantErr: true, wantUnavailable: true, wantMsg: []string{"HTTP 429 Too Many Requests", "after 4 attempts"}},
		{name: "500, retries off", fail: always(500), maxRetries: -1, wantRequests: 1,
			wantErr: true, wantUnavailable: true, wantMsg: []string{"HTTP 500", "after 1 attempt"}},
		{name: "400", fail: []int{400}, wantRequests: 1,
			wantErr: true, wantMsg: []string{"HTTP 400 Bad Request", "maximum context length"}},
		{name: "422", fail: []int{422}, wantRequests: 1,
			wantErr: true, wantMsg: []string{"HTTP 422"}},
		{name: "401", fail: []int{401}, wantRequests: 1,
			wantErr: true, wantUnavailable: true, wantMsg: []string{"HTTP 401 Unauthorized", "key was refused"}},
		{name: "403", fail: []int{403}, wantRequests: 1,
			wantErr: true, wantUnavailable: true, wantMsg: []string{"HTTP 403 Forbidden"}},
		{name: "404", fail: []int{404}, wantRequests: 1,
			wantErr: true, wantUnavailable: true, wantMsg: []string{"HTTP 404 Not Found", openaiTestModel}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newFakeProvider(t, 4)
			p.respond = func(n int, w http.ResponseWriter, r *http.Request) bool {
				if n > len(tt.fail) {
					return false
				}
				if tt.retryAfter != "" {
					w.Header().Set("Retry-After", tt.retryAfter)
				}
				msg := "overloaded"
				if tt.fail[n-1] == 400 {
					msg = "This model's maximum context length is 8192 tokens"
				}
				writeAPIError(w, tt.fail[n-1], msg)
				return true
			}
			cfg := openaiTestConfig(p)
			cfg.Dim = 4
			cfg.MaxRetries = tt.maxRetries
			e := newTestOpenAI(t, cfg)
			start := time.Now()
			got, err := e.Embed(context.Background(), []string{"a", "b"})
			checkNoKey(t, err)
			if elapsed := time.Since(start); elapsed > time.Second {
				t.Errorf("Embed took %v; backoff knobs ignored?", elapsed)
			}
			if n := p.seen().requests; n != tt.wantRequests {
				t.Errorf("server got %d requests, want %d", n, tt.wantRequests)
			}
			if !tt.wantErr {
				if err != nil || len(got) != 2 {
					t.Fatalf("Embed = %d vectors, %v; want 2, nil", len(got), err)
				}
				return
			}
			if err == nil {
				t.Fatal("Embed succeeded, want an error")
			}
			if errors.Is(err, embed.ErrUnavailable) != tt.wantUnavailable {
				t.Errorf("errors.Is(%q, ErrUnavailable) = %v, want %v", err, !tt.wantUnavailable, tt.wantUnavailable)
			}
			for _, want := range append(tt.wantMsg, p.host()) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

// newSlowProvider returns a provider whose first slow requests hang until
// the client gives up (or 2s pass); later requests are answered normally.
func newSlowProvider(t *testing.T, slow int) *fakeProvider {
	p := newFakeProvider(t, 4)
	p.respond = func(n int, w http.ResponseWriter, r *http.Request) bool {
		if n > slow {
			return false
		}
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
		writeAPIError(w, http.StatusServiceUnavailable, "too late")
		return true
	}
	return p
}

func TestOpenAITimeout(t *testing.T) {
	tests := []struct {
		name         string
		slow         int
		wantRequests int
		wantErr      bool
	}{
		{"slow once, then fine", 1, 2, false},
		{"always slow", 100, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newSlowProvider(t, tt.slow)
			cfg := openaiTestConfig(p)
			cfg.Dim = 4
			cfg.Timeout = 50 * time.Millisecond
			cfg.MaxRetries = 1
			e := newTestOpenAI(t, cfg)
			start := time.Now()
			_, err := e.Embed(context.Background(), []string{"a"})
			checkNoKey(t, err)
			if elapsed := time.Since(start); elapsed > time.Second {
				t.Errorf("Embed took %v with a 50ms timeout", elapsed)
			}
			if n := p.seen().requests; n != tt.wantRequests {
				t.Errorf("server got %d requests, want %d", n, tt.wantRequests)
			}
			if !tt.wantErr {
				if err != nil {
					t.Errorf("Embed: %v", err)
				}
				return
			}
			if !errors.Is(err, embed.ErrUnavailable) || !strings.Contains(err.Error(), "no response within 50ms") {
				t.Errorf("Embed error = %v, want ErrUnavailable saying no response within 50ms", err)
			}
		})
	}
}

func TestOpenAIContextDone(t *testing.T) {
	tests := []struct {
		name            string
		retryAfter      string // "" means the server hangs instead
		stop            func(context.Context) (context.Context, context.CancelFunc)
		wantCause       error
		wantUnavailable bool
	}{
		{
			name:       "cancel during backoff",
			retryAfter: "30",
			stop: func(ctx context.Context) (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(ctx)
				time.AfterFunc(50*time.Millisecond, cancel)
				return ctx, cancel
			},
			wantCause: context.Canceled,
		},
		{
			name: "cancel during request",
			stop: func(ctx context.Context) (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(ctx)
				time.AfterFunc(50*time.Millisecond, cancel)
				return ctx, cancel
			},
			wantCause: context.Canceled,
		},
		{
			name: "caller deadline during request",
			stop: func(ctx context.Context) (context.Context, context.CancelFunc) {
				return context.WithTimeout(ctx, 50*time.Millisecond)
			},
			wantCause:       context.DeadlineExceeded,
			wantUnavailable: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p *fakeProvider
			if tt.retryAfter == "" {
				p = newSlowProvider(t, 100)
			} else {
				p = newFakeProvider(t, 4)
				p.respond = func(n int, w http.ResponseWriter, r *http.Request) bool {
					w.Header().Set("Retry-After", tt.retryAfter)
					writeAPIError(w, http.StatusServiceUnavailable, "busy")
					return true
				}
			}
			cfg := openaiTestConfig(p)
			cfg.Dim = 4
			cfg.backoffCap = 10 * time.Second // a real wait, to be interrupted
			e := newTestOpenAI(t, cfg)
			ctx, cancel := tt.stop(context.Background())
			defer cancel()
			start := time.Now()
			_, err := e.Embed(ctx, []string{"a"})
			checkNoKey(t, err)
			if elapsed := time.Since(start); elapsed > time.Second {
				t.Errorf("Embed returned %v after the context was done", elapsed)
			}
			if n := p.seen().requests; n != 1 {
				t.Errorf("server got %d requests, want 1", n)
			}
			if !errors.Is(err, tt.wantCause) {
				t.Errorf("Embed error = %v, want it to wrap %v", err, tt.wantCause)
			}
			if errors.Is(err, embed.ErrUnavailable) != tt.wantUnavailable {
				t.Errorf("errors.Is(%q, ErrUnavailable) = %v, want %v", err, !tt.wantUnavailable, tt.wantUnavailable)
			}
		})
	}
}

func TestOpenAIConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := Config{
		URL:         "http://" + addr + "/v1",
		Model:       openaiTestModel,
		APIKey:      openaiTestKey,
		MaxRetries:  1,
		backoffBase: time.Millisecond,
		backoffCap:  5 * time.Millisecond,
	}
	tests := []struct {
		name string
		dim  int
	}{
		{"probe in New", 0},
		{"Embed", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := cfg
			cfg.Dim = tt.dim
			e, err := New(context.Background(), cfg)
			checkNoKey(t, err)
			if tt.dim != 0 {
				if err != nil {
					t.Fatalf("New with a Dim must not need the provider: %v", err)
				}
				_, err = e.Embed(context.Background(), []string{"a"})
				checkNoKey(t, err)
			}
			if !errors.Is(err, embed.ErrUnavailable) {
				t.Fatalf("error = %v, want ErrUnavailable", err)
			}
			for _, want := range []string{addr, "refused", "after 2 attempts"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestOpenAIMalformedResponse(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string
	}{
		{"truncated JSON", `{"data": [{"index": 0, "embedding": [1, 2`, "invalid JSON"},
		{"HTML", `<html><body>Bad Gateway</body></html>`, "invalid JSON"},
		{"base64 embedding", `{"data": [{"index": 0, "embedding": "AACAPw=="}, {"index": 1, "embedding": "AACAPw=="}]}`, "invalid JSON"},
		{"no data", `{}`, "0 embeddings for 2 inputs"},
		{"too few", `{"data": [{"index": 0, "embedding": [1, 2, 3]}]}`, "1 embeddings for 2 inputs"},
		{"too many", `{"data": [{"index": 0, "embedding": [1, 2, 3]}, {"index": 1, "embedding": [1, 2, 3]}, {"index": 2, "embedding": [1, 2, 3]}]}`, "3 embeddings for 2 inputs"},
		{"missing index", `{"data": [{"index": 0, "embedding": [1, 2, 3]}, {"embedding": [1, 2, 3]}]}`, "data[1] has no index"},
		{"duplicate index", `{"data": [{"index": 1, "embedding": [1, 2, 3]}, {"index": 1, "embedding": [1, 2, 3]}]}`, "index 1 appears twice"},
		{"index out of range", `{"data": [{"index": 0, "embedding": [1, 2, 3]}, {"index": 5, "embedding": [1, 2, 3]}]}`, "index 5, want 0 to 1"},
		{"negative index", `{"data": [{"index": -1, "embedding": [1, 2, 3]}, {"index": 1, "embedding": [1, 2, 3]}]}`, "index -1"},
		{"wrong dimension", `{"data": [{"index": 0, "embedding": [1, 2, 3]}, {"index": 1, "embedding": [1, 2]}]}`, "input 1 has 2 dimensions, want 3"},
		{"empty embedding", `{"data": [{"index": 0, "embedding": []}, {"index": 1, "embedding": [1, 2, 3]}]}`, "input 0 is empty"},
		{"zero vector", `{"data": [{"index": 0, "embedding": [0, 0, 0]}, {"index": 1, "embedding": [1, 2, 3]}]}`, "input 0 has zero length"},
		{"oversized", `{"pad": "` + strings.Repeat("x", 2<<20) + `"}`, "body exceeds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newFakeProvider(t, 3)
			p.respond = func(n int, w http.ResponseWriter, r *http.Request) bool {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(tt.body))
				return true
			}
			cfg := openaiTestConfig(p)
			cfg.Dim = 3
			e := newTestOpenAI(t, cfg)
			_, err := e.Embed(context.Background(), []string{"a", "b"})
			checkNoKey(t, err)
			if !errors.Is(err, embed.ErrUnavailable) {
				t.Fatalf("Embed error = %v, want ErrUnavailable", err)
			}
			for _, want := range []string{"malformed response", tt.want, p.host(), "texts 0-1"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			if n := p.seen().requests; n != 1 {
				t.Errorf("server got %d requests, want 1 (malformed answers are not retried)", n)
			}
		})
	}
}

// TestOpenAIKeyNotLeaked has a server that echoes the Authorization header
// into its error bodies, and prints configs and embedders.
func TestOpenAIKeyNotLeaked(t *testing.T) {
	for _, code := range []int{400, 401, 403, 404, 429, 500} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			p := newFakeProvider(t, 4)
			p.respond = func(n int, w http.ResponseWriter, r *http.Request) bool {
				writeAPIError(w, code, "rejected header: "+r.Header.Get("Authorization"))
				return true
			}
			cfg := openaiTestConfig(p)
			cfg.Dim = 4
			e := newTestOpenAI(t, cfg)
			_, err := e.Embed(context.Background(), []string{"a"})
			if err == nil {
				t.Fatal("Embed succeeded, want an error")
			}
			checkNoKey(t, err)
			if s := fmt.Sprintf("%v %+v %#v %s", e, e, e, e); strings.Contains(s, openaiTestKey) {
				t.Errorf("printing the embedder leaks the key: %s", s)
			}
		})
	}
	cfg := Config{URL: "https://user:pw-" + openaiTestKey + "@api.example.com/v1", Model: openaiTestModel, APIKey: openaiTestKey}
	if s := fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg); strings.Contains(s, openaiTestKey) {
		t.Errorf("printing the config leaks the key: %s", s)
	}
}

func TestRetryDelay(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	e := &Embedder{backoffBase: 100 * time.Millisecond, backoffCap: 2 * time.Second}
	tests := []struct {
		name       string
		retry      int
		retryAfter string
		lo, hi     time.Duration
	}{
		{"first retry", 0, "", 50 * time.Millisecond, 100 * time.Millisecond},
		{"second retry", 1, "", 100 * time.Millisecond, 200 * time.Millisecond},
		{"fourth retry", 3, "", 400 * time.Millisecond, 800 * time.Millisecond},
		{"capped", 10, "", time.Second, 2 * time.Second},
		{"far past the cap", 1000, "", time.Second, 2 * time.Second},
		{"Retry-After 0", 3, "0", 0, 0},
		{"Retry-After 1", 0, "1", time.Second, time.Second},
		{"Retry-After padded", 0, " 1 ", time.Second, time.Second},
		{"Retry-After over the cap", 0, "120", 2 * time.Second, 2 * time.Second},
		{"Retry-After huge", 0, "9223372036854775807", 2 * time.Second, 2 * time.Second},
		{"Retry-After date", 0, now.Add(time.Second).Format(http.TimeFormat), time.Second, time.Second},
		{"Retry-After past date", 0, now.Add(-time.Hour).Format(http.TimeFormat), 0, 0},
		{"Retry-After garbage", 1, "soon", 100 * time.Millisecond, 200 * time.Millisecond},
		{"Retry-After negative", 1, "-1", 100 * time.Millisecond, 200 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 100 {
				if d := e.retryDelay(tt.retry, tt.retryAfter, now); d < tt.lo || d > tt.hi {
					t.Fatalf("retryDelay(%d, %q) = %v, want %v to %v", tt.retry, tt.retryAfter, d, tt.lo, tt.hi)
				}
			}
		})
	}
}

func TestOpenAIConfigFromEnv(t *testing.T) {
	vars := []string{envEmbeddingsURL, envEmbeddingsModel, envEmbeddingsAPIKey, envEmbeddingsDim, envEmbeddingsTimeout}
	tests := []struct {
		name    string
		env     map[string]string // variables not listed are unset
		want    Config
		wantOK  bool
		wantErr string
	}{
		{name: "unset", env: nil},
		{name: "empty URL", env: map[string]string{envEmbeddingsURL: " ", envEmbeddingsModel: "m"}},
		{
			name: "all set",
			env: map[string]string{envEmbeddingsURL: "https://api.openai.com/v1", envEmbeddingsModel: "text-embedding-3-small",
				envEmbeddingsAPIKey: openaiTestKey, envEmbeddingsDim: "1536"},
			want:   Config{URL: "https://api.openai.com/v1", Model: "text-embedding-3-small", APIKey: openaiTestKey, Dim: 1536},
			wantOK: true,
		},
		{
			name:   "no key, no dim",
			env:    map[string]string{envEmbeddingsURL: "http://localhost:11434/v1", envEmbeddingsModel: "nomic-embed-text"},
			want:   Config{URL: "http://localhost:11434/v1", Model: "nomic-embed-text"},
			wantOK: true,
		},
		{
			name: "whitespace trimmed",
			env: map[string]string{envEmbeddingsURL: " http://h/v1\n", envEmbeddingsModel: "\tm ",
				envEmbeddingsAPIKey: " " + openaiTestKey + "\n", envEmbeddingsDim: " 8 "},
			want:   Config{URL: "http://h/v1", Model: "m", APIKey: openaiTestKey, Dim: 8},
			wantOK: true,
		},
		{
			name:   "dim zero means probe",
			env:    map[string]string{envEmbeddingsURL: "http://h/v1", envEmbeddingsModel: "m", envEmbeddingsDim: "0"},
			want:   Config{URL: "http://h/v1", Model: "m"},
			wantOK: true,
		},
		{
			name:    "no model",
			env:     map[string]string{envEmbeddingsURL: "http://h/v1", envEmbeddingsAPIKey: openaiTestKey},
			wantOK:  true,
			wantErr: "EMBEDDINGS_MODEL is empty",
		},
		{
			name:    "dim not a number",
			env:     map[string]string{envEmbeddingsURL: "http://h/v1", envEmbeddingsModel: "m", envEmbeddingsAPIKey: openaiTestKey, envEmbeddingsDim: "large"},
			wantOK:  true,
			wantErr: `EMBEDDINGS_DIM="large"`,
		},
		{
			name:   "timeout",
			env:    map[string]string{envEmbeddingsURL: "http://h/v1", envEmbeddingsModel: "m", envEmbeddingsTimeout: " 750ms "},
			want:   Config{URL: "http://h/v1", Model: "m", Timeout: 750 * time.Millisecond},
			wantOK: true,
		},
		{
			name:    "timeout not a duration",
			env:     map[string]string{envEmbeddingsURL: "http://h/v1", envEmbeddingsModel: "m", envEmbeddingsTimeout: "10"},
			wantOK:  true,
			wantErr: `EMBEDDINGS_TIMEOUT="10"`,
		},
		{
			name:    "timeout zero",
			env:     map[string]string{envEmbeddingsURL: "http://h/v1", envEmbeddingsModel: "m", envEmbeddingsTimeout: "0s"},
			wantOK:  true,
			wantErr: `EMBEDDINGS_TIMEOUT="0s"`,
		},
		{
			name:    "dim negative",
			env:     map[string]string{envEmbeddingsURL: "http://h/v1", envEmbeddingsModel: "m", envEmbeddingsDim: "-3"},
			wantOK:  true,
			wantErr: `EMBEDDINGS_DIM="-3"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, v := range vars {
				t.Setenv(v, "") // restores the old value after the test
				if val, ok := tt.env[v]; ok {
					os.Setenv(v, val)
				} else {
					os.Unsetenv(v)
				}
			}
			cfg, ok, err := ConfigFromEnv()
			checkNoKey(t, err)
			if ok != tt.wantOK {
				t.Errorf("ok = %v, want %v", ok, tt.wantOK)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if cfg != tt.want {
				t.Errorf("cfg = %v, want %v", cfg, tt.want)
			}
		})
	}
}
