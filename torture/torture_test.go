package torture

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loci-memory/loci/internal/proctest"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { proctest.Main(m) }

// seed is LOCI_TORTURE_SEED if set (to replay a failure), else fixed.
func seed(t *testing.T) int64 {
	if s := os.Getenv("LOCI_TORTURE_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("LOCI_TORTURE_SEED: %v", err)
		}
		return n
	}
	return 20261123
}

// runTorture runs cfg with a freshly built binary, a temporary directory
// and the test's seed, and fails the test on any failure.
func runTorture(t *testing.T, cfg Config) *Summary {
	t.Helper()
	var log bytes.Buffer
	cfg.Bin, cfg.DataDir, cfg.Seed, cfg.Log = proctest.Loci(t), t.TempDir(), seed(t), &log
	sum, err := Run(cfg)
	t.Logf("progress:\n%s", log.String())
	if err != nil {
		if sum != nil {
			for _, f := range sum.Failures {
				t.Error(f)
			}
		}
		t.Fatal(err)
	}
	return sum
}

// TestTorture kills a loaded server at every kind of kill point and checks
// that nothing acknowledged is lost. `loci torture` runs longer ones.
func TestTorture(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs loci serve")
	}
	sum := runTorture(t, Config{Rounds: len(AllEvents), MaxLoad: 3 * time.Second, ArtifactErasure: true, Imports: true})
	if sum.Rounds != len(AllEvents) {
		t.Errorf("ran %d rounds, want %d", sum.Rounds, len(AllEvents))
	}
	a, c := sum.Acknowledged, sum.Checked
	t.Logf("kill points %v; acknowledged %+v; checked %+v", sum.KillPoints, a, c)
	// The load must really have exercised every kind of write, and the
	// checks read it back: a harness that checks nothing passes vacuously.
	for _, got := range []struct {
		what string
		n    int
	}{
		{"artifacts", a.Artifacts}, {"v2 batches", a.Batches}, {"idempotent retries", a.IdempotentRetries},
		{"feedback", a.Feedback}, {"packs", a.Packs}, {"async jobs", a.AsyncJobs}, {"keys created", a.KeysCreated},
		{"erasures", a.Erasures}, {"artifact erasures", a.ArtifactErasures}, {"retention workspace artifacts", a.RetainedArtifacts},
		{"artifact reads", c.Artifacts}, {"erased artifact checks", c.ErasedArtifacts}, {"retention checks", c.Retention}, {"idempotency checks", c.IdempotencyKeys},
		{"key checks", c.Keys}, {"erased workspace checks", c.ErasedWorkspaces}, {"frozen pack checks", c.Packs},
		{"far-future timestamps refused", a.FutureRefused}, {"imports", a.Imports + a.ImportsKilled}, {"imported workspace checks", c.Imports},
	} {
		if got.n == 0 {
			t.Errorf("no %s", got.what)
		}
	}
	if c.Artifacts < a.Artifacts {
		t.Errorf("the last round read back %d artifacts, fewer than the %d acknowledged", c.Artifacts, a.Artifacts)
	}
}

// TestTortureFlakyEmbedder kills a server whose embedder, an OpenAI-compatible
// provider, fails and answers too late during the load: nothing acknowledged
// is lost, and once the provider answers every artifact becomes embedded
// (none is given up on).
func TestTortureFlakyEmbedder(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs loci serve")
	}
	sum := runTorture(t, Config{Rounds: 3, MaxLoad: 2 * time.Second, ArtifactErasure: true, FlakyEmbedder: true})
	p := sum.FlakyEmbedder
	t.Logf("flaky embedder %+v; acknowledged %+v", *p, sum.Acknowledged)
	if p.Failed == 0 || p.Slow == 0 || p.Embedded == 0 {
		t.Errorf("the provider failed %d and was slow %d times, %d artifacts checked embedded: the run tested nothing", p.Failed, p.Slow, p.Embedded)
	}
}

// TestTortureKillAtFirstFlush kills the server right after its first
// segment is renamed into place, before the first MANIFEST: the directory
// must still open (issue 9, item 4; with seed 1 this failed 5 times in 6
// before an empty MANIFEST was written at creation).
func TestTortureKillAtFirstFlush(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs loci serve")
	}
	bin := proctest.Loci(t)
	// Slow, short load: the first flush (from the first erasure) comes after
	// the watcher is armed.
	sum, err := Run(Config{Bin: bin, DataDir: t.TempDir(), Rounds: 1, Seed: 1, Events: []string{EventSegment},
		Workers: 2, Pause: 50 * time.Millisecond, MaxLoad: 400 * time.Millisecond})
	if err != nil {
		if sum != nil {
			for _, f := range sum.Failures {
				t.Error(f)
			}
		}
		t.Fatal(err)
	}
	if sum.EventTimeouts != 0 {
		t.Logf("no segment event within the load; the kill was at its end instead")
	}
}

