// Command openapigen writes docs/openapi.json, the JSON form of the API
// reference docs/openapi.yaml, which the root package loci embeds and package
// apidoc serves as /openapi.json. Keys keep their YAML document order; the
// conversion rules are those of package yamljson.
//
// Run it through go generate in the apidoc package after editing
// docs/openapi.yaml:
//
//	go generate ./apidoc
//
// A test in apidoc fails while the committed JSON differs from what this
// command would write. The YAML library is a dependency of this command and
// of tests only, never of the loci binary.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/loci-memory/loci/apidoc/internal/yamljson"
)

func main() {
	in := flag.String("in", "", "the OpenAPI document in YAML")
	out := flag.String("out", "", "the JSON file to write")
	flag.Parse()
	if *in == "" || *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: openapigen -in openapi.yaml -out openapi.json")
		os.Exit(2)
	}
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "openapigen:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	src, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	j, err := yamljson.ConvertIndented(src)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if !bytes.HasPrefix(j, []byte("{")) {
		return fmt.Errorf("%s: the document is not a mapping", in)
	}
	if old, err := os.ReadFile(out); err == nil && bytes.Equal(old, j) {
		return nil // up to date; leave the file's time alone
	}
	return os.WriteFile(out, j, 0o644)
}
