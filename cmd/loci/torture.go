package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/loci-memory/loci/torture"
)

// runTorture runs the crash-and-check harness (package torture) against this
// binary's own `loci serve`, or the one named by --bin.
func runTorture(args []string) error {
	fs := flag.NewFlagSet("torture", flag.ContinueOnError)
	rounds := fs.Int("rounds", 30, "kill points (each: load, kill -9, verify, restart, check)")
	seed := fs.Int64("seed", time.Now().UnixNano(), "seed for kill points, delays and load (printed; reuse it to replay a run's choices)")
	events := fs.String("events", strings.Join(torture.AllEvents, ","), "kill point kinds to draw from: "+strings.Join(torture.AllEvents, ", "))
	data := fs.String("data", "", "fresh data directory (default: a new temporary directory, removed after a clean run)")
	bin := fs.String("bin", "", "loci binary to run as the server (default: this one)")
	workers := fs.Int("workers", 3, "concurrent load clients")
	flushMB := fs.Int("flush-threshold-mb", 1, "the server's --flush-threshold-mb (small: frequent segment, MANIFEST, CONTROL and WAL events)")
	embedderFlag := fs.String("embedder", "", "the server's --embedder (default: its default, "+embedderMiniLM+")")
	maxLoad := fs.Duration("max-load", 4*time.Second, "longest load of one round before its kill")
	sample := fs.Int("sample", 300, "artifacts from earlier rounds read back after each restart, besides all new ones (the last round reads back all)")
	pause := fs.Duration("pause", 0, "each load client waits a random time up to this between requests (long runs: bounds the data accumulated)")
	artErase := fs.Bool("artifact-erasure", true, "also erase single artifacts and run a retention workspace under load, and check them")
	imports := fs.Bool("imports", false, "also run loci import between rounds (killed with SIGKILL half of the time) and into the served directory (refused), and check the imported workspaces")
	flaky := fs.Bool("flaky-embedder", false, "embed with an OpenAI-compatible provider run by the harness that answers 500 or too late to a third of its requests during the load; after the last round every acknowledged artifact must become embedded")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	quiet := fs.Bool("quiet", false, "no progress line per round")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: loci torture [flags]\n\nRuns loci serve as a child under mixed load, kills it with SIGKILL at random moments or right after\nfile events in its data directory, and checks after each restart that everything acknowledged survived.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if done, err := parseFlags(fs, args); done {
		return err
	}
	cfg := torture.Config{Rounds: *rounds, Seed: *seed, Bin: *bin, DataDir: *data, Workers: *workers, FlushMB: *flushMB, Embedder: *embedderFlag, FlakyEmbedder: *flaky,
		MaxLoad: *maxLoad, Sample: *sample, Pause: *pause, ArtifactErasure: *artErase, Imports: *imports, Log: os.Stderr}
	if *quiet {
		cfg.Log = nil
	}
	for _, e := range strings.Split(*events, ",") {
		if e = strings.TrimSpace(e); e != "" {
			cfg.Events = append(cfg.Events, e)
		}
	}
	if cfg.Bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("--bin: cannot find this binary: %w", err)
		}
		cfg.Bin = exe
	}
	temp := cfg.DataDir == ""
	if temp {
		dir, err := os.MkdirTemp("", "loci-torture-")
		if err != nil {
			return err
		}
		cfg.DataDir = dir
	}
	fmt.Fprintf(os.Stderr, "loci torture: seed %d, %d rounds, data %s\n", cfg.Seed, cfg.Rounds, cfg.DataDir)
	sum, err := torture.Run(cfg)
	if sum != nil {
		if *asJSON {
			enc := json.NewEncoder(os.Stdout)
			enc.SetIndent("", "  ")
			enc.Encode(sum)
		} else {
			printTortureSummary(sum)
		}
	}
	if err != nil {
		if sum == nil { // nothing ran
			if temp {
				os.RemoveAll(cfg.DataDir)
			}
			return err
		}
		for _, f := range sum.Failures {
			fmt.Fprintln(os.Stderr, "FAIL:", f)
		}
		fmt.Fprintf(os.Stderr, "loci torture: data directory kept for inspection: %s\n", cfg.DataDir)
		return err
	}
	if temp {
		os.RemoveAll(cfg.DataDir)
	}
	return nil
}

func printTortureSummary(s *torture.Summary) {
	fmt.Printf("torture: seed %d, %d rounds in %.1f s\n  kill points:", s.Seed, s.Rounds, s.Seconds)
	for _, k := range s.SortedKinds() {
		fmt.Printf(" %s %d", k, s.KillPoints[k])
	}
	fmt.Printf(" (awaited events that did not come: %d)\n", s.EventTimeouts)
	a, c := s.Acknowledged, s.Checked
	fmt.Printf("  acknowledged: %d artifacts (%d v2 batches), %d idempotent retries, %d feedback, %d packs, %d async jobs, %d keys created, %d revoked, %d erasures, %d artifact erasures\n",
		a.Artifacts, a.Batches, a.IdempotentRetries, a.Feedback, a.Packs, a.AsyncJobs, a.KeysCreated, a.KeysRevoked, a.Erasures, a.ArtifactErasures)
	fmt.Printf("  retention workspace: %d artifacts, %d settings acknowledged, %d far-future timestamps refused, %d ingests before the cutoff refused\n",
		a.RetainedArtifacts, a.RetentionChanges, a.FutureRefused, a.RetentionRefused)
	fmt.Printf("  imports: %d finished, %d killed, %d refused while serving; %d checks of imported workspaces\n", a.Imports, a.ImportsKilled, a.ImportsRefused, s.Checked.Imports)
	fmt.Printf("  checked: %d artifact reads, %d idempotency keys, %d key checks, %d erased workspaces, %d jobs, %d frozen packs, %d verify runs\n",
		c.Artifacts, c.IdempotencyKeys, c.Keys, c.ErasedWorkspaces, c.Jobs, c.Packs, c.Verifies)
	fmt.Printf("  checked erasures: %d erased-artifact reads (%d packs), %d retention checks (%d artifact reads, %d of them erased by retention)\n",
		c.ErasedArtifacts, c.ErasedPacks, c.Retention, c.RetainedArtifacts, c.RetainedGone)
	fmt.Printf("  ingests refused for back-pressure (503, not acknowledged): %d\n", a.Backpressure)
	if p := s.FlakyEmbedder; p != nil {
		fmt.Printf("  flaky embedder: %d requests answered 500, %d too late, %d answered; %d artifacts checked embedded\n", p.Failed, p.Slow, p.Answered, p.Embedded)
	}
	if len(s.Failures) == 0 {
		fmt.Println("  ok: nothing acknowledged was lost")
	} else {
		fmt.Printf("  %d failures\n", s.FailureCount)
	}
}
