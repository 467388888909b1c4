// Package openai is an embedder backed by any OpenAI-compatible embeddings
// API (OpenAI itself, Azure-style gateways, vLLM, Ollama, llama.cpp,
// TEI...), configured by EMBEDDINGS_URL and friends (ConfigFromEnv). Its
// errors say whether the provider cannot answer now (embed.ErrUnavailable)
// or rejected the input; none ever contains the API key.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/loci-memory/loci/embed"
)

// Defaults for Config fields left at zero.
const (
	defaultOpenAIBatchSize  = 64
	defaultOpenAITimeout    = 10 * time.Second
	defaultOpenAIMaxRetries = 3

	// The first retry waits about defaultBackoffBase; each later one doubles,
	// and no single wait, even one asked for by Retry-After, exceeds
	// defaultBackoffCap. Worst case for one batch is therefore
	// (MaxRetries+1)*Timeout + MaxRetries*defaultBackoffCap.
	defaultBackoffBase = 250 * time.Millisecond
	defaultBackoffCap  = 2 * time.Second

	// A successful response may be at most successBodyBase plus
	// successBodyPerText per input: a 4096-dimension vector printed as JSON
	// takes about 90 KiB, so this is generous without letting a broken
	// server exhaust memory.
	successBodyBase    = 1 << 20
	successBodyPerText = 256 << 10
	// Only the first errorBodyLimit bytes of an error response are read,
	// to extract the provider's message.
	errorBodyLimit = 64 << 10
	// Provider messages quoted in errors are cut to this many runes.
	maxProviderMessage = 300

	// probeText is embedded once at construction when the dimension is not
	// configured.
	probeText = "dimension probe"
	// emptySubstitute replaces empty texts: OpenAI rejects "" with a 400,
	// and one empty string must not fail a whole batch.
	emptySubstitute = " "
)

// Config configures an OpenAI-compatible embeddings client. Zero
// values of the optional fields select the documented defaults.
type Config struct {
	// URL is the API base (e.g. https://api.openai.com/v1) or the full
	// .../embeddings endpoint; both are accepted. A query string is kept
	// (some gateways carry an API version there). From EMBEDDINGS_URL.
	URL string
	// Model is sent with every request and names the vector space in
	// Model(). Required. From EMBEDDINGS_MODEL.
	Model string
	// APIKey is sent as "Authorization: Bearer <key>" when not empty. It
	// is never logged and never appears in an error message or in the
	// String form of the config. From EMBEDDINGS_API_KEY.
	APIKey string
	// Dim is the vector length. Zero means unknown: New then embeds
	// one probe text to learn it, so construction needs the provider to be
	// up. A positive Dim needs no request at construction, and every
	// response is checked against it. The "dimensions" request parameter
	// is not sent: not every provider accepts it. From EMBEDDINGS_DIM.
	Dim int
	// BatchSize is the most texts sent in one request (default 64).
	BatchSize int
	// Timeout bounds one request, from connecting until the whole response
	// body is read (default 10s). A retry gets a fresh Timeout.
	Timeout time.Duration
	// MaxRetries is how many times a failed request is retried (default 3;
	// negative means never). See New for what is retried.
	MaxRetries int
	// Client sends the requests. Nil selects a client dedicated to this
	// embedder, with bounded connection pooling and dial and TLS timeouts.
	Client *http.Client

	// backoffBase and backoffCap override defaultBackoffBase and
	// defaultBackoffCap when positive; tests shrink them.
	backoffBase time.Duration
	backoffCap  time.Duration
}

// String describes the config with the API key redacted, so that printing
// a config with %v or %+v cannot leak the key.
func (c Config) String() string {
	key := "none"
	if c.APIKey != "" {
		key = "[redacted]"
	}
	return fmt.Sprintf("OpenAIConfig{URL: %q, Model: %q, APIKey: %s, Dim: %d, BatchSize: %d, Timeout: %v, MaxRetries: %d}",
		redactURL(c.URL), c.Model, key, c.Dim, c.BatchSize, c.Timeout, c.MaxRetries)
}

// GoString is String, so that %#v cannot leak the key either.
func (c Config) GoString() string { return c.String() }

