package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/export"
	"github.com/loci-memory/loci/internal/proctest"
)

// importFixtureArtifacts is more than one import batch (export.ImportBatchItems),
// so a file refused at its end was imported in part before imports were
// atomic.
const importFixtureArtifacts = export.ImportBatchItems + 76

// fillImportFixture writes n artifacts (and feedback on a few) of tenant
// into workspace ws of the data directory dir, with the engine, and a
// workspace "other" beside it.
func fillImportFixture(t *testing.T, dir, tenant, ws string, n int) {
	t.Helper()
	db, err := engine.Open(dir, engine.Options{NoEmbedder: true, DisableBackground: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	base := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var ins []engine.IngestInput
	for i := 0; i < n; i++ {
		ins = append(ins, engine.IngestInput{Workspace: ws, ActorID: "alice", Type: "note",
			Payload:   []byte(fmt.Sprintf(`{"content":"note %d of %s: the kingfisher deploy moved to slot %d"}`, i, tenant, i%17)),
			Timestamp: base.Add(time.Duration(i) * time.Minute)})
	}
	res, err := db.IngestBatch(tenant, ins)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{3, n - 2} {
		if _, err := db.Feedback(tenant, engine.FeedbackInput{Workspace: ws, ActorID: "alice", Action: "pin", ArtifactID: res[i].ArtifactID}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Ingest(tenant, engine.IngestInput{Workspace: "other", ActorID: "bob", Type: "note", Payload: []byte(`"unrelated"`)}); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
}

// exportBody exports tenant's workspace ws of data with the real command
// and returns it without the header's export time, or "" when the
// workspace holds no data.
func exportBody(t *testing.T, bin, data, tenant, ws string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "x.jsonl")
	msg, err := runLoci(bin, "export", "--data", data, "--tenant", tenant, "--workspace", ws, "--out", file)
	if err != nil {
		if strings.Contains(msg, "has no data") {
			return ""
		}
		t.Fatalf("export: %v\n%s", err, msg)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitN(string(b), "\n", 2)
	var h map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &h); err != nil {
		t.Fatal(err)
	}
	delete(h, "exported_at")
	hb, _ := json.Marshal(h)
	return string(hb) + "\n" + lines[1]
}

// editLines returns the export's lines with edit applied to the parsed
// line i (negative: from the end).
func editLines(t *testing.T, lines []string, i int, edit func(m map[string]any)) []string {
	t.Helper()
	out := append([]string(nil), lines...)
	if i < 0 {
		i += len(out)
	}
	var m map[string]any
	d := json.NewDecoder(strings.NewReader(out[i]))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, _ := json.Marshal(m)
	out[i] = string(b)
	return out
}

// lastOf returns the index of the last line of kind.
func lastOf(lines []string, kind string) int {
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], `"kind":"`+kind+`"`) {
			return i
		}
	}
	return -1
}

