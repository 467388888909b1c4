package torture

// Imports (Config.Imports): between rounds, with the server killed, `loci
// import` reads a generated export into a new workspace of the tortured
// directory, and half of the time is itself killed with SIGKILL at a
// random moment; the directory must verify, start, and hold the imported
// workspace whole or not at all (whole when the import finished), and keep
// it so. During the load, an import into the served directory must be
// refused (the server holds its lock) and change nothing.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// importArtifacts is the size of one generated export: more than one
// import batch would take long with the default embedder inline; the
// atomicity across batches is tested by cmd/loci's TestImportKilled.
const importArtifacts = 40

// Outcomes of an import, as the checks know them.
const (
	importEither = iota // killed, not yet seen: absent or whole
	importWhole
	importAbsent
)

// importedWS is a workspace an import wrote (or may have written).
type importedWS struct {
	ws       string
	ids      []string
	payloads map[string][]byte
	outcome  int
}

// exportFile writes a loci export of n short notes (one span each) and a
// pin, with ids from rng, into a temporary file; it returns the file and
// what it holds. Tenant "default" is the admin key's.
func exportFile(rng *rand.Rand, ws string, n int) (string, *importedWS, error) {
	id := func() string {
		var b [16]byte
		rng.Read(b[:])
		b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
		return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
	}
	imp := &importedWS{ws: ws, payloads: map[string][]byte{}}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(map[string]any{"kind": "header", "format": "loci-export", "version": 1, "tenant": "default", "workspace": ws,
		"data_version": 1 + rng.Intn(1000), "embedder": "", "embedder_dim": 0})
	now := time.Now().UnixMicro()
	var firstSpan string
	for i := 0; i < n; i++ {
		aid, sid := id(), id()
		raw := fmt.Sprintf(`{"content":"imported note %d of %s: the %s rollback runs at %02d:00"}`, i, ws, []string{"payment", "search", "billing"}[rng.Intn(3)], rng.Intn(24))
		sum := sha256.Sum256([]byte(raw))
		enc.Encode(map[string]any{"kind": "artifact", "artifact_id": aid, "artifact_type": "note", "actor_id": "importer",
			"timestamp_us": now - int64(n-i)*60_000_000, "ingested_at_us": now - 3_600_000_000, "content_hash": hex.EncodeToString(sum[:]),
			"raw_payload_json": raw, "span_ids": []string{sid}})
		imp.ids = append(imp.ids, aid)
		imp.payloads[aid] = []byte(raw)
		if i == 0 {
			firstSpan = sid
		}
	}
	enc.Encode(map[string]any{"kind": "feedback", "feedback_id": id(), "actor_id": "importer", "action": "pin",
		"artifact_id": imp.ids[0], "span_ids": []string{firstSpan}, "created_at_us": now})
	enc.Encode(map[string]any{"kind": "end", "artifacts": n, "feedback": 1})
	f, err := os.CreateTemp("", "loci-torture-import-*.jsonl")
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	if _, err := f.Write(buf.Bytes()); err != nil {
		os.Remove(f.Name())
		return "", nil, err
	}
	return f.Name(), imp, nil
}

// importCmd is `loci import` of file into the tortured directory, with the
// server's embedder (the built-in encoder, "minilm", by default).
func (t *run) importCmd(file string) *exec.Cmd {
	name := t.cfg.Embedder
	if name == "" {
		name = "minilm"
	}
	cmd := exec.Command(t.cfg.Bin, "import", "--data", t.cfg.DataDir, "--in", file, "--embedder", name)
	cmd.Env = filteredEnv()
	return cmd
}

// importWhileServing runs an import into the served directory: it must be
// refused, the directory being in use.
func (t *run) importWhileServing() {
	file, _, err := exportFile(t.rng, fmt.Sprintf("refused-%d", t.round), 3)
	if err != nil {
		t.fail(fmt.Sprintf("import: %v", err))
		return
	}
	defer os.Remove(file)
	out, err := t.importCmd(file).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "in use") {
		t.fail(fmt.Sprintf("IMPORT WHILE SERVING: loci import into the served directory: %v:\n%s", err, out))
		return
	}
	t.led.mu.Lock()
	t.led.counts.ImportsRefused++
	t.led.mu.Unlock()
}

