// Package torture is a crash-and-check harness for a whole Loci server: it
// runs `loci serve` as a child process, drives mixed concurrent load over
// HTTP (v1 and v2 ingest, idempotent retries, feedback, packs, asynchronous
// jobs, key changes, workspace erasures), kills the server with SIGKILL at
// a random moment or right after a chosen file event in its data directory,
// and then checks that `loci verify` finds no fault and that, after a
// restart, everything acknowledged is still there: artifacts byte-identical,
// idempotency keys mapped to the same artifact, keys live or revoked as
// acknowledged, erased workspaces erased, jobs known, and packs on
// unchanged workspaces byte-identical to before the crashes. State
// accumulates over rounds in one data directory.
//
// The file events are observed from outside the server with inotify, so the
// product carries no hooks for it.
package torture

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config is one torture run.
type Config struct {
	Bin     string   // the loci binary
	DataDir string   // a fresh (absent or empty) data directory
	Rounds  int      // kill points
	Seed    int64    // chooses the kill points, delays and load
	Events  []string // kill point kinds to draw from (default AllEvents)
	Workers int      // concurrent load clients (default 3)
	// FlushMB is the server's --flush-threshold-mb (default 1, its minimum):
	// small, so segment, MANIFEST, CONTROL and WAL file events are frequent.
	FlushMB int
	// Embedder is the server's --embedder (default: the server's default,
	// the built-in encoder, embedding behind ingest).
	Embedder string
	// MaxLoad bounds the load of one round: a random kill comes within it, and
	// an awaited file event that has not come by then is replaced by a kill
	// at that moment (default 4 s).
	MaxLoad time.Duration
	// Sample is how many artifacts acknowledged in earlier rounds are read
	// back after each restart besides all new ones (default 300); the last
	// round reads back everything.
	Sample int
	// Pause makes each load client wait a random time up to Pause between
	// requests (default 0: as fast as the server answers). Long runs use it
	// to bound how much data accumulates over hundreds of rounds.
	Pause time.Duration
	// ArtifactErasure adds single-artifact erasures (DELETE /v1/artifacts/{id})
	// and the retention workspace (PUT .../settings) to the load and checks
	// (loci torture turns it on unless --artifact-erasure=false).
	ArtifactErasure bool
	// Imports adds `loci import` between rounds (into the killed server's
	// directory, itself killed half of the time) and during the load (into
	// the served directory: refused), and checks the imported workspaces
	// (imports.go).
	Imports bool
	// FlakyEmbedder makes the server embed (--embedder openai) with an
	// OpenAI-compatible provider run by the harness on loopback that, while
	// the load runs, answers 500 or later than the server's time bound to a
	// third of its requests (embedprovider.go). After the last round every
	// acknowledged artifact must become embedded: none may settle as failed.
	FlakyEmbedder bool
	StartTimeout  time.Duration // wait for /health 200 (default 2 min)
	Log           io.Writer     // progress lines (default io.Discard)

	// afterKill, when set (tests only), runs between a kill and the checks,
	// so a test can damage the directory and see the checks fail.
	afterKill func(dir string)

	provider *flakyProvider // FlakyEmbedder's provider, started by Run
}

// Summary is what a run did and found.
type Summary struct {
	Seed          int64          `json:"seed"`
	Rounds        int            `json:"rounds"`
	KillPoints    map[string]int `json:"kill_points"`
	EventTimeouts int            `json:"event_timeouts"` // awaited events that did not come (killed at MaxLoad instead)
	Acknowledged  Counts         `json:"acknowledged"`
	Checked       Checked        `json:"checked"`
	Failures      []string       `json:"failures"`      // up to 20 of each kind
	FailureCount  int            `json:"failure_count"` // all of them
	Seconds       float64        `json:"seconds"`
	DataDir       string         `json:"data_dir"`
	// FlakyEmbedder counts what the flaky provider did (FlakyEmbedder).
	FlakyEmbedder *ProviderCounts `json:"flaky_embedder,omitempty"`
}

// ProviderCounts are the flaky provider's answers: 500s, answers past the
// server's time bound, and vectors given.
type ProviderCounts struct {
	Failed   int64 `json:"failed"`
	Slow     int64 `json:"slow"`
	Answered int64 `json:"answered"`
	Embedded int   `json:"artifacts_checked_embedded"`
}