// TestImportBrokenInputsChangeNothing: each broken export, broken after
// more than one batch of good records, is refused by `loci import` with a
// message naming the problem, and the directory is unchanged: the exports
// of its workspaces are the same, the import's workspace holds nothing,
// no staging is left, and verify passes. Before, what came before the
// broken record stayed imported, a content-hash mismatch was imported,
// another tenant's copy of a tenant's artifacts shadowed them, and a data
// version of 2^64-1 was accepted.
func TestImportBrokenInputsChangeNothing(t *testing.T) {
	bin := proctest.Loci(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	fillImportFixture(t, data, "default", "w", importFixtureArtifacts)
	good := filepath.Join(dir, "good.jsonl")
	if msg, err := runLoci(bin, "export", "--data", data, "--workspace", "w", "--out", good); err != nil {
		t.Fatalf("export: %v\n%s", err, msg)
	}
	// The same workspace from another directory, with other ids: a good
	// import for this one.
	other := filepath.Join(dir, "other")
	fillImportFixture(t, other, "default", "w", importFixtureArtifacts)
	fresh := filepath.Join(dir, "fresh.jsonl")
	if msg, err := runLoci(bin, "export", "--data", other, "--workspace", "w", "--out", fresh); err != nil {
		t.Fatalf("export: %v\n%s", err, msg)
	}
	raw, _ := os.ReadFile(fresh)
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	lastArt, lastFb := lastOf(lines, "artifact"), lastOf(lines, "feedback")
	if lastArt < export.ImportBatchItems || lastFb < export.ImportBatchItems {
		t.Fatalf("fixture: last artifact line %d, feedback line %d: not past the first batch", lastArt, lastFb)
	}
	wantW, wantOther := exportBody(t, bin, data, "default", "w"), exportBody(t, bin, data, "default", "other")

	for _, c := range []struct {
		name  string
		lines []string
		raw   string   // instead of lines
		args  []string // besides --data and --in
		want  string
	}{
		{"truncated before the end line", lines[:len(lines)-1], "", nil, "without its end line"},
		{"truncated in a line", nil, string(raw[:len(raw)-len(lines[len(lines)-1])-20]), nil, "line"},
		{"wrong end counts", editLines(t, lines, -1, func(m map[string]any) { m["artifacts"] = importFixtureArtifacts + 1 }), "", nil,
			"end line counts do not match"},
		{"a line that is not JSON", append(append(append([]string(nil), lines[:lastArt]...), "{not json"), lines[lastArt:]...), "", nil,
			fmt.Sprintf("line %d", lastArt+1)},
		{"span count mismatch", editLines(t, lines, lastArt, func(m map[string]any) {
			m["span_ids"] = append(m["span_ids"].([]any), "3f1e7c6a-8a47-4a8e-9a52-4c1e2b7d9f00")
		}), "", nil, "the export names 2"},
		{"feedback on an unknown artifact", editLines(t, lines, lastFb, func(m map[string]any) {
			m["artifact_id"] = "3f1e7c6a-8a47-4a8e-9a52-4c1e2b7d9f00"
		}), "", nil, "is not in the workspace"},
		{"content hash mismatch", editLines(t, lines, lastArt, func(m map[string]any) {
			m["raw_payload_json"] = `{"content":"tampered"}`
		}), "", nil, "does not match its content hash"},
		{"a malformed content hash", editLines(t, lines, lastArt, func(m map[string]any) { m["content_hash"] = "c0ffee" }), "", nil,
			"content_hash is not 64 hex digits"},
		{"a far-future timestamp", editLines(t, lines, lastArt, func(m map[string]any) { m["timestamp_us"] = 32503680000000000 }), "", nil,
			"timestamp_us: 3000-01-01T00:00:00Z is more than 24 hours after"},
		{"an artifact twice", editLines(t, append(append(append([]string(nil), lines[:lastArt+1]...), lines[lastArt]), lines[lastArt+1:]...), -1,
			func(m map[string]any) { m["artifacts"] = importFixtureArtifacts + 1 }), "", nil, "appears twice in the import"},
		{"data after the end line", append(append([]string(nil), lines...), lines[1]), "", nil, "data after the end line"},
		{"data version 2^64-1", editLines(t, lines, 0, func(m map[string]any) { m["data_version"] = uint64(1<<64 - 1) }), "", nil,
			"data_version: 18446744073709551615 is not between 1 and"},
		{"this directory's own export, as another tenant", nil, string(mustRead(t, good)), []string{"--tenant", "b"},
			"artifact id " + firstIDOf(t, good) + " is already taken in this data directory (tenant \"default\", workspace \"w\")"},
		{"this directory's own export, as another workspace", nil, string(mustRead(t, good)), []string{"--workspace", "copy"},
			"is already taken in this data directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "in.jsonl")
			body := c.raw
			if c.lines != nil {
				body = strings.Join(c.lines, "\n") + "\n"
			}
			os.WriteFile(file, []byte(body), 0o644)
			args := append([]string{"import", "--data", data, "--in", file}, c.args...)
			if c.args == nil {
				args = append(args, "--workspace", "imp")
			}
			msg, err := runLoci(bin, args...)
			if err == nil || !strings.Contains(msg, c.want) || !strings.Contains(msg, "nothing was imported") {
				t.Fatalf("import: %v, want a refusal mentioning %q:\n%s", err, c.want, msg)
			}
			if got := exportBody(t, bin, data, "default", "w"); got != wantW {
				t.Fatal("the workspace w of the directory changed")
			}
			if got := exportBody(t, bin, data, "default", "other"); got != wantOther {
				t.Fatal("the workspace other of the directory changed")
			}
			for _, tw := range [][2]string{{"default", "imp"}, {"b", "w"}, {"default", "copy"}} {
				if got := exportBody(t, bin, data, tw[0], tw[1]); got != "" {
					t.Fatalf("the refused import left data in %s/%s", tw[0], tw[1])
				}
			}
			if _, err := os.Stat(filepath.Join(data, "import.staging")); !os.IsNotExist(err) {
				t.Fatalf("staging directory left: %v", err)
			}
			if msg, err := runLoci(bin, "verify", "--data", data); err != nil {
				t.Fatalf("verify: %v\n%s", err, msg)
			}
		})
	}
	// The good file imports whole, and the directory's own data is intact.
	if msg, err := runLoci(bin, "import", "--data", data, "--in", fresh, "--workspace", "imp"); err != nil {
		t.Fatalf("import: %v\n%s", err, msg)
	}
	if got := exportBody(t, bin, data, "default", "imp"); got == "" || strings.Count(got, `"kind":"artifact"`) != importFixtureArtifacts {
		t.Fatalf("the good import is not whole")
	}
	if exportBody(t, bin, data, "default", "w") != wantW {
		t.Fatal("the good import changed workspace w")
	}
	if msg, err := runLoci(bin, "verify", "--data", data); err != nil {
		t.Fatalf("verify: %v\n%s", err, msg)
	}

	// A file a user writes without content hashes and span ids imports as
	// the export it was cut from does: the same hashes and span ids.
	bare := append([]string(nil), lines...)
	for i, l := range bare {
		if strings.Contains(l, `"kind":"artifact"`) {
			bare = editLines(t, bare, i, func(m map[string]any) { delete(m, "content_hash"); delete(m, "span_ids") })
		}
	}
	bareFile := filepath.Join(dir, "bare.jsonl")
	os.WriteFile(bareFile, []byte(strings.Join(bare, "\n")+"\n"), 0o644)
	bareData := filepath.Join(dir, "bare-data")
	if msg, err := runLoci(bin, "import", "--data", bareData, "--in", bareFile, "--workspace", "imp"); err != nil {
		t.Fatalf("import of lines without content_hash and span_ids: %v\n%s", err, msg)
	}
	if exportBody(t, bin, bareData, "default", "imp") != exportBody(t, bin, data, "default", "imp") {
		t.Fatal("lines without content_hash and span_ids import otherwise than the export they were cut from")
	}
}