// importRound imports a generated export into the stopped directory (the
// server was killed), killing the import at a random moment half of the
// time, and verifies the directory.
func (t *run) importRound() {
	file, imp, err := exportFile(t.rng, fmt.Sprintf("imported-%d", t.round), importArtifacts)
	if err != nil {
		t.fail(fmt.Sprintf("import: %v", err))
		return
	}
	defer os.Remove(file)
	cmd := t.importCmd(file)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	kill := t.rng.Intn(2) == 0
	delay := time.Duration(t.rng.Int63n(int64(1500 * time.Millisecond)))
	if err := cmd.Start(); err != nil {
		t.fail(fmt.Sprintf("import: %v", err))
		return
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	imp.outcome = importWhole
	if kill {
		select {
		case err = <-done:
		case <-time.After(delay):
			cmd.Process.Signal(syscall.SIGKILL)
			<-done
			imp.outcome, err = importEither, nil
		}
	} else {
		err = <-done
	}
	if err != nil {
		t.fail(fmt.Sprintf("IMPORT FAILED: loci import of %s: %v:\n%s", imp.ws, err, out.String()))
		return
	}
	t.led.mu.Lock()
	if imp.outcome == importEither {
		t.led.counts.ImportsKilled++
	} else {
		t.led.counts.Imports++
	}
	t.led.imports = append(t.led.imports, imp)
	t.led.mu.Unlock()
	if _, err := os.Stat(filepath.Join(t.cfg.DataDir, "import.staging")); err == nil && imp.outcome == importWhole {
		t.fail(fmt.Sprintf("import of %s finished and left its staging directory", imp.ws))
	}
	if err := runVerify(t.cfg.Bin, t.cfg.DataDir); err != nil {
		t.fail(fmt.Sprintf("after the import of %s (killed %v): %v", imp.ws, imp.outcome == importEither, err))
	}
	t.sum.Checked.Verifies++
}

// imports checks every imported workspace: whole (every artifact,
// byte-identical, and nothing else) or absent, as its outcome allows.
func (k *checker) imports(ctx context.Context) {
	k.led.mu.Lock()
	imps := append([]*importedWS(nil), k.led.imports...)
	k.led.mu.Unlock()
	for _, imp := range imps {
		listing, err := k.listAll(ctx, imp.ws)
		if err != nil {
			k.fail(fmt.Sprintf("imported workspace: %v", err))
			continue
		}
		k.count(func(c *Checked) { c.Imports++ })
		if len(listing) == 0 {
			switch imp.outcome {
			case importWhole:
				k.fail(fmt.Sprintf("IMPORT LOST: %s, imported whole, lists nothing", imp.ws))
			case importEither:
				imp.outcome = importAbsent
			}
			continue
		}
		if imp.outcome == importAbsent {
			k.fail(fmt.Sprintf("IMPORT APPEARED: %s, absent after its import was killed, now lists %d artifacts", imp.ws, len(listing)))
			continue
		}
		missing := 0
		for _, id := range imp.ids {
			if _, ok := listing[id]; !ok {
				missing++
			}
		}
		if missing > 0 || len(listing) != len(imp.ids) {
			k.fail(fmt.Sprintf("IMPORT PARTIAL: %s lists %d artifacts, %d of the %d imported missing", imp.ws, len(listing), missing, len(imp.ids)))
			continue
		}
		imp.outcome = importWhole
		for _, id := range imp.ids {
			status, raw, err := k.getArtifact(ctx, id)
			switch {
			case err != nil:
				k.fail(fmt.Sprintf("read imported artifact %s: %v", id, err))
			case status != http.StatusOK:
				k.fail(fmt.Sprintf("IMPORT LOST: artifact %s of %s answers %d: %s", id, imp.ws, status, truncate(raw)))
			case !bytes.Equal(raw, imp.payloads[id]):
				k.fail(fmt.Sprintf("CHANGED: imported artifact %s of %s: raw_payload %q, imported %q", id, imp.ws, truncate(raw), truncate(imp.payloads[id])))
			}
		}
	}
}
