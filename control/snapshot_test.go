package control

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// workload drives a store through every kind of change, chosen by a seeded
// generator, and returns the fake engine's log.
func workload(t testing.TB, seed uint64, steps int) (*Store, *fakeEngine) {
	t.Helper()
	s, e := newTestStore(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	tenants := []string{DefaultTenant}
	var jobs []Job
	var secrets []string
	pick := func(list []string) string { return list[rng.IntN(len(list))] }
	for i := range steps {
		switch rng.IntN(10) {
		case 0:
			tn, secret, err := s.Register(fmt.Sprintf("user%d@example.com", i), Plans()[rng.IntN(4)].Name)
			if err != nil {
				t.Fatal(err)
			}
			tenants = append(tenants, tn.ID)
			secrets = append(secrets, secret)
		case 1:
			if tn := pick(tenants); tn != DefaultTenant {
				if rng.IntN(2) == 0 {
					s.SetPlan(tn, Plans()[rng.IntN(4)].Name)
				} else if _, secret, err := s.CreateKey(tn); err == nil {
					secrets = append(secrets, secret)
				}
			}
		case 2:
			if len(secrets) > 0 {
				if tn, k, ok := s.Authenticate(pick(secrets)); ok && rng.IntN(3) == 0 {
					s.RevokeKey(tn.ID, k.ID) // may be ErrLastKey
				}
			}
		case 3, 4:
			s.Count(pick(tenants), time.Date(2025, time.Month(1+rng.IntN(3)), 10, 0, 0, 0, 0, time.UTC),
				UsageDelta{Endpoint: fmt.Sprint("GET /e", rng.IntN(3)), Artifacts: rng.Uint64N(3), Tokens: rng.Uint64N(1000), RateLimited: rng.IntN(5) == 0})
			if rng.IntN(3) == 0 {
				if err := s.FlushUsage(); err != nil {
					t.Fatal(err)
				}
			}
		case 5:
			ws := fmt.Sprint("ws-", rng.IntN(4))
			if rng.IntN(4) == 0 {
				tn := pick(tenants)
				s.EraseWorkspaceJobs(tn, ws, ^uint64(0)) // every job so far
				s.ReleaseWorkspace(tn, ws)
			} else {
				s.ClaimWorkspace(pick(tenants), ws)
			}
		case 6, 7:
			var in []JobInput
			for range 1 + rng.IntN(3) {
				in = append(in, JobInput{ArtifactID: uuid.New(), IdempotencyKey: fmt.Sprint("k", rng.IntN(5)), Input: []byte(fmt.Sprint("input ", i))})
			}
			created, err := s.CreateJobs(pick(tenants), fmt.Sprint("ws-", rng.IntN(4)), in)
			if err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, created...)
		case 8, 9:
			if len(jobs) > 0 {
				statuses := []JobStatus{StatusProcessing, StatusDone, StatusFailed}
				s.SetJobStatus(jobs[rng.IntN(len(jobs))].ID, statuses[rng.IntN(3)], "boom") // may be finished or erased
			}
			if rng.IntN(4) == 0 { // keep only the newest few finished jobs per tenant
				s.SetJobRetention(JobRetention{MaxFinished: 1 + rng.IntN(3)})
				if _, err := s.ExpireJobs(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := s.FlushUsage(); err != nil {
		t.Fatal(err)
	}
	return s, e
}

// TestSnapshotReplayEquivalence restores a snapshot taken after any prefix
// of the log, replays the whole log over it (records the snapshot covers
// included) and requires the same state, byte for byte, as applying
// everything.
func TestSnapshotReplayEquivalence(t *testing.T) {
	for seed := range uint64(4) {
		s, e := workload(t, seed, 400)
		recs := e.records()
		want := s.SnapshotControl()
		wantPayloads, _, _ := s.SnapshotPayloads()
		if full := replay(t, recs).SnapshotControl(); !bytes.Equal(full, want) {
			t.Fatalf("seed %d: replay from empty differs from the live state", seed)
		}
		rng := rand.New(rand.NewPCG(seed, 2))
		cuts := []int{0, len(recs)}
		for range 8 {
			cuts = append(cuts, rng.IntN(len(recs)+1))
		}
		for _, cut := range cuts {
			snap := replay(t, recs[:cut]).SnapshotControl()
			r := New(nil)
			if err := r.RestoreControl(snap); err != nil {
				t.Fatalf("seed %d cut %d: restore: %v", seed, cut, err)
			}
			if again := r.SnapshotControl(); !bytes.Equal(again, snap) {
				t.Fatalf("seed %d cut %d: snapshot does not round-trip", seed, cut)
			}
			// The payloads file may be written later than the snapshot.
			later := cut + rng.IntN(len(recs)-cut+1)
			payloads, _, _ := replay(t, recs[:later]).SnapshotPayloads()
			if err := r.RestorePayloads(payloads); err != nil {
				t.Fatalf("seed %d cut %d: restore payloads of %d: %v", seed, cut, later, err)
			}
			for _, rec := range recs {
				if err := r.ApplyControl(rec.kind, rec.seq, rec.payload); err != nil {
					t.Fatalf("seed %d cut %d: replay seq %d: %v", seed, cut, rec.seq, err)
				}
			}
			if got := r.SnapshotControl(); !bytes.Equal(got, want) {
				t.Fatalf("seed %d cut %d: snapshot + replay differs from applying everything", seed, cut)
			}
			if got, _, _ := r.SnapshotPayloads(); !bytes.Equal(got, wantPayloads) {
				t.Fatalf("seed %d cut %d (payloads of %d): inputs after restore + replay differ from applying everything", seed, cut, later)
			}
		}
	}
}

// TestSnapshotDeterministic checks that two stores built by the same records
// in different map layouts encode equally, and that the encoding is stable.
func TestSnapshotDeterministic(t *testing.T) {
	s, e := workload(t, 7, 300)
	a := s.SnapshotControl()
	for range 5 {
		if b := replay(t, e.records()).SnapshotControl(); !bytes.Equal(a, b) {
			t.Fatal("equal states encode differently")
		}
	}
}

func TestRestoreReplacesState(t *testing.T) {
	s, _ := workload(t, 3, 200)
	empty := New(nil).SnapshotControl()
	if err := s.RestoreControl(empty); err != nil {
		t.Fatal(err)
	}
	if got := s.SnapshotControl(); !bytes.Equal(got, empty) {
		t.Fatal("restore of an empty snapshot left state behind")
	}
	if len(s.Unfinished()) != 0 {
		t.Fatal("jobs left after restoring an empty snapshot")
	}
}

func TestApplyIgnoresCoveredSeqs(t *testing.T) {
	s, e := newTestStore(t)
	tn, _ := mustRegister(t, s, "ann@example.com", "free")
	rec := e.records()[0]
	// The same record again at its own seq (or lower) is covered: ignored.
	if err := s.ApplyControl(rec.kind, rec.seq, rec.payload); err != nil {
		t.Fatalf("covered record: %v", err)
	}
	if err := s.ApplyControl(kindTenant, rec.seq, []byte("garbage")); err != nil {
		t.Fatalf("covered garbage: %v", err)
	}
	// At a new seq it contradicts the state.
	before := s.SnapshotControl()
	if err := s.ApplyControl(rec.kind, rec.seq+10, rec.payload); err == nil {
		t.Fatal("second creation of a tenant applied")
	}
	if !bytes.Equal(before, s.SnapshotControl()) {
		t.Fatal("refused record changed the state")
	}
	if _, ok := s.Tenant(tn.ID); !ok {
		t.Fatal("tenant lost")
	}
}

func TestApplyMalformed(t *testing.T) {
	tid := uuid.NewString()
	key := keyState{id: uuid.New(), tenantID: tid, prefix: "lk_abcde", created: 1}
	good := encodeTenantCreate(tenantState{id: tid, email: "a@b.c", plan: "free", created: 1}, key)
	tests := []struct {
		name    string
		kind    uint8
		payload []byte
	}{
		{"unknown kind", 5, good},
		{"kind 15", 15, good},
		{"kind 200", 200, good},
		{"empty", kindTenant, nil},
		{"version only", kindTenant, []byte{formatVersion}},
		{"bad version", kindTenant, append([]byte{2}, good[1:]...)},
		{"unknown op", kindTenant, append([]byte{formatVersion, 9}, good[2:]...)},
		{"trailing byte", kindTenant, append(append([]byte(nil), good...), 0)},
		{"truncated", kindTenant, good[:len(good)-1]},
		{"tenant id not a uuid", kindTenant, encodeTenantCreate(tenantState{id: "default", email: "a@b.c", plan: "free"}, key)},
		{"unknown plan", kindTenant, encodeTenantCreate(tenantState{id: tid, email: "a@b.c", plan: "gold"}, key)},
		{"bad key prefix", kindTenant, encodeTenantCreate(tenantState{id: tid, email: "a@b.c", plan: "free"}, keyState{id: uuid.New(), prefix: "xx"})},
		{"plan of unknown tenant", kindTenant, encodePlan(uuid.NewString(), "pro")},
		{"key of unknown tenant", kindAPIKey, encodeKeyCreate(keyState{id: uuid.New(), tenantID: uuid.NewString(), prefix: "lk_abcde"})},
		{"revoke of unknown key", kindAPIKey, encodeRevoke(tid, uuid.New())},
		{"bad period", kindUsage, encodeUsage(map[usageKey]*counts{{"t", "2025-13"}: {}}, nil)},
		{"empty usage tenant", kindUsage, encodeUsage(map[usageKey]*counts{{"", "2025-01"}: {}}, nil)},
		{"no jobs", kindJob, encodeJobsCreate(jobsCreateRec{tenantID: DefaultTenant, ws: "w"})},
		{"nil artifact", kindJob, encodeJobsCreate(jobsCreateRec{tenantID: DefaultTenant, ws: "w", jobs: []jobInRec{{id: uuid.New()}}})},
		{"jobs of unknown tenant", kindJob, encodeJobsCreate(jobsCreateRec{tenantID: "x", ws: "w", jobs: []jobInRec{{id: uuid.New(), artifact: uuid.New()}}})},
		{"status pending", kindJob, encodeStatus(statusRec{jobID: uuid.New(), status: StatusPending})},
		{"bad status", kindJob, encodeStatus(statusRec{jobID: uuid.New(), status: "weird"})},
		{"error on done", kindJob, encodeStatus(statusRec{jobID: uuid.New(), status: StatusDone, errMsg: "x"})},
		{"empty workspace", kindWorkspace, encodeWorkspace(false, DefaultTenant, "")},
		{"workspace of unknown tenant", kindWorkspace, encodeWorkspace(false, "nobody", "w")},
	}
	for _, tt := range tests {
		s := New(nil)
		before := s.SnapshotControl()
		if err := s.ApplyControl(tt.kind, 1, tt.payload); err == nil {
			t.Errorf("%s: applied", tt.name)
		}
		if !bytes.Equal(before, s.SnapshotControl()) {
			t.Errorf("%s: refused record changed the state", tt.name)
		}
	}
	if err := New(nil).ApplyControl(kindTenant, 1, good); err != nil {
		t.Fatalf("the well-formed record is refused: %v", err)
	}
}

func TestRestoreMalformed(t *testing.T) {
	s, _ := workload(t, 1, 100)
	good := s.SnapshotControl()
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"bad version", append([]byte{9}, good[1:]...)},
		{"trailing", append(append([]byte(nil), good...), 0)},
		{"truncated", good[:len(good)-1]},
		{"huge count", []byte{formatVersion, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}},
	}
	for _, tt := range tests {
		if err := s.RestoreControl(tt.b); err == nil {
			t.Errorf("%s: restored", tt.name)
		}
		if !bytes.Equal(s.SnapshotControl(), good) {
			t.Errorf("%s: failed restore changed the state", tt.name)
		}
	}
}

// TestCorruptionNeverPanics feeds every truncation and every single-bit flip
// of a snapshot and of each record kind to the decoders. Whatever they
// accept must leave a usable store.
func TestCorruptionNeverPanics(t *testing.T) {
	small, _ := workload(t, 11, 40) // every flip of a larger snapshot takes long
	mutations(small.SnapshotControl(), func(b []byte) { checkRestore(t, b) })

	s, e := workload(t, 11, 120)
	snap := s.SnapshotControl()

	seen := map[[2]byte]bool{} // one record of every (kind, op)
	for _, rec := range e.records() {
		k := [2]byte{rec.kind, rec.payload[1]}
		if seen[k] {
			continue
		}
		seen[k] = true
		base := restored(t, snap)
		mutations(rec.payload, func(b []byte) {
			if checkApply(t, base, rec.kind, b) {
				base = restored(t, snap) // changed: start the next one afresh
			}
		})
	}
	if len(seen) < 9 {
		t.Fatalf("the workload produced only %d of the record ops", len(seen))
	}
}

// mutations calls f with every prefix of b and every single-bit flip of b.
func mutations(b []byte, f func([]byte)) {
	for n := range len(b) {
		f(append([]byte(nil), b[:n]...))
	}
	for i := range len(b) * 8 {
		m := append([]byte(nil), b...)
		m[i/8] ^= 1 << (i % 8)
		f(m)
	}
}

func checkRestore(t testing.TB, b []byte) {
	t.Helper()
	r := New(nil)
	if err := r.RestoreControl(b); err != nil {
		return
	}
	r.SnapshotControl()
	r.Unfinished()
}

func restored(t testing.TB, snap []byte) *Store {
	t.Helper()
	s := New(nil)
	if err := s.RestoreControl(snap); err != nil {
		t.Fatal(err)
	}
	return s
}

// checkApply applies b over a restored state, so that references in the
// record resolve and more of apply is reached. It reports whether b was
// applied.
func checkApply(t testing.TB, s *Store, kind uint8, b []byte) bool {
	t.Helper()
	if err := s.ApplyControl(kind, 1<<40, b); err != nil {
		return false
	}
	s.SnapshotControl()
	s.Unfinished()
	return true
}

func FuzzRestoreControl(f *testing.F) {
	s, _ := workload(f, 5, 30)
	f.Add(s.SnapshotControl())
	f.Add(New(nil).SnapshotControl())
	f.Fuzz(func(t *testing.T, b []byte) {
		r := New(nil)
		if err := r.RestoreControl(b); err != nil {
			return
		}
		// What is accepted encodes again and restores to the same state.
		again := r.SnapshotControl()
		r2 := New(nil)
		if err := r2.RestoreControl(again); err != nil {
			t.Fatalf("re-encoded snapshot refused: %v", err)
		}
		if !bytes.Equal(r2.SnapshotControl(), again) {
			t.Fatal("re-encoded snapshot is not stable")
		}
	})
}

func FuzzApplyControl(f *testing.F) {
	_, e := workload(f, 5, 150)
	for _, rec := range e.records() {
		f.Add(rec.kind, rec.payload)
	}
	f.Fuzz(func(t *testing.T, kind uint8, b []byte) {
		s := New(nil)
		before := s.SnapshotControl()
		if err := s.ApplyControl(kind, 1, b); err != nil {
			if !bytes.Equal(before, s.SnapshotControl()) {
				t.Fatal("refused record changed the state")
			}
			return
		}
		s.SnapshotControl()
	})
}

// TestFormatExamples checks the examples of docs/format/control.md.
func TestFormatExamples(t *testing.T) {
	doc, err := os.ReadFile("../docs/format/control.md")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		b    []byte
	}{
		{"claim", encodeWorkspace(false, DefaultTenant, "ws-1")},
		{"empty snapshot", New(nil).SnapshotControl()},
	}
	for _, tt := range tests {
		hex := fmt.Sprintf("% x", tt.b)
		if !strings.Contains(string(doc), "\n"+hex+"\n") {
			t.Errorf("%s: %s is not in the format document", tt.name, hex)
		}
	}
	if err := New(nil).ApplyControl(kindWorkspace, 1, tests[0].b); err != nil {
		t.Fatal(err)
	}
}
