package engine

import (
	"bytes"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// assertNotOnDisk fails if any file under dir contains needle, raw or inside a
// zstd frame (segment payloads may be compressed).
func assertNotOnDisk(t *testing.T, dir, needle string) {
	t.Helper()
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(path)
		if bytes.Contains(b, []byte(needle)) {
			t.Errorf("%s still holds %q", path, needle)
		}
		for i := 0; i+4 <= len(b); i++ {
			if b[i] == 0x28 && b[i+1] == 0xb5 && b[i+2] == 0x2f && b[i+3] == 0xfd {
				// Decode as far as the frame goes; what follows it is not zstd.
				dec, err := zstd.NewReader(bytes.NewReader(b[i:]))
				if err != nil {
					continue
				}
				out, _ := io.ReadAll(dec)
				dec.Close()
				if bytes.Contains(out, []byte(needle)) {
					t.Errorf("%s holds %q in a zstd frame at %d", path, needle, i)
				}
			}
		}
		return nil
	})
}
