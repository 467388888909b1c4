package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/export"
	"github.com/loci-memory/loci/internal/proctest"
)

// editVector returns the lines with edit applied to vector 0 of line i
// (negative: from the end), re-encoded as export.EncodeVector does.
func editVector(t *testing.T, lines []string, i int, edit func(v []float32) []float32) []string {
	t.Helper()
	return editLines(t, lines, i, func(m map[string]any) {
		vs := m["vectors"].([]any)
		v, err := export.DecodeVector(vs[0].(string))
		if err != nil {
			t.Fatal(err)
		}
		vs[0] = export.EncodeVector(edit(v))
	})
}

// TestImportVectorsRefusals: each bad file of vectors (`loci import
// --vectors`), bad in a record after the first import batch or in its
// header, is refused with a message naming the line and the problem, and
// the directory is unchanged. A file whose artifact lines lack content
// hashes and span ids gets them from `loci embed`, byte for byte as an
// export has them; a file cut in two and embedded part by part joins back
// into the same file; and the good file imports whole, as the same export
// imported with embedding does.
func TestImportVectorsRefusals(t *testing.T) {
	bin := proctest.Loci(t)
	dir := t.TempDir()
	// The target: a directory recording glove, holding workspace w.
	src := filepath.Join(dir, "src")
	fillImportFixture(t, src, "default", "w", 40)
	srcFile := filepath.Join(dir, "src.jsonl")
	data := filepath.Join(dir, "data")
	for _, args := range [][]string{{"export", "--data", src, "--workspace", "w", "--out", srcFile},
		{"import", "--data", data, "--in", srcFile, "--embedder", "glove"}} {
		if msg, err := runLoci(bin, args...); err != nil {
			t.Fatalf("%s: %v\n%s", args[0], err, msg)
		}
	}
	// A directory without an embedder.
	plain := filepath.Join(dir, "plain")
	fillImportFixture(t, plain, "default", "w", 10)

	// The file to import: another directory's workspace, with vectors.
	other := filepath.Join(dir, "other")
	fillImportFixture(t, other, "default", "w", importFixtureArtifacts)
	exported, good := filepath.Join(dir, "other.jsonl"), filepath.Join(dir, "good.jsonl")
	for _, args := range [][]string{{"export", "--data", other, "--workspace", "w", "--out", exported},
		{"embed", "--embedder", "glove", "--in", exported, "--out", good}} {
		if msg, err := runLoci(bin, args...); err != nil {
			t.Fatalf("%s: %v\n%s", args[0], err, msg)
		}
	}
	raw := mustRead(t, good)
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	lastArt := lastOf(lines, "artifact")
	if lastArt < export.ImportBatchItems {
		t.Fatalf("fixture: the last artifact is on line %d, not past the first batch", lastArt+1)
	}
	at := fmt.Sprintf("line %d: ", lastArt+1)

	// Artifact lines with neither hash nor span ids (what a user writes)
	// come out of loci embed as the export's do.
	bare := strings.Split(strings.TrimSuffix(string(mustRead(t, exported)), "\n"), "\n")
	for i, l := range bare {
		if strings.Contains(l, `"kind":"artifact"`) {
			bare = editLines(t, bare, i, func(m map[string]any) { delete(m, "content_hash"); delete(m, "span_ids") })
		}
	}
	bareFile, bareOut := filepath.Join(dir, "bare.jsonl"), filepath.Join(dir, "bare-out.jsonl")
	os.WriteFile(bareFile, []byte(strings.Join(bare, "\n")+"\n"), 0o644)
	if msg, err := runLoci(bin, "embed", "--embedder", "glove", "--in", bareFile, "--out", bareOut); err != nil {
		t.Fatalf("embed of bare lines: %v\n%s", err, msg)
	}
	if !bytes.Equal(mustRead(t, bareOut), raw) {
		t.Fatal("loci embed of lines without content_hash and span_ids differs from loci embed of the export")
	}

	// The file cut in two, each part embedded on its own (as on two
	// machines) and the outputs joined again, is the same file.
	whole := strings.Split(strings.TrimSuffix(string(mustRead(t, exported)), "\n"), "\n")
	half := len(whole) / 2
	var joined []string
	for i, part := range [][]string{whole[1:half], whole[half : len(whole)-1]} {
		arts, fbs := 0, 0
		for _, l := range part {
			if strings.Contains(l, `"kind":"artifact"`) {
				arts++
			} else {
				fbs++
			}
		}
		in, out := filepath.Join(dir, fmt.Sprintf("part%d.jsonl", i)), filepath.Join(dir, fmt.Sprintf("part%d-v.jsonl", i))
		body := append(append([]string{whole[0]}, part...), fmt.Sprintf(`{"kind":"end","artifacts":%d,"feedback":%d}`, arts, fbs))
		os.WriteFile(in, []byte(strings.Join(body, "\n")+"\n"), 0o644)
		if msg, err := runLoci(bin, "embed", "--embedder", "glove", "--in", in, "--out", out); err != nil {
			t.Fatalf("embed of part %d: %v\n%s", i, err, msg)
		}
		got := strings.Split(strings.TrimSuffix(string(mustRead(t, out)), "\n"), "\n")
		if i == 0 {
			joined = append(joined, got[0])
		}
		joined = append(joined, got[1:len(got)-1]...)
	}
	joined = append(joined, lines[len(lines)-1])
	if strings.Join(joined, "\n")+"\n" != string(raw) {
		t.Fatal("two parts embedded apart and joined differ from the file embedded whole")
	}

	// loci embed refuses what import would.
	cut := editLines(t, strings.Split(strings.TrimSuffix(string(mustRead(t, exported)), "\n"), "\n"), lastArt,
		func(m map[string]any) {
			m["span_ids"] = append(m["span_ids"].([]any), "3f1e7c6a-8a47-4a8e-9a52-4c1e2b7d9f00")
		})
	cutFile := filepath.Join(dir, "cut.jsonl")
	os.WriteFile(cutFile, []byte(strings.Join(cut, "\n")+"\n"), 0o644)
	if msg, err := runLoci(bin, "embed", "--embedder", "glove", "--in", cutFile, "--out", filepath.Join(dir, "x.jsonl")); err == nil ||
		!strings.Contains(msg, at+"artifact") || !strings.Contains(msg, "chunking gives 1 spans, the line names 2 span_ids") {
		t.Fatalf("embed of a line with a span id too many: %v\n%s", err, msg)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.jsonl")); !os.IsNotExist(err) {
		t.Fatalf("a refused embed left its output: %v", err)
	}
	// GloVe gives a text without a word it knows a zero vector, which
	// import --vectors would refuse: loci embed refuses it first.
	unknown := editLines(t, bare, lastArt, func(m map[string]any) { m["raw_payload_json"] = `{"content":"qxzvw zzpqj"}` })
	unknownFile := filepath.Join(dir, "unknown.jsonl")
	os.WriteFile(unknownFile, []byte(strings.Join(unknown, "\n")+"\n"), 0o644)
	if msg, err := runLoci(bin, "embed", "--embedder", "glove", "--in", unknownFile, "--out", filepath.Join(dir, "x.jsonl")); err == nil ||
		!strings.Contains(msg, at+"artifact") || !strings.Contains(msg, "the embedder's vector for span 0 is all zeros, which import --vectors refuses") {
		t.Fatalf("embed of a text GloVe knows no word of: %v\n%s", err, msg)
	}

	wantW, wantPlain := exportBody(t, bin, data, "default", "w"), exportBody(t, bin, plain, "default", "w")
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, c := range []struct {
		name  string
		lines []string
		plain bool // into the directory without an embedder
		want  string
	}{
		{"another embedder", editLines(t, lines, 0, func(m map[string]any) { m["embedder"] = "all-minilm-l6-v2-w8a8"; m["embedder_dim"] = 384 }), false,
			`line 1: --vectors: the file's vectors are of embedder "all-minilm-l6-v2-w8a8", dimension 384; the data directory records "glove-6b-100d-sif", dimension 100`},
		{"another dimension", editLines(t, lines, 0, func(m map[string]any) { m["embedder_dim"] = 50 }), false,
			`embedder "glove-6b-100d-sif", dimension 50; the data directory records "glove-6b-100d-sif", dimension 100`},
		{"no embedder named", editLines(t, lines, 0, func(m map[string]any) { delete(m, "embedder"); delete(m, "embedder_dim") }), false,
			`the file's vectors are of embedder "", dimension 0`},
		{"a directory without an embedder", lines, true, "line 1: --vectors: the data directory records no embedder"},
		{"a vector of another dimension", editVector(t, lines, lastArt, func(v []float32) []float32 { return v[:99] }), false,
			at + "artifact %s: vector 0 (embedder glove-6b-100d-sif): has 99 dimensions, want 100"},
		{"a NaN", editVector(t, lines, lastArt, func(v []float32) []float32 { v[3] = nan; return v }), false,
			at + "artifact %s: vector 0 (embedder glove-6b-100d-sif): holds a non-finite value (NaN) at index 3"},
		{"an infinity", editVector(t, lines, lastArt, func(v []float32) []float32 { v[99] = -inf; return v }), false,
			"holds a non-finite value (-Inf) at index 99"},
		{"a zero vector", editVector(t, lines, lastArt, func(v []float32) []float32 { return make([]float32, len(v)) }), false,
			at + "artifact %s: vector 0 (embedder glove-6b-100d-sif): is all zeros"},
		{"a vector too many", editLines(t, lines, lastArt, func(m map[string]any) { m["vectors"] = append(m["vectors"].([]any), m["vectors"].([]any)[0]) }), false,
			at + "artifact %s: 2 vectors given, the payload is cut into 1 spans"},
		{"no vectors", editLines(t, lines, lastArt, func(m map[string]any) { delete(m, "vectors") }), false,
			at + "artifact %s: 0 vectors given, the payload is cut into 1 spans"},
		{"not base64", editLines(t, lines, lastArt, func(m map[string]any) { m["vectors"] = []string{"not base64!"} }), false,
			at + "artifact %s: vectors[0]: not standard base64"},
		{"a partial value", editLines(t, lines, lastArt, func(m map[string]any) { m["vectors"] = []string{base64.StdEncoding.EncodeToString(make([]byte, 5))} }), false,
			at + "artifact %s: vectors[0]: 5 bytes, not a whole number of float32 values"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var id struct {
				ID string `json:"artifact_id"`
			}
			json.Unmarshal([]byte(lines[lastArt]), &id)
			want := c.want
			if strings.Contains(want, "%s") {
				want = fmt.Sprintf(want, id.ID)
			}
			target, wantOwn := data, wantW
			if c.plain {
				target, wantOwn = plain, wantPlain
			}
			file := filepath.Join(t.TempDir(), "in.jsonl")
			os.WriteFile(file, []byte(strings.Join(c.lines, "\n")+"\n"), 0o644)
			msg, err := runLoci(bin, "import", "--vectors", "--data", target, "--in", file, "--workspace", "imp")
			if err == nil || !strings.Contains(msg, want) || !strings.Contains(msg, "nothing was imported") {
				t.Fatalf("import: %v, want a refusal mentioning %q:\n%s", err, want, msg)
			}
			if got := exportBody(t, bin, target, "default", "w"); got != wantOwn {
				t.Fatal("the workspace w of the directory changed")
			}
			if got := exportBody(t, bin, target, "default", "imp"); got != "" {
				t.Fatal("the refused import left data in workspace imp")
			}
			if _, err := os.Stat(filepath.Join(target, "import.staging")); !os.IsNotExist(err) {
				t.Fatalf("staging directory left: %v", err)
			}
			if msg, err := runLoci(bin, "verify", "--data", target); err != nil {
				t.Fatalf("verify: %v\n%s", err, msg)
			}
		})
	}

	// The good file imports whole, as the export imported with embedding.
	if msg, err := runLoci(bin, "import", "--vectors", "--data", data, "--in", good, "--workspace", "imp"); err != nil {
		t.Fatalf("import --vectors: %v\n%s", err, msg)
	}
	embedded := filepath.Join(dir, "embedded")
	if msg, err := runLoci(bin, "import", "--data", embedded, "--embedder", "glove", "--in", exported, "--workspace", "imp"); err != nil {
		t.Fatalf("import: %v\n%s", err, msg)
	}
	got, want := exportBody(t, bin, data, "default", "imp"), exportBody(t, bin, embedded, "default", "imp")
	if got == "" || got != want {
		t.Fatal("the workspace imported with vectors exports differently from the one imported with embedding")
	}
	if exportBody(t, bin, data, "default", "w") != wantW {
		t.Fatal("the good import changed workspace w")
	}
	if msg, err := runLoci(bin, "verify", "--data", data); err != nil {
		t.Fatalf("verify: %v\n%s", err, msg)
	}
}

