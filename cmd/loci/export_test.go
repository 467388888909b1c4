package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-memory/loci/internal/proctest"
)

// A workspace exported from one data directory and imported into a fresh
// one gives byte-identical context packs (evidence, order, pack hash and
// receipt id) for a set of requests, feedback included; the export has the
// fields a re-ingest needs.
func TestExportImportIdenticalPacks(t *testing.T) {
	bin := proctest.Loci(t)
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	p := startServeWith(t, bin, src, serveOptions{args: []string{"--embedder", "glove"}})
	url := "http://" + p.addr
	topics := []string{"the deploy window is Tuesday 14:00 UTC", "the budget for Q3 is four thousand dollars",
		"Alice owns the billing service", "the incident review found a missing index", "Bob prefers tea over coffee",
		"the release train leaves every Friday", "the database migration needs a maintenance window",
		"customer Acme asked for an invoice copy", "the on-call rotation changes on Monday"}
	var items []string
	for i := 0; i < 36; i++ {
		extra := ""
		switch i % 4 {
		case 1:
			extra = fmt.Sprintf(`,"session_id":"s%d","thread_id":"t%d","metadata":{"team":"t%d","src":"x"}`, i%3, i%5, i%2)
		case 2:
			extra = fmt.Sprintf(`,"idempotency_key":"k%d","permissions":{"visibility":"restricted","allowed_actors":["a","b"],"rbac_tags":["eng"]}`, i)
		case 3:
			extra = `,"permissions":{"visibility":"private","denied_actors":["eve"]}`
		}
		items = append(items, fmt.Sprintf(`{"artifact_type":"note","timestamp":"2026-03-%02dT10:00:00Z","raw_payload":{"content":"note %d: %s <b>&</b>"}%s}`,
			1+i%28, i, topics[i%len(topics)], extra))
	}
	// Another workspace in between, so sequence numbers differ from a
	// fresh directory's.
	if code, body := postJSON(t, url+"/v1/ingest", `{"workspace_id":"other","actor_id":"a","artifact_type":"note","raw_payload":"unrelated"}`); code != 201 {
		t.Fatalf("ingest: %d %s", code, body)
	}
	code, body := postJSON(t, url+"/v2/ingest", `{"workspace_id":"w","actor_id":"a","wait_for_embedding":true,"artifacts":[`+strings.Join(items, ",")+`]}`)
	if code != 201 {
		t.Fatalf("ingest: %d %s", code, body)
	}
	var ing struct {
		Ingested []struct {
			ArtifactID string   `json:"artifact_id"`
			SpanIDs    []string `json:"span_ids"`
		} `json:"ingested"`
	}
	json.Unmarshal(body, &ing)
	for i, fb := range []string{
		`{"workspace_id":"w","actor_id":"a","action":"pin","artifact_id":"%s"}`,
		`{"workspace_id":"w","actor_id":"a","action":"mark_wrong","artifact_id":"%s"}`,
		`{"workspace_id":"w","actor_id":"b","action":"private","artifact_id":"%s"}`,
		`{"workspace_id":"w","actor_id":"a","action":"outdated","artifact_id":"%s","reason":"moved"}`,
	} {
		if code, body := postJSON(t, url+"/v1/feedback", fmt.Sprintf(fb, ing.Ingested[i*9].ArtifactID)); code != 200 && code != 201 {
			t.Fatalf("feedback: %d %s", code, body)
		}
	}
	requests := []string{
		`{"workspace_id":"w","query":"when is the deploy window?","max_tokens":400}`,
		`{"workspace_id":"w","query":"who owns billing","max_tokens":200,"actor_id":"b"}`,
		`{"workspace_id":"w","query":"budget","max_tokens":1000,"actor_id":"eve"}`,
		`{"workspace_id":"w","query":"maintenance window for the migration","max_tokens":300,"actor_id":"a"}`,
		`{"workspace_id":"w","query":"tea or coffee","max_tokens":150}`,
		`{"workspace_id":"w","query":"when is the deploy window?","max_tokens":400,"metadata":{"team":"t1"}}`,
	}
	packs := func(addr string) []string {
		var out []string
		for _, r := range requests {
			code, body := postJSON(t, "http://"+addr+"/v1/context-pack", r)
			if code != 200 {
				t.Fatalf("pack: %d %s", code, body)
			}
			out = append(out, string(body))
		}
		return out
	}
	want := packs(p.addr)
	p.stop(t)

	file := filepath.Join(dir, "w.jsonl")
	if msg, err := runLoci(bin, "export", "--data", src, "--workspace", "w", "--out", file); err != nil {
		t.Fatalf("export: %v\n%s", err, msg)
	}
	checkExportFile(t, file, 36, 4)
	if msg, err := runLoci(bin, "import", "--data", dst, "--in", file); err != nil {
		t.Fatalf("import: %v\n%s", err, msg)
	}
	if msg, err := runLoci(bin, "import", "--data", dst, "--in", file); err == nil || !strings.Contains(msg, "already holds data") {
		t.Fatalf("second import into the same workspace: %v\n%s", err, msg)
	}
	if msg, err := runLoci(bin, "verify", "--data", dst); err != nil {
		t.Fatalf("verify: %v\n%s", err, msg)
	}
	q := startServeWith(t, bin, dst, serveOptions{args: []string{"--embedder", "glove"}})
	got := packs(q.addr)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d: the imported workspace packs differently\nexported: %s\nimported: %s", i, want[i], got[i])
		}
	}
	// Later writes still move the version forwards: a new pack differs.
	if code, body := postJSON(t, "http://"+q.addr+"/v1/ingest", `{"workspace_id":"w","actor_id":"a","artifact_type":"note","raw_payload":"the deploy window moved to Wednesday"}`); code != 201 {
		t.Fatalf("ingest after import: %d %s", code, body)
	}
	if after := packs(q.addr); after[0] == want[0] {
		t.Fatal("a pack after a new ingest has the same body (and receipt) as before it")
	}
	q.stop(t)

	// A truncated export is refused, and the target is left without the workspace.
	b, _ := os.ReadFile(file)
	lines := strings.SplitAfter(string(b), "\n")
	cut := filepath.Join(dir, "cut.jsonl")
	os.WriteFile(cut, []byte(strings.Join(lines[:len(lines)-3], "")), 0o644)
	if msg, err := runLoci(bin, "import", "--data", filepath.Join(dir, "third"), "--in", cut); err == nil || !strings.Contains(msg, "incomplete") {
		t.Fatalf("import of a truncated export: %v\n%s", err, msg)
	}
}