// Environment variables read by ConfigFromEnv.
const (
	envEmbeddingsURL     = "EMBEDDINGS_URL"
	envEmbeddingsModel   = "EMBEDDINGS_MODEL"
	envEmbeddingsAPIKey  = "EMBEDDINGS_API_KEY"
	envEmbeddingsDim     = "EMBEDDINGS_DIM"
	envEmbeddingsTimeout = "EMBEDDINGS_TIMEOUT"
)

// ConfigFromEnv reads EMBEDDINGS_URL, EMBEDDINGS_MODEL,
// EMBEDDINGS_API_KEY and the optional EMBEDDINGS_DIM and EMBEDDINGS_TIMEOUT
// (one request's bound, a Go duration such as 10s), trimming surrounding
// whitespace. ok is false, with a nil error, when EMBEDDINGS_URL is unset or
// empty: no remote embedder is configured. When it is set, err reports a
// configuration that cannot work (no model, a DIM that is not a
// non-negative integer, a TIMEOUT that is not a positive duration); the
// other fields keep their defaults.
func ConfigFromEnv() (cfg Config, ok bool, err error) {
	cfg.URL = strings.TrimSpace(os.Getenv(envEmbeddingsURL))
	if cfg.URL == "" {
		return Config{}, false, nil
	}
	cfg.Model = strings.TrimSpace(os.Getenv(envEmbeddingsModel))
	cfg.APIKey = strings.TrimSpace(os.Getenv(envEmbeddingsAPIKey))
	if cfg.Model == "" {
		return cfg, true, fmt.Errorf("openai embedder: %s is set but %s is empty", envEmbeddingsURL, envEmbeddingsModel)
	}
	if s := strings.TrimSpace(os.Getenv(envEmbeddingsDim)); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return cfg, true, fmt.Errorf("openai embedder: %s=%q is not a non-negative integer", envEmbeddingsDim, s)
		}
		cfg.Dim = n
	}
	if s := strings.TrimSpace(os.Getenv(envEmbeddingsTimeout)); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return cfg, true, fmt.Errorf("openai embedder: %s=%q is not a positive duration such as 10s", envEmbeddingsTimeout, s)
		}
		cfg.Timeout = d
	}
	return cfg, true, nil
}

// Embedder is an embedder backed by an OpenAI-compatible embeddings API
// (OpenAI itself, Azure-style gateways, vLLM, Ollama, llama.cpp, TEI...).
// It is immutable after construction and safe for concurrent use.
type Embedder struct {
	endpoint    string // full URL of the embeddings endpoint
	host        string // endpoint host, the only part of the URL put in errors
	model       string
	key         string
	dim         int
	batchSize   int
	timeout     time.Duration
	maxRetries  int
	client      *http.Client
	backoffBase time.Duration
	backoffCap  time.Duration
}

var _ embed.Embedder = (*Embedder)(nil)