func (c *Config) setDefaults() {
	if len(c.Events) == 0 {
		c.Events = AllEvents
	}
	if c.Workers <= 0 {
		c.Workers = 3
	}
	if c.FlushMB <= 0 {
		c.FlushMB = 1
	}
	if c.MaxLoad <= 0 {
		c.MaxLoad = 4 * time.Second
	}
	c.MaxLoad = max(c.MaxLoad, 100*time.Millisecond)
	if c.Sample <= 0 {
		c.Sample = 300
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 2 * time.Minute
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
}

// Run tortures a server for cfg.Rounds kill points. It returns the summary
// and an error when a check failed (the summary lists every failure, each
// naming its round and the seed) or the harness itself could not run.
func Run(cfg Config) (*Summary, error) {
	cfg.setDefaults()
	for _, e := range cfg.Events {
		if !validEvent(e) {
			return nil, fmt.Errorf("unknown event %q (known: %s)", e, strings.Join(AllEvents, ", "))
		}
	}
	if entries, err := os.ReadDir(cfg.DataDir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("data directory %s is not empty: torture needs a fresh one", cfg.DataDir)
	}
	t := &run{cfg: cfg, rng: rand.New(rand.NewSource(cfg.Seed)), led: newLedger(),
		sum: &Summary{Seed: cfg.Seed, KillPoints: map[string]int{}, DataDir: cfg.DataDir}}
	// The retention workspace's timeline starts three days back (midnight),
	// so it reaches the clock, where timestamps are bounded, within a run.
	t.led.retained.base = time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -3).UnixMicro()
	if cfg.FlakyEmbedder {
		if cfg.Embedder != "" && cfg.Embedder != "openai" {
			return nil, fmt.Errorf("a flaky embedder is an OpenAI-compatible one: --embedder %q does not go with it", cfg.Embedder)
		}
		p, err := startFlakyProvider(cfg.Seed)
		if err != nil {
			return nil, fmt.Errorf("flaky embedder: %w", err)
		}
		defer p.close()
		t.cfg.provider, t.cfg.Embedder = p, "openai"
		t.sum.FlakyEmbedder = &ProviderCounts{}
		defer func() {
			t.sum.FlakyEmbedder.Failed, t.sum.FlakyEmbedder.Slow, t.sum.FlakyEmbedder.Answered = p.failed.Load(), p.slow.Load(), p.answered.Load()
		}()
	}
	start := time.Now()
	err := t.run()
	t.sum.Seconds = time.Since(start).Seconds()
	t.sum.Acknowledged = t.led.counts
	if err == nil && len(t.sum.Failures) > 0 {
		err = fmt.Errorf("torture failed (seed %d): %d failures; the first: %s", cfg.Seed, t.sum.FailureCount, t.sum.Failures[0])
	}
	return t.sum, err
}

func validEvent(e string) bool {
	for _, k := range AllEvents {
		if e == k {
			return true
		}
	}
	return false
}

// run is the state of one torture run.
type run struct {
	cfg   Config
	rng   *rand.Rand
	led   *ledger
	sum   *Summary
	addr  string
	admin string

	failMu    sync.Mutex
	failKinds map[string]int
	round     int
	deck      []string // kill point kinds left in this pass (nextKind)

	checkedArtifacts int // artifacts[:n] were read back at least once
	checkedErasables int
	checkedErased    int // erasedArt[:n] were checked at least once
	sampleAt         int // rotating start of the sample of older artifacts
}

// failuresPerKind bounds the failures kept per kind (the text before the
// first colon): one lost workspace must not hide a lost key.
const failuresPerKind = 20

func (t *run) fail(msg string) {
	t.failMu.Lock()
	defer t.failMu.Unlock()
	t.sum.FailureCount++
	kind, _, _ := strings.Cut(msg, ":")
	if t.failKinds == nil {
		t.failKinds = map[string]int{}
	}
	if t.failKinds[kind]++; t.failKinds[kind] <= failuresPerKind {
		t.sum.Failures = append(t.sum.Failures, fmt.Sprintf("round %d (seed %d): %s", t.round, t.cfg.Seed, msg))
	}
}

func (t *run) failed() bool {
	t.failMu.Lock()
	defer t.failMu.Unlock()
	return len(t.sum.Failures) > 0
}