func mustRead(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func firstIDOf(t *testing.T, file string) string {
	t.Helper()
	lines := bytes.SplitN(mustRead(t, file), []byte("\n"), 3)
	var m struct {
		ID string `json:"artifact_id"`
	}
	json.Unmarshal(lines[1], &m)
	return m.ID
}

// TestImportKilled: `loci import` killed with SIGKILL at points spread over
// its run leaves a directory that verifies and serves, holding either
// nothing of the import or all of it, and its own data unchanged.
func TestImportKilled(t *testing.T) {
	bin := proctest.Loci(t)
	dir := t.TempDir()
	pristine := filepath.Join(dir, "pristine")
	fillImportFixture(t, pristine, "default", "w", 200)
	src := filepath.Join(dir, "src")
	fillImportFixture(t, src, "default", "w", 3*export.ImportBatchItems)
	file := filepath.Join(dir, "w.jsonl")
	if msg, err := runLoci(bin, "export", "--data", src, "--workspace", "w", "--out", file); err != nil {
		t.Fatalf("export: %v\n%s", err, msg)
	}
	wantImported := exportBody(t, bin, src, "default", "w")
	wantOwn := exportBody(t, bin, pristine, "default", "w")

	// How long an import runs, uninterrupted.
	full := filepath.Join(dir, "full")
	copyDir(t, pristine, full)
	start := time.Now()
	if msg, err := runLoci(bin, "import", "--data", full, "--in", file, "--workspace", "imp"); err != nil {
		t.Fatalf("import: %v\n%s", err, msg)
	}
	took := time.Since(start)
	const rounds = 8
	seen := map[bool]int{}
	for i := 0; i < rounds; i++ {
		data := filepath.Join(dir, fmt.Sprintf("round%d", i))
		copyDir(t, pristine, data)
		cmd := exec.Command(bin, "import", "--data", data, "--in", file, "--workspace", "imp")
		proctest.Start(t, cmd)
		// From early in the run to just past its end.
		time.Sleep(took * time.Duration(i+1) / rounds)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if msg, err := runLoci(bin, "verify", "--data", data); err != nil {
			t.Fatalf("round %d: verify after the kill: %v\n%s", i, err, msg)
		}
		if exportBody(t, bin, data, "default", "w") != wantOwn {
			t.Fatalf("round %d: the directory's own workspace changed", i)
		}
		got := exportBody(t, bin, data, "default", "imp")
		switch {
		case got == "":
			seen[false]++
		case strings.SplitN(got, "\n", 2)[1] == strings.SplitN(wantImported, "\n", 2)[1]:
			seen[true]++
		default:
			t.Fatalf("round %d: the killed import left part of the workspace: %d artifact lines of %d", i,
				strings.Count(got, `"kind":"artifact"`), 3*export.ImportBatchItems)
		}
		p := startServeWith(t, bin, data, serveOptions{args: []string{"--embedder", "none"}}) // it starts
		p.stop(t)
		if _, err := os.Stat(filepath.Join(data, "import.staging")); !os.IsNotExist(err) {
			t.Fatalf("round %d: the killed import's staging directory is still there after a start: %v", i, err)
		}
	}
	t.Logf("import runs %s; after %d kills the import was absent %d times and whole %d times", took.Round(time.Millisecond), rounds, seen[false], seen[true])
}

// copyDir copies a closed data directory.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
}