// checkExportFile checks the export's shape: a header, the artifacts with
// every field a re-ingest needs, the feedback, an end line with the counts.
func checkExportFile(t *testing.T, file string, artifacts, feedback int) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	kinds := map[string]int{}
	var first, last map[string]any
	sawFull := false
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if first == nil {
			first = m
		}
		last = m
		kinds[m["kind"].(string)]++
		if m["kind"] == "artifact" && m["idempotency_key"] != nil && m["permissions"] != nil {
			for _, k := range []string{"artifact_id", "artifact_type", "actor_id", "timestamp_us", "ingested_at_us", "content_hash", "raw_payload_json", "span_ids"} {
				if m[k] == nil {
					t.Fatalf("artifact line without %s: %s", k, sc.Text())
				}
			}
			sawFull = true
		}
	}
	if first["kind"] != "header" || first["format"] != "loci-export" || first["version"] != 1.0 || first["data_version"] == nil {
		t.Fatalf("header: %v", first)
	}
	if last["kind"] != "end" || last["artifacts"] != float64(artifacts) || last["feedback"] != float64(feedback) {
		t.Fatalf("end: %v", last)
	}
	if kinds["artifact"] != artifacts || kinds["feedback"] != feedback || !sawFull {
		t.Fatalf("kinds %v, an artifact with every field: %v", kinds, sawFull)
	}
}