// New validates cfg and returns an embedder for it. Configuration
// mistakes (no URL or model, a negative field, a key with whitespace in it)
// are plain errors. When cfg.Dim is zero, New embeds one probe text to
// learn the dimension; if the provider cannot answer, the error wraps
// embed.ErrUnavailable.
//
// Requests: each batch of at most BatchSize texts is one POST of
// {"model", "input", "encoding_format": "float"} to the endpoint; batches
// are sent one after another, so results come back in input order and the
// provider sees at most one request at a time from this embedder.
//
// Retries: a request is retried, up to MaxRetries times, after a network
// error (refused, DNS, reset, Timeout passed) and after HTTP 408, 429 and
// 5xx. Waits grow exponentially from 250ms with jitter (each wait is drawn
// from [d/2, d]), and a Retry-After header (seconds or HTTP date) replaces
// the computed wait; no wait exceeds 2s. Other statuses are not retried.
// Cancelling ctx stops at once, including during a wait.
//
// Errors: what the provider side causes by being down, slow, overloaded
// or misconfigured wraps embed.ErrUnavailable: network errors and 408/429/5xx
// once retries are spent, 401/403 (bad key), 404 (wrong URL or model),
// unexpected statuses, malformed responses (bad JSON, wrong count, missing
// or duplicate index, wrong dimension, zero vector). Any other 4xx, such as
// the 400 a provider returns for a text longer than its model accepts, is
// a plain error quoting the provider's message: retrying cannot help and
// the provider is up. A cancelled ctx yields an error wrapping ctx.Err();
// when ctx's deadline passed, it wraps embed.ErrUnavailable too, since the
// provider did not answer in the time the caller could give it. Errors
// name the endpoint host and the status, never the key or the full URL.
func New(ctx context.Context, cfg Config) (*Embedder, error) {
	endpoint, host, err := embeddingsEndpoint(cfg.URL)
	if err != nil {
		return nil, err
	}
	e := &Embedder{
		endpoint:    endpoint,
		host:        host,
		model:       strings.TrimSpace(cfg.Model),
		key:         cfg.APIKey,
		dim:         cfg.Dim,
		batchSize:   cfg.BatchSize,
		timeout:     cfg.Timeout,
		maxRetries:  cfg.MaxRetries,
		client:      cfg.Client,
		backoffBase: cfg.backoffBase,
		backoffCap:  cfg.backoffCap,
	}
	switch {
	case e.model == "":
		return nil, errors.New("openai embedder: no model configured")
	case e.dim < 0:
		return nil, fmt.Errorf("openai embedder: Dim is %d, want 0 (probe) or positive", e.dim)
	case e.batchSize < 0:
		return nil, fmt.Errorf("openai embedder: BatchSize is %d, want 0 (default) or positive", e.batchSize)
	case e.timeout < 0:
		return nil, fmt.Errorf("openai embedder: Timeout is %v, want 0 (default) or positive", e.timeout)
	case strings.IndexFunc(e.key, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
		// Do not echo the key: say only what is wrong with it.
		return nil, errors.New("openai embedder: API key contains whitespace or control characters")
	}
	if e.batchSize == 0 {
		e.batchSize = defaultOpenAIBatchSize
	}
	if e.timeout == 0 {
		e.timeout = defaultOpenAITimeout
	}
	switch {
	case e.maxRetries == 0:
		e.maxRetries = defaultOpenAIMaxRetries
	case e.maxRetries < 0:
		e.maxRetries = 0
	}
	if e.client == nil {
		e.client = newOpenAIClient()
	}
	if e.backoffBase <= 0 {
		e.backoffBase = defaultBackoffBase
	}
	if e.backoffCap <= 0 {
		e.backoffCap = defaultBackoffCap
	}
	if e.dim == 0 {
		vecs, err := e.embedBatch(ctx, []string{probeText}, "dimension probe")
		if err != nil {
			return nil, err
		}
		e.dim = len(vecs[0])
	}
	return e, nil
}

// newOpenAIClient returns the client used when the config has none: its own
// transport, so that pooling and timeouts do not depend on, or disturb,
// http.DefaultTransport. Request deadlines come from the per-request
// context, not from the client.
func newOpenAIClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   5 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           8,
		MaxIdleConnsPerHost:    8,
		MaxConnsPerHost:        8,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    5 * time.Second,
		ExpectContinueTimeout:  1 * time.Second,
		MaxResponseHeaderBytes: 1 << 20,
	}}
}

// embeddingsEndpoint turns a configured URL, either the API base or the
// embeddings endpoint itself, into the endpoint URL and its host.
func embeddingsEndpoint(raw string) (endpoint, host string, err error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", "", errors.New("openai embedder: no URL configured")
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse errors quote the whole URL, which may hold credentials;
		// keep only the reason.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return "", "", fmt.Errorf("openai embedder: URL does not parse: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", "", fmt.Errorf("openai embedder: URL scheme is %q, want http or https", u.Scheme)
	}
	if u.Host == "" {
		return "", "", errors.New("openai embedder: URL has no host")
	}
	u.Fragment, u.RawFragment = "", ""
	const suffix = "/embeddings"
	u.Path = strings.TrimRight(u.Path, "/")
	if u.RawPath != "" {
		u.RawPath = strings.TrimRight(u.RawPath, "/")
	}
	if !strings.HasSuffix(u.Path, suffix) {
		u.Path += suffix
		if u.RawPath != "" {
			u.RawPath += suffix
		}
	}
	return u.String(), u.Host, nil
}