func (t *run) logf(format string, args ...any) { fmt.Fprintf(t.cfg.Log, format+"\n", args...) }

func (t *run) run() error {
	var err error
	if t.addr, err = freeAddr(); err != nil {
		return err
	}
	t.admin = fmt.Sprintf("torture-admin-%d", t.cfg.Seed)
	srv, err := startServer(&t.cfg, t.addr, t.admin)
	if err != nil {
		return err
	}
	defer func() {
		if srv != nil {
			srv.kill()
		}
	}()
	w, err := watch(t.cfg.DataDir)
	if err != nil {
		return err
	}
	defer w.close()
	if err := t.setup(); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	for t.round = 1; t.round <= t.cfg.Rounds; t.round++ {
		kind, detail := t.load(srv, w)
		t.sum.KillPoints[kind]++
		t.sum.Rounds++
		if t.cfg.afterKill != nil {
			t.cfg.afterKill(t.cfg.DataDir)
		}
		if srv.exitedUnasked() {
			t.fail(fmt.Sprintf("loci serve exited on its own (%v); its log ends:\n%s", srv.err, srv.stderr.String()))
		}
		if err := runVerify(t.cfg.Bin, t.cfg.DataDir); err != nil {
			t.fail(fmt.Sprintf("after kill at %s: %v", detail, err))
		}
		t.sum.Checked.Verifies++
		if t.cfg.Imports {
			t.importRound()
		}
		if srv, err = startServer(&t.cfg, t.addr, t.admin); err != nil {
			t.fail(fmt.Sprintf("restart after kill at %s: %v", detail, err))
			return nil
		}
		t.check(t.round == t.cfg.Rounds)
		t.logf("round %d: killed at %s; %d artifacts acknowledged so far, %d failures", t.round, detail, t.led.counts.Artifacts, t.sum.FailureCount)
		if t.failed() {
			return nil // state is suspect from here on: stop and report
		}
	}
	if t.cfg.provider != nil {
		t.checkEmbedded()
	}
	// A graceful stop must succeed and leave a clean directory too.
	err = srv.stop(time.Minute)
	srv = nil
	if err != nil {
		t.fail(fmt.Sprintf("graceful stop after the last round: %v", err))
	}
	if err := runVerify(t.cfg.Bin, t.cfg.DataDir); err != nil {
		t.fail(fmt.Sprintf("after the graceful stop: %v", err))
	}
	t.sum.Checked.Verifies++
	return nil
}

// setup registers the harness's tenant, writes the frozen workspaces and
// records the packs that must never change.
func (t *run) setup() error {
	c := newClient(t.addr)
	defer c.close()
	ctx := context.Background()
	r, err := c.do(ctx, "POST", "/v1/register", t.admin, []byte(`{"email":"torture@example.com","plan":"enterprise"}`))
	if err != nil {
		return err
	}
	var reg struct {
		TenantID string `json:"tenant_id"`
		APIKey   string `json:"api_key"`
	}
	if err := json.Unmarshal(r.body, &reg); r.status != http.StatusCreated || err != nil {
		return fmt.Errorf("register answered %d: %s", r.status, truncate(r.body))
	}
	t.led.tenantID = reg.TenantID
	r, err = c.do(ctx, "GET", "/v1/keys", reg.APIKey, nil)
	if err != nil {
		return err
	}
	var keys struct {
		Keys []struct {
			ID string `json:"id"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(r.body, &keys); r.status != http.StatusOK || err != nil || len(keys.Keys) != 1 {
		return fmt.Errorf("list keys answered %d: %s", r.status, truncate(r.body))
	}
	t.led.keys = append(t.led.keys, &tenantKey{id: keys.Keys[0].ID, secret: reg.APIKey})

	rng := rand.New(rand.NewSource(t.cfg.Seed))
	for _, ws := range frozenWorkspaces {
		for batch := 0; batch < 3; batch++ {
			var b strings.Builder
			// Packs recorded below must not change later: wait until the
			// background embedder has written the vectors.
			fmt.Fprintf(&b, `{"workspace_id":%q,"actor_id":"setup","wait_for_embedding":true,"artifacts":[`, ws)
			for i := 0; i < 8; i++ {
				typ, raw := payload(rng, fmt.Sprintf("f%d%d", batch, i))
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"artifact_type":%q,"raw_payload":%s,"timestamp":"2026-01-%02dT10:00:00Z"}`, typ, raw, 1+batch*8+i)
			}
			b.WriteString("]}")
			r, err := c.do(ctx, "POST", "/v2/ingest", t.admin, []byte(b.String()))
			if err != nil {
				return err
			}
			if r.status != http.StatusCreated {
				return fmt.Errorf("ingest into %s answered %d: %s", ws, r.status, truncate(r.body))
			}
		}
		for i, q := range []string{"payment outage rollback", "customer contract renewal", "database backup"} {
			reqs := []frozenPack{
				{path: "/v1/context-pack", body: []byte(fmt.Sprintf(`{"workspace_id":%q,"query":%q,"max_tokens":%d}`, ws, q, 300+i*400))},
				{path: "/v2/context-pack", body: []byte(fmt.Sprintf(`{"workspace_id":%q,"query":%q,"max_tokens":%d,"profile":"balanced"}`, ws, q, 500+i*300))},
			}
			for _, p := range reqs {
				r, err := c.do(ctx, "POST", p.path, t.admin, p.body)
				if err != nil {
					return err
				}
				if r.status != http.StatusOK {
					return fmt.Errorf("pack %s answered %d: %s", p.body, r.status, truncate(r.body))
				}
				p.resp = r.body
				t.led.frozen = append(t.led.frozen, p)
			}
		}
	}
	if !t.cfg.ArtifactErasure {
		return nil
	}
	return t.setupRetention(c)
}

