package engine

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/loci-memory/loci/embed/glove"
	"github.com/loci-memory/loci/vecindex"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testOpen is Open with the embedder engine tests use when they choose
// none: the built-in GloVe, offline and deterministic. Open itself has no
// default (the program chooses).
func testOpen(dir string, opts Options) (*DB, error) {
	if opts.Embedder == nil && !opts.NoEmbedder {
		opts.Embedder = glove.New()
	}
	return Open(dir, opts)
}

// searchSemantic embeds query with db's embedder and searches the semantic
// channel with it: retrieval.SearchSemantic, which engine tests cannot
// import.
func searchSemantic(db *DB, tenant, ws, query string, k int) ([]SearchHit, error) {
	vecs, err := db.Embedder().Embed(context.Background(), []string{query})
	if err != nil {
		return nil, err
	}
	q := make([]int8, len(vecs[0]))
	return db.SearchSemantic(tenant, ws, q, vecindex.Quantize(vecs[0], q), k)
}

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