// redactURL returns raw with any password replaced, for String.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "[unparsable URL]"
	}
	return u.Redacted()
}

// Model names the vector space: "openai:" + model + ":" + dimension.
func (e *Embedder) Model() string {
	return "openai:" + e.model + ":" + strconv.Itoa(e.dim)
}

// Dim is the vector length, configured or probed at construction.
func (e *Embedder) Dim() int { return e.dim }

// String describes the embedder without its key, so that printing it with
// %v cannot leak the key.
func (e *Embedder) String() string {
	return "OpenAI embedder " + e.Model() + " at " + e.host
}

// GoString is String, so that %#v cannot leak the key either.
func (e *Embedder) GoString() string { return e.String() }

// Embed returns one unit-length vector per text, in order, sending
// BatchSize texts per request. An empty text is sent as a single space,
// since OpenAI rejects empty inputs; its vector is whatever the provider
// gives for whitespace. No texts means no request and an empty result. On
// error no vectors are returned, even if earlier batches succeeded.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for lo := 0; lo < len(texts); lo += e.batchSize {
		hi := min(lo+e.batchSize, len(texts))
		vecs, err := e.embedBatch(ctx, texts[lo:hi], textSpan(lo, hi))
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
	}
	return out, nil
}

// textSpan names texts[lo:hi] in error messages.
func textSpan(lo, hi int) string {
	if hi-lo == 1 {
		return "text " + strconv.Itoa(lo)
	}
	return fmt.Sprintf("texts %d-%d", lo, hi-1)
}

// embeddingsRequest is the request body.
type embeddingsRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
}

