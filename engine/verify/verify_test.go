package verify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-memory/loci/engine/manifest"
)

// Dir judges directories without segments or WAL by the engine's rules:
// an empty one is a warning (open writes its manifest), a lost manifest,
// a damaged manifest or control file is a fault, and a directory in use is
// refused. The engine's tests verify the directories it writes.
func TestDirWithoutData(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		fault string // "" for none
	}{
		{"empty", nil, ""},
		{"lost manifest", map[string]string{filepath.Join(manifest.SegmentDir, "0000000000000001.seg"): "x"}, "the manifest is lost"},
		{"damaged manifest", map[string]string{manifest.FileName: "LOCIMAN"}, "shorter than the 20-byte frame"},
		{"damaged control file", map[string]string{manifest.ControlName: "LOCICTL\x01"}, manifest.ControlName},
		{"damaged control payloads", map[string]string{manifest.ControlPayloadsName: "nope"}, manifest.ControlPayloadsName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r, err := Dir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if tc.fault == "" && len(r.Faults) > 0 || tc.fault != "" && (len(r.Faults) != 1 || !strings.Contains(r.Faults[0], tc.fault)) {
				t.Fatalf("faults %q, want one containing %q", r.Faults, tc.fault)
			}
		})
	}
	dir := t.TempDir()
	lock, err := manifest.Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := Dir(dir); err == nil || !strings.Contains(err.Error(), "is in use") {
		t.Fatalf("verify of a locked directory: %v", err)
	}
}