// setupRetention gives the retention workspace artifacts over several days
// and a retention of 2 days, so some are erased from the start.
func (t *run) setupRetention(c *client) error {
	ctx := context.Background()
	w := &worker{id: 9, rng: rand.New(rand.NewSource(t.cfg.Seed + 1)), c: c, admin: t.admin, led: t.led, fail: t.fail,
		killed: func() bool { return false }}
	for i := 0; i < 10; i++ {
		if i == 6 {
			w.retentionCall(ctx, &retOp{set: true, days: 2}, "PUT", "/v1/workspaces/"+retentionWorkspace+"/settings", []byte(`{"retention_days":2}`), http.StatusOK)
		}
		a, body := retentionIngest(w, t.led.retained.sent)
		t.led.retained.sent++
		w.retentionCall(ctx, &retOp{art: a}, "POST", "/v1/ingest", body, http.StatusCreated)
	}
	w.futureIngest(ctx, time.Now()) // refused, changing nothing
	if t.led.retained.pending != nil || t.failed() {
		return fmt.Errorf("writing the retention workspace failed: %v", t.sum.Failures)
	}
	return nil
}

// nextKind draws the next kill point kind from a shuffled pass over the
// configured kinds, so each comes once in every len(Events) rounds: a short
// run still hits every file event.
func (t *run) nextKind() string {
	if len(t.deck) == 0 {
		t.deck = append(t.deck, t.cfg.Events...)
		t.rng.Shuffle(len(t.deck), func(i, j int) { t.deck[i], t.deck[j] = t.deck[j], t.deck[i] })
	}
	k := t.deck[0]
	t.deck = t.deck[1:]
	return k
}