// TestTortureCatchesLoss wipes the data directory after the kill: the
// checks must report the lost artifacts, keys and packs.
func TestTortureCatchesLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs loci serve")
	}
	bin := proctest.Loci(t)
	wipe := func(dir string) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
	sum, err := Run(Config{Bin: bin, DataDir: t.TempDir(), Rounds: 1, Seed: seed(t), Events: []string{EventRandom},
		MaxLoad: 2 * time.Second, afterKill: wipe})
	if err == nil {
		t.Fatal("a wiped data directory passed the checks")
	}
	all := strings.Join(sum.Failures, "\n")
	for _, want := range []string{"LOST: acknowledged artifact", "KEY LOST", "PACK CHANGED", "(seed " + strconv.FormatInt(seed(t), 10) + ")"} {
		if !strings.Contains(all, want) {
			t.Errorf("failures do not mention %q:\n%s", want, truncate([]byte(all)))
		}
	}
}

// TestNextKind: every pass of len(Events) rounds holds each kill point kind
// once, whatever the seed.
func TestNextKind(t *testing.T) {
	for seed := int64(0); seed < 20; seed++ {
		r := &run{cfg: Config{Events: AllEvents}, rng: rand.New(rand.NewSource(seed))}
		for pass := 0; pass < 3; pass++ {
			seen := map[string]int{}
			for range AllEvents {
				seen[r.nextKind()]++
			}
			for _, k := range AllEvents {
				if seen[k] != 1 {
					t.Fatalf("seed %d pass %d: kind %s drawn %d times (%v)", seed, pass, k, seen[k], seen)
				}
			}
		}
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		role, name string
		mask       uint32
		want       string
	}{
		{"", "MANIFEST", unix.IN_MOVED_TO, EventManifest},
		{"", "CONTROL", unix.IN_MOVED_TO, EventControl},
		{"", "MANIFEST.tmp", unix.IN_MOVED_TO, ""},
		{"", "LOCK", unix.IN_MOVED_TO, ""},
		{"segments", "0000000000000003.seg", unix.IN_MOVED_TO, EventSegment},
		{"segments", "0000000000000003.seg.123.tmp", unix.IN_MOVED_TO, ""},
		{"wal", "00000002.wal", unix.IN_CREATE, EventWALCreate},
		{"wal", "00000001.wal", unix.IN_DELETE, EventWALDelete},
		{"wal", "00000001.wal", unix.IN_MOVED_TO, ""},
		{"segments", "MANIFEST", unix.IN_MOVED_TO, ""},
	} {
		if got := classify(tc.role, tc.name, tc.mask); got != tc.want {
			t.Errorf("classify(%q, %q, %#x) = %q, want %q", tc.role, tc.name, tc.mask, got, tc.want)
		}
	}
}

