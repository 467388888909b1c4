package bench

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestSoakBounded is the soak at a small scale with a small retention: the
// server must end within the bounds SoakLimitsFor documents, and keep
// exactly the retained receipts, however many packs were served.
func TestSoakBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("soak: skipped with -short")
	}
	// The bounds are on the process's memory, so the soak runs in a
	// process of its own: what the package's other tests left in this one
	// (their servers' models and memos) is not the soak's.
	if os.Getenv("LOCI_SOAK_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestSoakBounded$", "-test.v")
		cmd.Env = append(os.Environ(), "LOCI_SOAK_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the soak's own process: %v\n%s", err, out)
		}
		t.Logf("the soak's own process:\n%s", out)
		return
	}
	cfg := SoakConfig{Packs: 1200, Jobs: 1500, Batch: 50, Spans: 2000, Seed: 3, Every: time.Second,
		ReceiptsPerWorkspace: 200, MaxFinishedJobs: 300, MaxUnfinishedJobs: 200, FlushThreshold: 2 << 20}
	res, err := Soak(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("end: %+v; peak rss %.0f MiB; limits %+v", res.End, res.Peak.RSSMiB, res.Limits)
	if !res.WithinLimits {
		t.Fatalf("outside the bounds: %v", res.Exceeded)
	}
	if res.ReceiptsKept != cfg.ReceiptsPerWorkspace {
		t.Fatalf("%d receipts kept, want the retention's %d", res.ReceiptsKept, cfg.ReceiptsPerWorkspace)
	}
	if res.End.JobsPending != 0 || res.End.JobsFinished > cfg.MaxFinishedJobs {
		t.Fatalf("jobs kept after expiry: %d finished, %d unfinished", res.End.JobsFinished, res.End.JobsPending)
	}
	if res.ReceiptsBytes <= 0 || res.ReceiptsBytes > 16<<10 {
		t.Fatalf("stored receipt of %d bytes", res.ReceiptsBytes)
	}
}
