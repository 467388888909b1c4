package torture

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"time"
)

// client talks to one run of the server.
type client struct {
	base string
	hc   *http.Client
}

func newClient(addr string) *client {
	return &client{base: "http://" + addr, hc: &http.Client{Timeout: 60 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 32, DisableCompression: true}}}
}

func (c *client) close() { c.hc.CloseIdleConnections() }

// response is an HTTP answer read whole.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (c *client) do(ctx context.Context, method, path, key string, body []byte) (response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return response{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, err
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// ackArtifact is an artifact whose ingest was acknowledged (2xx).
type ackArtifact struct {
	id      string
	ws      string
	payload []byte // raw_payload exactly as sent
	idem    string // idempotency key, "" for none
	retry   []byte // a v1 ingest body that must replay this artifact (idem set)

	// Single-artifact erasure (erase.go); guarded by ledger.mu.
	inUse   int    // load clients using it now (feedback, retry): not erased meanwhile
	erasing bool   // DELETE sent, no answer yet: either outcome is correct
	erased  bool   // DELETE acknowledged (200)
	ts      string // its timestamp as GET returned it before the erase, for listings
	tsMicro int64  // the retention workspace's artifacts: the timestamp sent
	// createdMicro is a retention workspace artifact's time of ingest, as
	// the server answered it (0: unknown, the model's tests).
	createdMicro int64
}

// ackJob is an asynchronous ingest job acknowledged with 202.
type ackJob struct {
	id      string
	ws      string
	payload []byte
	done    bool // its artifact was read back once; it now lives in artifacts
}

// tenantKey is an API key of the harness's tenant.
type tenantKey struct {
	id, secret string
	revoked    bool // revocation acknowledged
	revoking   bool // revocation sent, no answer: either outcome is correct
}

// erasable is a workspace written by one worker and then erased.
type erasable struct {
	ws        string
	artifacts []*ackArtifact
	erased    bool // erase acknowledged
	erasing   bool // erase sent, no answer
}

// ledger records what the server acknowledged, for the checks after a crash.
type ledger struct {
	keyMu     sync.Mutex // serialises key changes
	mu        sync.Mutex
	artifacts []*ackArtifact // in live workspaces, in acknowledgement order
	byIdem    map[string]*ackArtifact
	erasables []*erasable
	erasedArt []*ackArtifact // artifacts whose erase was sent, in order
	retained  retainedWS     // the retention workspace (erase.go)
	imports   []*importedWS  // workspaces loci import wrote (imports.go)
	jobs      []*ackJob
	keys      []*tenantKey
	frozen    []frozenPack

	tenantID string
	counts   Counts
}

// Counts are acknowledged operations by kind.
type Counts struct {
	Artifacts         int `json:"artifacts"`
	Batches           int `json:"v2_batches"`
	IdempotentRetries int `json:"idempotent_retries"`
	Feedback          int `json:"feedback"`
	Packs             int `json:"packs"`
	AsyncJobs         int `json:"async_jobs"`
	KeysCreated       int `json:"keys_created"`
	KeysRevoked       int `json:"keys_revoked"`
	Erasures          int `json:"erasures"`
	ArtifactErasures  int `json:"artifact_erasures"`
	RetainedArtifacts int `json:"retention_artifacts"`
	RetentionChanges  int `json:"retention_settings"`
	FutureRefused     int `json:"future_timestamps_refused"`
	RetentionRefused  int `json:"retention_refused"` // ingests older than the cutoff, refused with 400
	Imports           int `json:"imports"`           // loci import runs that finished
	ImportsKilled     int `json:"imports_killed"`    // loci import runs killed with SIGKILL
	ImportsRefused    int `json:"imports_refused_while_serving"`
	Backpressure      int `json:"ingests_refused_for_backpressure"` // 503 while the server catches up: not acknowledged
}

func newLedger() *ledger { return &ledger{byIdem: map[string]*ackArtifact{}} }