// TestWatcher sees each kind of file event the server makes, done here by
// hand in a directory laid out like a data directory.
func TestWatcher(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"segments", "wal"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w, err := watch(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	write := func(name string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rename := func(from, to string) {
		write(from)
		if err := os.Rename(filepath.Join(dir, from), filepath.Join(dir, to)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		kind string
		do   func()
	}{
		{EventManifest, func() { rename("MANIFEST.tmp", "MANIFEST") }},
		{EventControl, func() { rename("CONTROL.tmp", "CONTROL") }},
		{EventSegment, func() { rename("segments/1.seg.tmp", "segments/0000000000000001.seg") }},
		{EventWALCreate, func() { write("wal/00000001.wal") }},
		{EventWALDelete, func() { os.Remove(filepath.Join(dir, "wal/00000001.wal")) }},
	} {
		tc.do()
		select {
		case got := <-w.event:
			if got != tc.kind {
				t.Errorf("got event %q, want %q", got, tc.kind)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no %s event", tc.kind)
		}
	}
}

// TestRetentionModel: the expected cutoff moves forward only, clearing
// brings nothing back, and a late artifact older than the cutoff is gone.
func TestRetentionModel(t *testing.T) {
	day := func(d, h int) *ackArtifact {
		return &ackArtifact{id: fmt.Sprintf("d%dh%d", d, h), tsMicro: retentionBase + int64(d)*dayMicros + int64(h)*dayMicros/24}
	}
	a, b, c, late, e := day(0, 5), day(2, 1), day(4, 23), day(1, 0), day(2, 0)
	ops := []retOp{{art: a}, {art: b}, {set: true, days: 2}, {art: c}, {art: late}, {set: true, days: 3}, {set: true, days: 0}, {art: e}}
	days, cutoff, present, gone := retentionModel(ops)
	if days != 0 || cutoff != math.MinInt64 {
		t.Errorf("days %d cutoff %d, want cleared", days, cutoff)
	}
	ids := func(as []*ackArtifact) string {
		var s []string
		for _, x := range as {
			s = append(s, x.id)
		}
		return strings.Join(s, ",")
	}
	if got, want := ids(gone), "d0h5,d1h0"; got != want {
		t.Errorf("gone %s, want %s", got, want)
	}
	if got, want := ids(present), "d2h1,d4h23,d2h0"; got != want {
		t.Errorf("present %s, want %s", got, want)
	}
	if _, cut, _, _ := retentionModel(ops[:5]); cut != retentionBase+2*dayMicros {
		t.Errorf("cutoff %s, want day 2", stamp(cut))
	}
	// An artifact stamped ahead of its ingest counts its ingest time: one
	// stamped day 30, ingested on day 4, keeps day 2's artifacts under a
	// two-day retention.
	ahead := day(30, 0)
	ahead.createdMicro = c.tsMicro
	if _, cut, present, _ := retentionModel([]retOp{{art: b}, {art: ahead}, {set: true, days: 2}}); cut != retentionBase+2*dayMicros || ids(present) != "d2h1,d30h0" {
		t.Errorf("with an artifact stamped ahead: cutoff %s, present %s; want day 2 and both", stamp(cut), ids(present))
	}
}

// fakeServer answers the checker's reads from a fixed state: artifacts
// readable (id to payload), listed, settings and pack bodies.
func fakeServer(t *testing.T, readable map[string]string, packCites string, days string) *client {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "GET" && strings.HasPrefix(r.URL.Path, "/v1/artifacts/"):
			id := strings.TrimPrefix(r.URL.Path, "/v1/artifacts/")
			if p, ok := readable[id]; ok {
				fmt.Fprintf(w, `{"artifact_id":%q,"raw_payload":%s,"timestamp":"2026-03-01T00:00:00Z"}`, id, p)
				return
			}
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"detail":"artifact not found"}`)
		case r.Method == "GET" && strings.HasSuffix(r.URL.Path, "/settings"):
			fmt.Fprintf(w, `{"workspace_id":"x","retention_days":%s}`, days)
		case r.Method == "GET" && strings.HasSuffix(r.URL.Path, "/artifacts"):
			var items []string
			for id := range readable {
				items = append(items, fmt.Sprintf(`{"artifact_id":%q,"timestamp":"2026-03-01T00:00:00Z"}`, id))
			}
			fmt.Fprintf(w, `{"artifacts":[%s],"next_cursor":null}`, strings.Join(items, ","))
		case r.Method == "POST" && r.URL.Path == "/v1/context-pack":
			fmt.Fprintf(w, `{"spans":[{"artifact_id":%q}]}`, packCites)
		default:
			w.WriteHeader(http.StatusTeapot)
		}
	}))
	t.Cleanup(srv.Close)
	return newClient(strings.TrimPrefix(srv.URL, "http://"))
}

// TestCheckerErasedArtifacts: an acknowledged erase that reads back, is
// listed or is cited by a pack is flagged; an unanswered one may go either
// way but GET and listing must agree.
func TestCheckerErasedArtifacts(t *testing.T) {
	ctx := context.Background()
	run := func(readable map[string]string, cites string, as ...*ackArtifact) []string {
		var fails []string
		var mu sync.Mutex
		k := &checker{c: fakeServer(t, readable, cites, "null"), led: newLedger(), n: &Checked{},
			fail: func(s string) { mu.Lock(); fails = append(fails, s); mu.Unlock() }}
		k.erasedArtifacts(ctx, as, true)
		return fails
	}
	gone := &ackArtifact{id: "a1", ws: "live-a", payload: []byte(`"x"`), erased: true, ts: "2026-03-01T00:00:00Z"}
	if f := run(nil, "zz"); len(f) != 0 {
		t.Errorf("nothing to check: %v", f)
	}
	if f := run(nil, "zz", gone); len(f) != 0 {
		t.Errorf("an erased artifact that is gone was flagged: %v", f)
	}
	if f := run(map[string]string{"a1": `"x"`}, "zz", gone); len(f) == 0 || !strings.Contains(f[0], "ARTIFACT ERASURE UNDONE") {
		t.Errorf("a resurrected erased artifact was not flagged: %v", f)
	}
	if f := run(nil, "a1", gone); len(f) == 0 || !strings.Contains(f[0], "cited in a pack") {
		t.Errorf("an erased artifact cited in a pack was not flagged: %v", f)
	}
	maybe := &ackArtifact{id: "a2", ws: "live-a", payload: []byte(`"y"`), erasing: true, ts: "2026-03-01T00:00:00Z"}
	if f := run(map[string]string{"a2": `"y"`}, "zz", maybe); len(f) != 0 || maybe.erasing || maybe.erased {
		t.Errorf("an unanswered erase that did not happen: %v (erasing %v erased %v)", f, maybe.erasing, maybe.erased)
	}
}

// TestCheckerRetention: an artifact before the acknowledged cutoff that is
// still listed, or one after it that is gone, is flagged.
func TestCheckerRetention(t *testing.T) {
	old := &ackArtifact{id: "old", ws: retentionWorkspace, payload: []byte(`"o"`), tsMicro: retentionBase}
	cur := &ackArtifact{id: "new", ws: retentionWorkspace, payload: []byte(`"n"`), tsMicro: retentionBase + 5*dayMicros}
	run := func(readable map[string]string, days string) []string {
		led := newLedger()
		led.retained.ops = []retOp{{art: old}, {art: cur}, {set: true, days: 2}}
		var fails []string
		var mu sync.Mutex
		k := &checker{c: fakeServer(t, readable, "", days), led: led, n: &Checked{},
			fail: func(s string) { mu.Lock(); fails = append(fails, s); mu.Unlock() }}
		k.retention(context.Background())
		return fails
	}
	if f := run(map[string]string{"new": `"n"`}, "2"); len(f) != 0 {
		t.Errorf("the expected state was flagged: %v", f)
	}
	if f := strings.Join(run(map[string]string{"new": `"n"`, "old": `"o"`}, "2"), "\n"); !strings.Contains(f, "RETENTION UNDONE") {
		t.Errorf("an artifact before the cutoff still there was not flagged: %s", f)
	}
	if f := strings.Join(run(nil, "2"), "\n"); !strings.Contains(f, "LOST: retained artifact") {
		t.Errorf("a lost artifact after the cutoff was not flagged: %s", f)
	}
	if f := strings.Join(run(map[string]string{"new": `"n"`}, "null"), "\n"); !strings.Contains(f, "RETENTION SETTING") {
		t.Errorf("a lost setting was not flagged: %s", f)
	}
}

// TestCheckerImports: an imported workspace found partial, lost after a
// finished import, or appearing after it was seen absent is flagged; whole
// or absent after a kill is not.
func TestCheckerImports(t *testing.T) {
	run := func(outcome int, readable map[string]string) ([]string, int) {
		led := newLedger()
		imp := &importedWS{ws: "imported-1", ids: []string{"a", "b"}, payloads: map[string][]byte{"a": []byte(`"x"`), "b": []byte(`"y"`)}, outcome: outcome}
		led.imports = []*importedWS{imp}
		var fails []string
		var mu sync.Mutex
		k := &checker{c: fakeServer(t, readable, "", "null"), led: led, n: &Checked{},
			fail: func(s string) { mu.Lock(); fails = append(fails, s); mu.Unlock() }}
		k.imports(context.Background())
		return fails, imp.outcome
	}
	whole := map[string]string{"a": `"x"`, "b": `"y"`}
	for _, c := range []struct {
		name     string
		outcome  int
		readable map[string]string
		want     string // "" : no failure
		after    int
	}{
		{"whole", importWhole, whole, "", importWhole},
		{"killed, whole", importEither, whole, "", importWhole},
		{"killed, absent", importEither, nil, "", importAbsent},
		{"partial", importEither, map[string]string{"a": `"x"`}, "IMPORT PARTIAL", importEither},
		{"lost", importWhole, nil, "IMPORT LOST", importWhole},
		{"appeared", importAbsent, whole, "IMPORT APPEARED", importAbsent},
		{"changed", importWhole, map[string]string{"a": `"x"`, "b": `"z"`}, "CHANGED: imported artifact b", importWhole},
	} {
		t.Run(c.name, func(t *testing.T) {
			fails, after := run(c.outcome, c.readable)
			got := strings.Join(fails, "\n")
			if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
				t.Errorf("failures %q, want %q", got, c.want)
			}
			if after != c.after {
				t.Errorf("outcome %d after the check, want %d", after, c.after)
			}
		})
	}
}
