package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/loci-memory/loci/internal/proctest"
)

// TestTortureCommand runs `loci torture` for two rounds against the binary
// itself: the subcommand wires its flags to package torture and prints the
// summary as JSON. (Package torture's tests run longer tortures.)
func TestTortureCommand(t *testing.T) {
	bin := proctest.Loci(t)
	cmd := exec.Command(bin, "torture", "--rounds", "2", "--seed", "7", "--events", "random,manifest", "--max-load", "1s",
		"--data", t.TempDir(), "--json", "--quiet")
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("loci torture: %v\n%s\n%s", err, out, stderr)
	}
	var sum struct {
		Seed       int64          `json:"seed"`
		Rounds     int            `json:"rounds"`
		KillPoints map[string]int `json:"kill_points"`
		Failures   []string       `json:"failures"`
		Checked    struct {
			Artifacts int `json:"artifacts"`
		} `json:"checked"`
	}
	if err := json.Unmarshal(out, &sum); err != nil {
		t.Fatalf("summary is not JSON: %v\n%s", err, out)
	}
	if sum.Seed != 7 || sum.Rounds != 2 || sum.KillPoints["random"]+sum.KillPoints["manifest"] != 2 || len(sum.Failures) != 0 || sum.Checked.Artifacts == 0 {
		t.Errorf("unexpected summary: %s", out)
	}

	// A bad event name is refused before anything runs.
	out, err = exec.Command(bin, "torture", "--events", "segment,bogus", "--data", t.TempDir()).CombinedOutput()
	if err == nil || !strings.Contains(string(out), `unknown event "bogus"`) {
		t.Errorf("--events bogus: err %v, output %s", err, out)
	}
}
