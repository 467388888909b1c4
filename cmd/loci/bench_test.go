package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/loci-memory/loci/internal/proctest"
)

// TestHelpExitsZero checks that asking for help prints usage to stdout and
// exits 0, and that a missing or unknown name still exits 2.
func TestHelpExitsZero(t *testing.T) {
	bin := proctest.Loci(t)
	cases := []struct {
		args []string
		code int
		want string // in stdout (code 0) or stderr
	}{
		{[]string{"bench", "--help"}, 0, "usage: loci bench"},
		{[]string{"bench", "-h"}, 0, "usage: loci bench"},
		{[]string{"bench", "help"}, 0, "usage: loci bench"},
		{[]string{"eval", "--help"}, 0, "usage: loci eval"},
		{[]string{"eval", "-h"}, 0, "usage: loci eval"},
		{[]string{"bench", "pack", "--help"}, 0, "-concurrency"},
		{[]string{"bench", "restart", "-h"}, 0, "-restarts"},
		{[]string{"eval", "beir", "--help"}, 0, "-split"},
		{[]string{"eval", "locomo", "--help"}, 0, "-shape"},
		{[]string{"eval", "longmemeval", "--help"}, 0, "-limit"},
		{[]string{"verify", "--help"}, 0, "-data"},
		{[]string{"bench"}, 2, "usage: loci bench"},
		{[]string{"bench", "nosuch"}, 2, "unknown benchmark"},
		{[]string{"bench", "pack", "--nosuch"}, 2, "flag provided but not defined"},
		{[]string{"eval"}, 2, "usage: loci eval"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(bin, tc.args...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			out := stdout.String()
			if tc.code != 0 {
				out = stderr.String()
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("output lacks %q:\nstdout:\n%s\nstderr:\n%s", tc.want, stdout.String(), stderr.String())
			}
			if tc.code == 0 && stderr.Len() > 0 {
				t.Errorf("help wrote to stderr:\n%s", stderr.String())
			}
		})
	}
}

// TestBenchPrintsTable runs a small `loci bench restart`: a table by
// default, one JSON object with --json.
func TestBenchPrintsTable(t *testing.T) {
	bin := proctest.Loci(t)
	args := []string{"bench", "restart", "--artifacts", "200", "--restarts", "1", "--dir", t.TempDir()}
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		t.Fatalf("%v", err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if lines[0] != "loci bench restart" {
		t.Fatalf("first line %q, want the title; output:\n%s", lines[0], out)
	}
	want := map[string]string{"artifacts": "200", "head_artifacts_replayed": "200"}
	col := -1
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		at := strings.Index(l, f[1])
		if col >= 0 && at != col {
			t.Errorf("value column of %q at %d, not %d: not aligned\n%s", f[0], at, col, out)
		}
		col = at
		if v, ok := want[f[0]]; ok && f[1] != v {
			t.Errorf("%s = %s, want %s", f[0], f[1], v)
		}
		delete(want, f[0])
	}
	if len(want) > 0 {
		t.Errorf("rows missing: %v\n%s", want, out)
	}

	dir := t.TempDir()
	out, err = exec.Command(bin, "bench", "restart", "--artifacts", "200", "--restarts", "1", "--dir", dir, "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Artifacts int `json:"artifacts"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.Artifacts != 200 || bytes.Count(out, []byte("\n")) != 1 {
		t.Errorf("--json: %v, %+v, output:\n%s", err, res, out)
	}
}

// TestEvalNamesMissingData: an evaluation whose data set is not where
// --data points fails with a message naming the data set, its public source
// and the flag, not a bare "no such file"; the default path too (a clone
// has no ../shared/data).
func TestEvalNamesMissingData(t *testing.T) {
	bin := proctest.Loci(t)
	missing := t.TempDir() + "/nowhere"
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"eval", "beir", "--data", missing}, []string{"BEIR SciFact", "public.ukp.informatik.tu-darmstadt.de", "--data", missing}},
		{[]string{"eval", "locomo", "--data", missing + ".json"}, []string{"LoCoMo", "github.com/snap-research/locomo", "--data"}},
		{[]string{"eval", "longmemeval", "--data", missing + ".json"}, []string{"LongMemEval", "huggingface.co/datasets/xiaowu0162/longmemeval", "--data"}},
		{[]string{"bench", "search", "--data", missing}, []string{"benchmark corpus", "docs/data.md", "--data ''"}},
		{[]string{"bench", "pack", "--data", missing}, []string{"benchmark corpus", "docs/data.md", "--data ''"}},
	} {
		t.Run(tc.args[1], func(t *testing.T) {
			cmd := exec.Command(bin, tc.args...)
			cmd.Dir = t.TempDir() // the defaults' ../shared/data is not there either
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() == 0 {
				t.Fatalf("exit %v, want a failure; stderr:\n%s", err, stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			if strings.Contains(stderr.String(), "no such file") {
				t.Errorf("bare file error:\n%s", stderr.String())
			}
			// Without --data: the default, named the same way.
			cmd = exec.Command(bin, tc.args[:2]...)
			cmd.Dir = t.TempDir()
			out, _ := cmd.CombinedOutput()
			if !strings.Contains(string(out), tc.want[0]) || !strings.Contains(string(out), "--data") {
				t.Errorf("default path: %s", out)
			}
		})
	}
}

// TestBenchLogsAsTheServer: what the engines a benchmark opens log comes
// out in the server's format (LOG_FORMAT, LOG_LEVEL), not the log package's
// "2006/01/02 15:04:05 INFO ..." lines: with LOG_FORMAT=json every stderr
// line is a progress line or a JSON object, and the engine's recovery is
// one of them.
func TestBenchLogsAsTheServer(t *testing.T) {
	bin := proctest.Loci(t)
	cmd := exec.Command(bin, "bench", "restart", "--artifacts", "200", "--restarts", "1", "--dir", t.TempDir())
	cmd.Env = append(cmd.Environ(), "LOG_FORMAT=json", "LOG_LEVEL=info")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	recovered := false
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if strings.HasPrefix(line, "loci bench restart: ") {
			continue
		}
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Errorf("stderr line is not the server's JSON log: %q", line)
			continue
		}
		recovered = recovered || e["msg"] == "engine: recovered"
	}
	if !recovered {
		t.Errorf("no engine recovery line:\n%s", stderr.String())
	}
}