// embeddingsResponse is the part of the response body Embed uses. Index is
// a pointer so that a missing index is told apart from index 0.
type embeddingsResponse struct {
	Data []struct {
		Index     *int      `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
}

// embedBatch embeds one batch with one (retried) request. where names the
// batch in errors. When e.dim is zero (probing), any dimension is accepted
// as long as all vectors agree.
func (e *Embedder) embedBatch(ctx context.Context, texts []string, where string) ([][]float32, error) {
	input := make([]string, len(texts))
	for i, t := range texts {
		if t == "" {
			t = emptySubstitute
		}
		input[i] = t
	}
	payload, err := json.Marshal(embeddingsRequest{Model: e.model, Input: input, EncodingFormat: "float"})
	if err != nil {
		return nil, fmt.Errorf("openai embedder: encoding embeddings request for %s: %v", where, err)
	}
	body, err := e.post(ctx, where, payload, successBodyBase+int64(len(texts))*successBodyPerText)
	if err != nil {
		return nil, err
	}
	vecs, problem := decodeEmbeddings(body, len(texts), e.dim)
	if problem != "" {
		return nil, e.unavailable(where, "malformed response: %s", problem)
	}
	return vecs, nil
}

// decodeEmbeddings parses a response body holding n embeddings, orders
// them by index and normalises them. dim is the required length, or zero to
// accept any length shared by all vectors. It returns a description of the
// first problem found instead of an error, for the caller to wrap.
func decodeEmbeddings(body []byte, n, dim int) ([][]float32, string) {
	var resp embeddingsResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, "invalid JSON: " + err.Error()
	}
	if len(resp.Data) != n {
		return nil, fmt.Sprintf("%d embeddings for %d inputs", len(resp.Data), n)
	}
	out := make([][]float32, n)
	for i, d := range resp.Data {
		if d.Index == nil {
			return nil, fmt.Sprintf("data[%d] has no index", i)
		}
		idx := *d.Index
		switch {
		case idx < 0 || idx >= n:
			return nil, fmt.Sprintf("data[%d] has index %d, want 0 to %d", i, idx, n-1)
		case out[idx] != nil:
			return nil, fmt.Sprintf("index %d appears twice", idx)
		case len(d.Embedding) == 0:
			return nil, fmt.Sprintf("embedding for input %d is empty", idx)
		case dim == 0:
			dim = len(d.Embedding)
		}
		if len(d.Embedding) != dim {
			return nil, fmt.Sprintf("embedding for input %d has %d dimensions, want %d", idx, len(d.Embedding), dim)
		}
		v, ok := unitVector(d.Embedding)
		if !ok {
			return nil, fmt.Sprintf("embedding for input %d has zero length", idx)
		}
		out[idx] = v
	}
	return out, ""
}

// unitVector returns v scaled to unit length as float32. Providers differ
// on whether they normalise, and the search kernels assume unit vectors.
// The norm is computed on v scaled by its largest magnitude, so huge
// components cannot overflow. ok is false for a zero vector.
func unitVector(v []float64) (unit []float32, ok bool) {
	var peak float64
	for _, x := range v {
		peak = max(peak, math.Abs(x))
	}
	if peak == 0 {
		return nil, false
	}
	var sum float64
	for _, x := range v {
		sum += (x / peak) * (x / peak)
	}
	scale := 1 / (peak * math.Sqrt(sum))
	unit = make([]float32, len(v))
	for i, x := range v {
		unit[i] = float32(x * scale)
	}
	return unit, true
}

// httpReply is the outcome of one HTTP attempt: a status, headers and
// body, or a transport failure.
type httpReply struct {
	status     int
	retryAfter string
	body       []byte
	tooLarge   bool   // a 2xx body exceeded its limit
	failure    string // set when no complete response arrived
}

// post sends payload, retrying as New documents, and returns the body
// of a 2xx response.
func (e *Embedder) post(ctx context.Context, where string, payload []byte, limit int64) ([]byte, error) {
	attempts := e.maxRetries + 1
	for try := 1; ; try++ {
		r := e.attempt(ctx, payload, limit)
		if err := ctx.Err(); err != nil {
			return nil, e.canceled(where, err)
		}
		var problem string
		switch code := r.status; {
		case r.failure != "":
			problem = r.failure
		case code >= 200 && code < 300:
			if r.tooLarge {
				return nil, e.unavailable(where, "malformed response: body exceeds %d bytes", limit)
			}
			return r.body, nil
		case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
			problem = httpStatusLine(code) + e.providerMessage(r.body)
		case code == http.StatusUnauthorized || code == http.StatusForbidden:
			// The body is not quoted: some providers echo part of the key.
			return nil, e.unavailable(where, "%s: the API key was refused", httpStatusLine(code))
		case code == http.StatusNotFound:
			return nil, e.unavailable(where, "%s: wrong URL or unknown model %q%s", httpStatusLine(code), e.model, e.providerMessage(r.body))
		case code >= 400 && code < 500:
			// The provider is up and rejected this input (too long, bad
			// characters...): retrying or degrading will not change that.
			return nil, fmt.Errorf("openai embedder: embeddings at %s, %s: %s%s", e.host, where, httpStatusLine(code), e.providerMessage(r.body))
		default:
			return nil, e.unavailable(where, "unexpected %s", httpStatusLine(code))
		}
		if try >= attempts {
			return nil, e.unavailable(where, "%s (after %d %s)", problem, try, countNoun(try, "attempt", "attempts"))
		}
		if !sleepCtx(ctx, e.retryDelay(try-1, r.retryAfter, time.Now())) {
			return nil, e.canceled(where, ctx.Err())
		}
	}
}

// attempt makes one request, bounded by e.timeout, and reads its body.
func (e *Embedder) attempt(ctx context.Context, payload []byte, limit int64) httpReply {
	actx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, e.endpoint, bytes.NewReader(payload))
	if err != nil {
		// The endpoint was validated at construction; this is not expected.
		return httpReply{failure: "building request: " + transportReason(err)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if e.key != "" {
		req.Header.Set("Authorization", "Bearer "+e.key)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return httpReply{failure: e.failure(actx, ctx, err)}
	}
	defer resp.Body.Close()
	r := httpReply{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		limit = errorBodyLimit
	}
	r.body, err = io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return httpReply{failure: "reading response: " + e.failure(actx, ctx, err)}
	}
	if int64(len(r.body)) > limit {
		r.body = r.body[:limit]
		r.tooLarge = true
	}
	return r
}

// failure describes a transport error. actx is the attempt's context and
// ctx the caller's: when only the former is done, the attempt timed out.
func (e *Embedder) failure(actx, ctx context.Context, err error) string {
	if errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		return fmt.Sprintf("no response within %v", e.timeout)
	}
	return transportReason(err)
}

// transportReason strips the *url.Error wrapper, which quotes the full
// request URL (query included), leaving the reason: "dial tcp ...:
// connection refused", "EOF" and the like.
func transportReason(err error) string {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Err.Error()
	}
	return err.Error()
}

// retryDelay is the wait before retry number retry (0 for the first). A
// parsable Retry-After header wins over the computed backoff; either way
// the wait is at most e.backoffCap.
func (e *Embedder) retryDelay(retry int, retryAfter string, now time.Time) time.Duration {
	if d, ok := parseRetryAfter(retryAfter, now); ok {
		return min(d, e.backoffCap)
	}
	d := e.backoffBase
	for i := 0; i < retry && d < e.backoffCap; i++ {
		d *= 2
	}
	d = min(d, e.backoffCap)
	// Equal jitter: keep half the wait, randomise the rest, so clients that
	// failed together do not retry together, yet waits still grow.
	half := d / 2
	return half + rand.N(d-half+1)
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP
// date. A date in the past means no wait. ok is false when the header is
// absent or unparsable.
func parseRetryAfter(h string, now time.Time) (time.Duration, bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	if secs, err := strconv.ParseUint(h, 10, 64); err == nil {
		const maxSecs = uint64(math.MaxInt64 / int64(time.Second))
		return time.Duration(min(secs, maxSecs)) * time.Second, true
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// sleepCtx waits for d, or until ctx is done; it reports whether the wait
// ran to the end.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// unavailable returns an error wrapping embed.ErrUnavailable that names the
// endpoint host and the batch.
func (e *Embedder) unavailable(where, format string, args ...any) error {
	return fmt.Errorf("%w: embeddings at %s, %s: %s", embed.ErrUnavailable, e.host, where, fmt.Sprintf(format, args...))
}

// canceled returns the error for a caller's context that is done. A passed
// deadline also counts as the provider being unavailable: it did not
// answer within the time the caller could give it.
func (e *Embedder) canceled(where string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: embeddings at %s, %s: %w", embed.ErrUnavailable, e.host, where, err)
	}
	return fmt.Errorf("openai embedder: embeddings at %s, %s: %w", e.host, where, err)
}

// providerMessage extracts the provider's explanation from an error body,
// formatted as ": <message>" (empty when there is none). It understands
// {"error": {"message": ...}}, {"error": "..."} and {"message": ...}, and
// otherwise quotes the body. The API key is redacted, control characters
// and runs of whitespace are collapsed, and the result is cut short.
func (e *Embedder) providerMessage(body []byte) string {
	var msg string
	var env struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &env) == nil {
		var obj struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(env.Error, &obj) == nil && obj.Message != "":
			msg = obj.Message
		case json.Unmarshal(env.Error, &s) == nil && s != "":
			msg = s
		default:
			msg = env.Message
		}
	}
	if msg == "" {
		msg = string(body)
	}
	msg = e.redact(msg)
	msg = strings.ToValidUTF8(msg, "\uFFFD")
	msg = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, msg)
	msg = e.redact(strings.Join(strings.Fields(msg), " "))
	if msg == "" {
		return ""
	}
	if utf8.RuneCountInString(msg) > maxProviderMessage {
		msg = string([]rune(msg)[:maxProviderMessage]) + "..."
	}
	return ": " + msg
}

// redact removes the API key from s.
func (e *Embedder) redact(s string) string {
	if e.key == "" {
		return s
	}
	return strings.ReplaceAll(s, e.key, "[redacted]")
}

// httpStatusLine formats an HTTP status as "HTTP 503 Service Unavailable".
func httpStatusLine(code int) string {
	if text := http.StatusText(code); text != "" {
		return fmt.Sprintf("HTTP %d %s", code, text)
	}
	return fmt.Sprintf("HTTP %d", code)
}

// countNoun returns one when n is 1 and many otherwise.
func countNoun(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
