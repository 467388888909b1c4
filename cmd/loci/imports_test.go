package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// layers is docs/architecture.md's package map, top to bottom: a package
// may import packages of lower layers, and of its own layer only as
// sameLayer allows. Packages not named here (test-only ones, generators)
// are not checked.
var layers = [][]string{
	{"cmd/loci"},
	{"torture", "bench"},
	{"httpd", "mcpd", "console", "apidoc"},
	{"cluster"},
	{"service", "telemetry"},
	{"retrieval"},
	{"engine", "engine/record", "engine/manifest", "engine/artmeta", "engine/backup", "engine/verify", "control", "export"},
	{"pack", "invindex", "vecindex", "segment", "tokenrows", "wal", "text", "artifact", "embed", "embed/glove",
		"embed/minilm", "embed/crossenc", "embed/colbert", "embed/openai", "ratelimit", "when"},
	{"internal/codec", "internal/varint", "vfs", ""},
}

// sameLayer lists the imports allowed within a layer.
var sameLayer = map[string][]string{
	"httpd":           {"mcpd", "apidoc", "console"},
	"engine":          {"engine/record", "engine/manifest", "engine/artmeta", "engine/backup", "engine/verify"},
	"engine/manifest": {"engine/record"},
	"engine/backup":   {"engine/manifest"},
	"engine/verify":   {"engine/record", "engine/manifest", "engine/artmeta"},
	"export":          {"engine"},
	"pack":            {"artifact", "text", "invindex"},
	"segment":         {"artifact"},
	"text":            {"embed"},
	"embed/glove":     {"embed", "vecindex"},
	"embed/minilm":    {"embed"},
	"embed/crossenc":  {"embed/minilm"},
	"embed/colbert":   {"embed/minilm", "vecindex"},
	"embed/openai":    {"embed"},
	"internal/codec":  {"internal/varint", "vfs"},
	"apidoc":          {""},
}

// never lists imports the map forbids although the layers would allow
// them: transports reach storage only through the service.
var never = map[string][]string{
	"httpd":   {"engine", "control"},
	"mcpd":    {"engine", "control"},
	"console": {"engine", "control"},
}

// TestImportRule checks every non-test import between the repository's
// packages against the package map.
func TestImportRule(t *testing.T) {
	const module = "github.com/loci-memory/loci"
	layerOf := map[string]int{}
	for i, l := range layers {
		for _, p := range l {
			layerOf[p] = i
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	imports := map[string][]string{} // package -> its imports of ours
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "testdata", "node_modules", "clients", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		if pkg == "." {
			pkg = ""
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if p == module {
				imports[pkg] = append(imports[pkg], "")
			} else if q, ok := strings.CutPrefix(p, module+"/"); ok {
				imports[pkg] = append(imports[pkg], q)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(imports["engine"]) == 0 {
		t.Fatalf("found no imports of engine under %s: the walk is wrong", root)
	}
	name := func(p string) string {
		if p == "" {
			return "loci (module root)"
		}
		return p
	}
	for pkg, ims := range imports {
		from, checked := layerOf[pkg]
		if !checked {
			continue
		}
		slices.Sort(ims)
		for _, im := range slices.Compact(ims) {
			to, known := layerOf[im]
			switch {
			case !known:
				t.Errorf("%s imports %s, which the package map in docs/architecture.md does not place", name(pkg), name(im))
			case slices.Contains(never[pkg], im):
				t.Errorf("%s imports %s: transports reach storage only through the service", name(pkg), name(im))
			case to < from:
				t.Errorf("%s imports %s, a package of a higher layer", name(pkg), name(im))
			case to == from && !slices.Contains(sameLayer[pkg], im):
				t.Errorf("%s imports %s of its own layer, which the map does not allow", name(pkg), name(im))
			}
		}
	}
}
