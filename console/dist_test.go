package console

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// sourceFiles lists the files console/dist is built from, as build.mjs's
// sourceFiles does: relative to web/, '/'-separated, sorted by byte order.
func sourceFiles(t *testing.T) []string {
	files := []string{"build.mjs", "package.json", "package-lock.json", "tsconfig.json"}
	err := filepath.WalkDir(filepath.Join("web", "src"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel("web", p)
		files = append(files, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

// TestDistUpToDate fails when console/dist was not rebuilt after a change
// to the console's sources: the hash build.mjs wrote must equal the hash of
// the sources now.
func TestDistUpToDate(t *testing.T) {
	h := sha256.New()
	for _, f := range sourceFiles(t) {
		b, err := os.ReadFile(filepath.Join("web", filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%s\n%d\n", f, len(b))
		h.Write(b)
	}
	got := hex.EncodeToString(h.Sum(nil))
	want, err := os.ReadFile(filepath.Join("dist", "sources.sha256"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(want)) != got {
		t.Fatalf("console/dist is stale: built from sources %s, the sources are now %s; run `npm ci && npm run build` in console/web and commit console/dist",
			strings.TrimSpace(string(want)), got)
	}
}

// TestDistReferencesItsAssets checks that index.html loads exactly the
// built script and stylesheet, from the console's own origin, with no
// inline script or style the Content-Security-Policy would block.
func TestDistReferencesItsAssets(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("dist", "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join("dist", "assets"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("dist/assets holds %d files, want the app's script and stylesheet", len(entries))
	}
	for _, e := range entries {
		if !bytes.Contains(page, []byte(`"/ui/assets/`+e.Name()+`"`)) {
			t.Errorf("index.html does not reference %s", e.Name())
		}
	}
	if n := len(regexp.MustCompile(`<script\b`).FindAll(page, -1)); n != 1 {
		t.Errorf("index.html has %d script elements, want 1", n)
	}
	for _, bad := range []string{"<style", " style=", "onload=", "onclick=", "http://", "https://", "<script>"} {
		if bytes.Contains(page, []byte(bad)) {
			t.Errorf("index.html contains %q", bad)
		}
	}
}