// frozenPack is a pack request on a workspace written only at setup, and the
// body it returned then: every later answer must be byte-identical.
type frozenPack struct {
	path string
	body []byte
	resp []byte
}

// liveWorkspaces are the admin tenant's workspaces that are never erased.
var liveWorkspaces = []string{"live-a", "live-b", "live-c"}

// frozenWorkspaces are written once at setup, then only read.
var frozenWorkspaces = []string{"frozen-a", "frozen-b"}

var words = strings.Fields(`alpha budget cluster deploy engine failover gateway harbor index journal kernel ledger
migration network outage payment quota replica rollback schema shard ticket upgrade vendor window
latency invoice customer contract renewal incident postmortem runbook oncall database backup restore
meeting roadmap launch pricing discount region europe asia storage memory cache token`)

var unicodeBits = []string{"é", "ß", "✓", "日本", "🙂", "\\u00e9", "\\\"quoted\\\"", "tab\\there"}

// sentence is a few random words plus a nonce, so every payload is distinct
// and searchable.
func sentence(rng *rand.Rand, nonce string) string {
	n := 6 + rng.Intn(14)
	parts := make([]string, 0, n+2)
	for i := 0; i < n; i++ {
		parts = append(parts, words[rng.Intn(len(words))])
	}
	if rng.Intn(3) == 0 {
		parts = append(parts, unicodeBits[rng.Intn(len(unicodeBits))])
	}
	parts = append(parts, nonce)
	return strings.Join(parts, " ")
}

// payload returns an artifact type and a raw_payload in irregular but valid
// JSON (spacing and key order as a client might send), so byte-identical
// storage is really tested. The text is already JSON-escaped where needed.
func payload(rng *rand.Rand, nonce string) (string, []byte) {
	text := sentence(rng, nonce)
	switch rng.Intn(5) {
	case 0:
		return "chat_turn", []byte(fmt.Sprintf(`{"role":"user", "content":"%s"}`, text))
	case 1:
		return "document", []byte(fmt.Sprintf("{\n  \"title\": \"%s\",\n  \"content\": \"%s %s\"\n}", words[rng.Intn(len(words))], text, sentence(rng, nonce)))
	case 2:
		return "note", []byte(fmt.Sprintf(`"%s"`, text))
	case 3:
		return "tool_result", []byte(fmt.Sprintf(`{"tool":"search","result":{"hits":[%d, %d],"text":"%s"} ,"ok":true}`, rng.Intn(100), rng.Intn(100), text))
	default:
		return "note", []byte(fmt.Sprintf(`{"content":"%s","n":%d.%d}`, text, rng.Intn(1000), rng.Intn(10)))
	}
}