// load runs the workers until the round's kill point, kills the server and
// returns the kill point's kind and a description of it.
func (t *run) load(srv *server, w *watcher) (kind, detail string) {
	kind = t.nextKind()
	armAfter := time.Duration(t.rng.Int63n(int64(t.cfg.MaxLoad / 4)))
	randomAt := armAfter + time.Duration(t.rng.Int63n(int64(t.cfg.MaxLoad-armAfter)))
	workerSeed := t.rng.Int63()

	if p := t.cfg.provider; p != nil {
		p.flaky.Store(true)
		defer p.flaky.Store(false) // the checks between rounds compare packs
	}
	c := newClient(t.addr)
	defer c.close()
	ctx, cancel := context.WithCancel(context.Background())
	var killed atomic.Bool // set before SIGKILL: transport errors from then on are expected
	var wg sync.WaitGroup
	for i := 0; i < t.cfg.Workers; i++ {
		wk := &worker{id: i, round: t.round, rng: rand.New(rand.NewSource(workerSeed + int64(i))), c: c, admin: t.admin, pause: t.cfg.Pause,
			led: t.led, fail: t.fail, killed: killed.Load, erase: t.cfg.ArtifactErasure}
		wg.Add(1)
		go func() {
			defer wg.Done()
			wk.run(ctx)
		}()
	}
	time.Sleep(armAfter)
	if t.cfg.Imports && t.rng.Intn(3) == 0 {
		t.importWhileServing()
	}
	w.drain()
	detail = kind
	if kind == EventRandom {
		time.Sleep(randomAt - armAfter)
		detail = fmt.Sprintf("random, %v into the load", randomAt.Round(time.Millisecond))
	} else {
		wctx, wcancel := context.WithTimeout(ctx, t.cfg.MaxLoad-armAfter)
		if !w.waitFor(wctx, kind) {
			t.sum.EventTimeouts++
			detail = fmt.Sprintf("%s (did not come within %v; killed then)", kind, t.cfg.MaxLoad)
		}
		wcancel()
	}
	killed.Store(true)
	srv.kill()
	cancel()
	wg.Wait()
	return kind, detail
}

// check reads back what was acknowledged: new artifacts and a rotating
// sample of older ones (all of them when full is set), every acknowledged
// idempotency key among them, erased workspaces, keys, jobs and frozen packs.
func (t *run) check(full bool) {
	c := newClient(t.addr)
	defer c.close()
	ctx := context.Background()
	k := &checker{c: c, admin: t.admin, led: t.led, fail: t.fail, n: &t.sum.Checked}

	t.led.mu.Lock()
	all := append([]*ackArtifact(nil), t.led.artifacts...)
	erasables := append([]*erasable(nil), t.led.erasables...)
	erased := append([]*ackArtifact(nil), t.led.erasedArt...)
	t.led.mu.Unlock()
	arts := all
	es := erasables
	if !full {
		arts = append(all[t.checkedArtifacts:], t.sample(all[:t.checkedArtifacts])...)
		es = erasables[t.checkedErasables:]
		if older := erasables[:t.checkedErasables]; len(older) > 0 {
			for i := 0; i < t.cfg.Sample/10 && i < len(older); i++ {
				es = append(es, older[(t.round*t.cfg.Sample/10+i)%len(older)])
			}
		}
	}
	// Artifacts erased (or being erased) are checked as such, the new ones
	// with a pack too, and a rotating sample of the older ones.
	newErased := erased[t.checkedErased:]
	oldErased := erased[:t.checkedErased]
	if !full && len(oldErased) > t.cfg.Sample/10 {
		var s []*ackArtifact
		for i := 0; i < t.cfg.Sample/10; i++ {
			s = append(s, oldErased[(t.round*t.cfg.Sample/10+i)%len(oldErased)])
		}
		oldErased = s
	}
	t.checkedArtifacts, t.checkedErasables, t.checkedErased = len(all), len(erasables), len(erased)
	t.led.mu.Lock()
	live := arts[:0:0]
	for _, a := range arts {
		if !a.erased && !a.erasing {
			live = append(live, a)
		}
	}
	t.led.mu.Unlock()
	k.erasedArtifacts(ctx, newErased, true)
	k.erasedArtifacts(ctx, oldErased, full)
	k.artifacts(ctx, live)
	k.idempotency(ctx, live)
	if t.cfg.ArtifactErasure {
		k.retention(ctx)
	}
	if t.cfg.Imports {
		k.imports(ctx)
	}
	k.erasures(ctx, es)
	k.keys(ctx)
	k.jobs(ctx)
	k.frozenPacks(ctx)
}

// sample returns up to cfg.Sample artifacts of older, a window that moves
// on each round so every artifact is read back now and then.
func (t *run) sample(older []*ackArtifact) []*ackArtifact {
	if len(older) <= t.cfg.Sample {
		return older
	}
	out := make([]*ackArtifact, 0, t.cfg.Sample)
	for i := 0; i < t.cfg.Sample; i++ {
		out = append(out, older[(t.sampleAt+i)%len(older)])
	}
	t.sampleAt = (t.sampleAt + t.cfg.Sample) % len(older)
	return out
}

// SortedKinds lists the kill point kinds of s in order, for printing.
func (s *Summary) SortedKinds() []string {
	var out []string
	for k := range s.KillPoints {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
