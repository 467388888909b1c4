package loci

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// markdownLink is an inline link or image, [text](target) or ![alt](target).
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// codeSpan is an inline code span, `text`.
var codeSpan = regexp.MustCompile("`([^`\n]+)`")

// repoFile reports whether a path in code names a file of the kinds the
// repository holds (or a directory, with a final /), not a file the server
// writes (wal/00000001.wal).
func repoFile(span string) bool {
	if strings.HasSuffix(span, "/") {
		return true
	}
	switch filepath.Ext(span) {
	case ".md", ".go", ".yaml", ".json", ".jsonl", ".sh", ".py", ".ts", ".mjs", ".png", ".txt", ".mod", ".sum":
		return true
	}
	return false
}

// TestDocsLinkInsideTheRepository fails when README.md or a page of docs/
// points at a file that is not in the repository: a relative link to a
// missing file, or a path in code (`docs/api.md`, `text/extract.go`,
// `../shared/spec/...`) that leaves the repository or names nothing in it.
// A clone holds only the repository, so that is all the docs may rely on.
// Paths in code count when they start with ../ or with the name of an entry
// of the repository's root (docs/, text/, clients/, ...) and name a source
// or documentation file or a directory; globs must match something, and
// placeholders ({id}, <name>, internal/...) are not paths.
func TestDocsLinkInsideTheRepository(t *testing.T) {
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	pages := []string{"README.md"}
	err = filepath.WalkDir("docs", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			pages = append(pages, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	top := map[string]bool{}
	for _, e := range entries {
		top[e.Name()] = true
	}
	exists := func(path string) bool {
		if strings.ContainsAny(path, "*?[") {
			m, _ := filepath.Glob(path)
			return len(m) > 0
		}
		_, err := os.Stat(path)
		return err == nil
	}
	inside := func(path string) bool {
		abs, err := filepath.Abs(path)
		return err == nil && (abs == root || strings.HasPrefix(abs, root+string(filepath.Separator)))
	}
	for _, page := range pages {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		text := string(raw)
		for _, m := range markdownLink.FindAllStringSubmatch(text, -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path := filepath.Join(filepath.Dir(page), target)
			if !inside(path) || !exists(path) {
				t.Errorf("%s links to %s, which is not in the repository", page, m[1])
			}
		}
		for _, m := range codeSpan.FindAllStringSubmatch(text, -1) {
			span := m[1]
			if strings.ContainsAny(span, " {}<>$=,'\"") || strings.Contains(span, "://") {
				continue
			}
			first, _, ok := strings.Cut(span, "/")
			if !ok || (first != ".." && !top[first]) || strings.Contains(span, "...") || !repoFile(span) {
				continue
			}
			path := strings.TrimSuffix(span, "/")
			if i := strings.LastIndex(path, ":"); i > 0 { // file.go:123
				path = path[:i]
			}
			if !inside(path) || !exists(path) {
				t.Errorf("%s names %s, which is not in the repository", page, span)
			}
		}
	}
}