// v1Body is a v1 ingest request carrying raw payload bytes verbatim.
func v1Body(ws, typ string, raw []byte, idem string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"workspace_id":%q,"actor_id":"torture","artifact_type":%q,"raw_payload":%s`, ws, typ, raw)
	if idem != "" {
		fmt.Fprintf(&b, `,"idempotency_key":%q`, idem)
	}
	b.WriteString("}")
	return b.Bytes()
}

// worker drives mixed load until ctx ends. Every 2xx is recorded in the
// ledger; a 5xx, or a transport error while the server has not been killed,
// is a failure.
type worker struct {
	id     int
	round  int
	rng    *rand.Rand
	c      *client
	admin  string
	led    *ledger
	fail   func(string)
	killed func() bool
	pause  time.Duration
	seq    int
	erase  bool // Config.ArtifactErasure
}

// nonce is unique per worker, round and operation.
func (w *worker) nonce() string {
	w.seq++
	return fmt.Sprintf("n%dx%dx%d", w.round, w.id, w.seq)
}

// call performs one request. ok is false when there was no answer (the
// server was killed) or the answer was a 5xx (a failure, reported).
func (w *worker) call(ctx context.Context, what, method, path, key string, body []byte) (response, bool) {
	r, err := w.c.do(ctx, method, path, key, body)
	if err != nil {
		if ctx.Err() == nil && !w.killed() {
			w.fail(fmt.Sprintf("%s: %s %s failed while the server was up: %v", what, method, path, err))
		}
		return r, false
	}
	if backpressure(method, path, r) {
		// The server refused the write while it catches up (a backlog of
		// embedding or flushing): nothing is stored, nothing acknowledged.
		w.led.mu.Lock()
		w.led.counts.Backpressure++
		w.led.mu.Unlock()
		return r, false
	}
	if r.status >= 500 {
		w.fail(fmt.Sprintf("%s: %s %s answered %d: %s", what, method, path, r.status, truncate(r.body)))
		return r, false
	}
	return r, true
}

// backpressure reports whether r is an ingest refused for back-pressure: a
// 503 with Retry-After saying the server is catching up. Any other 5xx is a
// failure.
func backpressure(method, path string, r response) bool {
	return method == "POST" && (path == "/v1/ingest" || path == "/v2/ingest") && r.status == http.StatusServiceUnavailable &&
		r.header.Get("Retry-After") != "" && bytes.Contains(r.body, []byte("catching up"))
}

func (w *worker) run(ctx context.Context) {
	for ctx.Err() == nil {
		if w.pause > 0 {
			time.Sleep(time.Duration(w.rng.Int63n(int64(w.pause))))
		}
		switch n := w.rng.Intn(100); {
		case n < 28:
			w.ingestV1(ctx)
		case n < 40:
			w.ingestV2(ctx)
		case n < 50:
			w.retry(ctx)
		case n < 60:
			w.feedback(ctx)
		case n < 71:
			w.pack(ctx)
		case n < 76 && !w.erase:
			w.pack(ctx)
		case n < 76:
			if w.id == 0 && w.rng.Intn(2) == 0 {
				w.retention(ctx) // one client only: its operations are ordered
			} else {
				w.eraseArtifact(ctx)
			}
		case n < 82:
			w.ingestAsync(ctx)
		case n < 86:
			w.keyChange(ctx)
		default:
			w.eraseCycle(ctx)
		}
	}
}

func (w *worker) ingestV1(ctx context.Context) {
	ws := liveWorkspaces[w.rng.Intn(len(liveWorkspaces))]
	nonce := w.nonce()
	typ, raw := payload(w.rng, nonce)
	idem := ""
	if w.rng.Intn(2) == 0 {
		idem = "idem-" + nonce
	}
	body := v1Body(ws, typ, raw, idem)
	r, ok := w.call(ctx, "v1 ingest", "POST", "/v1/ingest", w.admin, body)
	if !ok || r.status != http.StatusCreated {
		if ok {
			w.fail(fmt.Sprintf("v1 ingest of a new artifact answered %d: %s", r.status, truncate(r.body)))
		}
		return
	}
	var out struct {
		ArtifactID string `json:"artifact_id"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil || out.ArtifactID == "" {
		w.fail(fmt.Sprintf("v1 ingest: unreadable answer %s", truncate(r.body)))
		return
	}
	a := &ackArtifact{id: out.ArtifactID, ws: ws, payload: raw, idem: idem}
	if idem != "" {
		a.retry = body
	}
	w.led.addArtifact(a)
}