// TestImportVectorsIdenticalToEmbedding: a workspace exported, given its
// vectors by `loci embed` with the built-in encoder and imported with
// --vectors is the same data directory, byte for byte (segments and
// manifest), as the export imported with the encoder embedding it, and
// serves the same packs byte for byte; both export as the source does.
func TestImportVectorsIdenticalToEmbedding(t *testing.T) {
	bin := proctest.Loci(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	db, err := engine.Open(src, engine.Options{NoEmbedder: true, DisableBackground: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	topics := []string{"the deploy window is Tuesday 14:00 UTC", "the budget for Q3 is four thousand dollars",
		"Alice owns the billing service", "the incident review found a missing index", "Bob prefers tea over coffee"}
	base := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var ins []engine.IngestInput
	for i := 0; i < 24; i++ {
		content := fmt.Sprintf("note %d: %s", i, topics[i%len(topics)])
		if i%8 == 0 { // several spans
			content = strings.Repeat(content+". The kingfisher service moved to slot "+fmt.Sprint(i)+". ", 60)
		}
		b, _ := json.Marshal(map[string]string{"content": content})
		ins = append(ins, engine.IngestInput{Workspace: "w", ActorID: "a", Type: "note", Payload: b, Timestamp: base.Add(time.Duration(i) * time.Hour)})
	}
	res, err := db.IngestBatch("default", ins)
	if err == nil {
		_, err = db.Feedback("default", engine.FeedbackInput{Workspace: "w", ActorID: "a", Action: "pin", ArtifactID: res[2].ArtifactID})
	}
	if err == nil {
		err = db.Close()
	}
	if err != nil {
		t.Fatal(err)
	}

	exported, withVectors := filepath.Join(dir, "w.jsonl"), filepath.Join(dir, "v.jsonl")
	viaVectors, viaEmbedding := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, args := range [][]string{
		{"export", "--data", src, "--workspace", "w", "--out", exported},
		{"embed", "--embedder", "minilm", "--in", exported, "--out", withVectors},
		{"import", "--vectors", "--data", viaVectors, "--in", withVectors},
		{"import", "--embedder", "minilm", "--data", viaEmbedding, "--in", exported},
	} {
		if msg, err := runLoci(bin, args...); err != nil {
			t.Fatalf("%s: %v\n%s", args[0], err, msg)
		}
	}
	if n := strings.Count(string(mustRead(t, withVectors)), `"vectors":`); n != len(ins) {
		t.Fatalf("%d artifact lines carry vectors, want %d", n, len(ins))
	}
	segs, _ := filepath.Glob(filepath.Join(viaEmbedding, "segments", "*"))
	if len(segs) == 0 {
		t.Fatal("the import wrote no segment")
	}
	for _, f := range append(segs, filepath.Join(viaEmbedding, "MANIFEST")) {
		rel, _ := filepath.Rel(viaEmbedding, f)
		if !bytes.Equal(mustRead(t, filepath.Join(viaVectors, rel)), mustRead(t, f)) {
			t.Errorf("%s differs between the import with vectors and the import that embedded", rel)
		}
	}
	// The round trip: both export as the source, but for the embedder
	// their header names.
	body := func(s string) string { return strings.SplitN(s, "\n", 2)[1] }
	want := body(exportBody(t, bin, src, "default", "w"))
	for _, d := range []string{viaVectors, viaEmbedding} {
		if got := body(exportBody(t, bin, d, "default", "w")); got != want {
			t.Errorf("%s exports differently from the source", filepath.Base(d))
		}
	}

	requests := []string{
		`{"workspace_id":"w","query":"when is the deploy window?","max_tokens":400}`,
		`{"workspace_id":"w","query":"who looks after invoices and payments","max_tokens":300}`,
		`{"workspace_id":"w","query":"a hot drink preference","max_tokens":200}`,
	}
	var packs [2][]string
	for i, d := range []string{viaVectors, viaEmbedding} {
		p := startServeWith(t, bin, d, serveOptions{args: []string{"--embedder", "minilm", "--reranker", "none"}})
		for _, r := range requests {
			code, b := postJSON(t, "http://"+p.addr+"/v1/context-pack", r)
			if code != 200 {
				t.Fatalf("pack: %d %s", code, b)
			}
			packs[i] = append(packs[i], string(b))
		}
		p.stop(t)
	}
	for i := range requests {
		if packs[0][i] != packs[1][i] {
			t.Errorf("request %d: the packs differ\nwith vectors: %s\nembedded:     %s", i, packs[0][i], packs[1][i])
		}
	}
}
