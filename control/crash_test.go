package control

import (
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/internal/crashtest"
)

const controlCrashEnv = "LOCI_CONTROL_CRASH_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(controlCrashEnv); dir != "" {
		controlCrashChild(dir, os.Getenv("LOCI_CONTROL_CRASH_ROUND"))
		return
	}
	os.Exit(m.Run())
}

// controlCrashChild changes service state until killed, printing a line
// after each change is acknowledged (the call returned): tenants with
// their keys, counted-and-flushed usage, jobs and their final states. Tiny
// flush thresholds make the engine write CONTROL snapshots constantly.
func controlCrashChild(dir, round string) {
	s := New(time.Now)
	db, err := engine.Open(dir, engine.Options{FlushThreshold: 8 << 10, WALFileSize: 16 << 10, NoEmbedder: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Control: s})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	s.Attach(db.AppendControl)
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		os.Stdout.WriteString(fmt.Sprintf(format, args...) + "\n")
		mu.Unlock()
	}
	fail := func(err error) {
		say("error %v", err)
		os.Exit(3)
	}
	say("ready")
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				switch w {
				case 0: // tenants and their first keys
					t, key, err := s.Register(fmt.Sprintf("r%s-%d@example.com", round, i), "pro")
					if err != nil {
						fail(err)
					}
					say("tenant %s %s", t.ID, key)
				case 1: // usage of the built-in tenant, acknowledged by FlushUsage
					s.Count(DefaultTenant, time.Now(), UsageDelta{Endpoint: "POST /v1/ingest", Artifacts: 1})
					if err := s.FlushUsage(); err != nil {
						fail(err)
					}
					say("usage")
				case 2: // jobs created, then finished
					jobs, err := s.CreateJobs(DefaultTenant, "ws", []JobInput{{ArtifactID: uuid.New(), Input: []byte("input")}})
					if err != nil {
						fail(err)
					}
					say("job %s", jobs[0].ID)
					if i%2 == 0 {
						if err := s.SetJobStatus(jobs[0].ID, StatusDone, ""); err != nil {
							fail(err)
						}
						say("done %s", jobs[0].ID)
					}
				case 3: // workspaces claimed
					if err := s.ClaimWorkspace(DefaultTenant, fmt.Sprintf("r%s-ws-%d", round, i)); err != nil {
						fail(err)
					}
					say("ws r%s-ws-%d", round, i)
				}
			}
		}(w)
	}
	wg.Wait()
}

// TestControlCrashRecovery SIGKILLs a child changing service state at
// random points and checks, after each, that everything acknowledged is
// there: tenants authenticate with their keys, usage counts at least the
// acknowledged flushes (at most one more: a flush can land before its ack
// is printed), jobs exist with their acknowledged state, workspaces stay
// claimed.
func TestControlCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test starts child processes")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(20261121, 7))
	keys := map[string]string{} // tenant id -> key
	jobs := map[string]JobStatus{}
	var workspaces []string
	usage := uint64(0)
	for round := 0; round < 8; round++ {
		record := func(l string) {
			f := strings.Fields(l)
			switch f[0] {
			case "tenant":
				keys[f[1]] = f[2]
			case "usage":
				usage++
			case "job":
				if _, ok := jobs[f[1]]; !ok {
					jobs[f[1]] = StatusPending
				}
			case "done":
				jobs[f[1]] = StatusDone
			case "ws":
				workspaces = append(workspaces, f[1])
			default:
				t.Fatalf("round %d: child said %q", round, l)
			}
		}
		crashtest.Round(t, []string{controlCrashEnv + "=" + dir, "LOCI_CONTROL_CRASH_ROUND=" + strconv.Itoa(round)},
			time.Duration(50+rng.IntN(250))*time.Millisecond, record)

		s := New(time.Now)
		db := openEngine(t, dir, s)
		for id, key := range keys {
			if tn, _, ok := s.Authenticate(key); !ok || tn.ID != id {
				t.Fatalf("round %d: acknowledged tenant %s does not authenticate", round, id)
			}
		}
		got := s.Usage(DefaultTenant, Period(time.Now())).ArtifactsIngested
		if got < usage || got > usage+1 {
			t.Fatalf("round %d: usage %d after %d acknowledged flushes", round, got, usage)
		}
		usage = got // a flush that landed unacknowledged counts from now on
		for id, st := range jobs {
			j, ok := s.Job(DefaultTenant, id)
			if !ok || st == StatusDone && j.Status != StatusDone {
				t.Fatalf("round %d: acknowledged job %s: %+v (found %v), want %s", round, id, j, ok, st)
			}
		}
		owned := map[string]bool{}
		for _, ws := range s.Workspaces(DefaultTenant) {
			owned[ws] = true
		}
		for _, ws := range workspaces {
			if !owned[ws] {
				t.Fatalf("round %d: acknowledged workspace %s not owned", round, ws)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if len(keys) == 0 || usage == 0 || len(jobs) == 0 || len(workspaces) == 0 {
		t.Fatalf("nothing acknowledged in some kind: %d tenants, %d usage, %d jobs, %d workspaces", len(keys), usage, len(jobs), len(workspaces))
	}
	rep, err := engine.Verify(dir)
	if err != nil || len(rep.Faults) != 0 {
		t.Fatalf("verify: %v %+v", err, rep)
	}
	t.Logf("8 kill points: %d tenants, %d usage flushes, %d jobs, %d workspaces, control snapshot %d bytes", len(keys), usage, len(jobs), len(workspaces), rep.ControlBytes)
}