func (w *worker) ingestV2(ctx context.Context) {
	ws := liveWorkspaces[w.rng.Intn(len(liveWorkspaces))]
	n := 2 + w.rng.Intn(6)
	items := make([]*ackArtifact, n)
	types := make([]string, n)
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"workspace_id":%q,"actor_id":"torture","artifacts":[`, ws)
	for i := range items {
		nonce := w.nonce()
		typ, raw := payload(w.rng, nonce)
		a := &ackArtifact{ws: ws, payload: raw}
		if w.rng.Intn(2) == 0 {
			a.idem = "idem-" + nonce
			a.retry = v1Body(ws, typ, raw, a.idem)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"artifact_type":%q,"raw_payload":%s`, typ, raw)
		if a.idem != "" {
			fmt.Fprintf(&b, `,"idempotency_key":%q`, a.idem)
		}
		b.WriteByte('}')
		items[i], types[i] = a, typ
	}
	b.WriteString("]}")
	r, ok := w.call(ctx, "v2 ingest", "POST", "/v2/ingest", w.admin, b.Bytes())
	if !ok || r.status != http.StatusCreated {
		if ok {
			w.fail(fmt.Sprintf("v2 ingest of new artifacts answered %d: %s", r.status, truncate(r.body)))
		}
		return
	}
	var out struct {
		Ingested []struct {
			ArtifactID string `json:"artifact_id"`
		} `json:"ingested"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil || len(out.Ingested) != n {
		w.fail(fmt.Sprintf("v2 ingest: answer does not list %d artifacts: %s", n, truncate(r.body)))
		return
	}
	for i, a := range items {
		a.id = out.Ingested[i].ArtifactID
		w.led.addArtifact(a)
	}
	w.led.mu.Lock()
	w.led.counts.Batches++
	w.led.mu.Unlock()
}

// retry sends an acknowledged artifact's ingest again with its idempotency
// key: the answer must be 200 with the same artifact.
func (w *worker) retry(ctx context.Context) {
	a := w.led.randomIdem(w.rng)
	if a == nil {
		w.ingestV1(ctx)
		return
	}
	defer w.led.release(a)
	r, ok := w.call(ctx, "idempotent retry", "POST", "/v1/ingest", w.admin, a.retry)
	if !ok {
		return
	}
	if msg := replayMismatch(a, r); msg != "" {
		w.fail("idempotent retry during load: " + msg)
		return
	}
	w.led.mu.Lock()
	w.led.counts.IdempotentRetries++
	w.led.mu.Unlock()
}

// replayMismatch says what is wrong with r as the replay of a, or "".
func replayMismatch(a *ackArtifact, r response) string {
	var out struct {
		ArtifactID string `json:"artifact_id"`
	}
	json.Unmarshal(r.body, &out)
	if r.status != http.StatusOK || out.ArtifactID != a.id {
		return fmt.Sprintf("key %q in %s (artifact %s) answered %d with artifact %q: %s", a.idem, a.ws, a.id, r.status, out.ArtifactID, truncate(r.body))
	}
	return ""
}

var feedbackActions = []string{"pin", "mark_wrong", "outdated", "private", "unpin", "clear"}

func (w *worker) feedback(ctx context.Context) {
	a := w.led.randomArtifact(w.rng)
	if a == nil {
		w.ingestV1(ctx)
		return
	}
	defer w.led.release(a)
	body := fmt.Sprintf(`{"workspace_id":%q,"actor_id":"torture","action":%q,"artifact_id":%q,"reason":"torture"}`,
		a.ws, feedbackActions[w.rng.Intn(len(feedbackActions))], a.id)
	r, ok := w.call(ctx, "feedback", "POST", "/v1/feedback", w.admin, []byte(body))
	if !ok {
		return
	}
	if r.status != http.StatusCreated {
		w.fail(fmt.Sprintf("feedback on acknowledged artifact %s answered %d: %s", a.id, r.status, truncate(r.body)))
		return
	}
	w.led.mu.Lock()
	w.led.counts.Feedback++
	w.led.mu.Unlock()
}

func (w *worker) pack(ctx context.Context) {
	wss := liveWorkspaces
	if w.rng.Intn(4) == 0 {
		wss = frozenWorkspaces
	}
	ws := wss[w.rng.Intn(len(wss))]
	query := words[w.rng.Intn(len(words))] + " " + words[w.rng.Intn(len(words))]
	path, body := "/v1/context-pack", fmt.Sprintf(`{"workspace_id":%q,"query":%q,"max_tokens":%d}`, ws, query, 200+w.rng.Intn(2000))
	if w.rng.Intn(2) == 0 {
		profiles := []string{"low_latency", "balanced", "high_recall"}
		path = "/v2/context-pack"
		body = fmt.Sprintf(`{"workspace_id":%q,"query":%q,"max_tokens":%d,"profile":%q}`, ws, query, 200+w.rng.Intn(2000), profiles[w.rng.Intn(3)])
	}
	r, ok := w.call(ctx, "context pack", "POST", path, w.admin, []byte(body))
	if !ok {
		return
	}
	if r.status != http.StatusOK {
		w.fail(fmt.Sprintf("context pack %s answered %d: %s", body, r.status, truncate(r.body)))
		return
	}
	w.led.mu.Lock()
	w.led.counts.Packs++
	w.led.mu.Unlock()
}

func (w *worker) ingestAsync(ctx context.Context) {
	ws := liveWorkspaces[w.rng.Intn(len(liveWorkspaces))]
	n := 1 + w.rng.Intn(4)
	jobs := make([]*ackJob, n)
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"workspace_id":%q,"actor_id":"torture","async_index":true,"artifacts":[`, ws)
	for i := range jobs {
		typ, raw := payload(w.rng, w.nonce())
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"artifact_type":%q,"raw_payload":%s}`, typ, raw)
		jobs[i] = &ackJob{ws: ws, payload: raw}
	}
	b.WriteString("]}")
	r, ok := w.call(ctx, "async v2 ingest", "POST", "/v2/ingest", w.admin, b.Bytes())
	if !ok {
		return
	}
	var out struct {
		QueuedJobs []struct {
			JobID string `json:"job_id"`
		} `json:"queued_jobs"`
	}
	if err := json.Unmarshal(r.body, &out); r.status != http.StatusAccepted || err != nil || len(out.QueuedJobs) != n {
		w.fail(fmt.Sprintf("async v2 ingest answered %d, not 202 with %d jobs: %s", r.status, n, truncate(r.body)))
		return
	}
	w.led.mu.Lock()
	defer w.led.mu.Unlock()
	for i, j := range jobs {
		j.id = out.QueuedJobs[i].JobID
		w.led.jobs = append(w.led.jobs, j)
		w.led.counts.AsyncJobs++
	}
}

// keyChange creates a key for the harness's tenant, or revokes one when the
// tenant has several. Requests go with a live key of the tenant.
func (w *worker) keyChange(ctx context.Context) {
	// One key change at a time: a key must not be revoked while another
	// client is using it to revoke or create one.
	w.led.keyMu.Lock()
	defer w.led.keyMu.Unlock()
	w.led.mu.Lock()
	var live []*tenantKey
	for _, k := range w.led.keys {
		if !k.revoked && !k.revoking {
			live = append(live, k)
		}
	}
	w.led.mu.Unlock()
	if len(live) == 0 {
		return
	}
	use := live[w.rng.Intn(len(live))]
	if len(live) < 3 || w.rng.Intn(2) == 0 {
		r, ok := w.call(ctx, "create key", "POST", "/v1/keys", use.secret, nil)
		if !ok || r.status == http.StatusTooManyRequests {
			return
		}
		var out struct {
			ID     string `json:"id"`
			APIKey string `json:"api_key"`
		}
		if err := json.Unmarshal(r.body, &out); r.status != http.StatusCreated || err != nil || out.APIKey == "" {
			w.fail(fmt.Sprintf("create key answered %d: %s", r.status, truncate(r.body)))
			return
		}
		w.led.mu.Lock()
		w.led.keys = append(w.led.keys, &tenantKey{id: out.ID, secret: out.APIKey})
		w.led.counts.KeysCreated++
		w.led.mu.Unlock()
		return
	}
	var victim *tenantKey
	for _, k := range live {
		if k != use {
			victim = k
			break
		}
	}
	w.led.mu.Lock()
	if victim.revoking || victim.revoked {
		w.led.mu.Unlock()
		return
	}
	victim.revoking = true
	w.led.mu.Unlock()
	r, ok := w.call(ctx, "revoke key", "DELETE", "/v1/keys/"+victim.id, use.secret, nil)
	if !ok {
		return // no answer: revoking stays set, the check accepts either outcome
	}
	w.led.mu.Lock()
	defer w.led.mu.Unlock()
	switch r.status {
	case http.StatusOK:
		victim.revoking, victim.revoked = false, true
		w.led.counts.KeysRevoked++
	case http.StatusTooManyRequests:
		victim.revoking = false
	default:
		victim.revoking = false
		w.fail(fmt.Sprintf("revoke key %s answered %d: %s", victim.id, r.status, truncate(r.body)))
	}
}

// eraseCycle writes a few artifacts to a fresh workspace and erases it. An
// erase also makes the server flush, so segments, MANIFEST, CONTROL and WAL
// files change often.
func (w *worker) eraseCycle(ctx context.Context) {
	e := &erasable{ws: "erase-" + w.nonce()}
	w.led.mu.Lock()
	w.led.erasables = append(w.led.erasables, e)
	w.led.mu.Unlock()
	for i := 0; i < 1+w.rng.Intn(3); i++ {
		typ, raw := payload(w.rng, w.nonce())
		r, ok := w.call(ctx, "ingest before erase", "POST", "/v1/ingest", w.admin, v1Body(e.ws, typ, raw, ""))
		if !ok {
			return
		}
		var out struct {
			ArtifactID string `json:"artifact_id"`
		}
		if err := json.Unmarshal(r.body, &out); r.status != http.StatusCreated || err != nil {
			w.fail(fmt.Sprintf("ingest into %s answered %d: %s", e.ws, r.status, truncate(r.body)))
			return
		}
		w.led.mu.Lock()
		e.artifacts = append(e.artifacts, &ackArtifact{id: out.ArtifactID, ws: e.ws, payload: raw})
		w.led.counts.Artifacts++
		w.led.mu.Unlock()
	}
	w.led.mu.Lock()
	e.erasing = true
	w.led.mu.Unlock()
	r, ok := w.call(ctx, "erase", "DELETE", "/v1/workspaces/"+e.ws, w.admin, nil)
	if !ok {
		return
	}
	if r.status != http.StatusOK {
		w.fail(fmt.Sprintf("erase %s answered %d: %s", e.ws, r.status, truncate(r.body)))
		return
	}
	w.led.mu.Lock()
	e.erasing, e.erased = false, true
	w.led.counts.Erasures++
	w.led.mu.Unlock()
}

func (l *ledger) addArtifact(a *ackArtifact) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.artifacts = append(l.artifacts, a)
	l.counts.Artifacts++
	if a.idem != "" {
		l.byIdem[a.ws+"\x00"+a.idem] = a
	}
}

// randomArtifact picks an acknowledged artifact not erased nor being
// erased, and marks it in use until release.
func (l *ledger) randomArtifact(rng *rand.Rand) *ackArtifact {
	l.mu.Lock()
	defer l.mu.Unlock()
	for tries := 0; tries < 8 && len(l.artifacts) > 0; tries++ {
		if a := l.artifacts[rng.Intn(len(l.artifacts))]; !a.erased && !a.erasing {
			a.inUse++
			return a
		}
	}
	return nil
}

// randomIdem picks an artifact with an idempotency key, not erased nor
// being erased, and marks it in use until release.
func (l *ledger) randomIdem(rng *rand.Rand) *ackArtifact {
	l.mu.Lock()
	defer l.mu.Unlock()
	for tries := 0; tries < 8 && len(l.artifacts) > 0; tries++ {
		if a := l.artifacts[rng.Intn(len(l.artifacts))]; a.idem != "" && !a.erased && !a.erasing {
			a.inUse++
			return a
		}
	}
	return nil
}

func (l *ledger) release(a *ackArtifact) {
	l.mu.Lock()
	a.inUse--
	l.mu.Unlock()
}

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}
