package codec_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/loci-memory/loci/internal/codec"
	"github.com/loci-memory/loci/vfs"
)

// TestReplaceFile fails each step of a replacement in turn, on a file
// system that loses what is not fsynced, then crashes it: a failure before
// the rename leaves the old content and no temporary file, one after it
// (the directory fsync) reports ErrRenamedNotSynced, and a replacement that
// returned nil survives the crash.
func TestReplaceFile(t *testing.T) {
	boom := errors.New("injected")
	for _, tmp := range []string{"F.tmp", "F.*.tmp"} {
		for _, tc := range []struct {
			fail    vfs.Op
			renamed bool // the failure comes after the rename
		}{
			{fail: vfs.OpCreate}, {fail: vfs.OpWrite}, {fail: vfs.OpSync}, {fail: vfs.OpRename},
			{fail: vfs.OpSyncDir, renamed: true},
		} {
			t.Run(tmp+"/"+tc.fail.String(), func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "F")
				if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
					t.Fatal(err)
				}
				strict, err := vfs.NewStrict(dir)
				if err != nil {
					t.Fatal(err)
				}
				inj := vfs.NewInject(strict)
				inj.FailNth(tc.fail, 1, boom)
				err = codec.ReplaceFile(inj, path, tmp, write("new"))
				if !errors.Is(err, boom) || errors.Is(err, codec.ErrRenamedNotSynced) != tc.renamed {
					t.Fatalf("error %v; want the injected one, after the rename: %v", err, tc.renamed)
				}
				want := "old"
				if tc.renamed {
					want = "new"
				}
				expect(t, dir, want)
				// A retry that succeeds is durable.
				if err := codec.ReplaceFile(strict, path, tmp, write("newer")); err != nil {
					t.Fatal(err)
				}
				if err := strict.Crash(); err != nil {
					t.Fatal(err)
				}
				expect(t, dir, "newer")
			})
		}
	}
}

// write returns a ReplaceFile writer of s.
func write(s string) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	}
}

// expect checks that dir holds F with content want and nothing else.
func expect(t *testing.T, dir, want string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"F"}) {
		t.Fatalf("directory holds %v, want only F", names)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "F")); string(b) != want {
		t.Fatalf("F holds %q, want %q", b, want)
	}
}
